"""The one adapter to purra's private names: the pinned versions are installed, every guarded name exists, and
a purra that moved one is refused at connect with one sentence naming what to change."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
from conftest import demo_config
from purra_mcp import McpToolLimits

import purra_jupyter as pj
from purra_jupyter._connection import purra_adapter
from purra_jupyter._connection.purra_adapter import ProfileViolation, Shape


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
    assert f"{module}.{name}" in problem and "purra_jupyter/_connection/purra_adapter.py" in problem
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


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ({"type": "object", "maximum": 2**60}, Shape.NUMBER),
        ({"type": "object", "maximum": float("inf")}, Shape.NUMBER),
        (_nested(40), Shape.RESOURCE),
        ({"type": "object", "properties": {f"p{i}": {} for i in range(5000)}}, Shape.RESOURCE),
        ({"type": "object", "description": "x" * 70_000}, Shape.BYTES),
        ({"type": "object", "properties": {1: {}}}, Shape.VALUE),
        ({"type": "object", "default": object()}, Shape.VALUE),
    ],
)
def test_each_limit_purras_snapshot_hits_is_named_from_its_words(body: dict[str, Any], shape: Shape) -> None:
    """purra's snapshot says which limit only in its ValueError's text: a purra that rewords one fails here."""
    problem = purra_adapter.shape_problem(body, McpToolLimits())
    assert problem is not None and problem.shape is shape, problem
    assert purra_adapter.shape_problem({"type": "object"}, McpToolLimits()) is None


@pytest.mark.parametrize(
    ("body", "violation"),
    [
        ({"properties": {"a: b": {"format": "uri", "pattern": "x"}}},
         ProfileViolation("$.properties.a: b", "unsupported keyword(s): format, pattern", ("format", "pattern"))),
        ({"type": "float"}, ProfileViolation("$.type", "unsupported type(s): float")),
        ({"properties": {"a: b": {"additionalProperties": {}}}},
         ProfileViolation("$.properties.a: b.additionalProperties", "must be boolean")),
        ({"items": {"minLength": 3, "maxLength": 1}}, ProfileViolation("$.items.minLength", "cannot exceed maxLength")),
    ],
)  # fmt: skip
def test_purras_profile_violations_are_split_into_path_problem_and_keywords(
    body: dict[str, Any], violation: ProfileViolation
) -> None:
    assert purra_adapter.profile_violations(body) == (violation,)


def test_a_schema_purra_mcp_refuses_gives_its_own_code() -> None:
    assert purra_adapter.schema_refusal({"type": "object", "format": "x"}, McpToolLimits()) == "mcp_schema_unsupported"
    assert purra_adapter.schema_refusal({"type": "object"}, McpToolLimits()) is None


@pytest.mark.parametrize(
    ("cursor", "refused"),
    [("", True), ("x" * purra_adapter.MAX_CURSOR_BYTES, False), ("é" * 257, True), ("seen", True), ("new", False)],
)
def test_the_cursor_rule(cursor: str, refused: bool) -> None:
    assert purra_adapter.cursor_refused(cursor, {"seen"}) is refused
