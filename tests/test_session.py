"""McpSession against real servers: the demo server (stdio and HTTP) and the raw fault server; what the core's
tests check in memory that each real transport must carry too (a tool error's text, writes and their effects)."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psutil
import pytest
from conftest import (
    HANG_GUARD,
    DemoHttpServer,
    bind_notes,
    children,
    decided,
    demo_config,
    demo_in_memory,
    interrupt_when,
    notes,
    raw_config,
    unsafe_markup,
    wait_until,
)

import purra_jupyter as pj
from purra_jupyter._base.config import Scrubber
from purra_jupyter._base.errors import SERVER_TEXT_CHARS
from purra_jupyter._base.markup import escape
from purra_jupyter._purra.envelope import SERVER_WORDS

PROTOCOLS = {"2025-11-25", "2025-06-18"}
SECRET = "s3cr3t-header-value"
EMPTY = {"text": [], "structured": None}


def test_stdio_session_opens_is_used_and_closed_from_separate_calls() -> None:
    before = children()
    session = pj.connect(demo_config(env={"DEMO_TOKEN": SECRET}))
    assert session.state == "ready"
    assert session.protocol_version in PROTOCOLS
    assert session.server_info["name"] == "purra-jupyter-demo"
    server_pids = children() - before
    assert server_pids, "the demo server runs as a child process"

    assert session.ping() >= 0
    listing = session.connection.request(lambda client: client.list_tools())
    assert "echo" in {tool.name for tool in listing.tools}
    assert pj.sessions() == [session]

    session.close()
    assert session.state == "closed"
    assert pj.sessions() == []
    for text in (repr(session), repr(session.log), str(session._repr_mimebundle_()), repr(session.config)):
        assert SECRET not in text
    wait_until(lambda: not (children() & server_pids), what="the server process to end")
    with pytest.raises(pj.McpSessionError) as caught:
        session.ping()
    assert caught.value.code == "mcp_connection_closed"
    session.close()  # idempotent
    assert [row.event for row in session.log].count("close") == 1


def test_http_session_opens_is_used_and_closed(demo_http_url: str) -> None:
    session = pj.connect(pj.ServerConfig("web", url=demo_http_url, headers={"Authorization": SECRET}))
    assert session.state == "ready"
    assert session.transport == "http"
    assert session.protocol_version in PROTOCOLS
    result = session.connection.request(lambda client: client.call_tool("echo", {"text": "hi"}))
    assert result.structuredContent == {"text": "hi"}
    session.close()
    assert session.state == "closed"
    for text in (repr(session), repr(session.log), str(session._repr_mimebundle_()), repr(session.config)):
        assert SECRET not in text
    with pytest.raises(pj.McpSessionError) as caught:
        session.ping()
    assert caught.value.code == "mcp_connection_closed"


def test_with_block_closes_the_session() -> None:
    with pj.connect(demo_in_memory()) as session:
        assert session.state == "ready"
    assert session.state == "closed"
    assert session.log.events("close")[-1].detail == "left the with block"


def test_second_session_with_a_name_in_use_fails() -> None:
    with pj.connect(demo_in_memory("twice")):
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(demo_in_memory("twice"))
        assert caught.value.code == "mcp_session_exists"
        assert len(pj.sessions()) == 1


def test_a_long_log_keeps_its_last_rows_whole_in_order_and_scrubbed() -> None:
    # The log packs its rows as text (a batch of 100,000 calls logs a row each): what it gives back is each of the
    # last 10,000 rows exactly as logged, in order, its detail scrubbed and cut, whatever characters it holds.
    log = pj.SessionLog(Scrubber([SECRET]))
    details = [f'row {i}\ttab\nline \u202e\u200b <b>x</b> "q" \\ \udc80 {SECRET} 🐈' for i in range(25_300)]
    details[-1] = "x" * 600 + SECRET
    for detail in details:
        log.add("call", detail)
    rows = list(log)
    assert len(log) == len(rows) == 10_000
    expected = [detail.replace(SECRET, "***") for detail in details[-10_000:]]
    expected[-1] = expected[-1][:500] + "…"
    assert [row.detail for row in rows] == expected
    assert all(row.event == "call" for row in rows)
    times = [row.time for row in rows]
    assert times == sorted(times) and all(time.utcoffset() is not None for time in times)
    assert [row.detail for row in log.last(2)] == expected[-2:] and len(log.to_frame()) == 10_000
    assert SECRET not in repr(log) and SECRET not in log._repr_mimebundle_()["text/html"]


def test_server_stderr_lines_are_kept_and_logged() -> None:
    with pj.connect(demo_config()) as session:
        wait_until(lambda: "demo server ready" in session.stderr, what="the server's stderr line")
        assert any("demo server ready" in row.detail for row in session.log.events("stderr"))


def test_list_changed_turns_the_session_stale_for_an_observer() -> None:
    with pj.connect(demo_in_memory()) as session:
        seen: list[str] = []
        session.observe(lambda change: seen.append(change["new"]), names="state")
        session.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
        wait_until(lambda: "stale" in seen, what="state to turn stale")
        assert session.state == "stale"
        assert session.log.events("list_changed")


def test_interrupt_while_waiting_gives_mcp_interrupted_and_the_session_stays_usable() -> None:
    with pj.connect(demo_config()) as session:
        with (
            interrupt_when(lambda: "sleep: 30" in session.stderr, "the server to start sleeping") as sent_at,
            pytest.raises(pj.McpSessionError) as caught,
        ):
            session.connection.request(lambda client: client.call_tool("sleep", {"seconds": 30}), timeout=60)
        raised_at = time.monotonic()
        assert caught.value.code == "mcp_interrupted"  # the interrupt ended the wait, not the server's 30 s
        assert raised_at - sent_at[0] < HANG_GUARD  # a guard against a hang, not a speed claim
        assert session.state == "ready"
        result = session.connection.request(lambda client: client.call_tool("echo", {"text": "still here"}))
        assert result.structuredContent == {"text": "still here"}


@pytest.mark.parametrize(
    ("config", "code", "words"),
    [
        (pj.ServerConfig("missing", command="/nonexistent/mcp-server"), "mcp_connect_failed", "Could not start"),
        (raw_config("nocwd", cwd="/nonexistent/dir"), "mcp_connect_failed", "working directory"),
        (raw_config("exits", "--fault", "exit-on-initialize"), "mcp_connect_failed", "as what the server said"),
        (raw_config("new", "--protocol", "2099-01-01"), "mcp_protocol_unsupported", "2025-06-18"),
        (raw_config("noise", "--fault", "garbage-at-once"), "mcp_connect_failed", "not valid JSON-RPC"),
        (
            pj.ServerConfig("refused", url="http://127.0.0.1:9/mcp"),
            "mcp_connect_failed",
            "could not be reached at http://127.0.0.1:9/mcp: the connection was refused",
        ),
        (
            pj.ServerConfig("dns", url="https://no-such-host.invalid/mcp", timeout=10),
            "mcp_connect_failed",
            "its host name could not be resolved (DNS)",
        ),
    ],
)
def test_connect_failures_have_codes_and_leave_nothing_open(config: pj.ServerConfig, code: str, words: str) -> None:
    before = children()
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(config)
    assert caught.value.code == code
    assert words in caught.value.message
    assert pj.sessions() == []
    wait_until(lambda: not (children() - before), what="no child process left")


def test_a_failed_connect_keeps_the_servers_stderr_apart_from_its_message(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Server text never enters a message (shown where frontends make links of URLs): the stderr tail travels
    as ``server_text``, and the magic shows it as its own escaped block above the one-line error."""
    config = raw_config("exits", "--fault", "exit-on-initialize")
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(config)
    assert "refusing to initialize" in caught.value.server_text
    assert "refusing to initialize" not in caught.value.message
    command = " ".join(shlex.quote(word) for word in [config.command, *config.args])
    result = ip.run_cell(f"%mcp_connect exits -- {command}")
    assert isinstance(result.error_in_exec, pj.McpSessionError)
    shown = capsys.readouterr().out
    assert "what the server said (its own words, shown as text):" in shown
    assert "refusing to initialize" in shown and "are shown above, as text" in str(result.error_in_exec)


