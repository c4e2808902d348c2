"""Hostile servers, faults and secrets: no secret reaches anything a notebook keeps, no shell ever sees an
argument, no call reaches a server without its own valid approval, and nothing a server sends renders as markup."""

from __future__ import annotations

import base64
import json
import os
import shlex
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import ipywidgets as widgets
import nbformat
import psutil
import pytest
from conftest import (
    ROOT,
    DemoHttpServer,
    assert_safe,
    children,
    demo_config,
    descendants,
    raw_config,
    stderr_after,
    unsafe_markup,
    wait_until,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import purra_jupyter as pj
from purra_jupyter._base import visible as names
from purra_jupyter._base.config import load_servers
from purra_jupyter._base.wire import ENVELOPE_MIME, RAW_RESULT_MIME
from purra_jupyter._purra.envelope import Envelope, RawResult
from purra_jupyter._ui.approval import PendingCall

SECRET_ENV = "env-s3cr3t-7f3a9c21"
SECRET_HEADER = "hdr-s3cr3t-b41d2e77"
SECRETS = (SECRET_ENV, SECRET_HEADER)
XSS = [
    "<script>window.__pwned = 1</script>",
    "<img src=x onerror=window.__pwned=1>",
    '"><svg onload=window.__pwned=1>',
    "javascript:window.__pwned=1",
    "</pre></td></tr></table><iframe src=javascript:alert(1)></iframe>",
    "<a href='javascript:alert(1)'>x</a><style>*{display:none}</style>",
]


# --- helpers -----------------------------------------------------------------------------------------


def widget_state(widget: widgets.Widget) -> str:
    """Everything the front end gets for ``widget`` and the widgets inside it, as JSON text."""
    return json.dumps([child.get_state() for child in descendants(widget)], default=str)


def shown(obj: Any) -> list[str]:
    """What a notebook can show of ``obj``: repr, str and its MIME bundle as JSON text."""
    texts = [repr(obj), str(obj)]
    if hasattr(obj, "_repr_mimebundle_"):
        texts.append(json.dumps(obj._repr_mimebundle_(), default=str))
    return texts


def error_texts(error: BaseException) -> list[str]:
    """The error as a person sees it: message, repr, and the full chained traceback a notebook prints."""
    return [str(error), repr(error), "".join(traceback.format_exception(error))]


def leaked(texts: list[str]) -> list[tuple[int, str]]:
    return [(index, secret) for index, text in enumerate(texts) for secret in SECRETS if secret in text]


def html_widgets(widget: Any) -> list[str]:
    """The HTML of every HTML widget inside ``widget``; also checks no widget renders its description as HTML."""
    values = []
    for child in descendants(widget):
        assert not getattr(child, "description_allow_html", False), child
        if isinstance(child, widgets.HTML | widgets.HTMLMath):
            values.append(child.value)
    return values


def run_magic_cell(ip: InteractiveShell, cell: str) -> Any:
    """Run ``cell`` as a notebook would; return the UsageError it raised (or its result)."""
    result = ip.run_cell(cell)
    return result.error_in_exec if result.error_in_exec is not None else result.result


# --- 1. secrets ------------------------------------------------------------------------------------------


class _Reflector(BaseHTTPRequestHandler):
    """An HTTP endpoint that refuses every request and reflects the headers it got in its body and headers
    (a misconfigured or hostile server); records what it received."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        type(self).seen.append(dict(self.headers))
        body = json.dumps(dict(self.headers)).encode()
        self.send_response(401)
        self.send_header("WWW-Authenticate", f"Bearer error={self.headers.get('Authorization', '')!r}")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_DELETE = do_POST

    def log_message(self, *args: object) -> None:
        pass


def test_secrets_never_show_in_reprs_logs_bundles_widgets_or_errors(demo_http_server: DemoHttpServer) -> None:
    """Header and env values are credentials: every surface a notebook shows or stores must hide them."""
    stdio = demo_config("secret-stdio", env={"API_TOKEN": SECRET_ENV})
    http = pj.ServerConfig(
        "secret-http", url=demo_http_server.url, headers={"Authorization": "Bearer " + SECRET_HEADER}
    )
    texts: list[str] = []
    before = children()
    for config in (stdio, http):
        texts += [repr(config), str(config), config.target]
        with pj.connect(config) as session:
            if config is stdio:  # the secret is really in play: the server process got it
                [pid] = children() - before
                assert psutil.Process(pid).environ()["API_TOKEN"] == SECRET_ENV
            pending = session.call("echo", {"text": "approve me"})
            status = session.status_widget()
            form = session.form("search_documents")
            envelope = session.call("add", {"a": 1, "b": 2}, approve=True)
            raw = session.call("greet", {"name": "Ada"}, raw=True, approve=True)
            frame = session.evaluate("echo", [{"text": "a"}, {"text": "b"}], approve=True)
            failed = session.call("fail", {"message": "boom"}, approve=True)
            assert envelope.ok and raw.ok and not failed.ok and frame["ok"].all()
            texts.append(widget_state(pending.widget))  # (while it lives: once decided, its widgets are closed)
            pending.approve()
            wait_until(lambda p=pending: p.state == "done", what="the approved call")
            assert pending.widget.comm is None  # closed: its record took its place
            texts += shown(session) + shown(session.catalog) + shown(session.log) + shown(pending)
            texts += shown(envelope) + shown(raw) + shown(failed) + shown(frame.attrs["summary"])
            texts += [frame.to_string(), session.log.to_frame().to_string(), json.dumps(session.bindings)]
            texts += [row.detail for row in session.log] + [session.stderr, session.cause]
            texts += [widget_state(status), widget_state(form)]
        texts += shown(session) + shown(session.log) + [widget_state(status), session.cause]
    texts.append(json.dumps(widgets.Widget.get_manager_state(), default=str))  # every live widget's model

    _Reflector.seen = []
    reflector = ThreadingHTTPServer(("127.0.0.1", 0), _Reflector)
    threading.Thread(target=reflector.serve_forever, daemon=True).start()
    failing = [
        pj.ServerConfig("closed-port", url="http://127.0.0.1:9/mcp?token=" + SECRET_HEADER,
                        headers={"Authorization": "Bearer " + SECRET_HEADER}, timeout=5),
        pj.ServerConfig("reflector", url=f"http://127.0.0.1:{reflector.server_port}/mcp",
                        headers={"Authorization": "Bearer " + SECRET_HEADER}, timeout=5),
        pj.ServerConfig("missing", command="/nonexistent/mcp-server", env={"API_TOKEN": SECRET_ENV}),
        raw_config("exits", "--fault", "exit-on-initialize", env={"API_TOKEN": SECRET_ENV}),
    ]  # fmt: skip
    try:
        for config in failing:
            with pytest.raises(pj.McpSessionError) as caught:
                pj.connect(config)
            expected = "mcp_auth_required" if config.name == "reflector" else "mcp_connect_failed"
            assert caught.value.code == expected, caught.value
            texts += [*error_texts(caught.value), repr(config)]
    finally:
        reflector.shutdown()
    assert _Reflector.seen and _Reflector.seen[0]["Authorization"] == "Bearer " + SECRET_HEADER  # it was sent

    assert leaked(texts) == []
    everything = "\n".join(texts)
    for visible in ("secret-stdio", "secret-http", "API_TOKEN", "Authorization", "approve me", "closed-port",
                    "reflector", "HTTP 401", "token=***", "Could not start"):  # fmt: skip
        assert visible in everything, visible  # the scan saw the real surfaces


NOTEBOOK_CELLS = [
    "import os, sys\nimport purra_jupyter as pj\nsecret_env = os.environ['PJ_TEST_SECRET_ENV']",
    "%load_ext purra_jupyter",
    "%mcp_connect nbstdio --env API_TOKEN=$secret_env -- {sys.executable} -m purra_jupyter.demo",
    "stdio = pj.sessions()[0]\nprint(stdio.config)\nstdio.config",
    "web = pj.connect(pj.ServerConfig('nbweb', url=URL,\n"
    "    headers={'Authorization': 'Bearer ' + os.environ['PJ_TEST_SECRET_HEADER']}))\nweb",
    "web.status_widget()",
    "web.call('echo', {'text': 'hello from the notebook'})",
    '%mcp_call nbstdio echo --yes {"text": "hi"}',
    "print(repr(stdio), repr(web), repr(web.config))\nprint(stdio.log)\nweb.log",
    "%mcp_log nbweb",
    "web.catalog",
    # Failing connects that carry the same secrets: whatever they print is kept in the notebook.
    "pj.connect(pj.ServerConfig('nbclosed', url='http://127.0.0.1:9/mcp', timeout=5,\n"
    "    headers={'Authorization': 'Bearer ' + os.environ['PJ_TEST_SECRET_HEADER']}))",
    "%mcp_connect nbmissing --env API_TOKEN=$secret_env -- /nonexistent/mcp-server",
    "%mcp_disconnect --all\npj.sessions()",
]


def test_an_executed_notebook_keeps_no_secret(demo_http_server: DemoHttpServer, tmp_path: Path) -> None:
    """The saved .ipynb (outputs, tracebacks, widget state) is what gets shared: no secret may be in it."""
    notebook = nbformat.v4.new_notebook()
    for source in NOTEBOOK_CELLS:
        cell = nbformat.v4.new_code_cell(source.replace("URL", repr(demo_http_server.url)))
        if source.startswith(("pj.connect(pj.ServerConfig('nbclosed'", "%mcp_connect nbmissing")):
            cell.metadata["tags"] = ["raises-exception"]
        notebook.cells.append(cell)
    source, target = tmp_path / "secrets.ipynb", tmp_path / "secrets.executed.ipynb"
    nbformat.write(notebook, source)
    assert not [secret for secret in SECRETS if secret in source.read_text()]
    env = {**os.environ, "PJ_TEST_SECRET_ENV": SECRET_ENV, "PJ_TEST_SECRET_HEADER": SECRET_HEADER}
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "execute_notebook.py"), str(source), str(target), "--widget-state"],
        capture_output=True, text=True, cwd=ROOT, timeout=180, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    text = target.read_text()
    assert [secret for secret in SECRETS if secret in text] == []
    executed = nbformat.reads(text, as_version=4)
    failed = [
        json.dumps(cell.outputs) for cell in executed.cells if "raises-exception" in cell.metadata.get("tags", [])
    ]
    assert len(failed) == 2 and all("mcp_connect_failed" in shown for shown in failed), failed
    assert "the connection was refused" in failed[0] and "Could not start" in failed[1]
    assert "application/vnd.jupyter.widget-state+json" in executed.metadata.get("widgets", {})
    visible_texts = ["nbstdio", "nbweb", "API_TOKEN", "Authorization", "hello from the notebook", "Approve",
                     "application/vnd.purra.envelope+json", "application/vnd.purra.catalog+json"]  # fmt: skip
    for visible in visible_texts:
        assert visible in text, visible  # the outputs, approval widget and status really are in the file


# --- 2. no shell -------------------------------------------------------------------------------------------

# Prints its arguments as JSON on stderr, then serves as the demo server (so the session is usable).
ARGV_THEN_DEMO = (
    "import sys, json, runpy; sys.stderr.write('ARGV ' + json.dumps(sys.argv[1:]) + chr(10)); sys.stderr.flush(); "
    "del sys.argv[1:]; runpy.run_module('purra_jupyter.demo', run_name='__main__', alter_sys=True)"
)


def shell_payloads(directory: Path) -> list[str]:
    return [
        f"; touch {directory}/semicolon",
        f"$(touch {directory}/dollar)",
        f"`touch {directory}/backtick`",
        f"| touch {directory}/pipe",
        f"&& touch {directory}/and",
        f"> {directory}/redirect",
        "$HOME ~ * ?",
    ]


def argv_seen(session: pj.McpSession) -> list[str]:
    return json.loads(stderr_after(session, "ARGV ", what="the server to print its arguments"))


def test_stdio_arguments_reach_the_server_literally_and_no_shell_runs_them(
    ip: InteractiveShell, tmp_path: Path
) -> None:
    """Shell metacharacters in args are data: the server gets them verbatim and nothing executes them."""
    target = tmp_path / "shell"
    target.mkdir()
    payloads = shell_payloads(target)
    config = pj.ServerConfig("literal", command=sys.executable, args=["-c", ARGV_THEN_DEMO, *payloads])
    with pj.connect(config) as session:
        assert argv_seen(session) == payloads
        assert session.call("echo", {"text": payloads[0]}, approve=True).structured == {"text": payloads[0]}

    # The same through the magic: the words after -- become the argv, as written.
    line = f"%mcp_connect literal-magic -- {{sys.executable}} -c {shlex.quote(ARGV_THEN_DEMO)} "
    line += " ".join(shlex.quote(payload) for payload in payloads)
    session = run_magic_cell(ip, line)
    assert isinstance(session, pj.McpSession), session
    try:
        assert argv_seen(session) == payloads
    finally:
        session.close()
    assert list(target.iterdir()) == []


# --- 3. configuration rules not covered by test_config.py ------------------------------------------------

PASSWORD = "pw-s3cr3t-9d8c"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1.nip.io/mcp",
        "http://localhost.example.org/mcp",
        "http://0.0.0.0:8000/mcp",
        "http://[::]/mcp",
        "http://[fe80::1]/mcp",
        "http://169.254.169.254/latest/meta-data",
        "http://192.168.1.1/mcp",
        "http://2130706433/mcp",
        "http://evil.example#@127.0.0.1/mcp",
        "http://evil.example?@127.0.0.1/mcp",
        "HTTP://EXAMPLE.ORG/mcp",
    ],
)
def test_plain_http_to_a_host_that_is_not_loopback_is_refused(url: str) -> None:
    """Only a loopback host may be reached without TLS, however the URL dresses another host up."""
    with pytest.raises(pj.McpSessionError) as caught:
        pj.ServerConfig("n", url=url)
    assert caught.value.code == "mcp_config_invalid"
    assert "loopback" in caught.value.message


@pytest.mark.parametrize(
    ("url", "words"),
    [
        (f"https://user:{PASSWORD}@example.org/mcp", "credentials"),
        (f"https://:{PASSWORD}@example.org/mcp", "credentials"),
        (f"https://{PASSWORD}@example.org/mcp", "credentials"),
        (f"http://user:{PASSWORD}@127.0.0.1:9/mcp", "credentials"),
        (f"http://user:{PASSWORD}@example.org/mcp", "credentials"),
        (f"http://127.0.0.1:{PASSWORD}@example.org/mcp", "credentials"),
        (f"https://user:{PASSWORD}%40x@example.org/mcp", "credentials"),
        (f"https://user:{PASSWORD}@example.org:99999/mcp", "valid URL"),
        (f"ftp://user:{PASSWORD}@example.org/mcp", "https://"),
        (f"https://user:{PASSWORD}@example.org/mcp\n", "url"),
    ],
)
def test_credentials_in_a_url_are_refused_without_showing_them(
    url: str, words: str, ip: InteractiveShell, tmp_path: Path
) -> None:
    """A password in the URL is refused, and no error path (API, mcp.json, magic) repeats it."""
    texts = []
    with pytest.raises(pj.McpSessionError) as caught:
        pj.ServerConfig("n", url=url)
    assert caught.value.code == "mcp_config_invalid" and words in caught.value.message
    texts += error_texts(caught.value)
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"n": {"url": url}}}))
    with pytest.raises(pj.McpSessionError) as caught:
        load_servers(path)
    assert caught.value.code == "mcp_config_invalid" and words in caught.value.message
    texts += error_texts(caught.value)
    if "\n" not in url:
        error = run_magic_cell(ip, f"%mcp_connect n --url {shlex.quote(url)}")
        assert isinstance(error, UsageError) and "mcp_config_invalid" in str(error), error
        texts.append(str(error))
    assert [text for text in texts if PASSWORD in text] == []
    assert pj.sessions() == []


# --- 4. approval cannot be bypassed ----------------------------------------------------------------------


@dataclass
class Tracked:
    """A PendingCall and what the model knows of it."""

    pending: PendingCall
    text: str
    epoch: int  # the model's catalog epoch when it was created (a list_changed or a close starts a new one)
    tool: str = "echo"  # echo (a read) or add_note (a write under the confirm policy)
    decision: str | None = None  # "approved" | "denied"


TOOLS = ("echo", "add_note")


def server_counts(session: pj.McpSession) -> dict[str, int]:
    """The demo server's own count of finished echo and add_note calls (call_counts itself is counted only
    after it returns)."""
    result = session.connection.request(lambda client: client.call_tool("call_counts", {}))
    return {tool: result.structuredContent["counts"].get(tool, 0) for tool in TOOLS}


SETTLED = ("done", "void", "denied")


class ApprovalMachine(RuleBasedStateMachine):
    """Calls (reads and writes), decisions, list_changed, refresh and close in any order; the server must have
    received exactly one call per approval given while it was valid, and nothing else. A write needs its own
    approval even under the ``auto`` policy."""

    config: pj.ServerConfig  # set by the test: the demo server over stdio, or one HTTP demo server for all

    def __init__(self) -> None:
        super().__init__()
        self.session = pj.connect(self.config)
        self.session.bind("add_note", effect="write", scope_validator=pj.allow_any_scope)
        self.base = server_counts(self.session)  # an HTTP demo server counts the calls of every session it served
        self.tracked: list[Tracked] = []
        self.sent = dict.fromkeys(TOOLS, 0)
        self.epoch = 0
        self.stale = False
        self.closed = False
        self.bound = False
        self.serial = 0

    def teardown(self) -> None:
        self.session.close()

    def _text(self) -> str:
        self.serial += 1
        return f"call-{self.serial}"

    def _valid(self, tracked: Tracked) -> bool:
        return tracked.decision is None and tracked.epoch == self.epoch and not self.stale and not self.closed

    def _refused(self, result: Any) -> None:
        """What any call gets while the session is stale or closed: a refusal, before any approval."""
        code = "mcp_connection_closed" if self.closed else "mcp_catalog_stale"
        assert isinstance(result, Envelope) and result.error_code == code, result

    @property
    def ready(self) -> bool:
        return not self.stale and not self.closed

    def _answered(self, tool: str, text: str, result: Any) -> None:
        """An approved call's result: echo's text, or the write committed."""
        assert result.ok, result
        if tool == "echo":
            assert result.structured == {"text": text} and result.effect_state == "not_started", result
            self.bound = True
        else:
            assert result.effect_state == "committed" and result.structured["id"].startswith("note-"), result
        self.sent[tool] += 1

    @rule(tool=st.sampled_from(TOOLS), policy=st.sampled_from(["prompt", "auto"]))
    def call_with_prompt(self, tool: str, policy: str) -> None:
        """A call no code decided: under ``prompt`` every one waits; under ``auto`` a write still does."""
        text = self._text()
        self.session.set_approval(policy)
        try:
            result = self.session.call(tool, {"text": text})
        finally:
            self.session.set_approval("prompt")
        if not self.ready:
            return self._refused(result)
        if policy == "auto" and tool == "echo":
            return self._answered(tool, text, result)
        assert isinstance(result, PendingCall) and result.state == "pending"
        self.tracked.append(Tracked(result, text, self.epoch, tool))

    @rule(tool=st.sampled_from(TOOLS))
    def call_approved_in_code(self, tool: str) -> None:
        text = self._text()
        result = self.session.call(tool, {"text": text}, approve=True)
        if not self.ready:
            return self._refused(result)
        self._answered(tool, text, result)

    @rule(tool=st.sampled_from(TOOLS))
    def call_denied_in_code(self, tool: str) -> None:
        result = self.session.call(tool, {"text": self._text()}, approve=False)
        if not self.ready:
            return self._refused(result)
        assert result.error_code == "mcp_approval_denied" and result.effect_state == "not_started", result

    @precondition(lambda self: self.tracked)
    @rule(data=st.data(), how=st.sampled_from(["approve()", "click", "approve() twice", "click, then approve()"]))
    def approve(self, data: st.DataObject, how: str) -> None:
        tracked = data.draw(st.sampled_from(self.tracked))
        valid = self._valid(tracked)
        pending = tracked.pending
        for step in how.split(", then "):
            for _ in range(2 if step.endswith("twice") else 1):
                pending.widget.approve_button.click() if step == "click" else pending.approve()
        wait_until(lambda: pending.state in SETTLED, what="the approved call to settle")
        if valid:
            tracked.decision = "approved"
            assert pending.state == "done", pending
            self._answered(tracked.tool, tracked.text, pending.result)
        self._check_state(tracked)

    @precondition(lambda self: self.tracked)
    @rule(data=st.data(), click=st.booleans())
    def deny(self, data: st.DataObject, click: bool) -> None:
        tracked = data.draw(st.sampled_from(self.tracked))
        valid = self._valid(tracked)
        tracked.pending.widget.deny_button.click() if click else tracked.pending.deny()
        if valid:
            tracked.decision = "denied"
            assert tracked.pending.result.error_code == "mcp_approval_denied"
        self._check_state(tracked)

    def _check_state(self, tracked: Tracked) -> None:
        expected = {"approved": "done", "denied": "denied", None: "void"}[tracked.decision]
        if tracked.decision is None and tracked.epoch == self.epoch and self.ready:
            expected = "pending"
        assert tracked.pending.state == expected, (tracked, expected)

    @rule()
    def bind(self) -> None:
        """Binding ahead of a call (an approval of an unbound tool declares the binding instead)."""
        expected = (
            "mcp_connection_closed" if self.closed
            else "mcp_catalog_stale" if self.stale
            else None  # bound anew, or already bound so: kept (a rerun)
        )  # fmt: skip
        try:
            self.session.bind("echo")
            outcome = None
        except pj.McpSessionError as error:
            outcome = error.code
        assert outcome == expected
        self.bound = self.bound or outcome is None

    @precondition(lambda self: not self.closed)
    @rule()
    def list_changed(self) -> None:
        """The server changes its tools (through the raw SDK client, so the kit's own call path is not used)."""
        self.session.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
        wait_until(lambda: self.session.state == "stale", what="the session to turn stale")
        self.stale = True
        self.epoch += 1
        for tracked in self.tracked:
            if tracked.decision is None:
                wait_until(lambda t=tracked: t.pending.state == "void", what="a pending call to turn void")

    @precondition(lambda self: not self.closed)
    @rule()
    def refresh(self) -> None:
        self.session.refresh()
        assert self.session.state == "ready"
        self.stale = False

    @precondition(lambda self: not self.closed)
    @rule()
    def close(self) -> None:
        self.the_server_received_exactly_the_approved_calls()  # the last look at the server before it ends
        self.session.close()
        self.closed = True
        self.epoch += 1
        for tracked in self.tracked:
            self._check_state(tracked)

    @invariant()
    def the_server_received_exactly_the_approved_calls(self) -> None:
        if not self.closed:
            counts = server_counts(self.session)
            assert {tool: counts[tool] - self.base[tool] for tool in TOOLS} == self.sent


@pytest.mark.parametrize(("transport", "examples"), [("http", 30), ("stdio", 4)])
def test_no_call_reaches_the_server_without_its_own_valid_approval(
    transport: str, examples: int, demo_http_url: str
) -> None:
    """Stateful: whatever the order of calls (reads and writes, under ``prompt`` and ``auto``), decisions,
    list_changed, refresh and close, the server's own count of echo and add_note calls equals the approvals
    given while they held, each counted once. Over HTTP a session
    opens in milliseconds, so most examples run there; stdio (a process per session) gets a few."""
    config = demo_config("fsm") if transport == "stdio" else pj.ServerConfig("fsm", url=demo_http_url)
    run_state_machine_as_test(
        type("Machine", (ApprovalMachine,), {"config": config}),
        settings=settings(
            max_examples=examples,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


# --- faults: a failed connect is one line ---------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        pj.ServerConfig("missing", command="/nonexistent/mcp-server"),
        pj.ServerConfig("closed-port", url="http://127.0.0.1:9/mcp", timeout=5),
        raw_config("exits", "--fault", "exit-on-initialize"),
    ],
    ids=["missing-command", "closed-port", "exits-on-initialize"],
)
def test_a_failed_connect_shows_as_one_line_in_ipython(
    config: pj.ServerConfig, ip: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    """McpSessionError renders as one line (its _render_traceback_) however deep in the transport it began;
    a full traceback buries the code and the cause a person needs."""
    ip.user_ns.update(pj=pj, config=config)
    capsys.readouterr()
    result = ip.run_cell("pj.connect(config)")
    shown = capsys.readouterr()
    error = result.error_in_exec
    assert isinstance(error, pj.McpSessionError) and error.code == "mcp_connect_failed", error
    assert (shown.out + shown.err).strip() == f"McpSessionError: {error}"


# --- 5. untrusted rendering ------------------------------------------------------------------------------


@pytest.fixture
def hostile_script() -> Path:
    return Path(__file__).parent / "servers" / "hostile_server.py"


def hostile_config(name: str, script: Path, *flags: str) -> pj.ServerConfig:
    return pj.ServerConfig(name, command=sys.executable, args=[str(script), json.dumps(XSS), *flags])


def test_raw_servers_hostile_tool_name_is_inert_in_summary_approval_form_status_session_and_log() -> None:
    """The raw server lists a tool whose name and description are markup; every bundle the earlier XSS test
    does not cover must show them as text."""
    evil = XSS[1]  # the tool's name
    with pj.connect(raw_config("xss", "--call-result", "xss")) as session:
        assert evil in session.catalog
        frame = session.evaluate(evil, [{"x": XSS[0]}, {"x": XSS[2]}], raw=True, approve=True)
        assert frame["ok"].all(), frame
        summary = frame.attrs["summary"]
        assert summary.tool == evil
        assert_safe(summary._repr_mimebundle_()["text/html"], evil)
        assert_safe(frame._repr_html_(), XSS[0], pandas=True)

        pending = session.call(evil, {"x": XSS[2]}, raw=True)
        details = pending.widget.children[0].value
        assert_safe(details, evil, XSS[2])
        prompt = session.call("tool_000", {"x": XSS[3]})
        assert_safe(prompt.widget.children[0].value, XSS[3])
        batch = session.evaluate(evil, [{"x": XSS[0]}], raw=True)
        assert isinstance(batch, PendingCall)
        assert_safe(batch.widget.children[0].value, evil, XSS[0])

        form = session.form(evil)  # outside the profile: a raw form checked with the tool's own schema
        assert form.review_button.disabled  # (x is required)
        form.fields["$.x"].input.value = XSS[0]
        assert form.review_button.disabled is False
        form.fields["$.x"].input.value = XSS[1]
        form.review_button.click()
        assert isinstance(form.pending, PendingCall)
        for html in html_widgets(form):
            assert_safe(html)
        assert_safe(form.pending.widget.children[0].value, evil, XSS[1])

        pending.approve()
        wait_until(lambda: pending.state == "done", what="the raw call")
        for html in html_widgets(pending.widget):
            assert_safe(html)
        bundles = [pending.result, session, session.log, session.catalog]
        for obj in bundles:
            assert_safe(obj._repr_mimebundle_()["text/html"])
        assert_safe(session.log._repr_mimebundle_()["text/html"], evil)  # the call rows name the tool
        status = session.status_widget()
        assert_safe(status.value)
        prompt.deny()
        form.pending.deny()
        batch.deny()
        # The records the outputs become (decision, arguments, result): the same server strings, inert.
        assert_safe(pending._repr_mimebundle_()["text/html"], evil, XSS[2])
        assert_safe(prompt._repr_mimebundle_()["text/html"], XSS[3])
        assert_safe(batch._repr_mimebundle_()["text/html"], pandas=True)
        assert_safe(form.pending._repr_mimebundle_()["text/html"], XSS[1])


def test_a_hostile_servers_every_string_is_inert_in_every_bundle_and_widget(hostile_script: Path) -> None:
    """Server info, tool titles, schema titles and descriptions, reasons, annotations, results and stderr."""
    with pj.connect(hostile_config("hostile", hostile_script)) as session:
        assert session.catalog["formtool"].callable, session.catalog["formtool"].reasons
        assert not session.catalog["badtool"].callable
        wait_until(lambda: XSS[-1] in session.stderr, what="the server's stderr")
        assert_safe(session._repr_mimebundle_()["text/html"], XSS[0], XSS[1])  # server info
        assert_safe(session.catalog._repr_mimebundle_()["text/html"], XSS[0], XSS[1], XSS[4])
        assert any(XSS[0] in reason for reason in session.catalog["badtool"].reasons)  # a path in a reason
        assert_safe(session.log._repr_mimebundle_()["text/html"], *XSS)  # stderr lines
        status = session.status_widget()
        assert_safe(status.value)

        form = session.form("formtool")
        labels = html_widgets(form)
        for html in labels:
            assert_safe(html)
        joined = "".join(labels)
        for payload in XSS:
            assert escape(payload) in joined, payload  # every title and description shows, as text
        form.root.children["q"].input.value = XSS[2]
        form.root.children["n"].input.value = "not a number"
        assert form.review_button.disabled
        assert_safe("".join(html_widgets(form)))
        form.root.children["n"].input.value = "3"
        assert not form.review_button.disabled
        form.review_button.click()
        pending = form.pending
        assert_safe(pending.widget.children[0].value, XSS[0], XSS[2])  # title, argument
        pending.approve()
        wait_until(lambda: pending.state == "done", what="the call")
        assert pending.result.ok, pending.result
        assert_safe(pending.result._repr_mimebundle_()["text/html"], *XSS)
        raw = session.call("badtool", {}, raw=True, approve=True)
        assert_safe(raw._repr_mimebundle_()["text/html"], *XSS)
        frame = session.evaluate("formtool", [{"q": payload} for payload in XSS], approve=True)
        assert_safe(frame.attrs["summary"]._repr_mimebundle_()["text/html"])
        assert_safe(frame._repr_html_(), XSS[0], pandas=True)

    with pj.connect(hostile_config("garbage", hostile_script, "--garbage-on-ping")) as session:
        status = session.status_widget()
        with pytest.raises(pj.McpSessionError) as caught:
            session.ping()
        assert caught.value.code == "mcp_connection_closed"
        wait_until(lambda: session.state == "failed", what="the session to fail")
        shown_line = XSS[0][:20]  # pydantic's message shortens the offending line
        assert shown_line not in session.cause  # the offending line is kept out of every message ...
        assert any(shown_line in row.detail for row in session.log.events("error"))  # ... and in the log
        assert_safe(status.value)
        assert_safe(session._repr_mimebundle_()["text/html"])
        assert_safe(session.log._repr_mimebundle_()["text/html"], shown_line)  # ... as text


def test_non_finite_numbers_from_a_server_keep_the_raw_payload_plain_json(hostile_script: Path) -> None:
    """The SDK accepts NaN and Infinity on the wire; a kernel's messages must be plain JSON (jupyter_client turns
    such values into strings, with a warning in the notebook). Like the PurrA path, the raw path refuses such a
    result as ``mcp_result_invalid`` (a number JSON cannot carry), so every MIME payload stays plain JSON."""
    with pj.connect(hostile_config("numbers", hostile_script)) as session:
        raw = session.call("numbers", {}, raw=True, approve=True)
        assert raw.error_code == "mcp_result_invalid" and "NaN or Infinity" in raw.message, raw
        assert session.call("numbers", {}, approve=True).error_code == "mcp_result_invalid"
        assert session.state == "ready"
        bundle = raw._repr_mimebundle_()
        assert_safe(bundle["text/html"])
        try:
            json.dumps(bundle[RAW_RESULT_MIME], allow_nan=False)
        except ValueError as error:
            pytest.fail(f"the raw-result payload is not plain JSON ({error}): {bundle[RAW_RESULT_MIME]['result']}")


# --- 6. fuzzed results -----------------------------------------------------------------------------------

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.sampled_from(XSS)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | ANY_TEXT
)
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner,
                                                                                                   max_size=4),
                           max_leaves=12)  # fmt: skip
