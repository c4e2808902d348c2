"""Streamable HTTP fails closed: the fault matrix against a hostile HTTP server on 127.0.0.1.

Each row sends one fault (``tests/servers/http_fault_server.py``) at one moment (initialize, a call on the
PurrA and the raw path, a listing, the close) and checks, after the fact: the code, that the wait ended
well before the deadline (garbage that can never become an answer) or within it (deadline + 1 s), the
session's state afterwards, that ``ping()`` and the next call work where the session should live, that
no secret (a URL query value, a header value) is in any message or log row, that nothing wrote a
traceback to stderr, and that no thread or socket is left after ``close()``. The measured rows are
written to ``tests/artifacts/http-matrix.md``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psutil
import pytest
from conftest import HANG_GUARD, ROOT, SERVERS, stop_tree, wait_until

import purra_jupyter as pj
from purra_jupyter._base import runner
from purra_jupyter._transports.http import CLOSE_GRACE

# Each session's timeout: every request's deadline, and connect's. Whether a fault ended a wait at once or at
# this deadline is told by its code (mcp_timeout only at the deadline), not by how long it took: the waits are
# measured for the table below (tests/artifacts/http-matrix.md), and bounded only by HANG_GUARD, a guard against
# a hang, not a speed claim.
TIMEOUT = 2.0
SECRET_QUERY = "qry-s3cr3t-5e1f0a93"
SECRET_HEADER = "hdr-s3cr3t-9c7d2b14"
MEASURED: list[tuple[str, str, str, float, str]] = []  # (fault, when, code, seconds, state after)


@dataclass(frozen=True)
class FaultServer:
    base: str
    port: int
    process: subprocess.Popen[bytes]

    def url(self, fault: str, when: str) -> str:
        return f"{self.base}/{fault}/{when}/mcp?token={SECRET_QUERY}"

    def events(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.base}/_events", timeout=10) as response:
            return json.loads(response.read())


@contextmanager
def fault_server() -> Iterator[FaultServer]:
    process = subprocess.Popen(
        [sys.executable, str(SERVERS / "http_fault_server.py")], stdout=subprocess.PIPE, cwd=ROOT
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    match = re.match(r"listening on (http://127\.0\.0\.1:(\d+))", line)
    assert match, line
    try:
        yield FaultServer(match.group(1), int(match.group(2)), process)
    finally:
        stop_tree(process, timeout=5)


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with fault_server() as running:
        yield running
    lines = ["| fault | at | code | wait (s) | state after |", "|---|---|---|---|---|"]
    lines += [
        f"| {fault} | {when} | {code} | {seconds:.2f} | {state} |" for fault, when, code, seconds, state in MEASURED
    ]
    (ROOT / "tests" / "artifacts").mkdir(exist_ok=True)
    (ROOT / "tests" / "artifacts" / "http-matrix.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))


def config(server: FaultServer, fault: str, when: str) -> pj.ServerConfig:
    return pj.ServerConfig(
        f"{fault}-{when}",
        url=server.url(fault, when),
        headers={"Authorization": f"Bearer {SECRET_HEADER}"},
        timeout=TIMEOUT,
    )


def sockets_to(port: int) -> list[Any]:
    return [c for c in psutil.Process().net_connections("tcp") if c.raddr and c.raddr.port == port]


def assert_clean(texts: list[str], capfd: pytest.CaptureFixture[str]) -> None:
    """No secret in what a person sees or the log keeps, no traceback on stderr."""
    everything = "\n".join(texts)
    for secret in (SECRET_QUERY, SECRET_HEADER):
        assert secret not in everything, everything
    err = capfd.readouterr().err
    assert "Traceback" not in err, err


def session_texts(session: pj.McpSession) -> list[str]:
    return [repr(session), session.cause, repr(session.log), *(row.detail for row in session.log)]


@contextmanager
def leaves_nothing(port: int) -> Iterator[None]:
    """No thread and no socket to the server at ``port`` is left once the block (which closes) is done (the
    process's one event loop, started first, stays)."""
    runner.portal()
    before = set(threading.enumerate())
    yield
    wait_until(lambda: not sockets_to(port), what="the sockets to the server to close")
    wait_until(lambda: set(threading.enumerate()) <= before, what="the threads the block started to end")


def timed(func: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.monotonic()
    try:
        return func(*args, **kwargs), time.monotonic() - started
    except pj.McpSessionError as error:
        return error, time.monotonic() - started


def code_of(outcome: Any) -> str:
    return outcome.code if isinstance(outcome, pj.McpSessionError) else str(outcome.error_code)


# --- faults on a call: the PurrA and the raw path --------------------------------------------------------

CALL_ROWS = [
    # fault, code, state after, fast (else: at the deadline)
    ("status-500", "mcp_transport_error", "ready", True),
    ("status-502", "mcp_transport_error", "ready", True),
    ("status-503", "mcp_transport_error", "ready", True),
    ("status-429", "mcp_rate_limited", "ready", True),
    ("status-401", "mcp_auth_required", "ready", True),
    ("status-403", "mcp_auth_required", "ready", True),
    ("status-400", "mcp_protocol_error", "ready", True),
    ("status-404", "mcp_session_expired", "failed", True),
    ("html", "mcp_protocol_error", "ready", True),
    ("not-jsonrpc", "mcp_protocol_error", "ready", True),
    ("wrong-id", "mcp_protocol_error", "ready", True),
    ("bad-sse-data", "mcp_protocol_error", "ready", True),
    ("sse-eof", "mcp_transport_error", "ready", True),
    ("sse-reset", "mcp_transport_error", "ready", True),
    ("resumable", "None", "ready", True),
    ("sse-crlf", "None", "ready", True),
    ("sse-cr", "None", "ready", True),
    ("resume-fails", "mcp_transport_error", "ready", True),
    ("big-event", "mcp_result_too_large", "ready", True),
    ("endless-line", "mcp_result_too_large", "ready", True),
    ("huge-header", "mcp_transport_error", "ready", True),
    ("redirect-loop", "mcp_transport_error", "ready", True),
    ("redirect-cross", "mcp_transport_error", "ready", True),
    ("drip", "mcp_timeout", "ready", False),
    ("hang", "mcp_timeout", "ready", False),
]


@pytest.mark.parametrize(("fault", "code", "state", "fast"), CALL_ROWS, ids=[row[0] for row in CALL_ROWS])
@pytest.mark.parametrize("raw", [False, True], ids=["purra", "raw"])
def test_a_fault_on_one_call_fails_that_call_only(
    server: FaultServer, capfd: pytest.CaptureFixture[str], fault: str, code: str, state: str, fast: bool, raw: bool
) -> None:
    rss = psutil.Process().memory_info().rss
    with leaves_nothing(server.port):
        with pj.connect(config(server, fault, "call")) as session:
            session.bind("echo")
            since = time.time()
            result, waited = timed(session.call, "echo", {"text": "fault"}, approve=True, raw=raw)
            MEASURED.append((fault, "call (raw)" if raw else "call", code_of(result), waited, session.state))
            assert code_of(result) == code, result  # at once for a fast row, at the deadline (mcp_timeout) else
            assert waited < HANG_GUARD, waited
            if code == "None":  # the answer came through whole, after a resumption or split line ends
                text = result.content[0]["text"] if raw else result.text[0]
                assert text == ("resumed" if fault == "resumable" else "split"), result
            assert session.state == state, session.cause
            texts = [str(result), repr(result), getattr(result, "message", "") or "", *session_texts(session)]
            if state == "ready":
                assert session.ping() >= 0
                again = session.call("echo", {"text": "again"}, approve=True, raw=raw)  # the same session
                assert again.ok, again
            else:
                with pytest.raises(pj.McpSessionError) as caught:
                    session.ping()
                assert caught.value.code == code, caught.value
                assert "pj.connect()" in caught.value.message
            if not fast:  # given up at the deadline: cancelled on the server, its response closed
                request_ids = [e["id"] for e in server.events() if e.get("rpc") == "tools/call" and e["time"] >= since]
                wait_until(lambda: any(e.get("cancelled") == request_ids[0] for e in server.events()),
                           what="notifications/cancelled for the request")  # fmt: skip
                # The session is still open: the server sees the client go because the kit closed the response
                # when it gave up (else it would keep reading, or the server keep waiting, until the close).
                wait_until(lambda: [e for e in server.events() if e.get("gone") and e["time"] >= since],
                           what="the server to see the client go")  # fmt: skip
        texts += session_texts(session)
    assert_clean(texts, capfd)
    if fault == "endless-line":  # an endless event is not buffered: memory stays flat
        assert psutil.Process().memory_info().rss - rss < 64 * 2**20
    if fault == "redirect-cross":
        assert not [e for e in server.events() if (e.get("host") or "").startswith("localhost")]


def test_rate_limited_says_when_to_retry_and_status_texts_are_scrubbed(
    server: FaultServer, capfd: pytest.CaptureFixture[str]
) -> None:
    with pj.connect(config(server, "status-429", "call")) as session:
        result = session.call("echo", {"text": "fault"}, approve=True)
        assert "retry after 7 s" in result.message, result.message
    with pj.connect(config(server, "status-503", "call")) as session:
        result = session.call("echo", {"text": "fault"}, approve=True)
        # The server's body quotes the Authorization header it got: kept apart from the message (which is shown
        # where URLs become links) as the result's server_text, scrubbed.
        assert "HTTP 503" in result.message and "upstream exploded" not in result.message, result.message
        assert "as what the server said" in result.message
        assert "upstream exploded" in result.server_text and "Authorization: ***" in result.server_text
    assert_clean([result.message, result.server_text, *session_texts(session)], capfd)


# --- faults while connecting, listing and closing --------------------------------------------------------

CONNECT_ROWS = [
    ("status-404", "mcp_connect_failed", True),
    ("status-503", "mcp_connect_failed", True),
    ("status-401", "mcp_auth_required", True),
    ("status-429", "mcp_rate_limited", True),
    ("html", "mcp_connect_failed", True),
    ("not-jsonrpc", "mcp_connect_failed", True),
    ("sse-eof", "mcp_connect_failed", True),
    ("redirect-cross", "mcp_connect_failed", True),
    ("hang", "mcp_timeout", False),
]


@pytest.mark.parametrize(("fault", "code", "fast"), CONNECT_ROWS, ids=[row[0] for row in CONNECT_ROWS])
def test_a_fault_on_initialize_fails_connect_with_its_code(
    server: FaultServer, capfd: pytest.CaptureFixture[str], fault: str, code: str, fast: bool
) -> None:
    with leaves_nothing(server.port):
        error, waited = timed(pj.connect, config(server, fault, "initialize"))
    MEASURED.append((fault, "initialize", code_of(error), waited, "no session"))
    assert isinstance(error, pj.McpSessionError) and error.code == code, error
    assert waited < HANG_GUARD, waited
    assert pj.sessions() == []
    assert_clean([str(error), repr(error)], capfd)
    if fault == "status-404":
        assert "no MCP endpoint" in error.message, error.message
    if fault == "status-401":  # configured without OAuth: the message says how to authorize
        assert "connect with --oauth (pj.OAuth())" in error.message, error.message


def test_an_authorization_server_over_plain_http_is_refused(
    server: FaultServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """The MCP authorization flow sends nothing to an endpoint over http:// at a host that is not loopback."""
    asked: list[str] = []
    oauth = pj.OAuth(authorize=lambda url: asked.append(url) or "")
    insecure = pj.ServerConfig("insecure", url=server.url("oauth-insecure", "initialize"), oauth=oauth, timeout=TIMEOUT)
    with leaves_nothing(server.port):
        error, waited = timed(pj.connect, insecure)
    assert isinstance(error, pj.McpSessionError) and error.code == "mcp_auth_insecure", error
    assert "http://auth.example.invalid" in error.server_text and "must be https" in error.message
    assert "auth.example.invalid" not in error.message  # an address the server chose: apart from the message
    assert asked == [] and waited < HANG_GUARD and pj.sessions() == []
    assert_clean([str(error)], capfd)


def test_slow_pages_end_connect_at_its_deadline(server: FaultServer, capfd: pytest.CaptureFixture[str]) -> None:
    """Four pages of 2.5 s each: a 2 s connect gives up at 2 s, not at 10."""
    with leaves_nothing(server.port):
        error, waited = timed(pj.connect, config(server, "slow-pages", "list"))
    MEASURED.append(("slow-pages", "tools/list (connect)", code_of(error), waited, "no session"))
    assert isinstance(error, pj.McpSessionError) and error.code == "mcp_timeout", error
    assert waited < HANG_GUARD, waited
    assert "did not finish connecting within 2 s" in error.message, error.message  # its deadline, not the pages'
    assert_clean([str(error)], capfd)


def test_bind_against_a_hanging_listing_ends_at_its_deadline(
    server: FaultServer, capfd: pytest.CaptureFixture[str]
) -> None:
    with leaves_nothing(server.port):
        with pj.connect(config(server, "hang", "list-after-first")) as session:
            error, waited = timed(session.bind, "echo")
            MEASURED.append(("hang", "tools/list (bind)", code_of(error), waited, session.state))
            assert isinstance(error, pj.McpSessionError) and error.code == "mcp_timeout", error
            assert waited < HANG_GUARD, waited
            assert session.state == "ready" and session.ping() >= 0
    assert_clean([str(error), *session_texts(session)], capfd)


def test_close_gives_an_unanswered_delete_its_grace_then_drops_the_connection(
    server: FaultServer, capfd: pytest.CaptureFixture[str]
) -> None:
    with leaves_nothing(server.port):
        session = pj.connect(config(server, "hang", "delete"))
        assert session.call("echo", {"text": "hi"}, approve=True).ok
        _, waited = timed(session.close)
    MEASURED.append(("hang", "DELETE (close)", "-", waited, session.state))
    assert session.state == "closed"
    # The close gave the DELETE its grace (the lower bound), then ended (the log says after which grace); the
    # upper bound is a guard against a hang, not a speed claim.
    assert CLOSE_GRACE - 0.2 < waited < HANG_GUARD, waited
    assert any(f"within {CLOSE_GRACE:g} s" in row.detail for row in session.log)
    assert_clean(session_texts(session), capfd)


# --- a server that dies -----------------------------------------------------------------------------------


def test_a_server_killed_mid_stream_fails_the_call_at_once_then_the_session(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with fault_server() as dying, leaves_nothing(dying.port):
        with pj.connect(config(dying, "sse-die", "call")) as session:
            result, waited = timed(session.call, "echo", {"text": "fault"}, approve=True)
            MEASURED.append(("sse-die", "call", code_of(result), waited, session.state))
            assert result.error_code == "mcp_transport_error", result  # at once: not the deadline's mcp_timeout
            assert waited < HANG_GUARD, waited
            # Nothing listens any more: the next request finds the connection refused, which ends the session.
            with pytest.raises(pj.McpSessionError) as caught:
                session.ping()
            assert caught.value.code == "mcp_connection_closed"
            wait_until(lambda: session.state == "failed", what="the session to fail")
            assert "can no longer be reached: the connection was refused" in session.cause, session.cause
            MEASURED.append(("server gone", "ping", caught.value.code, 0.0, session.state))
    assert_clean([str(result), str(caught.value), *session_texts(session)], capfd)


def test_interpreter_exit_gives_an_unanswered_delete_the_same_grace(server: FaultServer) -> None:
    """A session left open at exit is closed by the kit: its DELETE is sent and waited for no longer than at
    ``close()``."""
    url = server.url("hang", "delete")
    script = (
        "import purra_jupyter as pj\n"
        f"session = pj.connect(pj.ServerConfig('at-exit', url={url!r}, timeout={TIMEOUT}))\n"
        "print(session.state, flush=True)\n"
    )
    since = time.time()
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == b"ready\n"
    started = time.monotonic()
    process.wait(timeout=HANG_GUARD)  # the interpreter ends though the DELETE is never answered: a hang guard
    waited = time.monotonic() - started
    MEASURED.append(("hang", "DELETE (interpreter exit)", "-", waited, "closed"))
    assert process.returncode == 0
    assert [e for e in server.events() if e.get("http") == "DELETE" and e["time"] >= since]
    assert "Traceback" not in process.stderr.read().decode()


def test_what_a_server_sent_is_kept_apart_from_the_message(server: FaultServer) -> None:
    """A message is shown where frontends make links of URLs: the server's words (a web page's content type,
    a body that is not JSON-RPC) travel as ``server_text``, which the kit shows as text."""
    with pj.connect(config(server, "html", "call")) as session:
        page = session.call("echo", {"text": "fault"}, approve=True)
    assert page.error_code == "mcp_protocol_error" and "text/html" not in page.message
    assert page.server_text.startswith("text/html") and "as what the server said" in page.message
    with pj.connect(config(server, "not-jsonrpc", "call")) as session:
        body = session.call("echo", {"text": "fault"}, raw=True, approve=True)
    assert "that is not JSON-RPC" in body.message and body.server_text and body.server_text not in body.message
