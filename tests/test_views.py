"""Tools' own views (MCP Apps) in a real JupyterLab and Notebook 7, driven by a headless Chromium: the view renders
inline in its sandbox, gets the call's input and result and the theme, and its own calls wait for the approval
widget, whose decision reaches the view (a deny as an error, an approve as the result).

Screenshots go to ``tests/artifacts/browser/``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from test_browser import (  # noqa: F401  (browser: a fixture)
    JUPYTER,
    STEP,
    THEME_APPLIED_JS,
    Browser,
    Lab,
    browser,
    expect,
    jupyter_lab,
    open_notebook,
    run_all,
)

if TYPE_CHECKING:
    from playwright.sync_api import FrameLocator, Locator

ROOT = Path(__file__).parent.parent
MODULES = ROOT / "tests" / "servers" / "node_modules" / "@modelcontextprotocol"
VANILLA = MODULES / "server-basic-vanillajs" / "dist" / "index.js"
APP = '.jp-PurraApp[data-mime-type="application/vnd.purra.app+json"]'

CELLS = {
    "connect": (
        "import sys\nimport purra_jupyter as pj\n"
        'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))\n'
        f'van = pj.connect(pj.ServerConfig("van", command="node", args=[{str(VANILLA)!r}, "--stdio"]))'
    ),
    "time": 'timed = van.call("get-time", {}, raw=True, approve=True)\ntimed',
    "notes": 'notes = demo.call("list_notes", {}, approve=True)\nnotes',
}
INDEX = {name: index for index, name in enumerate(CELLS)}


def write_notebook(path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS.values()]
    nbformat.write(notebook, path)


def cell(browser: Browser, name: str) -> Locator:
    return browser.page.locator(".jp-Notebook .jp-Cell").nth(INDEX[name])


def view_of(browser: Browser, name: str) -> FrameLocator:
    """The view's own frame, inside the sandbox proxy of the output of cell ``name``."""
    return cell(browser, name).locator(f"{APP} iframe.jp-PurraApp-frame").content_frame.locator("iframe").content_frame


def set_theme(browser: Browser, dark: bool) -> None:
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    browser.notebook_js("await app.commands.execute('apputils:change-theme', {theme: arg});", theme)
    browser.page.wait_for_function(THEME_APPLIED_JS, arg=[theme, dark], timeout=STEP)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_views_render_inline_and_their_calls_wait_for_the_approval_widget(
    tmp_path: Path, browser: Browser, ui: str
) -> None:
    """server-basic-vanillajs's get-time view shows the time its call returned; the demo's notes view renders; a
    call the view makes shows the approval widget under the view: Deny reaches the view as an error, Approve as the
    result. Light and dark: the view is told the theme, and told again when it changes."""
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        write_notebook(lab.root / "views.ipynb")
        try:
            open_notebook(browser, lab, "views.ipynb", ui=ui)
            run_all(browser)
            check_the_time_view(browser, ui)
            check_the_notes_view(browser, ui)
            set_theme(browser, dark=True)
            expect(view_of(browser, "notes").locator("html.dark")).to_have_count(1)
            print(f"screenshot: {browser.screenshot(f'views-{ui}-dark', cell(browser, 'notes'))}")
            set_theme(browser, dark=False)
            expect(view_of(browser, "notes").locator("html.dark")).to_have_count(0)
            print(f"screenshot: {browser.screenshot(f'views-{ui}-light', cell(browser, 'notes'))}")
            assert [error for error in browser.errors if "purra" in error.lower()] == [], browser.errors
        except BaseException:
            browser.report_failure(f"views-{ui}-failure", lab)
            raise


def result_time(browser: Browser) -> str:
    """The time get-time returned, as the call's record shows it."""
    record = cell(browser, "time").locator('[data-mime-type="application/vnd.purra.raw-result+json"]')
    expect(record).to_contain_text("structuredContent")
    [found] = set(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", record.inner_text()))
    return found


def check_the_time_view(browser: Browser, ui: str) -> None:
    time_view = view_of(browser, "time")
    expect(time_view.locator("#server-time")).to_have_text(result_time(browser), timeout=STEP)
    print(f"screenshot: {browser.screenshot(f'views-{ui}-time', cell(browser, 'time'))}")
    # Its own button calls get-time: the approval widget appears under the view; approved, the view shows the new time.
    time_view.locator("#get-time-btn").click()
    approval = cell(browser, "time").locator(".jp-PurraApp-approvals .purra-approval")
    expect(approval).to_have_count(1, timeout=STEP)
    approval.get_by_role("button", name="Approve").click()
    expect(approval).to_have_count(0, timeout=STEP)
    expect(cell(browser, "time").locator(".jp-PurraApp-decisions")).to_contain_text(
        "the view called get-time: approved (approved by a click)"
    )
    expect(time_view.locator("#server-time")).not_to_have_text(result_time(browser), timeout=STEP)


def check_the_notes_view(browser: Browser, ui: str) -> None:
    notes = view_of(browser, "notes")
    expect(notes.locator("#status")).to_have_text("showing the call's result", timeout=STEP)
    expect(notes.locator("#notes")).to_have_text("no notes yet")
    approvals = cell(browser, "notes").locator(".jp-PurraApp-approvals .purra-approval")
    # Denied: the view gets an error, nothing is added.
    notes.locator("#text").fill("denied note")
    notes.get_by_role("button", name="Add note").click()
    expect(approvals).to_have_count(1, timeout=STEP)
    expect(approvals).to_contain_text("add_note")
    print(f"screenshot: {browser.screenshot(f'views-{ui}-approval', cell(browser, 'notes'))}")
    approvals.get_by_role("button", name="Deny").click()
    expect(notes.locator("#status")).to_have_text(re.compile(r"^add_note: denied: denied by a click"), timeout=STEP)
    # Approved: the result reaches the view (then its own list_notes, behind an approval of its own).
    notes.locator("#text").fill("approved note")
    notes.get_by_role("button", name="Add note").click()
    expect(approvals).to_have_count(1, timeout=STEP)
    approvals.get_by_role("button", name="Approve").click()
    expect(approvals).to_contain_text("list_notes", timeout=STEP)
    approvals.get_by_role("button", name="Approve").click()
    expect(notes.locator("#notes")).to_have_text("note-1: approved note", timeout=STEP)
    expect(notes.locator("#status")).to_have_text("added: added note-1")
    decisions = cell(browser, "notes").locator(".jp-PurraApp-decisions li")
    expect(decisions).to_have_count(3)
    said = json.dumps([decisions.nth(i).inner_text() for i in range(3)])
    assert "add_note: denied" in said and "add_note: approved" in said and "list_notes: approved" in said, said


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-x", "-q"]))