def test_https_to_a_plain_http_server_says_the_tls_handshake_failed(demo_http_server: DemoHttpServer) -> None:
    url = demo_http_server.url.replace("http://", "https://", 1)
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(pj.ServerConfig("tls", url=url))
    assert caught.value.code == "mcp_connect_failed"
    assert "the TLS handshake failed (is it https?)" in caught.value.message, caught.value.message


def test_a_server_that_dies_fails_the_session_by_itself_with_the_cause() -> None:
    before = children()
    with pj.connect(demo_config()) as session:
        [pid] = children() - before
        server = psutil.Process(pid)
        server.kill()
        server.wait(5)
        wait_until(lambda: session.state == "failed", what="the session to notice the server is gone")
        assert "closed the connection" in session.cause
        with pytest.raises(pj.McpSessionError) as caught:
            session.ping()
        assert caught.value.code == "mcp_connection_closed"
    assert session.state == "closed"


def test_a_request_in_flight_ends_when_the_server_dies() -> None:
    before = children()
    with pj.connect(demo_config()) as session:
        [pid] = children() - before

        def kill_when_the_server_sleeps() -> None:
            wait_until(lambda: "sleep: 30" in session.stderr, what="the server to start sleeping")
            psutil.Process(pid).kill()

        killer = threading.Thread(target=kill_when_the_server_sleeps)
        killer.start()
        started = time.monotonic()
        with pytest.raises(pj.McpSessionError) as caught:
            session.connection.request(lambda client: client.call_tool("sleep", {"seconds": 30}), timeout=60)
        killer.join()
        assert caught.value.code == "mcp_connection_closed"  # the server's end, not the request's 60 s timeout
        assert time.monotonic() - started < HANG_GUARD  # a guard against a hang, not a speed claim
        assert session.state == "failed"


