"""The README's first command as a newcomer meets it: what is missing is said first, in one line; once set up,
the address it prints opens the quickstart."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).parent.parent
GUARD = 120  # seconds: a guard against a hang, not a speed claim
NODE_TOOLS = {"node", "npm", "npx", "corepack"}


def path_without_node(directory: Path) -> str:
    """A PATH with every command of this one but Node.js's: one folder of links."""
    directory.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for entry in Path(folder).glob("*") if Path(folder).is_dir() else ():
            link = directory / entry.name
            if entry.name not in NODE_TOOLS and not link.exists() and os.access(entry, os.X_OK):
                link.symlink_to(entry.resolve())
    return str(directory)


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=GUARD)
    return clone


def test_a_fresh_clone_without_node_says_so_in_one_line_before_installing_anything(
    fresh_clone: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "PATH": path_without_node(tmp_path / "bin")}
    env.pop("PYTHON", None)
    run = subprocess.run(
        ["bash", "scripts/demo", "--execute"], cwd=fresh_clone, env=env, capture_output=True, text=True, timeout=GUARD
    )
    assert run.returncode != 0 and run.stdout == "", run
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "needs Node.js 20 or newer" in run.stderr and "no 'node' on PATH" in run.stderr, run.stderr
    assert "https://nodejs.org" in run.stderr and "pip install purra-jupyter" in run.stderr, run.stderr
    assert not (fresh_clone / ".venv").exists()  # nothing was installed


def test_a_python_too_old_or_missing_is_said_in_one_line(fresh_clone: Path) -> None:
    env = {**os.environ, "PYTHON": str(fresh_clone / "no-such-python")}
    run = subprocess.run(
        ["bash", "scripts/demo"], cwd=fresh_clone, env=env, capture_output=True, text=True, timeout=GUARD
    )
    assert run.returncode != 0 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "needs Python 3.11 or newer" in run.stderr and "set PYTHON=" in run.stderr, run.stderr


@pytest.fixture
def demo_script() -> Iterator[subprocess.Popen[str]]:
    """``scripts/demo`` in this checkout (set up by the test setup, so it starts JupyterLab at once)."""
    process = subprocess.Popen(
        ["bash", "scripts/demo"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield process
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=GUARD)


def test_the_address_the_demo_prints_opens_the_quickstart(demo_script: subprocess.Popen[str]) -> None:
    assert demo_script.stdout is not None
    deadline = time.monotonic() + GUARD
    seen = []
    while time.monotonic() < deadline and (line := demo_script.stdout.readline()):
        seen.append(line)
        found = re.search(r"http://127\.0\.0\.1:\d+/\S+", line)
        if found:
            break
    else:
        pytest.fail("scripts/demo printed no address:\n" + "".join(seen))
    url = found.group(0)
    assert "/lab/tree/notebooks/quickstart.ipynb?token=" in url, url
    page = httpx.get(url, timeout=30, follow_redirects=True)
    assert page.status_code == 200 and "JupyterLab" in page.text, page.status_code
    assert "open the address it prints below" in "".join(seen)


def test_a_second_setup_is_skipped_until_pyproject_changes(fresh_clone: Path) -> None:
    """The README's "a second run skips that unless pyproject.toml changed", on a clone whose .venv records this
    pyproject (its python a stand-in that only says it was asked, so nothing is installed)."""
    venv = fresh_clone / ".venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text('#!/bin/sh\necho "asked to run: $*" >&2\nexit 3\n')
    python.chmod(0o755)
    (venv / ".purra-jupyter-setup").write_text((ROOT / ".venv" / ".purra-jupyter-setup").read_text())
    # what ROOT's setup recorded holds for the clone's identical pyproject: nothing to do, nothing said
    setup = ["bash", "-c", "source scripts/_env.sh && ensure_env lab"]
    skipped = subprocess.run(setup, cwd=fresh_clone, capture_output=True, text=True, timeout=GUARD)
    assert (skipped.returncode, skipped.stderr) == (0, ""), skipped
    with (fresh_clone / "pyproject.toml").open("a") as pyproject:
        pyproject.write("\n# changed\n")
    again = subprocess.run(setup, cwd=fresh_clone, capture_output=True, text=True, timeout=GUARD)
    assert again.returncode != 0 and "[setup 2/3] updating pip" in again.stderr, again
    assert "asked to run: -m pip install" in again.stderr, again.stderr


def test_the_fast_loop_runs_the_core_and_leaves_out_the_slow_parts() -> None:
    """``scripts/test --fast``: lint, types, then every test but real browsers, the Binder environment, the docs build
    and published npm servers (collected here, not run: ``-n 0 --collect-only``)."""
    run = subprocess.run(
        ["bash", "scripts/test", "--fast", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "PYTEST_WORKERS": "0"},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    collected = [line for line in run.stdout.splitlines() if "::" in line]
    left_out = ("test_browser.py", "test_views.py", "test_binder.py", "test_docs.py", "test_published_servers.py",
                "test_conformance.py", "server_everything", "published_example_servers")  # fmt: skip
    assert len(collected) >= 300 and not [line for line in collected if any(part in line for part in left_out)]
    assert "Success: no issues found" in run.stdout  # mypy ran first


def test_the_suites_servers_start_without_building_parsers_they_never_use() -> None:
    """Every server, CLI and kernel the suite starts imports mcp, hence jsonschema's format checkers; with
    rfc3987-syntax they build Lark parsers for about a second each (python-jsonschema/jsonschema#1428), which doubled
    the fast loop. The test environment has rfc3987, which jsonschema prefers (pyproject's test extra)."""
    code = "import sys, mcp; print('rfc3987_syntax' in sys.modules, 'rfc3987' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.split() == ["False", "True"], run.stdout + run.stderr


GROUPED_CONFTEST = """
import importlib.util, os, sys, pytest
spec = importlib.util.spec_from_file_location("suite_conftest", {suite!r})
suite = sys.modules["suite_conftest"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)
pytest_collection_modifyitems = suite.pytest_collection_modifyitems  # the suite's own hook

@pytest.fixture(scope="session")
def binder_env():
    with open("built", "a") as record:
        record.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_the_tests_of_one_group_run_on_one_worker(tmp_path: Path) -> None:
    """The suite's groups hold under pytest-xdist (two workers, ``--dist loadgroup``): two tests that use
    ``binder_env``, in two modules, run on one worker, so the Binder environment is built once (pytest 9.2 silently
    ended the grouping: pyproject keeps pytest below it)."""
    (tmp_path / "conftest.py").write_text(GROUPED_CONFTEST.format(suite=str(ROOT / "tests" / "conftest.py")))
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "def test_builds(binder_env, request):\n    open('grouped', 'a').write(request.node.nodeid + '\\n')\n\n"
            "def test_other():\n    pass\n"
        )
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
                          "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert len((tmp_path / "built").read_text().split()) == 1
    grouped = (tmp_path / "grouped").read_text().split()
    assert len(grouped) == 2 and all(nodeid.endswith("@binder") for nodeid in grouped), grouped  # xdist's group
