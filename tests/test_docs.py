"""The docs site builds offline from the source tree (both notebooks executed, every reference resolved), and the
README keeps its promises: short, `pip install` shown, links inside the repository, a quickstart that runs."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
from conftest import execute_notebook

from purra_jupyter._evaluation.batches import RESULT_COLUMNS
from purra_jupyter._purra.catalog import FRAME_COLUMNS

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()
TAG = re.compile(r"<[^>]+>")


def page_text(path: Path) -> str:
    """A built page's text as a reader sees it: tags dropped, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(TAG.sub(" ", path.read_text())).split())


def test_scripts_docs_builds_the_site_with_the_notebooks_executed(tmp_path: Path) -> None:
    out = tmp_path / "html"
    # scripts/docs itself: with .venv when this is it (scripts/test's setup serves the docs), else with this
    # interpreter's environment (a worktree sharing another checkout's environment)
    env = dict(os.environ)
    if Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        env["PURRA_JUPYTER_PYTHON"] = sys.executable
    run = subprocess.run([str(ROOT / "scripts" / "docs"), str(out)], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr  # -W: a broken reference or a failing cell fails it
    assert run.stdout.splitlines()[-1] == f"The site is built: open {out.resolve()}/index.html", run.stdout[-2000:]
    quickstart = page_text(out / "notebooks" / "quickstart.html")
    # outputs only a run of the cells gives: a write's result, the catalog's summary, a search hit's title
    assert "('committed', {'id': 'note-1', 'count': 1})" in quickstart
    assert "callable under PurrA" in quickstart
    assert "The PurrA output-schema profile" in quickstart
    assert "Closed session 'changes'." in quickstart
    # no kernel on a built page: a pending call shows its static view, never a widget error or a CDN's script
    assert "pending: decide in a running kernel" in quickstart and "Error displaying widget" not in quickstart
    scripts = re.findall(r'<script[^>]*\bsrc="([^"]+)"', (out / "notebooks" / "quickstart.html").read_text())
    assert scripts and all(src.startswith("../_static/") for src in scripts), scripts
    evaluate = page_text(out / "notebooks" / "evaluate.html")
    assert "mcp-server-time" in evaluate and "Traceback" not in evaluate
    api = (out / "api.html").read_text()  # autodoc's anchors: the class and its methods, from their docstrings
    for name in ("McpSession", "McpSession.call", "McpSession.evaluate", "connect", "ServerConfig", "OAuth"):
        assert f'id="purra_jupyter.{name}"' in api, name
    assert "One monitored connection to one MCP server" in page_text(out / "api.html")
    magics = page_text(out / "magics.html")
    for magic in ("%mcp_connect", "%mcp_call", "%%mcp_call", "%mcp_evaluate", "%mcp_disconnect", "--expect-digest"):
        assert magic in magics, magic
    assert "McpMagics.approval" in magics
    assert not machine_paths(out), machine_paths(out)


def machine_paths(site: Path) -> list[str]:
    """Each built file (a page, a notebook copy, a search index) that holds an absolute path of the machine that
    built it: the checkout's, the environment's or the home directory's (the kit shows ``{sys.executable}`` as
    ``python``, so a published page does not carry the builder's paths), with the path it holds."""
    paths = {str(ROOT.resolve()), str(ROOT), sys.prefix, str(Path(sys.executable).parent), str(Path.home())} - {"/"}
    # a path ends where a name does ("/root" is not in "notifications/roots/list_changed")
    held = {path: re.compile(re.escape(path) + r"(?![\w.-])") for path in sorted(paths)}
    found = []
    for file in sorted(site.rglob("*")):
        if file.is_file() and ".doctrees" not in file.parts and file.suffix in (".html", ".ipynb", ".js", ".txt"):
            text = file.read_text(errors="replace")
            found += [f"{file.relative_to(site)}: {path}" for path, pattern in held.items() if pattern.search(text)]
    return found


def test_the_guide_lists_the_frames_real_columns() -> None:
    """The guide names every column of ``Catalog.to_frame()`` and of an ``evaluate`` frame, in their order."""
    guide = (ROOT / "docs" / "guide.md").read_text()
    paragraph = " ".join(guide[guide.index("`s.catalog.to_frame()` has one row") :].split("\n\n")[0].split())
    named = re.findall(r"`([a-z_]+)`", paragraph)
    assert named[named.index("name_warning") : named.index("name_warning") + len(FRAME_COLUMNS)] == FRAME_COLUMNS
    assert named[named.index("ok") : named.index("ok") + len(RESULT_COLUMNS)] == list(RESULT_COLUMNS)


def test_the_readme_is_short_shows_pip_install_and_points_only_inside_the_repository() -> None:
    assert len(README.splitlines()) <= 200
    assert "pip install purra-jupyter" in README
    assert not re.search(r"(https?|ftp|file)://", README)  # no badge, no link out (a demo:// resource is no link)
    links = re.findall(r"\]\(([^)]+)\)", README)
    assert links
    for link in links:
        assert (ROOT / link).exists(), link
    for command in ("scripts/demo", "scripts/test", "scripts/docs"):
        assert (ROOT / command).exists() and os.access(ROOT / command, os.X_OK), command
    assert "Node.js 20" in README and "Python 3.11" in README


def test_the_license_the_readme_links_is_the_mit_license_pyproject_names() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert pyproject["license"] == "MIT" and pyproject["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n\nCopyright (c) 2026 the purra-jupyter developers")


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.DOTALL)