MIME_TYPES = st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml", "text/html",
                              "image/png\" onerror=\"alert(1)", "audio/wav", "audio/mpeg", ""]) | ANY_TEXT  # fmt: skip
BASE64 = (
    st.binary(max_size=64).map(lambda data: base64.b64encode(data).decode())
    | ANY_TEXT
    | st.sampled_from(['"><script>alert(1)</script>', "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+", "javascript:alert(1)", "=="])
)
URIS = st.sampled_from(["javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
                        "https://example.org/\"><script>"]) | ANY_TEXT  # fmt: skip
EXTRA = st.dictionaries(
    st.sampled_from(["_meta", "annotations", "title", "size", "description"]), JSON_VALUES, max_size=2
)
KNOWN_BLOCKS = {"text", "image", "audio", "resource_link", "resource"}
BLOCKS = st.one_of(
    st.builds(lambda text, extra: {**extra, "type": "text", "text": text}, ANY_TEXT, EXTRA),
    st.builds(lambda kind, mime, data, extra: {**extra, "type": kind, "mimeType": mime, "data": data},
              st.sampled_from(["image", "audio"]), MIME_TYPES, BASE64, EXTRA),
    st.builds(lambda name, uri, extra: {**extra, "type": "resource_link", "name": name, "uri": uri},
              ANY_TEXT, URIS, EXTRA),
    st.builds(lambda uri, body, extra: {**extra, "type": "resource", "resource": {"uri": uri, **body}},
              URIS, st.fixed_dictionaries({"text": ANY_TEXT}) | st.fixed_dictionaries({"blob": BASE64}), EXTRA),
    st.builds(lambda kind, rest: {**rest, "type": kind}, ANY_TEXT.filter(lambda kind: kind not in KNOWN_BLOCKS),
              st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=3)),
)  # fmt: skip
STRUCTURED = (
    st.none()
    | st.dictionaries(ANY_TEXT, JSON_VALUES, max_size=4)
    | st.fixed_dictionaries(
        {"rows": st.lists(st.dictionaries(ANY_TEXT, JSON_VALUES, min_size=1, max_size=3), min_size=1, max_size=4)}
    )
)
CODES = st.none() | st.sampled_from(["mcp_tool_error", "mcp_result_invalid"]) | ANY_TEXT


