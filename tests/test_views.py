"""Tools' own views (MCP Apps) in a real JupyterLab and Notebook 7, driven by a headless Chromium: the view renders
inline in its sandbox, gets the call's input and result and the theme, and its own calls wait for the approval
widget, whose decision reaches the view (a deny as an error, an approve as the result).

Screenshots go to ``tests/artifacts/browser/``.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
import pytest
from test_browser import (
    GUARD,
    JUPYTER,
    STEP,
    THEME_APPLIED_JS,
    Browser,
    Lab,
    app_view,
    chromium_page,
    click_settled,
    expect,
    jupyter_lab,
    open_notebook,
    run_all,
    write_code_notebook,
)

from purra_jupyter._base.wire import APP_MIME
from purra_jupyter._beside.views import NO_LIVE_SESSION, NO_VIEWER, VIEW_LABEL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

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


@pytest.fixture
def chromium() -> Iterator[Browser]:
    with chromium_page() as opened:
        yield opened


def write_notebook(path: Path) -> None:
    write_code_notebook(path, CELLS.values())


def cell(browser: Browser, name: str) -> Locator:
    return browser.page.locator(".jp-Notebook .jp-Cell").nth(INDEX[name])


def view_of(browser: Browser, name: str) -> FrameLocator:
    """The view's own frame, inside the sandbox proxy of the output of cell ``name``."""
    return app_view(cell(browser, name))


def set_theme(browser: Browser, dark: bool) -> None:
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    browser.notebook_js("await app.commands.execute('apputils:change-theme', {theme: arg});", theme)
    browser.page.wait_for_function(THEME_APPLIED_JS, arg=[theme, dark], timeout=STEP)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_views_render_inline_and_their_calls_wait_for_the_approval_widget(
    tmp_path: Path, chromium: Browser, ui: str
) -> None:
    """server-basic-vanillajs's get-time view shows the time its call returned; the demo's notes view renders; a
    call the view makes shows the approval widget under the view: Deny reaches the view as an error, Approve as the
    result. Light and dark: the view is told the theme, and told again when it changes."""
    with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        write_notebook(lab.root / "views.ipynb")
        try:
            open_notebook(chromium, lab, "views.ipynb", ui=ui)
            run_all(chromium)
            check_the_time_view(chromium, ui)
            check_the_notes_view(chromium, ui)
            set_theme(chromium, dark=True)
            expect(view_of(chromium, "notes").locator("html.dark")).to_have_count(1)
            print(f"screenshot: {chromium.screenshot(f'views-{ui}-dark', cell(chromium, 'notes'))}")
            set_theme(chromium, dark=False)
            expect(view_of(chromium, "notes").locator("html.dark")).to_have_count(0)
            print(f"screenshot: {chromium.screenshot(f'views-{ui}-light', cell(chromium, 'notes'))}")
            assert [error for error in chromium.errors if "purra" in error.lower()] == [], chromium.errors
            check_the_replay(chromium, lab, ui)
        except BaseException:
            chromium.report_failure(f"views-{ui}-failure", lab)
            raise
        check_the_export(chromium, lab.root / "views.ipynb", tmp_path)


def check_the_replay(browser: Browser, lab: Lab, ui: str) -> None:
    """Saved, kernel shut down, reloaded (a new kernel that never held these views): each view replays from the file
    with its call's input and result, and its requests answer "no live session"."""
    saved_time = result_time(browser)
    browser.notebook_js("await app.commands.execute('docmanager:save');")
    browser.notebook_js("await panel.sessionContext.shutdown();")
    saved = nbformat.read(lab.root / "views.ipynb", as_version=4)
    for name in ("time", "notes"):
        [payload] = [o["data"][APP_MIME] for o in saved.cells[INDEX[name]].outputs if APP_MIME in o.get("data", {})]
        assert payload["html"].startswith("<!") and payload["toolResult"], name
    browser.page.reload()
    open_notebook(browser, lab, "views.ipynb", ui=ui)
    expect(view_of(browser, "time").locator("#server-time")).to_have_text(saved_time, timeout=STEP)
    notes = view_of(browser, "notes")
    expect(notes.locator("#status")).to_have_text("showing the call's result", timeout=STEP)
    expect(notes.locator("#notes")).to_have_text("no notes yet")
    notes.locator("#text").fill("after the reload")
    notes.get_by_role("button", name="Add note").click()
    expect(notes.locator("#status")).to_contain_text(f"add_note: {NO_LIVE_SESSION}", timeout=STEP)
    expect(cell(browser, "notes").locator(".jp-PurraApp-status")).to_contain_text("no live session")
    expect(cell(browser, "notes").locator(".jp-PurraApp-decisions li")).to_have_count(3)  # the file's decisions
    print(f"screenshot: {browser.screenshot(f'views-{ui}-replayed', cell(browser, 'notes'))}")


