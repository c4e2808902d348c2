"""What a person sees: a real JupyterLab, driven by a headless Chromium, shows our renderers and the approval
widget, and no server string can run script in the page.

Needs Playwright (Python package only; its own browser download is not used) and Debian's Chromium at
``/usr/bin/chromium``. Screenshots of each state go to ``tests/artifacts/browser/``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import nbformat
import pytest
from conftest import BINDER_BUILD_GUARD, execute_notebook, follow_authorization, oauth_server, stop_tree

import purra_jupyter as pj
from purra_jupyter._base.wire import COMMITTED, ENVELOPE_MIME, RAW_RESULT_MIME, UNKNOWN, WIDGET_MIME
from purra_jupyter._purra.catalog import CALLABLE_UNDER
from purra_jupyter._purra.envelope import (
    EFFECT_NOTES,
    ENVELOPE_KIND,
    IMAGE_ALT,
    RAW_LABEL,
    SERVER_WORDS,
    Envelope,
    RawResult,
)
from purra_jupyter._ui.records import widget_labels
from purra_jupyter._ui.status import AGAIN as STATUS_AGAIN

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # reported by the fixture, so that the rest of the suite still runs
    sync_playwright = None

if TYPE_CHECKING:
    from playwright.sync_api import FrameLocator, Locator, Page

ROOT = Path(__file__).parent.parent
RAW_SERVER = ROOT / "tests" / "servers" / "raw_server.py"
ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"
JUPYTER = Path(sys.executable).parent / "jupyter"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
NOTEBOOK = "browser.ipynb"
STARTUP = 60.0  # seconds: JupyterLab, the page, the kernel
STEP = 60_000  # milliseconds: each wait in the browser (cells, widgets, renderers)
if sync_playwright is not None:  # every wait of an expect() is a hang guard, not Playwright's 5 s (a busy machine)
    expect.set_options(timeout=STEP)

# Our renderers' nodes, by the MIME type they draw: they mark themselves with it as JupyterLab's own renderers
# do, and their class proves that our renderer, not the text/html fallback, drew the output.
ENVELOPE = '.jp-PurraEnvelope[data-mime-type="application/vnd.purra.envelope+json"]'
CATALOG = '.jp-PurraCatalog[data-mime-type="application/vnd.purra.catalog+json"]'
RAW_RESULT = '.jp-PurraRawResult[data-mime-type="application/vnd.purra.raw-result+json"]'
OURS = ".jp-PurraRenderer"
XSS_SCRIPT = "<script>window.__pwned = 1</script>"
XSS_IMG = "<img src=x onerror=window.__pwned=1>"
XSS_SVG = '"><svg onload=window.__pwned=1>'
XSS_URI = "javascript:window.__pwned=1"
URL = "https://evil.example/phish?token=abc"  # in descriptions, results, errors and stderr: never a link
# (it lingers a moment: a child that exits within microseconds of its start makes asyncio's child watcher warn
# "Unknown child process pid" on the kernel's stderr, a race of asyncio's, not of the kit's)
URL_ON_STDERR = (
    f"import sys, time; sys.stderr.write('see {URL} for help\\n'); sys.stderr.flush(); time.sleep(0.5); sys.exit(3)"
)

# The notebook the browser runs, cell by cell. Every cell but "close" runs first; "close" runs after the click.
CELLS = {
    "imports": "import sys\nimport purra_jupyter as pj",
    "connect": 'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))',
    "catalog": "demo.catalog",
    "pending": 'pending = demo.call("search_documents", {"query": "PurrA envelope", "limit": 3})\npending',
    "image": 'demo.call("tiny_image", {}, raw=True, approve=True)',
    "xss_catalog": (
        f'xss = pj.connect(pj.ServerConfig("xss", command=sys.executable, args=[{str(RAW_SERVER)!r}, '
        '"--tools", "2", "--call-result", "xss"]))\nxss.catalog'
    ),
    "xss_envelope": 'xss.call("tool_000", {"x": "y"}, approve=True)',
    "xss_raw": 'xss.call("tool_001", {"x": "y"}, raw=True, approve=True)',
    "rpc_raw": (
        f'rpc = pj.connect(pj.ServerConfig("rpc", command=sys.executable, args=[{str(RAW_SERVER)!r}, '
        '"--call-result", "rpc-error"]))\nrpc.call("tool_000", {"x": "y"}, raw=True, approve=True)'
    ),
    "tool_error": f'demo.call("fail", {{"message": "backend exploded {XSS_SCRIPT} {URL}"}}, approve=True)',
    "url_stderr": f"%load_ext purra_jupyter\n%mcp_connect urls -- {{sys.executable}} -c {URL_ON_STDERR!r}",
    "close": (
        'for session in pj.sessions():\n    session.close("browser test done")\n'
        "(pending.state, pending.result.error_code, demo.state, xss.state)"
    ),
}
INDEX = {name: index for index, name in enumerate(CELLS)}

# JupyterLab settings for a reproducible page: every cell attached to the DOM (no windowing, so that the
# DOM assertions see all outputs on any 4.x), no news or update prompt (no network, no toast on screenshots).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab server on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    base_url: str
    token: str
    root: Path
    log: Path
    label: str = "lab"

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}?token={self.token}"

    def log_tail(self, size: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-size:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def jupyter_lab(jupyter: Path, home: Path, *, timeout: float = STARTUP) -> Iterator[Lab]:
    """Run ``jupyter lab`` (the given executable, so another environment can reuse this) under ``home``:
    its root dir, settings, workspaces and Jupyter/IPython dirs all live there. Stops it, its kernels and
    everything they started, whatever happens."""
    dirs = {name: home / name for name in ("root", "settings", "workspaces", "config", "data", "runtime", "ipython")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    for plugin, values in LAB_SETTINGS.items():
        target = dirs["settings"] / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    token = secrets.token_hex(24)
    port = free_port()
    command = [
        str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={dirs['root']}",
        "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
        "--ServerApp.disable_check_xsrf=False",
        f"--LabApp.user_settings_dir={dirs['settings']}", f"--LabApp.workspaces_dir={dirs['workspaces']}",
    ]  # fmt: skip
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "IPYTHONDIR": str(dirs["ipython"]),
    }
    log = home / "jupyter.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, env=env)
    lab = Lab(process, f"http://127.0.0.1:{port}", token, dirs["root"], log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                pytest.fail(f"jupyter lab exited with code {process.returncode}:\n{lab.log_tail()}")
            try:
                if httpx.get(lab.url("/api/status"), timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer within {timeout} s:\n{lab.log_tail()}")
            time.sleep(0.1)
        yield lab
    finally:
        stop_tree(process, timeout=timeout)


def code_notebook(sources: Iterable[str]) -> nbformat.NotebookNode:
    """A notebook of one code cell per source, for the python3 kernel."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return notebook


def write_code_notebook(path: Path, sources: Iterable[str]) -> None:
    nbformat.write(code_notebook(sources), path)


def write_notebook(path: Path) -> None:
    notebook = code_notebook(CELLS.values())
    notebook.cells[INDEX["url_stderr"]].metadata["tags"] = ["raises-exception"]  # a failed connect, on purpose
    nbformat.write(notebook, path)