def test_the_readme_quickstart_runs_on_a_real_kernel(tmp_path: Path) -> None:
    """The README's magics block, one cell per paragraph as it says, on a real kernel against the demo server."""
    magics = next(block for block in code_blocks("python") if "%load_ext purra_jupyter" in block)
    cells = [nbformat.v4.new_code_cell(cell.strip()) for cell in magics.split("\n\n")]
    notebook = nbformat.v4.new_notebook(cells=cells)
    source, target = tmp_path / "readme.ipynb", tmp_path / "readme.executed.ipynb"
    nbformat.write(notebook, source)
    execute_notebook(source, target)  # fails on any error
    outputs = [(cell.source, output) for cell in nbformat.read(target, as_version=4).cells for output in cell.outputs]
    assert not [output for _, output in outputs if output.get("name") == "stderr"]
    shown = {source.splitlines()[0]: output for source, output in outputs if "data" in output}
    assert "application/vnd.purra.catalog+json" in shown["%mcp_catalog demo"]["data"]
    # the call nobody approved: its record, rewritten when the session closed, says that nothing was sent
    unapproved = shown['%mcp_call demo search_documents {"query": "PurrA", "limit": 3}']["data"]["text/plain"]
    assert unapproved.startswith("void (void: the session is closed; nothing was sent)")
    table = shown['hits = %mcp_call demo search_documents --yes {"query": "PurrA", "limit": 3}']["data"]["text/plain"]
    assert table.split()[:3] == ["id", "title", "score"] and "doc-4" in table
    resources = shown["%mcp_resources demo"]["data"]  # (plain text writes an address defanged: no frontend links it)
    assert "demo://documents/{id}" in resources["text/html"] and "demo[:]//documents/{id}" in resources["text/plain"]
    read = shown["%mcp_read demo demo://documents/doc-1"]["data"]["text/plain"]
    assert read.startswith("Resource demo demo[:]//documents/doc-1: 1 contents") and "Model Context Protocol" in read
    prompt = shown['%mcp_prompt demo summarize {"id": "doc-1"}']["data"]["text/plain"]
    assert "user: Summarize in one line:" in prompt
    closed = [output["text"] for source, output in outputs if source.startswith("%mcp_disconnect")]
    assert closed == ["Closed session 'demo'.\n"]


def test_the_readme_python_block_runs() -> None:
    python = next(block for block in code_blocks("python") if "pj.connect" in block)
    run = subprocess.run([sys.executable, "-c", python + "\nprint(e.ok, sorted(e.structured))"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True ['hits']"