def check_the_export(browser: Browser, saved: Path, tmp_path: Path) -> None:
    """nbconvert's HTML of the saved file: the result's text fallback and the words that a view exists; none of the
    view's own HTML."""
    export = subprocess.run(
        [str(JUPYTER), "nbconvert", "--to", "html", str(saved), "--output", "views", "--output-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr
    browser.page.goto((tmp_path / "views.html").as_uri())
    shown = browser.page.locator("body").inner_text()
    assert shown.count(NO_VIEWER) == 2 and shown.count(VIEW_LABEL) == 2, shown
    assert "the view called add_note: denied (denied by a click)" in shown
    assert browser.page.locator("iframe, #server-time, #notes").count() == 0
    print(f"export screenshot: {browser.screenshot('views-export')}")


def result_time(browser: Browser) -> str:
    """The time get-time returned, as the call's record shows it."""
    record = cell(browser, "time").locator('[data-mime-type="application/vnd.purra.raw-result+json"]')
    expect(record).to_contain_text("structuredContent")
    [found] = set(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", record.inner_text()))
    return found


NO_OVERFLOW_JS = """(app) => {
    const wider = [];
    for (let node = app; node !== null && !node.classList.contains('jp-Cell'); node = node.parentElement) {
        if (node.scrollWidth > node.clientWidth) {
            wider.push(`${node.className}: ${node.scrollWidth} > ${node.clientWidth}`);
        }
    }
    return wider;
}"""


def check_the_time_view(browser: Browser, ui: str) -> None:
    time_view = view_of(browser, "time")
    expect(time_view.locator("#server-time")).to_have_text(result_time(browser), timeout=STEP)
    # The bordered frame fills the output's width and no more: no horizontal scrollbar under the view.
    assert cell(browser, "time").locator(APP).evaluate(NO_OVERFLOW_JS) == []
    print(f"screenshot: {browser.screenshot(f'views-{ui}-time', cell(browser, 'time'))}")
    # Its own button calls get-time: the approval widget appears under the view; approved, the view shows the new time.
    time_view.locator("#get-time-btn").click()
    approval = cell(browser, "time").locator(".jp-PurraApp-approvals .purra-approval")
    expect(approval).to_have_count(1, timeout=STEP)
    click_settled(approval.get_by_role("button", name="Approve"))
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
    click_settled(approvals.get_by_role("button", name="Deny"))
    expect(notes.locator("#status")).to_have_text(re.compile(r"^add_note: denied: denied by a click"), timeout=STEP)
    # Approved: the result reaches the view (then its own list_notes, behind an approval of its own).
    notes.locator("#text").fill("approved note")
    notes.get_by_role("button", name="Add note").click()
    expect(approvals).to_have_count(1, timeout=STEP)
    click_settled(approvals.get_by_role("button", name="Approve"))
    expect(approvals).to_contain_text("list_notes", timeout=STEP)
    click_settled(approvals.get_by_role("button", name="Approve"))
    expect(notes.locator("#notes")).to_have_text("note-1: approved note", timeout=STEP)
    expect(notes.locator("#status")).to_have_text("added: added note-1")
    decisions = cell(browser, "notes").locator(".jp-PurraApp-decisions li")
    expect(decisions).to_have_count(3)
    said = json.dumps([decisions.nth(i).inner_text() for i in range(3)])
    assert "add_note: denied" in said and "add_note: approved" in said and "list_notes: approved" in said, said


# --- a hostile view --------------------------------------------------------------------------------------------

HOSTILE = ROOT / "tests" / "servers" / "hostile_app_server.py"
LOG_LINE = "<img src=x onerror=window.__pwned=1> a hostile log line"  # (as the hostile view sends it)
# Each in a view of its own (cells 2 on), with what shows it was tried: the view's page replaced by the browser's error
# page (``None``: the policy's frame-src blocked it), or the line the browser logs when its sandbox refuses it.
NAVIGATIONS = {
    "top-navigation": "Unsafe attempt to initiate navigation for frame with origin",
    "link-blank": "Blocked opening 'http://127.0.0.1:{port}/link-blank' in a new window",
    "link-click": None,
    "meta-refresh": None,
    "location": None,
    "form-get": "Blocked form submission to 'http://127.0.0.1:{port}/form-get'",
}


# What the origin allowed as a connect domain may reach: requests the policy's connect-src governs.
CONNECTED = {"/fetch", "/xhr", "/websocket", "/eventsource", "/beacon", "/prefetch"}


class Listener(socketserver.ThreadingTCPServer):
    """A loopback HTTP listener that records the path of every request it gets (and answers each with an empty 200
    any origin may read, so that an allowed fetch succeeds)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.got = threading.Condition()
        super().__init__(("127.0.0.1", 0), _Recorder)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def wait_for(self, path: str, seconds: float = STEP / 1000) -> None:
        with self.got:
            assert self.got.wait_for(lambda: path in self.paths, seconds), (path, self.paths)


class _Recorder(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline(4096).decode("latin-1").split()
        server = self.server
        assert isinstance(server, Listener)
        with server.got:
            server.paths.append(line[1] if len(line) > 1 else "?")
            server.got.notify_all()
        self.wfile.write(
            b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


PAGE_STATE_JS = """() => ({
    url: location.href, title: document.title, cells: document.querySelectorAll('.jp-Cell').length,
    pwned: typeof window.__pwned, cookie: document.cookie.includes('x=1'),
})"""


def control(browser: Browser, listener: Listener, name: str) -> None:
    """A request of the test's own page after the view's attempts: once it arrived, so had any of theirs."""
    browser.page.evaluate(
        "url => fetch(url, {mode: 'no-cors'}).catch(() => null)", f"http://127.0.0.1:{listener.port}/{name}"
    )
    listener.wait_for(f"/{name}")


@pytest.mark.timeout(450)  # a hang guard: two runs of some thirty attempts, each bounded by the view (3 s or 60 s)
@pytest.mark.xdist_group("views-trick")  # not beside the tricky views (see test_views_cannot_trick_the_person)
def test_a_hostile_view_reaches_nothing_and_leaves_the_page_unchanged(tmp_path: Path, chromium: Browser) -> None:
    """Every channel out of the sandbox (network, navigation, popups, the parent page, cookies, storage) towards a
    loopback listener: it gets nothing but the test's own control requests, and JupyterLab's page is as it was. The
    view's refused requests come back as errors. The origin the resource declared, once the person allows it, is
    the one thing the view reaches; the origin that smuggles a directive is refused."""
    with Listener() as listener, jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
        cells = [
            "import sys\nimport purra_jupyter as pj\n"
            f"args = [{str(HOSTILE)!r}, '{listener.port}']\n"
            'bad = pj.connect(pj.ServerConfig("bad", command=sys.executable, args=args))',
            'bad.call("hostile", {}, raw=True, approve=True)',
            *(f'bad.call("hostile", {{"nav": "{nav}"}}, raw=True, approve=True)' for nav in NAVIGATIONS),
        ]
        write_code_notebook(lab.root / "hostile.ipynb", cells)
        page = chromium.page
        try:
            open_notebook(chromium, lab, "hostile.ipynb")
            before = page.evaluate(PAGE_STATE_JS)
            run_all(chromium)
            output = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(APP)
            view = output.locator("iframe.jp-PurraApp-frame").content_frame.locator("iframe").content_frame
            expect(view.locator("#state")).to_have_text("done", timeout=STEP * 3)
            report = view.locator("#report li")
            said = {
                str(report.nth(i).get_attribute("data-attempt")): report.nth(i).inner_text().split(": ", 1)[1]
                for i in range(report.count())
            }
            print(json.dumps(said, indent=1))
            control(chromium, listener, "control-1")
            assert listener.paths == ["/control-1"], listener.paths
            after = page.evaluate(PAGE_STATE_JS)
            assert after == {**before, "cells": after["cells"]} and after["pwned"] == "undefined", (before, after)
            assert len(page.context.pages) == 1, [p.url for p in page.context.pages]
            for name in ("parent-document", "top-document", "cookies", "localStorage"):
                assert said[name].startswith("blocked: SecurityError"), said[name]
            for name in ("call-model-only", "call-unlisted", "read-not-ui"):
                assert "mcp_app_refused" in said[name], said[name]
            for name in ("ui-message", "sampling"):
                assert "-32601" in said[name] and "not supported" in said[name], said[name]
            check_answered_in_place(chromium, listener, output, said)
            # What the resource declared: shown; the smuggled directive refused; nothing allowed yet.
            domains = output.locator(".jp-PurraApp-domains")
            expect(domains).to_contain_text(f"connectDomains: http://127.0.0.1:{listener.port}")
            expect(domains).to_contain_text("refused: connectDomains 'https://a.example; script-src *'")
            expect(domains).to_contain_text("permissions: clipboardWrite")
            print(f"screenshot: {chromium.screenshot('views-hostile-refused', output)}")
            click_settled(domains.get_by_role("button", name="Allow them"))
            expect(domains).to_contain_text("(allowed)", timeout=STEP)
            view = output.locator("iframe.jp-PurraApp-frame").content_frame.locator("iframe").content_frame
            expect(view.locator("#state")).to_have_text("done", timeout=STEP * 3)
            control(chromium, listener, "control-2")
            reached = set(listener.paths) - {"/control-1", "/control-2"}
            assert {"/fetch", "/xhr"} <= reached, listener.paths
            assert reached <= CONNECTED, listener.paths
            assert page.evaluate(PAGE_STATE_JS)["url"] == before["url"]
            check_navigations(chromium, listener, before)
        except BaseException:
            with contextlib.suppress(Exception):
                frame = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(f"{APP} iframe.jp-PurraApp-frame")
                print(
                    "the view's report:",
                    frame.content_frame.locator("iframe").content_frame.locator("#report").inner_text(timeout=1000),
                )
            chromium.report_failure("views-hostile-failure", lab)
            raise


KERNEL_PRINT_JS = """
const future = panel.sessionContext.session.kernel.requestExecute({code: arg});
let out = '';
future.onIOPub = message => { if (message.header.msg_type === 'stream') out += message.content.text; };
await future.done;
return out;
"""


def kernel_print(browser: Browser, code: str) -> str:
    """What ``code`` prints, run in the open notebook's kernel (the kit's state as the kernel holds it)."""
    return str(browser.notebook_js(KERNEL_PRINT_JS, code))


def check_answered_in_place(browser: Browser, listener: Listener, output: Locator, said: dict[str, str]) -> None:
    """``ui/open-link`` is answered and its address shown as text under the view (no link, nothing opened, whatever
    the scheme); the view's log line is an ``app`` row of the session log, as text."""
    assert said["open-link"] == said["open-javascript"] == said["log"] == "no error", said
    links = output.locator(".jp-PurraApp-links")
    expect(links).to_contain_text(f"http://127.0.0.1:{listener.port}/open-link")
    expect(links).to_contain_text("javascript:window.top.__pwned=1")
    assert links.locator("a, [href]").count() == 0
    wanted = f"hostile's view said (warning): {LOG_LINE}"
    until(
        browser,
        lambda: wanted in kernel_print(browser, "print(*(row.detail for row in bad.log.events('app')), sep='\\n')"),
        "the view's log line in the session log",
    )


def view_url(output: Locator) -> str:
    """The address of the document in the view's own frame (inside the proxy of ``output``)."""
    proxy = output.locator("iframe.jp-PurraApp-frame").element_handle().content_frame()
    views = proxy.child_frames if proxy is not None else []
    return views[0].url if views else ""


def until(browser: Browser, holds: Callable[[], bool], what: str) -> None:
    """Waits for ``holds`` (a hang guard of STEP), letting Playwright deliver the page's events meanwhile."""
    deadline = time.monotonic() + STEP / 1000
    while not holds():
        assert time.monotonic() < deadline, (what, browser.console)
        browser.page.wait_for_timeout(50)


def check_navigations(browser: Browser, listener: Listener, before: dict[str, object]) -> None:
    """The view's own navigations (a link, a meta refresh, ``location=``, a form): the view's frame ends on the
    browser's error page (the policy's ``frame-src`` blocked it) or the sandbox refused the form; nothing arrives."""
    page = browser.page
    for index, nav in enumerate(NAVIGATIONS, start=2):
        output = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(APP)
        logged = NAVIGATIONS[nav]
        if logged is None:
            until(
                browser,
                lambda output=output: view_url(output).startswith("chrome-error:"),
                f"{nav}: the view's frame on the error page",
            )
        else:
            target = logged.format(port=listener.port)
            until(browser, lambda target=target: any(target in line for line in browser.console), f"{nav}: {target}")
        print(f"screenshot: {browser.screenshot(f'views-hostile-{nav}', output)}")
    control(browser, listener, "control-3")
    assert set(listener.paths) - CONNECTED == {
        "/control-1",
        "/control-2",
        "/control-3",
    }, listener.paths
    assert page.evaluate(PAGE_STATE_JS) == {**before, "cells": page.evaluate(PAGE_STATE_JS)["cells"]}
    assert len(page.context.pages) == 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-x", "-q"]))


# --- views that try to trick the person ------------------------------------------------------------------------

TRICKY = ROOT / "tests" / "servers" / "tricky_app_server.py"
PENDING_MAX = 3  # labextension/src/mcpapps/protocol.ts, purra_jupyter/_ui/views.py
FLOOD = 150
DOUBLE_CLICK_MS = 150  # the gap between the two clicks of a quick double click


class Listeners:
    """A UDP and a TCP listener on loopback that record every datagram and every connection they get."""

    def __init__(self) -> None:
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.got: list[str] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._datagrams, daemon=True).start()
        threading.Thread(target=self._connections, daemon=True).start()

    @property
    def ports(self) -> tuple[int, int]:
        return int(self.udp.getsockname()[1]), int(self.tcp.getsockname()[1])

    def _datagrams(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                data, _ = self.udp.recvfrom(65536)
                with self.lock:
                    self.got.append(f"udp {data[:24]!r}")

    def _connections(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.tcp.accept()
                connection.settimeout(1)
                with contextlib.suppress(OSError):
                    first = connection.recv(64)
                    with self.lock:
                        self.got.append(f"tcp {first[:24]!r}")
                connection.close()

    def received(self) -> list[str]:
        with self.lock:
            return list(self.got)

    def close(self) -> None:
        self.udp.close()
        self.tcp.close()


TRICKY_CELLS = {
    "connect": "",  # (written with the listeners' ports)
    "after": 'tricky.call("trap", {"mode": "after"}, raw=True, approve=True)',
    "before": 'tricky.call("trap", {"mode": "before"}, raw=True, approve=True)',
    "sidedoors": 'tricky.call("sidedoors", {}, raw=True, approve=True)',
    "flood": 'tricky.call("flood", {}, raw=True, approve=True)',
    "origins": 'tricky.call("origins", {}, raw=True, approve=True)',
    "notes": 'demo.call("list_notes", {}, approve=True)',
    "forger": 'tricky.call("forger", {}, raw=True, approve=True)',
}
TRICKY_INDEX = {name: index for index, name in enumerate(TRICKY_CELLS)}

WEBRTC_CONTROL_JS = """async ([udp, tcp]) => {
    const pc = new RTCPeerConnection({iceServers: [{urls: `stun:127.0.0.1:${udp}`},
        {urls: `turn:127.0.0.1:${tcp}?transport=tcp`, username: 'control', credential: 'x'}]});
    pc.createDataChannel('control');
    await pc.setLocalDescription(await pc.createOffer());
    window.__control = pc;
}"""


def tricky_cell(browser: Browser, name: str) -> Locator:
    return browser.page.locator(".jp-Notebook .jp-Cell").nth(TRICKY_INDEX[name])


def tricky_view(browser: Browser, name: str) -> FrameLocator:
    return app_view(tricky_cell(browser, name))


def reported(view: FrameLocator) -> dict[str, str]:
    """What each attempt of a view did, as the view wrote it."""
    items = view.locator("#report li")
    return {
        str(items.nth(i).get_attribute("data-attempt")): items.nth(i).inner_text().split(": ", 1)[1]
        for i in range(items.count())
    }


def box_center(locator: Locator) -> tuple[float, float]:
    box = locator.bounding_box()
    assert box is not None, locator
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def element_at(browser: Browser, x: float, y: float) -> str:
    """What the page has at a point: the button's text, or the element's tag and class."""
    return str(
        browser.page.evaluate(
            """([x, y]) => { const node = document.elementFromPoint(x, y);
                const button = node && node.closest('button');
                if (button) return 'button ' + button.textContent.trim();
                return node ? node.tagName + '.' + node.className : ''; }""",
            [x, y],
        )
    )


@pytest.mark.timeout(600)  # a hang guard: two JupyterLab runs of eight cells, each wait bounded by STEP
# One after the other, on one worker (with the hostile view's test): each fills its Chromium's 500 peer connections
# and floods its kernel; two at once on two cores took ten minutes where one alone takes half a minute.
@pytest.mark.xdist_group("views-trick")
@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_views_cannot_trick_the_person(tmp_path: Path, chromium: Browser, ui: str) -> None:
    """Hostile views of the tricky server, one per attack of the issue, in a real JupyterLab and Notebook 7: the
    resize trap sends and records nothing; WebRTC, workers, nested frames and resource hints reach neither a UDP
    nor a TCP listener (which the page's own WebRTC does reach); 150 requests leave PENDING_MAX approvals, the rest
    refused at once, the kernel free within the issue's 2 s and the output small; the Jupyter server's origin is
    refused with its reason; a forged message from another frame is ignored."""
    listeners, control = Listeners(), Listeners()
    record = tmp_path / "destroy.log"
    try:
        with jupyter_lab(JUPYTER, tmp_path / "lab") as lab:
            udp, tcp = listeners.ports
            cells = dict(TRICKY_CELLS)
            cells["connect"] = (
                "import sys\nimport purra_jupyter as pj\n"
                f"args = [{str(TRICKY)!r}, '{udp}', '{tcp}', {str(record)!r}, {lab.base_url!r}]\n"
                'tricky = pj.connect(pj.ServerConfig("tricky", command=sys.executable, args=args))\n'
                'demo = pj.connect(pj.ServerConfig("demo", command=sys.executable, args=["-m", "purra_jupyter.demo"]))'
            )
            write_code_notebook(lab.root / "tricky.ipynb", cells.values())
            try:
                open_notebook(chromium, lab, "tricky.ipynb", ui=ui)
                run_all(chromium)
                offset = check_the_trap_after(chromium)
                check_the_trap_before(chromium, offset)
                check_no_side_doors(chromium, listeners, control)
                check_the_flood(chromium)
                check_the_origins(chromium, lab)
                check_the_forger(chromium)
                assert not record.exists(), record.read_text()
                assert chromium.dialogs == [] and len(chromium.page.context.pages) == 1
                assert [error for error in chromium.errors if "purra" in error.lower()] == [], chromium.errors
            except BaseException:
                chromium.report_failure(f"views-tricky-{ui}-failure", lab)
                raise
    finally:
        listeners.close()
        control.close()


def approvals_of(browser: Browser, name: str) -> Locator:
    return tricky_cell(browser, name).locator(".jp-PurraApp-approvals .purra-approval")


def frame_of(browser: Browser, name: str) -> Locator:
    return tricky_cell(browser, name).locator("iframe.jp-PurraApp-frame")


def double_click_bait(browser: Browser, name: str) -> tuple[float, float]:
    """The person's quick double click on the view's own button (the first click springs the trap)."""
    view = tricky_view(browser, name)
    expect(view.locator("#state")).to_have_text("armed", timeout=STEP)
    bait = view.locator("#bait")
    bait.scroll_into_view_if_needed()
    x, y = box_center(bait)
    browser.page.mouse.click(x, y)
    return x, y


def check_the_trap_after(browser: Browser) -> tuple[float, float]:
    """The view asks to destroy, then shrinks so that the approval would move under the pointer: its frame keeps its
    size while the approval waits, the second click lands on the view, nothing is decided; denied, the size it asked
    comes. Returns where the Approve button's centre is from the frame's left and bottom (the next trap's
    calibration, as an attacker would measure it)."""
    frame = frame_of(browser, "after")
    expect(frame).to_have_css("height", "700px", timeout=STEP)
    x, y = double_click_bait(browser, "after")
    browser.page.wait_for_timeout(DOUBLE_CLICK_MS)
    browser.page.mouse.click(x, y)
    approvals = approvals_of(browser, "after")
    expect(approvals).to_have_count(1, timeout=STEP)
    approve = approvals.get_by_role("button", name="Approve")
    expect(approve).to_be_visible()
    assert frame.evaluate("node => node.style.height") == "700px"  # the shrink waits
    assert element_at(browser, x, y).startswith("IFRAME"), element_at(browser, x, y)
    expect(approvals.locator(".purra-approval-state")).to_have_text("pending")
    frame_box, approve_box = frame.bounding_box(), approve.bounding_box()
    assert frame_box is not None and approve_box is not None
    offset = (
        approve_box["x"] + approve_box["width"] / 2 - frame_box["x"],
        approve_box["y"] + approve_box["height"] / 2 - (frame_box["y"] + frame_box["height"]),
    )
    print(f"screenshot: {browser.screenshot('views-trap-after', tricky_cell(browser, 'after'))}")
    click_settled(approvals.get_by_role("button", name="Deny"))
    expect(tricky_view(browser, "after").locator('#report li[data-attempt="destroy"]')).to_contain_text("denied")
    expect(frame).to_have_css("height", "60px", timeout=STEP)  # asked while frozen, applied once decided
    return offset


CLICKS_JS = """() => {
    window.__clicks = [];
    window.addEventListener("click", event => {  // (the page's clicks, not the view's; what the guard did of each)
        const guard = event.target.closest('[data-purra-guard]');
        const button = event.target.closest('button');
        setTimeout(() => window.__clicks.push({ignored: guard && guard.getAttribute('data-purra-guard-ignored'),
                                               button: button && button.textContent.trim()}));
    }, true);
}"""
APPROVE_AT_JS = """([x, y]) => {
    const node = document.elementFromPoint(x, y);
    const button = node && node.closest('button');
    return Boolean(button) && button.textContent.trim() === 'Approve';
}"""


def check_the_trap_before(browser: Browser, offset: tuple[float, float]) -> None:
    """The view shrinks first (nothing waits yet), then asks: the approval appears with Approve right under the
    pointer, and the second click, at once, lands on it; the guard lets it count for nothing."""
    frame = frame_of(browser, "before")
    expect(frame).to_have_css("height", "700px", timeout=STEP)
    view_frame = frame.element_handle().content_frame()
    assert view_frame is not None
    [inner] = view_frame.child_frames
    bait = tricky_view(browser, "before").locator("#bait")
    expect(bait).to_be_visible(timeout=STEP)
    inner.evaluate("left => { document.getElementById('bait').style.marginLeft = left + 'px'; }", offset[0] - 40)
    bait.scroll_into_view_if_needed()
    frame_box = frame.bounding_box()
    assert frame_box is not None
    x, y = box_center(bait)
    inner.evaluate("height => { window.trapHeight = height; }", round(y - frame_box["y"] - offset[1]))
    browser.page.evaluate(CLICKS_JS)
    double_click_bait(browser, "before")
    # The second click of the double click, as soon as the approval is there (looked for on every frame).
    browser.page.wait_for_function(APPROVE_AT_JS, arg=[x, y], polling="raf", timeout=STEP)
    browser.page.mouse.click(x, y)
    browser.page.wait_for_function("() => window.__clicks.length === 1", timeout=STEP)
    last = browser.page.evaluate("() => window.__clicks.at(-1)")
    assert last == {"button": "Approve", "ignored": "1"}, last  # the trap worked: it landed on Approve, too soon
    approvals = approvals_of(browser, "before")
    guard = approvals.locator(f"xpath=ancestor::*[@{GUARD}][1]").first
    expect(guard).to_have_attribute(GUARD, "ready", timeout=STEP)
    expect(approvals.locator(".purra-approval-state")).to_have_text("pending")
    expect(tricky_cell(browser, "before").locator(".jp-PurraApp-decisions")).to_have_count(0)
    print(f"screenshot: {browser.screenshot('views-trap-before', tricky_cell(browser, 'before'))}")
    click_settled(approvals.get_by_role("button", name="Deny"))
    expect(tricky_cell(browser, "before").locator(".jp-PurraApp-decisions")).to_contain_text(
        "the view called destroy: denied (denied by a click)", timeout=STEP
    )


def check_no_side_doors(browser: Browser, listeners: Listeners, control: Listeners) -> None:
    """Every attempt blocked, in the view and in the frames it nests; the listeners got nothing, though the page's own
    WebRTC reaches the control listeners at once (so the browser and the listeners would carry it)."""
    view = tricky_view(browser, "sidedoors")
    expect(view.locator("#state")).to_have_text("done", timeout=STEP)
    view.locator("#pip").click()
    expect(view.locator("#state")).to_have_text("pip tried", timeout=STEP)
    said = reported(view)
    print(json.dumps(said, indent=1))
    blocked = ["webrtc", "webrtc-prefixed", "webrtc-restored", "webrtc-nested-srcdoc", "webrtc-nested-blank",
               "worker-blob", "worker-data", "shared-worker", "worklet", "webtransport",
               "picture-in-picture"]  # fmt: skip
    for name in blocked:
        assert said[name].startswith("blocked: "), (name, said[name])
    assert "Cannot create so many PeerConnections" in said["webrtc-nested-srcdoc"], said
    browser.page.evaluate(WEBRTC_CONTROL_JS, list(control.ports))
    until(browser, lambda: len(control.received()) > 0, "the page's own WebRTC at the control listeners")
    browser.page.evaluate("() => window.__control.close()")
    assert listeners.received() == [], listeners.received()


KERNEL_FREE_SECONDS = 2.0  # the bound on the kernel's time for 150 requests of one view


def check_the_flood(browser: Browser) -> None:
    """150 calls at once: PENDING_MAX approvals, the rest refused at once, the kernel free within the issue's 2 s,
    the output small; each approval then denied by a click."""
    view = tricky_view(browser, "flood")
    expect(view.locator("#state")).to_have_text("armed", timeout=STEP)
    started = time.monotonic()
    view.locator("#go").click()
    expect(view.locator("#refused")).to_have_text(str(FLOOD - PENDING_MAX), timeout=STEP)
    assert kernel_print(browser, "print('free')") == "free\n"
    busy = time.monotonic() - started
    assert busy < KERNEL_FREE_SECONDS, busy
    expect(view.locator("#said")).to_contain_text(f"{PENDING_MAX} requests of this view are waiting already")
    approvals = approvals_of(browser, "flood")
    expect(approvals).to_have_count(PENDING_MAX, timeout=STEP)
    size = browser.notebook_js(
        "return JSON.stringify(panel.content.model.cells.get(arg).sharedModel.outputs).length;", TRICKY_INDEX["flood"]
    )
    print(f"150 requests: the kernel free after {busy:.2f} s, the output {size} characters")
    assert int(size) < 150_000, size
    for left in reversed(range(PENDING_MAX)):
        click_settled(approvals.locator("button:enabled", has_text="Deny").first)  # the first still pending
        expect(approvals.locator(".purra-approval-state").filter(has_text="pending")).to_have_count(left, timeout=STEP)
    expect(tricky_cell(browser, "flood").locator(".jp-PurraApp-decisions li")).to_have_count(PENDING_MAX)


def check_the_origins(browser: Browser, lab: Lab) -> None:
    """The Jupyter server's origin (and its localhost alias) refused, with the reason; only the plain origin offered;
    allowed, the view is told only it, and the Jupyter API stays out of its reach."""
    port = lab.base_url.rsplit(":", 1)[1]
    domains = tricky_cell(browser, "origins").locator(".jp-PurraApp-domains")
    for origin in (lab.base_url, f"http://localhost:{port}"):
        expect(domains.locator(".jp-PurraApp-refused")).to_contain_text(
            f"refused: connectDomains {origin}: the Jupyter server that serves this notebook", timeout=STEP
        )
    offered = domains.locator("ul").first
    expect(offered).to_have_text("connectDomains: https://api.example (fetch and WebSocket to it)")
    click_settled(domains.get_by_role("button", name="Allow them"))
    expect(domains).to_contain_text("(allowed)", timeout=STEP)
    view = tricky_view(browser, "origins")
    expect(view.locator("#state")).to_have_text("done", timeout=STEP)
    said = reported(view)
    assert (
        said["told-connect-domains"] == 'no error ["https://api.example"]'
        or said["told-connect-domains"] == '["https://api.example"]'
    ), said
    assert said["jupyter-api"].startswith("blocked: TypeError"), said
    print(f"screenshot: {browser.screenshot('views-origins', tricky_cell(browser, 'origins'))}")


def check_the_forger(browser: Browser) -> None:
    """Forged requests to the page and to every proxy start nothing; the forged result the victim (the demo's notes
    view, which checks its sender) receives changes nothing."""
    notes = app_view(tricky_cell(browser, "notes"))
    expect(notes.locator("#notes")).to_have_text("no notes yet", timeout=STEP)
    pending_before = browser.page.locator(".purra-approval .purra-approval-state").filter(has_text="pending").count()
    forger = tricky_view(browser, "forger")
    expect(forger.locator("#state")).to_have_text("armed", timeout=STEP)
    forger.locator("#forge").click()
    expect(forger.locator("#state")).to_contain_text("forged into", timeout=STEP)
    assert int(forger.locator("#state").inner_text().split()[2]) >= 5
    kernel_print(browser, "print()")  # (any request the forgery started would have reached the kernel by now)
    expect(notes.locator("#notes")).to_have_text("no notes yet")
    pending = browser.page.locator(".purra-approval .purra-approval-state").filter(has_text="pending")
    expect(pending).to_have_count(pending_before)
    assert "FORGED" not in browser.page.locator(".jp-Notebook").inner_text()