class _Recorder(BaseHTTPRequestHandler):
    """Redirects every request to ``target`` (if set) and records the headers it received."""

    seen: list[dict[str, str]]
    target: str | None

    def do_POST(self) -> None:
        type(self).seen.append(dict(self.headers))
        if self.target:
            self.send_response(307)
            self.send_header("Location", self.target)
        else:
            self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_DELETE = do_POST

    def log_message(self, *args: object) -> None:
        pass


def _serve(target: str | None) -> tuple[ThreadingHTTPServer, type[_Recorder]]:
    handler = type("Handler", (_Recorder,), {"seen": [], "target": target})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, handler


def test_a_redirect_to_another_origin_never_carries_our_headers() -> None:
    other, other_handler = _serve(None)
    first, first_handler = _serve(f"http://127.0.0.1:{other.server_port}/mcp")
    try:
        config = pj.ServerConfig(
            "redirect", url=f"http://127.0.0.1:{first.server_port}/mcp", headers={"X-Api-Key": SECRET}, timeout=5
        )
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(config)
        assert caught.value.code == "mcp_connect_failed"
        assert SECRET not in str(caught.value)
        assert first_handler.seen and first_handler.seen[0].get("X-Api-Key") == SECRET
        assert other_handler.seen == []
    finally:
        first.shutdown()
        other.shutdown()


def test_connect_refuses_bad_arguments() -> None:
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(demo_in_memory(), approval="sometimes")
    assert caught.value.code == "mcp_config_invalid"
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect({"command": sys.executable})  # type: ignore[arg-type]
    assert caught.value.code == "mcp_config_invalid"