def check_result_bundle(result: Envelope | RawResult, mime: str, texts: list[str]) -> None:
    repr(result)
    bundle = result._repr_mimebundle_()
    assert set(bundle) == {mime, "text/html", "text/plain"}
    json.dumps(bundle[mime], allow_nan=False)  # plain JSON: what the kernel sends to the front end
    json.dumps(bundle["text/plain"])
    html = bundle["text/html"]
    assert unsafe_markup(html) == [], html[:2000]
    for text in texts:
        assert escape(names.readable(text)) in html, text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    server=ANY_TEXT,
    tool=ANY_TEXT,
    text=st.lists(ANY_TEXT, max_size=4),
    structured=STRUCTURED,
    error_code=CODES,
    message=ANY_TEXT,
    elapsed=st.floats(0, 1e7),
)
def test_generated_envelopes_render_safely(
    server: str, tool: str, text: list[str], structured: Any, error_code: str | None, message: str, elapsed: float
) -> None:
    """Whatever text and structured content a tool returns, an envelope renders without error and inertly."""
    envelope = Envelope(
        server, tool, json.dumps({"text": text, "structured": structured}), error_code, elapsed, message
    )
    check_result_bundle(envelope, ENVELOPE_MIME, [*text, server, names.visible(tool), message])  # a name, made visible


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    server=ANY_TEXT,
    tool=ANY_TEXT,
    content=st.lists(BLOCKS, max_size=5),
    structured=STRUCTURED | JSON_VALUES,
    is_error=st.booleans(),
    error_code=CODES,
    message=ANY_TEXT,
)
def test_generated_raw_results_render_safely(
    server: str, tool: str, content: list[dict], structured: Any, is_error: bool, error_code: str | None, message: str
) -> None:
    """Any mix of content blocks (invalid base64, SVG, javascript: links, unknown types) renders inertly."""
    raw = RawResult(server, tool, content, structured, is_error, error_code, 1.0, message)
    texts = [block["text"] for block in content if block.get("type") == "text"]
    texts += [
        part for block in content if block.get("type") == "resource_link" for part in (block["name"], block["uri"])
    ]
    texts += [block["resource"].get("text", "") for block in content if block.get("type") == "resource"]
    check_result_bundle(raw, RAW_RESULT_MIME, [*texts, server, names.visible(tool), message])
    html = raw._repr_mimebundle_()["text/html"]
    rasters = [block for block in content if block.get("type") == "image"
               and block["mimeType"] in ("image/png", "image/jpeg", "image/gif", "image/webp")]  # fmt: skip
    assert html.count("<img") <= len(rasters)
