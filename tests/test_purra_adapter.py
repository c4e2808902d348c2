"""The one adapter to purra's private names: the pinned versions are installed, every guarded name exists, and
a purra that moved one is refused at connect with one sentence naming what to change."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import version

import pytest
from conftest import demo_config

import purra_jupyter as pj
from purra_jupyter import purra_adapter


@pytest.fixture
def fresh_check() -> Iterator[None]:
    purra_adapter.check.cache_clear()
    yield
    purra_adapter.check.cache_clear()


@pytest.mark.parametrize(("package", "pinned"), sorted(purra_adapter.PINNED.items()))
def test_the_pinned_version_is_installed(package: str, pinned: str) -> None:
    assert version(package) == pinned


@pytest.mark.parametrize("guarded", sorted(purra_adapter.GUARDED))
def test_each_guarded_private_name_exists(guarded: str) -> None:
    module, name = guarded.split(":")
    assert hasattr(importlib.import_module(module), name), purra_adapter.problems()


def test_nothing_has_moved() -> None:
    assert purra_adapter.problems() == []


@pytest.mark.parametrize("guarded", sorted(purra_adapter.GUARDED))
def test_a_moved_private_is_named_with_what_to_change(
    guarded: str, monkeypatch: pytest.MonkeyPatch, fresh_check: None
) -> None:
    module, name = guarded.split(":")
    monkeypatch.delattr(importlib.import_module(module), name)
    [problem] = purra_adapter.problems()
    assert f"{module}.{name}" in problem and "purra_jupyter/purra_adapter.py" in problem
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(demo_config("moved"))
    assert caught.value.code == "mcp_purra_incompatible"  # never mcp_transport_error, and before any process
    assert caught.value.message == problem
    assert pj.sessions() == []


def test_another_installed_version_is_named(monkeypatch: pytest.MonkeyPatch, fresh_check: None) -> None:
    monkeypatch.setitem(purra_adapter.PINNED, "purra-mcp", "9.9.9")
    [problem] = purra_adapter.problems()
    assert problem.startswith("purra-mcp 1.0.3 is installed, but purra-jupyter is built on 9.9.9")
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(demo_config("pinned"))
    assert caught.value.code == "mcp_purra_incompatible"


@pytest.mark.parametrize(
    ("cursor", "refused"),
    [("", True), ("x" * purra_adapter.MAX_CURSOR_BYTES, False), ("é" * 257, True), ("seen", True), ("new", False)],
)
def test_the_cursor_rule(cursor: str, refused: bool) -> None:
    assert purra_adapter.cursor_refused(cursor, {"seen"}) is refused