def test_interpreter_exit_closes_open_sessions_and_their_servers() -> None:
    # atexit runs handlers last-in first-out: this report runs after the kit's own exit handler.
    script = (
        "import atexit, sys, psutil\n"
        "atexit.register(lambda: print(s.state, '|', s.cause, flush=True))\n"
        "import purra_jupyter as pj\n"
        "s = pj.connect(pj.ServerConfig('demo', command=sys.executable, args=['-m', 'purra_jupyter.demo']))\n"
        "print([p.pid for p in psutil.Process().children()][0], flush=True)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    pid_line, report = run.stdout.splitlines()
    assert report == "closed | interpreter exit"
    wait_until(lambda: not psutil.pid_exists(int(pid_line)), what="the server to end with the interpreter")


def test_an_observer_that_raises_is_logged_and_the_session_keeps_working() -> None:
    with pj.connect(demo_in_memory()) as session:

        def broken(change: dict) -> None:
            raise ValueError("observer bug")

        session.observe(broken, names="state")
        session.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
        wait_until(lambda: session.state == "stale", what="state to turn stale")
        assert any("observer bug" in row.detail for row in session.log.events("error"))
        assert session.ping() >= 0


# --- over each real transport ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_error_shows_the_servers_text_beside_an_envelope_that_stays_purra_mcps(
    transport: str, demo_http_url: str
) -> None:
    config = demo_config("tool-error") if transport == "stdio" else pj.ServerConfig("tool-error", url=demo_http_url)
    with pj.connect(config) as session:
        envelope = session.call("fail", {"message": "backend exploded <script>x</script>\nsecond line"}, approve=True)
        assert envelope.error_code == "mcp_tool_error" and envelope.to_dict() == EMPTY  # what purra-mcp returned
        assert envelope.json == '{"text":[],"structured":null}'  # byte for byte
        assert envelope.server_text == "backend exploded <script>x</script>\nsecond line"
        bundle = envelope._repr_mimebundle_()
        assert bundle["application/vnd.purra.envelope+json"]["serverText"] == envelope.server_text
        assert bundle["application/vnd.purra.envelope+json"]["envelope"] == EMPTY
        assert escape(SERVER_WORDS) in bundle["text/html"]
        assert "&lt;script&gt;x&lt;/script&gt;" in bundle["text/html"] and unsafe_markup(bundle["text/html"]) == []
        assert "    | backend exploded" in repr(envelope) and "    | second line" in repr(envelope)  # behind the gutter
        long = session.call("fail", {"message": "z" * 5000}, approve=True)  # bounded
        assert long.server_text == "z" * SERVER_TEXT_CHARS + "…"
        ok = session.call("echo", {"text": "fine"}, approve=True)
        assert ok.ok and ok.server_text == ""


def test_writes_over_streamable_http(demo_http_url: str) -> None:
    """The same contract over HTTP (one demo server for every HTTP test: its notes store is shared, so the test
    counts what it adds)."""
    with pj.connect(pj.ServerConfig("notes-http", url=demo_http_url), approval="auto") as session:
        bind_notes(session)
        before = len(notes(session))
        assert decided(session.call("add_note", {"text": "over http"}), "deny").effect_state == "not_started"
        assert len(notes(session)) == before
        added = decided(session.call("add_note", {"text": "over http"}), "approve")
        assert added.effect_state == "committed" and len(notes(session)) == before + 1
        late = session.call("add_note", {"text": "late", "delay_seconds": 5}, approve=True, timeout=0.5)
        assert (late.error_code, late.effect_state) == ("mcp_canceled", "unknown")
        gone = session.call("delete_note", {"id": added.structured["id"]}, approve=True)
        assert gone.effect_state == "committed" and session.state == "ready"
        assert added.structured["id"] not in [note["id"] for note in notes(session)]