@dataclass
class Browser:
    page: Page
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # uncaught exceptions in the page
    console: list[str] = field(default_factory=list)  # console errors and warnings, for diagnosis

    def cell(self, name: str) -> Locator:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(INDEX[name])

    def output(self, name: str, renderer: str) -> Locator:
        """The output of cell ``name`` that ``renderer`` (ENVELOPE, CATALOG or RAW_RESULT) drew."""
        return self.cell(name).locator(f".jp-OutputArea-output{renderer}")

    def notebook_js(self, body: str, arg: Any = None) -> Any:
        """Run ``body`` with ``app`` and ``panel`` (the open notebook) bound; returns its value."""
        script = f"async ([arg]) => {{ const app = window.jupyterapp; const panel = app.shell.currentWidget; {body} }}"
        return self.page.evaluate(script, [arg])

    def report_failure(self, name: str, lab: Lab) -> None:
        """What a failed test leaves to read: a screenshot ``name``, the page's errors and console, the server's log."""
        with suppress(Exception):
            self.screenshot(name)
        print(f"page errors: {self.errors}\nconsole: {self.console}\njupyter log:\n{lab.log_tail()}")

    def screenshot(self, name: str, target: Locator | None = None) -> Path:
        """The whole page (JupyterLab fits the viewport), with ``target`` scrolled to the top of the notebook."""
        if target is not None:
            target.evaluate("node => node.scrollIntoView({block: 'start'})")
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(params=["lab-4.6", "lab-4.4-binder"])
def lab(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab of the test environment (4.6), and of the Binder environment (4.4, repo2docker's base)."""
    jupyter = JUPYTER if request.param == "lab-4.6" else request.getfixturevalue("binder_env").venv / "bin" / "jupyter"
    with jupyter_lab(jupyter, tmp_path / "lab") as running:
        yield dataclasses.replace(running, label=request.param)


@contextlib.contextmanager
def chromium_page() -> Iterator[Browser]:
    """A headless Chromium's page, recording its dialogs, console warnings and errors (a test module's fixture)."""
    if sync_playwright is None:
        pytest.fail("the Python package playwright is missing: pip install -e '.[test]'")
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page(viewport={"width": 1400, "height": 1600})
            page.set_default_timeout(STEP)
            opened = Browser(page)

            def on_dialog(dialog: Any) -> None:
                if dialog.type == "beforeunload":  # JupyterLab's "leave the page?" when the test reloads it
                    dialog.accept()
                    return
                opened.dialogs.append(f"{dialog.type}: {dialog.message}")
                dialog.dismiss()

            def on_console(message: Any) -> None:
                if message.type in ("error", "warning"):
                    opened.console.append(f"{message.type}: {message.text}")

            page.on("dialog", on_dialog)
            page.on("console", on_console)
            page.on("pageerror", lambda error: opened.errors.append(error.stack or str(error)))
            yield opened
        finally:
            chromium.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium_page() as opened:
        yield opened


@pytest.mark.timeout(BINDER_BUILD_GUARD)  # run alone, its 4.4 case builds the Binder environment in its setup
def test_jupyterlab_shows_our_renderers_and_the_approval_widget_and_runs_no_server_script(
    lab: Lab, browser: Browser
) -> None:
    write_notebook(lab.root / NOTEBOOK)
    page = browser.page
    try:
        open_notebook(browser, lab, NOTEBOOK)
        # Everything above the "close" cell: the pending call must still wait for its click. The command is
        # not awaited here (page.evaluate has no timeout); the wait below has one, and stops at a failed cell.
        browser.notebook_js(
            "panel.content.activeCellIndex = arg; void app.commands.execute('notebook:run-all-above');", INDEX["close"]
        )
        page.wait_for_function(
            """(count) => {
                const cells = window.jupyterapp.shell.currentWidget.content.widgets.slice(0, count);
                const failed = document.querySelector('[data-mime-type="application/vnd.jupyter.error"]');
                return failed !== null || cells.every(cell => cell.model.executionCount !== null);
            }""",
            arg=INDEX["close"],
            timeout=STEP,
        )
        failures = page.locator(
            '.jp-OutputArea-output:is([data-mime-type="application/vnd.jupyter.error"], '
            '[data-mime-type="application/vnd.jupyter.stderr"])'
        )
        errors = [text for text in failures.all_inner_texts() if "McpSessionError: mcp_connect_failed" not in text]
        assert errors == [], errors
        expected_error = browser.cell("url_stderr").locator(  # JupyterLab draws an error as stderr text
            '.jp-OutputArea-output:is([data-mime-type="application/vnd.jupyter.error"], '
            '[data-mime-type="application/vnd.jupyter.stderr"])'
        )
        expect(expected_error).to_contain_text("McpSessionError: mcp_connect_failed", timeout=STEP)

        # The catalog, drawn by our renderer (not the text/html fallback).
        catalog = browser.output("catalog", CATALOG)
        expect(catalog).to_contain_text("PurrA catalog", timeout=STEP)
        for tool in ("search_documents", "tiny_image", "greet"):
            expect(catalog.locator("table.jp-PurraRenderer-table code", has_text=tool).first).to_be_visible()
        expect(catalog).to_contain_text(CALLABLE_UNDER)
        browser.screenshot(f"{lab.label}-01-run-all-catalog", catalog)

        # The approval widget: nothing ran yet; one click runs the call and shows its envelope inside the widget.
        approval = browser.cell("pending").locator(".purra-approval")
        expect(approval).to_contain_text("Approve this MCP call?", timeout=STEP)
        expect(browser.cell("pending").locator(LIVE)).to_have_count(1)  # mounted by our plugin (on 4.4 too)
        expect(approval).to_contain_text("search_documents")
        expect(approval.locator(".purra-approval-state")).to_have_text("pending")
        expect(approval.locator(OURS)).to_have_count(0)
        browser.screenshot(f"{lab.label}-02a-approval-pending", approval)
        click_settled(approval.get_by_role("button", name="Approve"))
        approved = browser.output("pending", ENVELOPE)  # the widget's output became the call's record
        expect(approved).to_contain_text("search_documents", timeout=STEP)
        expect(approved.locator(".jp-PurraRenderer-decision")).to_contain_text("approved (approved by a click) at ")
        expect(approved.locator(".jp-PurraRenderer-header")).to_contain_text("ok")
        expect(approved.locator("table.jp-PurraRenderer-table")).to_have_count(1)  # the hits, as records
        expect(approval).to_have_count(0)
        browser.screenshot(f"{lab.label}-02b-approved-envelope", approved)

        # The raw image: our raw-result renderer, its label, and the PNG as a data URI.
        image = browser.output("image", RAW_RESULT)
        expect(image).to_contain_text(RAW_LABEL, timeout=STEP)
        expect(image).to_contain_text("tiny_image")
        png = image.locator("img.jp-PurraRenderer-image")
        expect(png).to_have_count(1)
        assert (png.get_attribute("src") or "").startswith("data:image/png;base64,")
        assert png.evaluate("img => img.complete && img.naturalWidth") == 4  # the 4x4 checkerboard decoded
        browser.screenshot(f"{lab.label}-03-raw-tiny-image", image)

        # XSS: names, descriptions, text and structured values with payloads, an SVG, markup as PNG data and
        # a javascript: link, all shown as text.
        xss_catalog = browser.output("xss_catalog", CATALOG)
        xss_envelope = browser.output("xss_envelope", ENVELOPE)
        xss_raw = browser.output("xss_raw", RAW_RESULT)
        expect(xss_catalog.locator("code", has_text=XSS_IMG)).to_be_visible(timeout=STEP)
        expect(xss_catalog).to_contain_text(XSS_SCRIPT)  # the description
        expect(xss_envelope.locator("pre", has_text=XSS_SCRIPT)).to_be_visible(timeout=STEP)
        expect(xss_envelope.locator("table.jp-PurraRenderer-table td", has_text=XSS_SVG).first).to_be_visible()
        expect(xss_raw).to_contain_text(RAW_LABEL, timeout=STEP)
        for payload in (XSS_SCRIPT, XSS_IMG, XSS_SVG, XSS_URI):
            expect(xss_raw.locator("pre", has_text=payload).first).to_be_visible()
        expect(xss_raw).to_contain_text("image/svg+xml (28 base64 chars) — not shown")
        expect(xss_raw).to_contain_text("image/png (35 base64 chars) — not shown")
        expect(xss_raw).to_contain_text(f"uri: {XSS_URI}")
        browser.screenshot(f"{lab.label}-04a-xss-catalog-and-envelope", xss_catalog)
        browser.screenshot(f"{lab.label}-04b-xss-raw-result", xss_raw)

        # A JSON-RPC error on the raw path: the server's own words, labelled as such, drawn as text.
        rpc_raw = browser.output("rpc_raw", RAW_RESULT)
        expect(rpc_raw).to_contain_text(SERVER_WORDS, timeout=STEP)
        expect(rpc_raw.locator("pre", has_text="JSON-RPC error -32603: getaddrinfo ENOTFOUND")).to_be_visible()
        expect(rpc_raw.locator("pre", has_text=XSS_SCRIPT)).to_be_visible()
        expect(rpc_raw).to_contain_text("mcp_protocol_error")
        browser.screenshot(f"{lab.label}-04c-raw-server-error", rpc_raw)

        # A tool error on the PurrA path: the envelope stays empty, the server's text is shown beside it, as text.
        tool_error = browser.output("tool_error", ENVELOPE)
        expect(tool_error).to_contain_text(SERVER_WORDS, timeout=STEP)
        expect(tool_error.locator("pre", has_text=f"backend exploded {XSS_SCRIPT}")).to_be_visible()
        expect(tool_error.locator(".jp-PurraRenderer-header")).to_contain_text("mcp_tool_error")
        browser.screenshot(f"{lab.label}-04d-tool-error-server-text", tool_error)

        # URLs from the server (stderr, descriptions, results, errors) are shown, as text: never a link.
        label = "what the server said (its own words, shown as text)"
        stderr_block = browser.cell("url_stderr").locator(".jp-OutputArea-output", has_text=label)
        browser.screenshot(f"{lab.label}-04e-url-on-stderr-as-text", browser.cell("url_stderr"))  # scrolls to it
        expect(stderr_block.locator("small")).to_have_text(label)  # the escaped HTML block, not plain text
        expect(stderr_block.locator("pre", has_text=f"see {URL} for help")).to_be_visible()
        assert URL not in expected_error.inner_text()  # the error message itself quotes no server text
        for name, renderer in (("xss_catalog", CATALOG), ("xss_raw", RAW_RESULT), ("rpc_raw", RAW_RESULT),
                               ("tool_error", ENVELOPE)):  # fmt: skip
            expect(browser.output(name, renderer)).to_contain_text(URL)
        links = page.evaluate(
            "(url) => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea a')]"
            ".filter(a => (a.getAttribute('href') || '').includes('evil.example') || a.textContent.includes(url))"
            ".map(a => a.outerHTML)",
            URL,
        )
        assert links == []

        hazards = page.evaluate(
            """() => {
                const outputs = '.jp-Notebook .jp-OutputArea';
                const ours = '.jp-PurraRenderer';
                const allowed = /^data:image\\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+\\/]*={0,2}$/;
                return {
                    pwned: typeof window.__pwned,
                    scripts: document.querySelectorAll(`${outputs} script`).length,
                    handlers: document.querySelectorAll(`${outputs} [onerror], ${outputs} [onload]`).length,
                    links: [...document.querySelectorAll('a[href]')].filter(a => a.protocol === 'javascript:').length,
                    fallbacks: document.querySelectorAll('.jp-Notebook [data-mime-type="text/html"]').length,
                    embedded: document.querySelectorAll(
                        `${ours} svg, ${ours} iframe, ${ours} object, ${ours} embed`).length,
                    images: [...document.querySelectorAll(`${outputs} img`)].map(img => img.getAttribute('src'))
                        .filter(src => !allowed.test(src || '')),
                };
            }"""
        )
        assert hazards == {
            "pwned": "undefined",
            "scripts": 0,
            "handlers": 0,
            "links": 0,
            # every output with a text/html fallback was drawn by our renderers instead; the two HTML outputs are
            # the failed connect's line and its stderr block (escaped text in a <pre>, where nothing becomes a link)
            "fallbacks": 2,
            "embedded": 0,
            "images": [],
        }
        assert browser.dialogs == []
        assert_contrast(browser, lab.label)
        ours = page.locator(f".jp-Notebook {OURS} img")
        expect(ours).to_have_count(1)  # only the demo's checkerboard, neither the SVG nor the markup "PNG"

        # Close both sessions in the kernel, from the last cell, now that the approval is settled.
        browser.notebook_js(
            "panel.content.activeCellIndex = arg; void app.commands.execute('notebook:run-cell');", INDEX["close"]
        )
        expect(browser.cell("close").locator(".jp-OutputArea-output")).to_contain_text(
            "('done', None, 'closed', 'closed')", timeout=STEP
        )
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert browser.dialogs == []
        assert browser.errors == []  # nothing threw in the page (a renderer that throws would show here)
    except BaseException:
        browser.report_failure(f"{lab.label}-failure", lab)
        raise


# --- the saved notebook is the record ---------------------------------------------------------------------

QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
WIDGET_ERROR = "Error displaying widget"


def quickstart_cell(starts: str) -> int:
    """The index of the quickstart's code cell whose source starts with ``starts``."""
    cells = nbformat.read(QUICKSTART, as_version=4).cells
    [index] = [i for i, cell in enumerate(cells) if cell.cell_type == "code" and cell.source.startswith(starts)]
    return index


QUICKSTART_NOTE = "written from the quickstart"  # the note the quickstart adds before it shows the notes view


GUARD = "data-purra-guard"  # labextension/src/guard.ts: GUARD_ATTRIBUTE
IGNORED = "data-purra-guard-ignored"  # labextension/src/guard.ts: IGNORED_ATTRIBUTE


@contextlib.contextmanager
def notebook_run(
    browser: Browser, tmp_path: Path, name: str, cells: dict[str, str]
) -> Iterator[Callable[[str], Locator]]:
    """JupyterLab on a notebook of ``cells`` (by name), every cell run; yields the cell of a name. A failure inside
    leaves a screenshot ``{name}-failure``, the page's errors and the server's log."""
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        write_code_notebook(lab.root / f"{name}.ipynb", cells.values())
        try:
            open_notebook(browser, lab, f"{name}.ipynb")
            run_all(browser)
            yield lambda cell: browser.page.locator(".jp-Notebook .jp-Cell").nth(list(cells).index(cell))
        except BaseException:
            browser.report_failure(f"{name}-failure", lab)
            raise


def click_settled(button: Locator, tries: int = 5) -> None:
    """A person's click on a button of the kit's outputs: once it is on screen and has been still there (the click
    guard, labextension/src/guard.ts, ignores a click on a button that has just appeared or moved), and again, as a
    person would, when something moved it in the meantime (an output above that changed) and the guard ignored it."""
    guard = button.locator(f"xpath=ancestor::*[@{GUARD}][1]")
    for _ in range(tries):
        expect(button).to_be_enabled()
        try:
            button.scroll_into_view_if_needed()
        except PlaywrightError as error:  # the output was drawn anew meanwhile: find the button again
            if "not attached" not in str(error):
                raise
            continue
        expect(guard).to_have_attribute(GUARD, "ready")
        node = guard.element_handle()
        ignored = node.get_attribute(IGNORED)
        button.click()
        counted = "(node, [name, before]) => !node.isConnected || node.getAttribute(name) === before"
        if node.evaluate(counted, [IGNORED, ignored]):
            return
    raise AssertionError(f"the guard ignored {tries} clicks on {button}, or it kept being drawn anew")


def app_view(cell: Locator) -> FrameLocator:
    """The view's own frame, inside the sandbox proxy of ``cell``'s view output (a tool's own view, MCP Apps)."""
    proxy = cell.locator('.jp-PurraApp[data-mime-type="application/vnd.purra.app+json"] iframe.jp-PurraApp-frame')
    return proxy.content_frame.locator("iframe").content_frame


def open_notebook(browser: Browser, lab: Lab, path: str, *, ui: str = "lab") -> None:
    """Open ``path`` in JupyterLab (``ui="lab"``) or Notebook 7 (``"notebook"``, served by the same server)
    and wait for its kernel to be idle."""
    browser.page.goto(lab.url(f"/lab/tree/{path}" if ui == "lab" else f"/notebooks/{path}"))
    browser.page.wait_for_function(
        """(path) => {
            const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const kernel = panel && panel.context && panel.context.path === path
                && panel.sessionContext.isReady && panel.sessionContext.session
                && panel.sessionContext.session.kernel;
            return Boolean(kernel) && kernel.status === 'idle';
        }""",
        arg=path,
        timeout=STEP,
    )


def run_all(browser: Browser) -> None:
    """Run every cell and wait until each has run (or one failed, which the caller's checks then show)."""
    browser.notebook_js("void app.commands.execute('notebook:run-all-cells');")
    browser.page.wait_for_function(
        """() => {
            const cells = window.jupyterapp.shell.currentWidget.content.widgets
                .filter(cell => cell.model.type === 'code');
            const failed = document.querySelector('[data-mime-type="application/vnd.jupyter.error"]');
            return failed !== null || cells.every(cell => cell.model.executionCount !== null);
        }""",
        timeout=STEP * 2,
    )
    failures = browser.page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
    assert failures.count() == 0, failures.all_inner_texts()


@pytest.mark.timeout(300)  # a hang guard: the whole quickstart run, clicked, saved and reopened (about a minute)
def test_every_decision_clicked_in_the_quickstart_is_in_the_saved_file(tmp_path: Path, browser: Browser) -> None:
    """Run the quickstart, decide each approval by a click (approve, deny, a batch, a form reviewed six times
    with an edit each time), save, stop the kernel, reload: every decision and result is drawn from the file."""
    cells = {
        "approve": quickstart_cell("pending ="),
        "deny": quickstart_cell("to_deny ="),
        "batch": quickstart_cell("queries ="),
        "form": quickstart_cell("%mcp_call demo search_documents --form"),
        "connect": quickstart_cell("demo = %mcp_connect"),
        "catalog": quickstart_cell("catalog = %mcp_catalog demo"),
        "log": quickstart_cell("%mcp_log demo"),
        "raw": quickstart_cell("%mcp_call demo tiny_image --raw"),
        "bind-writes": quickstart_cell("%mcp_bind demo add_note --write"),
        "destructive": quickstart_cell("to_delete ="),
        "view": quickstart_cell("notes = %mcp_call demo list_notes"),
    }
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        (lab.root / "quickstart.ipynb").write_text(QUICKSTART.read_text())
        page = browser.page
        nth = lambda name: page.locator(".jp-Notebook .jp-Cell").nth(cells[name])  # noqa: E731
        try:
            open_notebook(browser, lab, "quickstart.ipynb")
            run_all(browser)
            # The destructive call's approval: its effect, the binding identity, the write catalog's digest it is
            # bound to, the scope and the exact arguments, all on the page.
            digest = re.search(r"\(2, '([0-9a-f]{64})'\)", nth("bind-writes").inner_text()).group(1)
            destructive = nth("destructive").locator(".purra-approval")
            expect(destructive.locator(".purra-effect-destructive")).to_contain_text("DESTRUCTIVE", timeout=STEP)
            expect(destructive.locator(".purra-effect-destructive")).to_be_visible()
            for shown in ("PurrA destructive tool (confirm policy)", "demo/delete_note (revision ", digest,
                          "notes (revision 1)", '"id": "note-1"'):  # fmt: skip
                expect(destructive).to_contain_text(shown)
            notes_view = app_view(nth("view"))  # the demo's own view, showing the note added above
            expect(notes_view.locator("#notes")).to_have_text(f"note-1: {QUICKSTART_NOTE}", timeout=STEP)
            shots = {"status-line": nth("connect"), "catalog": nth("catalog"), "approval-pending": nth("approve"),
                     "batch-pending": nth("batch"), "form": nth("form"), "log": nth("log"),
                     "destructive-pending": nth("destructive")}  # fmt: skip
            assert_contrast(browser, "quickstart-pending", shots)
            for name, button in (("approve", "Approve"), ("deny", "Deny"), ("batch", "Approve"),
                                 ("destructive", "Approve")):  # fmt: skip
                approval = nth(name).locator(".purra-approval")
                expect(approval.locator(".purra-approval-state")).to_have_text("pending", timeout=STEP)
                click_settled(approval.get_by_role("button", name=button))
            expect(nth("approve").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text(
                "approved (approved by a click)", timeout=STEP
            )
            expect(nth("deny").locator(ENVELOPE)).to_contain_text("mcp_approval_denied", timeout=STEP)
            deleted = nth("destructive").locator(ENVELOPE)
            expect(deleted.locator(".jp-PurraRenderer-decision")).to_contain_text("(destructive)", timeout=STEP)
            expect(deleted.locator(".jp-PurraRenderer-effect")).to_have_text(
                f"effect: {COMMITTED}{EFFECT_NOTES[COMMITTED]}"
            )
            expect(nth("batch").locator(".purra-decision")).to_contain_text("approved", timeout=STEP)
            expect(nth("batch").locator("table.dataframe")).to_have_count(1)

            # The form: review, approve, edit, review again — the reviewed call shows every time (the race).
            form = nth("form")
            inputs = form.locator(".purra-form input[type='text']")
            inputs.nth(0).fill("PurrA")
            for limit in range(1, 7):
                inputs.nth(1).fill(str(limit))
                review = form.get_by_role("button", name="Review call")
                expect(review).to_be_enabled(timeout=STEP)
                click_settled(review)
                reviewed = form.locator(".purra-approval")
                expect(reviewed).to_contain_text(f'"limit": {limit}', timeout=STEP)
                expect(reviewed.locator(".purra-approval-state")).to_have_text("pending")
                click_settled(reviewed.get_by_role("button", name="Approve"))
                record = form.locator(ENVELOPE)
                expect(record.locator(".jp-PurraRenderer-decision")).to_contain_text("approved", timeout=STEP)
                expect(form.locator(".purra-approval")).to_have_count(0)
            browser.screenshot("quickstart-05-form-reviewed-and-approved", form)
            shots = {"approval-approved": nth("approve"), "approval-denied": nth("deny"), "raw-result": nth("raw"),
                     "batch-approved": nth("batch"), "form-approved": nth("form"),
                     "destructive-approved": nth("destructive")}  # fmt: skip
            assert_contrast(browser, "quickstart-decided", shots)

            browser.notebook_js("await app.commands.execute('docmanager:save');")
            browser.notebook_js("await panel.sessionContext.shutdown();")
            saved = nbformat.read(lab.root / "quickstart.ipynb", as_version=4)
            for name in ("approve", "deny", "form", "destructive"):
                mimes = [o.get("data", {}) for o in saved.cells[cells[name]].outputs]
                envelopes = [d["application/vnd.purra.envelope+json"] for d in mimes
                             if "application/vnd.purra.envelope+json" in d]  # fmt: skip
                assert len(envelopes) == 1 and envelopes[0]["decision"]["how"].endswith("by a click"), name
            batch_html = " ".join(o["data"].get("text/html", "") for o in saved.cells[cells["batch"]].outputs)
            assert "purra-decision" in batch_html and "dataframe" in batch_html

            page.reload()
            open_notebook(browser, lab, "quickstart.ipynb")  # a new kernel: no widget of the old one exists
            expect(nth("approve").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text(
                "approved (approved by a click)", timeout=STEP
            )
            expect(nth("approve").locator(ENVELOPE)).to_contain_text("search_documents")
            expect(nth("deny").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text(
                "denied (denied by a click)"
            )
            expect(nth("batch").locator(".purra-decision")).to_contain_text("approved (approved by a click)")
            expect(nth("batch").locator("table.dataframe")).to_have_count(1)
            expect(nth("form").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text("approved")
            expect(nth("destructive").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text(
                "approved (approved by a click)"
            )
            # the kit's words come from the saved payload's labels, not from a kernel
            expect(nth("destructive").locator(".jp-PurraRenderer-effect")).to_have_text(
                f"effect: {COMMITTED}{EFFECT_NOTES[COMMITTED]}"
            )
            expect(nth("raw").locator(RAW_RESULT)).to_contain_text(RAW_LABEL)
            expect(app_view(nth("view")).locator("#notes")).to_have_text(f"note-1: {QUICKSTART_NOTE}")
            for name in ("approve", "deny", "batch"):
                expect(nth(name)).not_to_contain_text(WIDGET_ERROR)
            browser.screenshot("quickstart-06-reloaded-approved", nth("approve"))
            browser.screenshot("quickstart-07-reloaded-batch", nth("batch"))
            assert browser.errors == []
        except BaseException:
            browser.report_failure("quickstart-failure", lab)
            raise


# --- the HTML export (nbviewer, GitHub, nbconvert) -----------------------------------------------------------

# What an export must never show: constructor reprs of our objects, enum reprs, a widget that needs a kernel.
EXPORT_LEAKS = ("PendingCall(", "<PendingCall", "SchemaForm(", "SessionStatus(", "<ToolExecutionMode",
                "Error displaying widget", "ApprovalWidget(")  # fmt: skip


@pytest.mark.parametrize("name", ["quickstart", "evaluate"])
def test_the_html_export_of_an_executed_notebook_reads_without_a_kernel(
    name: str, tmp_path: Path, browser: Browser
) -> None:
    executed = tmp_path / f"{name}.ipynb"
    execute_notebook(ROOT / "notebooks" / f"{name}.ipynb", executed)
    for theme in ("light", "dark"):
        target = tmp_path / f"{name}-{theme}.html"
        export = subprocess.run(
            [str(JUPYTER), "nbconvert", "--to", "html", f"--HTMLExporter.theme={theme}", str(executed),
             "--output", target.name, "--output-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert export.returncode == 0, export.stderr
        browser.page.goto(target.as_uri())
        shown = browser.page.locator("body").inner_text()
        for leak in EXPORT_LEAKS:
            assert leak not in shown, (theme, leak)
        if name == "quickstart":
            # the approvals nobody clicked say so, in the words of their static view
            assert shown.count("pending: decide in a running kernel") == 4, theme
            assert "argument form for search_documents: a PurrA read call; it needs a running kernel" in shown
            assert "ready · session: demo" in shown  # the status line's last state
        print(f"export screenshot: {browser.screenshot(f'export-{name}-{theme}')}")


# --- contrast: every element of ours reads in the light and the dark theme (WCAG AA: 4.5:1 for text) -------

CONTRAST_JS = """
() => {
    const parse = (value) => {
        const m = value.match(/rgba?\\(([^)]+)\\)/);
        if (!m) return null;
        const [r, g, b, a] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
        return {r, g, b, a: a === undefined ? 1 : a};
    };
    const luminance = ({r, g, b}) => {
        const [R, G, B] = [r, g, b].map(v => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * R + 0.7152 * G + 0.0722 * B;
    };
    const background = (node) => {
        for (let el = node; el; el = el.parentElement) {
            const color = parse(getComputedStyle(el).backgroundColor);
            if (color && color.a > 0.5) return color;
        }
        return {r: 255, g: 255, b: 255, a: 1};
    };
    const ours = [...document.querySelectorAll('.jp-Notebook [class*="purra-"], .jp-Notebook [class*="jp-Purra"]')];
    const nodes = new Set();
    for (const root of ours) {
        nodes.add(root);
        root.querySelectorAll('*').forEach(n => nodes.add(n));
    }
    const low = [];
    for (const node of nodes) {
        const own = [...node.childNodes].some(c => c.nodeType === 3 && c.textContent.trim());
        if (!own || node.offsetParent === null) continue;
        const fg = parse(getComputedStyle(node).color), bg = background(node);
        const [l1, l2] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
        const ratio = (l1 + 0.05) / (l2 + 0.05);
        const text = node.textContent.trim().slice(0, 40);
        if (ratio < 4.5) low.push(`${ratio.toFixed(2)} ${node.tagName}.${node.className} "${text}"`);
    }
    return {checked: nodes.size, low};
}
"""


# The theme is applied: its name is set, our colour variables resolve, and the page's background is as dark
# (or as light) as the theme says; no event tells when a theme's stylesheet took effect. And the splash screen
# JupyterLab shows during a theme change is gone: a screenshot would show it, and a theme change within its
# 200-ms fade-out makes JupyterLab's own splash code remove the element twice (an uncaught NotFoundError).
THEME_APPLIED_JS = """
([theme, dark]) => {
    if (document.body.dataset.jpThemeName !== theme) return false;
    if (document.getElementById('jupyterlab-splash')) return false;
    if (!getComputedStyle(document.body).getPropertyValue('--purra-ok-color').trim()) return false;
    for (let el = document.querySelector('.jp-Notebook'); el; el = el.parentElement) {
        const m = getComputedStyle(el).backgroundColor.match(/[\\d.]+/g);
        if (m && (m.length < 4 || Number(m[3]) > 0.5)) {
            const mean = (Number(m[0]) + Number(m[1]) + Number(m[2])) / 3;
            return dark ? mean < 80 : mean > 180;
        }
    }
    return false;
}
"""


def assert_contrast(browser: Browser, label: str, shots: dict[str, Locator] | None = None) -> None:
    """In the light and the dark theme, every text of ours (a class with ``purra-`` or ``jp-Purra``) has a
    contrast of at least 4.5:1 on its background; a screenshot of the page, and of each of ``shots``, in each
    theme (listed in the test log). Ends in the light theme."""
    for theme, short in (("JupyterLab Dark", "dark"), ("JupyterLab Light", "light")):
        browser.notebook_js("await app.commands.execute('apputils:change-theme', {theme: arg});", theme)
        browser.page.wait_for_function(THEME_APPLIED_JS, arg=[theme, short == "dark"], timeout=STEP)
        contrast = browser.page.evaluate(CONTRAST_JS)
        print(f"contrast screenshot: {browser.screenshot(f'{label}-contrast-{short}')}")
        for name, target in (shots or {}).items():
            print(f"screenshot: {browser.screenshot(f'{label}-{name}-{short}', target)}")
        assert contrast["checked"] > 20 and contrast["low"] == [], (theme, contrast)


def test_notebook_7_draws_our_renderers_and_an_approval_click_settles(tmp_path: Path, browser: Browser) -> None:
    """The quickstart in Notebook 7 (Binder may open either interface): the catalog and results through our
    renderers, and a click on Approve turns the approval into its record."""
    approve, catalog = quickstart_cell("pending ="), quickstart_cell("catalog = %mcp_catalog demo")
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        (lab.root / "quickstart.ipynb").write_text(QUICKSTART.read_text())
        page = browser.page
        nth = lambda index: page.locator(".jp-Notebook .jp-Cell").nth(index)  # noqa: E731
        try:
            open_notebook(browser, lab, "quickstart.ipynb", ui="notebook")
            assert page.locator("#main-panel, .jp-NotebookPanel").count() > 0 and "/notebooks/" in page.url
            run_all(browser)
            expect(nth(catalog).locator(CATALOG)).to_contain_text("PurrA catalog", timeout=STEP)
            approval = nth(approve).locator(".purra-approval")
            expect(approval.locator(".purra-approval-state")).to_have_text("pending", timeout=STEP)
            browser.screenshot("notebook7-01-pending", nth(approve))
            click_settled(approval.get_by_role("button", name="Approve"))
            record = nth(approve).locator(ENVELOPE)
            expect(record.locator(".jp-PurraRenderer-decision")).to_contain_text("approved (approved by a click)",
                                                                                  timeout=STEP)  # fmt: skip
            expect(record.locator("table.jp-PurraRenderer-table")).to_have_count(1)
            browser.screenshot("notebook7-02-approved", nth(approve))
            # Notebook 7.6 itself throws once while loading its settings ("reading 'schema'", in notebook_core,
            # with or without our extension): only an error from our code would be ours.
            assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
            assert all("notebook_core" in error for error in browser.errors), browser.errors
        except BaseException:
            browser.report_failure("notebook7-failure", lab)
            raise


# --- a record's arguments, and a catalog that fits its area ------------------------------------------------------

AREA = 950  # px: the notebook area's width the catalog must fit (the 953 px, file browser open)
LONG = 200  # characters of one unbroken tool name (over the 128 PurrA binds: it also gets a reason)
FIT_CELLS = {
    "connect": "import sys\nimport purra_jupyter as pj\n"
    'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))',
    "pending": 'pending = demo.call("search_documents", {"query": "what was sent", "limit": 3})\npending',
    "catalog": (
        f'wide = pj.connect(pj.ServerConfig("wide", command=sys.executable, args=[{str(RAW_SERVER)!r}, '
        f'"--tools", "3", "--long-name", "{LONG}", "--description-bytes", "400"]))\nwide.catalog'
    ),
}

# Whether each node's content fits its width: the catalog, its output area, and the notebook's scrolled node.
OVERFLOW_JS = """(catalog) => {
    const nodes = {
        catalog,
        output: catalog.closest('.jp-OutputArea-output'),
        outputArea: catalog.closest('.jp-OutputArea'),
        notebook: catalog.closest('.jp-WindowedPanel-outer, .jp-Notebook'),
    };
    return Object.fromEntries(Object.entries(nodes).map(
        ([name, node]) => [name, node ? [node.scrollWidth, node.clientWidth] : null]));
}"""


# The words of ``node`` (24 characters at most: an unbroken token longer than a column may break) drawn on more than
# one line: a word broken inside ("idempoten/t"); not one a line may end in (after a hyphen or a slash: "in-/memory"),
# nor an opened schema's JSON, a tree in a narrow column.
BROKEN_WORDS_JS = """(node) => {
    const broken = [];
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
        if (text.parentElement.closest('.jp-PurraCatalog-schemas')) continue;
        for (const word of text.data.matchAll(/\\S{1,24}(?!\\S)/g)) {
            if (word.index > 0 && !/\\s/.test(text.data[word.index - 1])) continue;  // (the tail of a longer one)
            if (/[-/]/.test(word[0])) continue;
            const range = document.createRange();
            range.setStart(text, word.index);
            range.setEnd(text, word.index + word[0].length);
            const boxes = Array.from(range.getClientRects()).filter(box => box.width > 0);
            const lines = new Set(boxes.map(box => Math.round(box.top)));
            if (lines.size > 1) broken.push(word[0]);
        }
    }
    return broken;
}"""


def fit_notebook_area(browser: Browser, width: int) -> int:
    """Resize the page until the open notebook's panel is ``width`` px wide (the side bars stay); its width."""
    page = browser.page
    measure = "() => window.jupyterapp.shell.currentWidget.node.clientWidth"
    for _ in range(4):
        area = page.evaluate(measure)
        if abs(area - width) <= 2:
            break
        viewport = page.viewport_size or {"width": 1400, "height": 1600}
        page.set_viewport_size({"width": viewport["width"] + width - area, "height": viewport["height"]})
        page.wait_for_function(f"() => ({measure})() !== {area}", timeout=STEP)
    return page.evaluate(measure)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_a_record_shows_its_arguments_and_the_catalog_fits_and_searches(
    ui: str, tmp_path: Path, browser: Browser
) -> None:
    """In JupyterLab and Notebook 7: the record of an approved call shows the arguments sent (folded, the digest
    kept); a catalog with an unbroken 200-character name and description, its reasons and schemas open, has no
    horizontal scroll in a 950 px notebook area; its search narrows the rows."""
    page = browser.page
    cell = lambda name: page.locator(".jp-Notebook .jp-Cell").nth(list(FIT_CELLS).index(name))  # noqa: E731
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        write_code_notebook(lab.root / "fit.ipynb", FIT_CELLS.values())
        try:
            open_notebook(browser, lab, "fit.ipynb", ui=ui)
            run_all(browser)
            click_settled(cell("pending").locator(".purra-approval").get_by_role("button", name="Approve"))
            record = cell("pending").locator(ENVELOPE)
            expect(record.locator(".jp-PurraRenderer-decision")).to_contain_text("arguments digest", timeout=STEP)
            arguments = record.locator(".jp-PurraRenderer-arguments")
            expect(arguments.locator("summary").first).to_contain_text("arguments (sent exactly as shown):")
            arguments.locator("summary").first.click()
            expect(arguments).to_contain_text('"what was sent"')
            expect(arguments).to_contain_text("limit: 3")

            catalog = cell("catalog").locator(CATALOG)
            expect(catalog.locator("tbody tr")).to_have_count(3, timeout=STEP)
            assert fit_notebook_area(browser, AREA) == AREA
            for summary in catalog.locator("tbody summary").all():  # reasons, long description, schemas: open
                summary.click()
            expect(catalog.locator("tbody details[open]")).to_have_count(catalog.locator("tbody details").count())
            expect(catalog).to_contain_text("additionalProperties: false")  # a schema, opened
            sizes = catalog.evaluate(OVERFLOW_JS)
            assert all(size is not None and size[0] <= size[1] for size in sizes.values()), sizes
            assert catalog.evaluate(BROKEN_WORDS_JS) == []  # words wrap between words: only the long name breaks
            reasons = catalog.locator("thead th").last  # at least its least width (catalog.ts): 14em of 13 px
            assert reasons.text_content() == "reasons" and (reasons.bounding_box() or {"width": 0})["width"] >= 14 * 13
            browser.screenshot(f"{ui}-catalog-fits-{AREA}", cell("catalog"))

            search = catalog.get_by_role("searchbox")
            search.fill("tool_002")
            expect(catalog.locator("tbody tr:not([hidden])")).to_have_count(1)
            expect(catalog.locator("tbody tr:not([hidden]) code")).to_have_text("tool_002")
            search.fill("long_n")
            expect(catalog.locator("tbody tr:not([hidden]) code")).to_have_text("long_" + "n" * (LONG - 5))
            expect(catalog).to_contain_text("showing 1 of 3")
            assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
        except BaseException:
            browser.report_failure(f"{ui}-fit-failure", lab)
            raise


def test_the_catalogs_html_fallback_wraps_between_words_and_groups_a_shared_reason_at_950_px(
    browser: Browser,
) -> None:
    """The catalog's ``text/html`` (classic Notebook, VS Code, nbviewer) at 950 px, three tools with long descriptions
    and the same five reasons: no word breaks inside, the reasons column is at least 16em, the reasons are shown once,
    and the page does not scroll sideways."""
    from mcp import types
    from mcp.server.lowlevel import Server

    words = "Returns the idempotent listing of every document in the store with its title and size. " * 3
    options = {f"option_{number}": {"type": "string", "default": "x"} for number in range(4)}
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": options}
    server: Server[Any] = Server("wide")

    @server.list_tools()
    async def listed() -> list[types.Tool]:
        return [types.Tool(name=f"search_documents_{n}", title="Search the documents by their words",
                           description=words, inputSchema=schema) for n in range(3)]  # fmt: skip

    with pj.connect(pj.ServerConfig("wide", server=server)) as session:
        html = session.catalog._repr_mimebundle_()["text/html"]
    page = browser.page
    page.set_content(f"<!doctype html><div id='area' style='width:{AREA}px;font-size:13px'>{html}</div>")
    area = page.locator("#area")
    assert area.evaluate(BROKEN_WORDS_JS) == []
    reasons = page.locator("thead th").last
    assert reasons.text_content() == "reasons" and (reasons.bounding_box() or {"width": 0})["width"] >= 16 * 13
    assert area.evaluate("node => node.scrollWidth <= node.clientWidth")
    assert page.get_by_text("Shared by 3 tools:").count() == 5 and page.locator("tbody li").count() == 0


# --- widget outputs without their kernel ------------------------------------------------------------------

WIDGET_CELLS = {
    "connect": (
        "import sys\nimport purra_jupyter as pj\n"
        'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))'
    ),
    "pending": 'demo.call("search_documents", {"query": "PurrA envelope", "limit": 3})',
    "form": 'demo.form("search_documents")',
    "fresh": 'demo.call("echo", {"text": "hi"})',
    "status": "demo.status_widget()",
}
LIVE = f'[data-mime-type="{WIDGET_MIME}"] .purra-approval'  # ipywidgets' approval, mounted by our renderer
STATIC = f'[data-mime-type="{WIDGET_MIME}"] .jp-PurraWidget-static'
APPROVAL_WORDS = widget_labels("run the cell again to decide")
FORM_WORDS = widget_labels("run the cell again to fill in the form")
STATUS_WORDS = widget_labels(STATUS_AGAIN)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_a_widget_whose_kernel_is_gone_shows_its_static_view_and_dead_buttons(
    ui: str, tmp_path: Path, browser: Browser
) -> None:
    """Live while its kernel holds it (a click settles a call); after a kernel restart, the static view with
    its buttons disabled and why; saved, kernel shut down, page reloaded: the static view again (tool,
    arguments, "pending"), and no "Error displaying widget" anywhere."""
    notebook = code_notebook(WIDGET_CELLS.values())
    index = {name: i for i, name in enumerate(WIDGET_CELLS)}
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        nbformat.write(notebook, lab.root / "widgets.ipynb")
        page = browser.page
        nth = lambda name: page.locator(".jp-Notebook .jp-Cell").nth(index[name])  # noqa: E731
        try:
            open_notebook(browser, lab, "widgets.ipynb", ui=ui)
            run_all(browser)
            # Live: the kernel holds the widgets, so our renderer mounted ipywidgets' views; a click settles.
            expect(nth("pending").locator(LIVE).locator(".purra-approval-state")).to_have_text("pending",
                                                                                             timeout=STEP)  # fmt: skip
            expect(nth("form").locator(f'[data-mime-type="{WIDGET_MIME}"] .purra-form')).to_be_visible()
            expect(nth("status").locator(f'[data-mime-type="{WIDGET_MIME}"] .purra-status-state')).to_have_text("ready")
            expect(nth("status").locator(STATIC)).to_have_count(0)  # live: the kernel's widget, no static view
            click_settled(nth("fresh").locator(LIVE).get_by_role("button", name="Approve"))
            expect(nth("fresh").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text(
                "approved (approved by a click)", timeout=STEP
            )
            browser.screenshot(f"widgets-{ui}-01-live", nth("pending"))

            # A restarted kernel: the same outputs, now static, their buttons disabled and saying why.
            browser.notebook_js("await panel.sessionContext.restartKernel();")
            for name, buttons, words in (("pending", ["Approve", "Deny", "Cancel"], APPROVAL_WORDS),
                                         ("form", ["Review call"], FORM_WORDS)):  # fmt: skip
                static = nth(name).locator(STATIC)
                expect(static.locator(".jp-PurraWidget-why")).to_have_text(words["restarted"], timeout=STEP)
                expect(static.locator("button")).to_have_text(buttons)
                for button in static.locator("button").all():
                    expect(button).to_be_disabled()
                    expect(button).to_have_attribute("title", words["restarted"])
            expect(nth("status").locator(STATIC).locator(".jp-PurraWidget-why")).to_have_text(
                STATUS_WORDS["restarted"]
            )  # the status no longer says "ready" alone
            expect(page.locator(".purra-approval, .purra-form")).to_have_count(0)  # no live widget is left
            expect(nth("pending").locator(STATIC)).to_contain_text("pending: decide in a running kernel")
            browser.screenshot(f"widgets-{ui}-02-restarted", nth("pending"))

            # Saved, kernel shut down, reloaded (a new kernel that never held these widgets): the static view.
            browser.notebook_js("await app.commands.execute('docmanager:save');")
            browser.notebook_js("await panel.sessionContext.shutdown();")
            saved = nbformat.read(lab.root / "widgets.ipynb", as_version=4)
            assert WIDGET_MIME in saved.cells[index["pending"]].outputs[0]["data"]
            page.reload()
            open_notebook(browser, lab, "widgets.ipynb", ui=ui)
            pending = nth("pending").locator(STATIC)
            expect(pending.locator(".jp-PurraWidget-why")).to_have_text(APPROVAL_WORDS["gone"], timeout=STEP)
            for shown in ("search_documents", '"query": "PurrA envelope"', '"limit": 3',
                          "pending: decide in a running kernel"):  # fmt: skip
                expect(pending).to_contain_text(shown)
            expect(pending.get_by_role("button", name="Approve")).to_be_disabled()
            expect(nth("form").locator(STATIC)).to_contain_text("argument form for search_documents")
            expect(nth("form").locator(STATIC).locator(".jp-PurraWidget-why")).to_have_text(FORM_WORDS["gone"])
            status = nth("status").locator(STATIC)
            expect(status.locator(".jp-PurraWidget-why")).to_have_text(STATUS_WORDS["gone"])
            expect(status).to_contain_text("ready")  # its last state, said to be the last
            expect(nth("fresh").locator(ENVELOPE).locator(".jp-PurraRenderer-decision")).to_contain_text("approved")
            expect(page.locator("body")).not_to_contain_text(WIDGET_ERROR)
            browser.screenshot(f"widgets-{ui}-03-reloaded", nth("pending"))
            assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
        except BaseException:
            browser.report_failure(f"widgets-{ui}-failure", lab)
            raise


# --- the kit's words, carried by each saved payload ----------------------------------------------------------

# Labels as a notebook may hold them: as saved now, absent (saved before payloads carried them), or not strings.
LABEL_VARIANTS: dict[str, Any] = {
    "current": "keep",
    "missing": None,
    "malformed": {"kind": 1, "raw": ["x"], "serverWords": None, "effectNotes": {"unknown": 7}, "imageAlt": {}},
}


def saved_output(result: Envelope | RawResult, mime: str, labels: Any) -> Any:
    """``result``'s bundle as a saved display output, its payload's labels kept (``"keep"``), removed (``None``)
    or replaced by ``labels``."""
    data = result._repr_mimebundle_()
    payload = dict(data[mime])
    if labels != "keep":
        payload.pop("labels")
        if labels is not None:
            payload["labels"] = labels
    return nbformat.v4.new_output("display_data", data={**data, mime: payload})


def test_a_saved_output_shows_the_words_its_payload_carries_or_a_neutral_stand_in(
    tmp_path: Path, browser: Browser
) -> None:
    """Drawn from the file, with no kernel behind it: an output shows the kit's words its payload carries; one
    saved before payloads carried them, or with a label that is not a string, shows a neutral stand-in (the MIME
    type, the label's key, no note) and still draws everything else."""
    envelope = Envelope("demo", "add_note", '{"text":[],"structured":null}', "mcp_canceled", 5.0,
                        server_text="the backend said no", effect_state=UNKNOWN)  # fmt: skip
    raw = RawResult("demo", "tiny_image", [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
                    server_text="JSON-RPC error -32603: no")  # fmt: skip
    notebook = code_notebook([])
    for labels in LABEL_VARIANTS.values():
        for result, mime in ((envelope, ENVELOPE_MIME), (raw, RAW_RESULT_MIME)):
            notebook.cells.append(nbformat.v4.new_code_cell("# saved", outputs=[saved_output(result, mime, labels)]))
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        nbformat.write(notebook, lab.root / "saved.ipynb")
        cells = browser.page.locator(".jp-Notebook .jp-Cell")
        try:
            open_notebook(browser, lab, "saved.ipynb")
            for index, name in enumerate(LABEL_VARIANTS):
                drawn_envelope = cells.nth(2 * index).locator(f".jp-OutputArea-output{ENVELOPE}")
                drawn_raw = cells.nth(2 * index + 1).locator(f".jp-OutputArea-output{RAW_RESULT}")
                expect(drawn_envelope.locator("pre", has_text="the backend said no")).to_be_visible(timeout=STEP)
                expect(drawn_raw.locator("pre", has_text="JSON-RPC error -32603: no")).to_be_visible(timeout=STEP)
                kind = drawn_envelope.locator(".jp-PurraRenderer-header .jp-PurraRenderer-kind")
                effect = drawn_envelope.locator(".jp-PurraRenderer-effect")
                raw_label = drawn_raw.locator(".jp-PurraRenderer-rawLabel")
                image = drawn_raw.locator("img.jp-PurraRenderer-image")
                if name == "current":
                    expect(kind).to_have_text(ENVELOPE_KIND)
                    expect(effect).to_have_text(f"effect: {UNKNOWN}{EFFECT_NOTES[UNKNOWN]}")
                    expect(drawn_envelope).to_contain_text(SERVER_WORDS)
                    expect(raw_label).to_have_text(RAW_LABEL)
                    expect(drawn_raw).to_contain_text(SERVER_WORDS)
                    expect(image).to_have_attribute("alt", IMAGE_ALT)
                else:
                    expect(kind).to_have_text(ENVELOPE_MIME)
                    expect(effect).to_have_text(f"effect: {UNKNOWN}")
                    expect(raw_label).to_have_text(RAW_RESULT_MIME)
                    expect(image).to_have_attribute("alt", "")
                    for drawn in (drawn_envelope, drawn_raw):
                        expect(drawn.locator(".jp-PurraRenderer-blockType", has_text="serverWords")).to_have_count(1)
                        expect(drawn).not_to_contain_text(SERVER_WORDS)
            browser.screenshot("saved-labels", cells.nth(0))
            assert browser.errors == []
        except BaseException:
            browser.report_failure("saved-labels-failure", lab)
            raise


# --- the authorization flow ------------------------------------------------------------------------------

OAUTH_CALL = "{name}.call('search_documents', {{'query': 'PurrA', 'limit': 1}}, approve=True)"


def test_the_authorization_flow_comes_back_by_the_loopback_and_by_a_pasted_address(
    tmp_path: Path, browser: Browser
) -> None:
    """Two sessions behind the SDK's authorization server: the first by clicking Open (the browser comes back
    to the kernel's one-shot listener), the second as on Binder (the address pasted into the kernel's box).
    Each call then succeeds; the saved file and the page hold no code, token or client secret."""
    with oauth_server(tmp_path) as server, jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        sources = [
            "%load_ext purra_jupyter",
            f"loop = %mcp_connect loop --url {server.url} --oauth",
            OAUTH_CALL.format(name="loop"),
            f"pasted = %mcp_connect pasted --url {server.url} --oauth --scope demo",
            OAUTH_CALL.format(name="pasted"),
        ]
        write_code_notebook(lab.root / "oauth.ipynb", sources)
        page = browser.page
        nth = lambda index: page.locator(".jp-Notebook .jp-Cell").nth(index)  # noqa: E731
        try:
            open_notebook(browser, lab, "oauth.ipynb")
            browser.notebook_js("void app.commands.execute('notebook:run-all-cells');")

            # The loopback path: the address as text, an Open link the kit never follows by itself.
            view = nth(1).locator(".purra-authorization")
            expect(view.locator(".purra-authorization-open")).to_be_visible(timeout=STEP)
            url = view.locator(".purra-authorization-url").inner_text().strip()
            assert view.locator(".purra-authorization-open").get_attribute("href") == url
            expect(view).to_contain_text(f"Server loop asks for authorization at {server.url[: -len('/mcp')]}")
            expect(nth(1).locator(".jp-Stdin-input")).to_have_count(1)  # the way back for a browser elsewhere
            browser.screenshot("oauth-01-authorization-view", nth(1))
            with page.context.expect_page() as opened:
                view.locator(".purra-authorization-open").click()
            tab = opened.value
            expect(tab.locator("body")).to_contain_text("Authorized: you can close this tab", timeout=STEP)
            tab.close()
            expect(nth(2).locator(ENVELOPE)).to_contain_text("doc-4", timeout=STEP)
            expect(nth(1).locator(".jp-Stdin-input")).to_have_count(0)  # the box no longer read is gone
            expect(nth(1)).to_contain_text("authorization for loop at")

            # The pasted path: the browser could not reach the kernel's machine; its address bar is pasted.
            view = nth(3).locator(".purra-authorization")
            expect(view.locator(".purra-authorization-url")).to_be_visible(timeout=STEP)
            back = follow_authorization(view.locator(".purra-authorization-url").inner_text().strip())
            box = nth(3).locator(".jp-Stdin-input")
            expect(box).to_have_attribute("type", "password")
            box.fill(back)
            box.press("Enter")
            expect(nth(4).locator(ENVELOPE)).to_contain_text("doc-4", timeout=STEP)
            browser.screenshot("oauth-02-both-authorized", nth(1))
            failures = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
            assert failures.count() == 0, failures.all_inner_texts()

            issued = server.issued()
            assert len(issued) >= 6  # two client secrets, two codes, two access and two refresh tokens
            shown = page.evaluate("() => document.body.innerHTML + document.body.innerText")
            assert [secret for secret in issued if secret in shown] == []
            browser.notebook_js("await app.commands.execute('docmanager:save');")
            browser.notebook_js("await panel.sessionContext.shutdown();")
            saved = (lab.root / "oauth.ipynb").read_text()
            assert [secret for secret in issued if secret in saved] == []
            assert "Open this address" not in saved and "code_challenge" not in saved
            for index in (1, 3):
                texts = json.dumps(nbformat.reads(saved, as_version=4).cells[index].outputs)
                assert "the browser came back" in texts, texts[:500]
            assert browser.errors == []
        except BaseException:
            browser.report_failure("oauth-failure", lab)
            raise


# --- server-chosen addresses never become links ------------------------------------------------------------

URL_CELLS = {
    "setup": (
        "import json, sys\nimport purra_jupyter as pj\n%load_ext purra_jupyter\n"
        "def untrusted(name, plan):\n"
        "    return pj.ServerConfig(name, command=sys.executable, args=[{server!r}, json.dumps(plan)])\n"
        "plan = json.loads({plan!r})"
    ),
    "initialize": 'pj.connect(untrusted("init", {{"initialize": {{"serverInfo": {evil!r}}}}}))',
    "banner": 'pj.connect(untrusted("banner", {{"banner": "Welcome! Log in at " + {evil!r}}}))',
    "connect": 's = pj.connect(untrusted("urls", plan))\ns.catalog',
    "refused": 's.call("drafted", {{"x": "y"}}, approve=True)',
    "unknown": 's.call("no_such_tool", {{}})',
    "magic": '%mcp_call urls drafted --yes {{"x": "y"}}',
    "named": 's.call("www.evil.example", {{}}, raw=True, approve=True)',
    "http": (
        'h = pj.connect(pj.ServerConfig("remote", url={http!r}))\n'
        'for name in ("failing", "moved", "resume", "answer"):\n    display(h.call(name, {{}}, raw=True, approve=True))'
    ),
    # An answer whose id is an address, to nothing asked: dropped (a log row quotes its id as text); the call times out
    "answer": 'display(s.call("answer", {{}}, raw=True, approve=True, timeout=2))\ns.log',
    "oauth": (
        'refuse = lambda url: "http://127.0.0.1/purra-jupyter/callback?error=" + {quoted!r}\n'
        'pj.connect(pj.ServerConfig("hosted", url={oauth!r}, oauth=pj.OAuth(authorize=refuse)))'
    ),
    "close": "pj.sessions()",
}
RAISING = {"initialize", "banner", "refused", "unknown", "magic", "oauth"}


def test_no_output_of_the_kit_makes_a_link_of_an_address_a_server_chose(tmp_path: Path, browser: Browser) -> None:
    """Addresses a hostile server put in an initialize answer, a stdout line, a schema's ``$schema``, tool names,
    an HTTP reason phrase, a redirect, an answer's id and an OAuth ``error=``: JupyterLab makes links of addresses
    in error outputs and plain text, so none may reach those; every one is still shown, as text, where it belongs."""
    from urllib.parse import quote

    from test_untrusted import EVIL, EVIL_URL, UNTRUSTED, URL_CALLS, URL_TOOLS, untrusted_http

    plan = json.dumps({"tools": URL_TOOLS, "calls": URL_CALLS})
    with (
        untrusted_http({"tools": URL_TOOLS, "calls": URL_CALLS}) as (remote, _),
        oauth_server(tmp_path) as hosted,
        jupyter_lab(JUPYTER, tmp_path / "lab") as lab,
    ):
        values = {"server": str(UNTRUSTED), "plan": plan, "evil": EVIL_URL, "http": remote.url, "oauth": hosted.url,
                  "quoted": quote(EVIL_URL)}  # fmt: skip
        write_code_notebook(lab.root / "urls.ipynb", (source.format(**values) for source in URL_CELLS.values()))
        page = browser.page
        try:
            open_notebook(browser, lab, "urls.ipynb")
            for index in range(len(URL_CELLS)):  # one by one: a cell that raises on purpose stops no other
                browser.notebook_js(
                    "panel.content.activeCellIndex = arg; await app.commands.execute('notebook:run-cell');", index
                )
                page.wait_for_function(
                    "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model.executionCount !== null",
                    arg=index,
                    timeout=STEP,
                )
            cells = page.locator(".jp-Notebook .jp-Cell")
            errors = (  # JupyterLab draws an error as stderr text
                '.jp-OutputArea-output:is([data-mime-type="application/vnd.jupyter.error"], '
                '[data-mime-type="application/vnd.jupyter.stderr"])'
            )
            for index, name in enumerate(URL_CELLS):
                raised = cells.nth(index).locator(errors)
                expect(raised).to_have_count(1 if name in RAISING else 0, timeout=STEP)
                if name in RAISING:
                    expect(raised).to_contain_text("McpSessionError: mcp_")
                    assert EVIL not in raised.inner_text(), (name, raised.inner_text())
            links = page.evaluate(
                "(evil) => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea a')]"
                ".filter(a => (a.getAttribute('href') || '').includes(evil) || a.textContent.includes(evil))"
                ".map(a => a.outerHTML)",
                EVIL,
            )
            assert links == []
            # the addresses are there, as text: in the server's-words blocks, the results and the catalog
            shown = page.locator(".jp-Notebook .jp-OutputArea").all_inner_texts()
            assert sum(EVIL in text for text in shown) >= 4, shown
            expect(cells.nth(list(URL_CELLS).index("connect")).locator(CATALOG)).to_contain_text(f"www.{EVIL}")
            expect(cells.nth(list(URL_CELLS).index("answer"))).to_contain_text(f"an answer to request '{EVIL_URL}'")
            browser.screenshot("urls-as-text", cells.nth(list(URL_CELLS).index("magic")))
            assert browser.errors == []
        except BaseException:
            browser.report_failure("urls-failure", lab)
            raise


# --- the whole server in view: what it says under a running call ------------------------------------------------

EVERYTHING = ROOT / "tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
SERVER_CELLS = {
    "connect": (
        "import purra_jupyter as pj\n"
        f'ev = pj.connect(pj.ServerConfig("everything", command="node", args=[{str(EVERYTHING)!r}, "stdio"]))\n'
        'ev.set_log_level("debug")\n'
        'ev.call("toggle-simulated-logging", {}, raw=True, approve=True).ok'
    ),
    "running": 'pending = ev.call("trigger-long-running-operation", {"duration": 12, "steps": 12}, raw=True)\npending',
    "resources": "ev.resources",
    "prompt": 'ev.get_prompt("args-prompt", {"city": "Paris", "state": "TX"})',
}
ACTIVITY = ".purra-approval .purra-activity"


def test_the_servers_log_lines_and_progress_appear_under_a_running_call(tmp_path: Path, browser: Browser) -> None:
    """server-everything's progress (a bar and its words) and its simulated log lines show under the approved
    call while it runs, and stay in its record once it settled; its resource table and a prompt it gave render;
    all of it reads in both themes (WCAG AA)."""
    with notebook_run(browser, tmp_path, "server", SERVER_CELLS) as cell:
        running = cell("running")
        click_settled(running.locator(".purra-approval").get_by_role("button", name="Approve"))
        activity = running.locator(ACTIVITY)
        expect(activity).to_contain_text("progress 1 of 12 (8%)")
        expect(activity.locator("progress, .widget-progress, .progress-bar").first).to_be_visible()
        expect(activity).to_contain_text("-level message")  # a log line of the server's, as it came
        expect(running.locator(".purra-approval-state")).to_have_text("approved, running")
        resources, prompt = cell("resources").locator(".purra-offerings"), cell("prompt").locator(".purra-prompt")
        expect(resources.locator("tbody tr")).to_have_count(7)
        expect(resources).to_contain_text("demo://resource/static/document/architecture.md")
        expect(prompt.locator(".purra-prompt-message")).to_contain_text("What's weather in Paris, TX?")
        shots = {"running": running, "resources": cell("resources"), "prompt": cell("prompt")}
        assert_contrast(browser, "server-running", shots)
        record = running.locator(RAW_RESULT)
        expect(record.locator(".jp-PurraRenderer-activity")).to_contain_text("progress 12 of 12 (100%)",
                                                                             timeout=STEP)  # fmt: skip
        assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors


# --- what a server says under a call: text, never a link -----------------------------------------------------

LINKS_AT = "https://evil.example/login"  # the server's address in every word it says of a running call
SAID = f"verify your account at {LINKS_AT} or www.evil.example"
LINK_PLAN = {
    "tools": [
        {"name": "speak", "description": "says things", "inputSchema": {"type": "object"}},
        {"name": "tasky", "description": "runs as a task", "inputSchema": {"type": "object"},
         "execution": {"taskSupport": "optional"}},
    ],
    "calls": {"speak": "say"},
    "say": [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"log: {SAID}"}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "{token}", "progress": 1, "total": 2, "message": f"progress: {SAID}"}},
    ],
    "task_status": f"task: {SAID}",
    "task_completes": True,
    "result_text": f"result: {SAID}",
}  # fmt: skip
LINK_CELLS = {
    "connect": "import sys\nimport purra_jupyter as pj\n"
    "s = pj.connect(pj.ServerConfig('links', command=sys.executable, args=[{server!r}, {plan!r}]))",
    "code": "s.call('speak', {{'x': 'in code'}}, raw=True, approve=True)",
    "code_task": "s.call('tasky', {{'x': 'in code'}}, raw=True, task=True, approve=True)",
    "clicked": "clicked = s.call('speak', {{'x': 'clicked'}}, raw=True)\nclicked",
    "clicked_task": "clicked_task = s.call('tasky', {{'x': 'clicked'}}, raw=True, task=True)\nclicked_task",
}
EVIL_LINKS_JS = (
    "() => [...document.querySelectorAll('a')]"
    ".filter(a => /evil\\.example/.test((a.getAttribute('href') || '') + ' ' + a.textContent))"
    ".map(a => a.outerHTML)"
)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_what_a_server_says_of_a_call_is_never_a_link(ui: str, tmp_path: Path, browser: Browser) -> None:
    """A server's log line, progress and task status carrying addresses, shown under a call approved in code (the
    lines the cell prints) and under a clicked one (the approval's activity, then its record), in JupyterLab and
    Notebook 7: every word is there, as text, and no element of the page is a link to the server's address."""
    from test_untrusted import UNTRUSTED

    page = browser.page
    cell = lambda name: page.locator(".jp-Notebook .jp-Cell").nth(list(LINK_CELLS).index(name))  # noqa: E731
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(LINK_PLAN))
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        values = {"server": str(UNTRUSTED), "plan": f"@{plan}"}
        write_code_notebook(lab.root / "links.ipynb", (source.format(**values) for source in LINK_CELLS.values()))
        try:
            open_notebook(browser, lab, "links.ipynb", ui=ui)
            run_all(browser)
            for name in ("clicked", "clicked_task"):
                click_settled(cell(name).locator(".purra-approval").get_by_role("button", name="Approve"))
                expect(cell(name).locator(RAW_RESULT)).to_contain_text("result: verify your account", timeout=STEP)
            printed = cell("code").locator('[data-mime-type="application/vnd.jupyter.stdout"]')
            expect(printed).to_contain_text("log: verify your account at https[:]//evil.example/login")
            expect(printed).to_contain_text("progress: verify your account")
            task_printed = cell("code_task").locator('[data-mime-type="application/vnd.jupyter.stdout"]')
            expect(task_printed).to_contain_text("task: verify your account at https[:]//evil.example/login")
            for name in ("clicked", "clicked_task"):  # the record keeps what the server said while it ran
                expect(cell(name).locator(RAW_RESULT)).to_contain_text("verify your account at https://evil.example")
            expect(cell("clicked").locator(RAW_RESULT)).to_contain_text("log: verify")
            expect(cell("clicked_task").locator(RAW_RESULT)).to_contain_text("task: verify")
            assert page.evaluate(EVIL_LINKS_JS) == []
            browser.screenshot(f"{ui}-server-words-as-text", cell("clicked"))
            assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
        except BaseException:
            browser.report_failure(f"{ui}-links-failure", lab)
            raise


# --- a server's questions under a running call: the person answers in the widget -------------------------------

ASKING_SERVER = ROOT / "tests" / "servers" / "asking_server.py"
UNTRUSTED_SERVER = ROOT / "tests" / "servers" / "untrusted_server.py"
ASKED_AT = "https://evil.example/sign-in"
# A server that asks for a password and withdraws its question half a second later (tests/test_consent.py).
WITHDRAWING = {"tools": [{"name": "ask", "inputSchema": {"type": "object"}}], "calls": {"ask": "ask"},
               "asks": {"w-1": ["elicitation/create", {"message": "your password?", "requestedSchema": {
                   "type": "object", "properties": {"p": {"type": "string"}}}}]},
               "withdraw_after": 0.5, "answer_wait": 4.0}  # fmt: skip
QUESTION_CELLS = {
    "connect": "import sys\nimport purra_jupyter as pj\n"
    f"s = pj.connect(pj.ServerConfig('asking', command=sys.executable, args=[{str(ASKING_SERVER)!r}]))\n"
    f"w = pj.connect(pj.ServerConfig('withdrawing', command=sys.executable, args=[{str(UNTRUSTED_SERVER)!r}, "
    f"{json.dumps(WITHDRAWING)!r}]))",
    "model": "model = s.call('ask_model', {'text': 'What color is the <b>sky</b>?'}, raw=True)\nmodel",
    "form": "form = s.call('ask_form', {'text': 'Who are you?'}, raw=True)\nform",
    "url": f"url = s.call('ask_url', {{'text': {ASKED_AT!r}}}, raw=True)\nurl",
    "withdrawn": "withdrawn = w.call('ask', {}, raw=True)\nwithdrawn",
}


def test_a_person_answers_a_servers_questions_in_the_widgets_under_the_running_call(
    tmp_path: Path, browser: Browser
) -> None:
    """Approved by a click, each call runs while the kernel is idle: the server's question shows under its approval,
    the person fills and sends it, and the record shows what the server received."""
    page = browser.page
    with notebook_run(browser, tmp_path, "asking", QUESTION_CELLS) as cell:
        model = cell("model")
        click_settled(model.locator(".purra-approval").get_by_role("button", name="Approve"))
        question = model.locator(".purra-question")
        expect(question).to_contain_text("'asking', during its call of 'ask_model', asks for a message from your model")
        expect(question).to_contain_text("What color is the <b>sky</b>?")  # the server's words, as text
        assert question.locator("b", has_text="sky").count() == 0
        question.locator("textarea").fill("blue")
        click_settled(question.get_by_role("button", name="Send reply"))
        record = model.locator(RAW_RESULT)
        expect(record).to_contain_text('"text": "blue"')
        expect(record).to_contain_text("a person in the notebook")

        form = cell("form")
        click_settled(form.locator(".purra-approval").get_by_role("button", name="Approve"))
        question = form.locator(".purra-question")
        expect(question).to_contain_text("asks for your input")
        expect(question).to_contain_text("'age': integer, default 30, optional")  # every field, its default shown
        accept = question.get_by_role("button", name="Accept")
        expect(accept).to_be_disabled()  # the name is required
        question.locator("input[type=text]").first.fill("Ada")
        question.locator("input[type=text]").first.press("Tab")
        expect(question).to_contain_text('Accept sends: {"name": "Ada", "age": 30}')  # exactly what goes, on screen
        click_settled(accept)
        record = form.locator(RAW_RESULT)
        expect(record).to_contain_text('"action": "accept"')
        expect(record).to_contain_text('"name": "Ada"')
        expect(record).to_contain_text('"age": 30')  # its default, prefilled

        url = cell("url")
        click_settled(url.locator(".purra-approval").get_by_role("button", name="Approve"))
        question = url.locator(".purra-question")
        rows = question.locator("tr")  # its destination first, uncut; then the rest of the address
        expect(rows.nth(0)).to_contain_text("goes to")
        expect(rows.nth(0)).to_contain_text("https://evil.example:443")
        expect(rows.nth(1)).to_contain_text("/sign-in")
        assert page.evaluate(EVIL_LINKS_JS) == []  # the address is text, never a link
        click_settled(question.get_by_role("button", name="Done"))
        expect(url.locator(RAW_RESULT)).to_contain_text('"action": "accept"')

        withdrawn = cell("withdrawn")  # the server withdraws its question: it says so, and nothing can be sent
        click_settled(withdrawn.locator(".purra-approval").get_by_role("button", name="Approve"))
        question = withdrawn.locator(".purra-question")
        expect(question).to_contain_text("withdrawn by the server")
        expect(question.get_by_role("button", name="Accept")).to_have_count(0)
        expect(withdrawn.locator(RAW_RESULT)).to_contain_text('"message": "Request cancelled"')
        expect(withdrawn.locator(RAW_RESULT)).not_to_contain_text('"accept"')
        assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
