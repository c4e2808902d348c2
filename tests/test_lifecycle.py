"""The call lifecycle keeps its promises on every path, checked after the fact, not right after the call:

- a request the kit stops waiting for (a timeout, a kernel interrupt) is cancelled on the server, and its
  late answer is discarded (over Streamable HTTP none can come: the request's response is closed at the
  deadline): the session is still ready after that (no state change at all, and a request answered after
  the late answer), over stdio and HTTP, on the PurrA and the raw path;
- a scope validator that raises settles the call in code, by a click and as a batch row with one code;
- a close from a state observer (the loop thread) ends the server process;
- connect, bind and refresh each end at their total deadline (its code and message), however slowly a server
  pages.

How long a wait took is bounded only by HANG_GUARD, a guard against a hang, not a speed claim.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator

import psutil
import pytest
from conftest import (
    HANG_GUARD,
    children,
    demo_config,
    demo_http,
    demo_in_memory,
    interrupt_when,
    raw_config,
    wait_until,
)

import purra_jupyter as pj


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> Iterator[tuple[pj.McpSession, Callable[[], str]]]:
    """A demo session, and a way to read everything its server wrote to stderr so far."""
    if request.param == "stdio":
        with pj.connect(demo_config("late-stdio")) as session:
            yield session, lambda: session.stderr
    else:
        with demo_http() as server, pj.connect(pj.ServerConfig("late-http", url=server.url)) as session:
            yield session, server.stderr_so_far


def sleep_ids(stderr: str, seconds: float) -> list[str]:
    """The request ids of the server's sleeps of ``seconds``, in the order they started."""
    return re.findall(rf"sleep: {seconds:g} s \(request (\S+)\)", stderr)


def late_answer_logged(session: pj.McpSession, request_id: str) -> bool:
    return any(row.detail == f"late answer to request {request_id} discarded" for row in session.log.events("cancel"))


def test_a_late_answer_is_discarded_and_the_session_stays_ready(
    transport: tuple[pj.McpSession, Callable[[], str]],
) -> None:
    session, stderr = transport
    session.bind("sleep")  # bound first, so a call's short timeout is all the call's own
    session.bind("echo")
    changes: list[str] = []
    session.observe(lambda change: changes.append(change["new"]), names="state")
    for raw in (False, True):
        for how in ("timeout", "interrupt"):
            seconds = 3 if how == "timeout" else 30
            before = sleep_ids(stderr(), seconds)

            def started() -> list[str]:
                return sleep_ids(stderr(), seconds)[len(before) :]  # noqa: B023 - read while this loop runs

            if how == "timeout":
                result = session.call("sleep", {"seconds": seconds}, raw=raw, approve=True, timeout=1)
                assert result.error_code == "mcp_timeout", result
            else:
                with interrupt_when(started, "the server to start sleeping"):  # the interrupt rule: a result
                    result = session.call("sleep", {"seconds": seconds}, raw=raw, approve=True, timeout=60)
                assert result.error_code == "mcp_interrupted", result
            [request_id] = wait_until(started, what="the server's sleep line")
            # The server was told, by id, and stopped; over stdio its answer to the cancelled request came and
            # was dropped (over HTTP the request's response was closed, so no answer has a way back).
            wait_until(lambda: f"sleep: cancelled (request {request_id})" in stderr(), what="the server's cancel")  # noqa: B023
            if session.transport == "stdio":
                wait_until(lambda: late_answer_logged(session, request_id), what="the late answer row")  # noqa: B023
            assert any(
                f"cancelled request {request_id} (tools/call)" in row.detail for row in session.log.events("cancel")
            )
            assert session.ping() >= 0
            after = session.call("echo", {"text": f"after {how}"}, raw=raw, approve=True)
            assert after.ok, after

    # Every late answer has come and gone (over stdio) or cannot come (over HTTP), and requests sent after each
    # were answered: nothing is left in flight that could still change the state, and ``changes`` holds every
    # change since the start (none).
    assert changes == [], changes
    assert session.state == "ready", session.cause
    assert session.ping() >= 0
    assert session.call("add", {"a": 1, "b": 2}, approve=True).structured == {"sum": 3}


def failing_validator(state: object, arguments: object, signal: object = None) -> str:
    raise ValueError("validator bug")


def test_a_scope_validator_that_raises_settles_every_path_with_one_code(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    with pj.connect(demo_in_memory("validator")) as demo:
        demo.bind("echo", scope_validator=failing_validator)
        in_code = demo.call("echo", {"text": "in code"}, approve=True)

        pending = demo.call("echo", {"text": "clicked"})
        pending.widget.approve_button.click()
        wait_until(lambda: pending.state == "done", what="the clicked call to settle")
        clicked = pending.result

        frame = demo.evaluate("echo", [{"text": "row 0"}, {"text": "row 1"}], approve=True)

        results = [in_code, clicked]
        assert {result.error_code for result in results} == {"mcp_host_error"}
        assert frame["error_code"].tolist() == ["mcp_host_error"] * 2
        for message in [result.message for result in results] + frame["message"].tolist():
            assert "the scope validator raised ValueError: validator bug; nothing was sent" in message
        assert demo.state == "ready"
        counts = demo.call("call_counts", approve=True).structured["counts"]
        assert "echo" not in counts  # the validator runs before anything is sent
        record = pending._repr_mimebundle_()  # what the clicked call's output became
        assert record["application/vnd.purra.envelope+json"]["errorCode"] == "mcp_host_error"
    assert "exception calling callback" not in caplog.text
    assert "exception calling callback" not in capfd.readouterr().err


def test_closing_from_a_state_observer_ends_the_server_process() -> None:
    before = children()
    session = pj.connect(demo_config("observer-close"))
    [pid] = children() - before

    def close_when_stale(change: dict) -> None:
        if change["new"] == "stale":
            session.close("closed by an observer")  # runs on the loop thread, where the notification arrived

    session.observe(close_when_stale, names="state")
    with pytest.raises(pj.McpSessionError) as caught:
        session.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    assert caught.value.code == "mcp_connection_closed"  # the observer closed the session before the answer
    wait_until(lambda: session.state == "closed", what="the session to close")
    assert session.cause == "closed by an observer"

    def gone() -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_until(gone, what="the server process to end")
    assert pj.sessions() == []


TIMEOUT = 2.0


def slow_pages(name: str, *, delayed_from: int) -> pj.ServerConfig:
    """8 tools, one per page; from the ``delayed_from``-th tools/list request on, each page takes 0.5 s."""
    args = ["--tools", "8", "--page-size", "1", "--page-delay", "0.5", "--page-delay-from", str(delayed_from)]
    return raw_config(name, *args, timeout=TIMEOUT)


def test_connect_ends_within_its_deadline_however_slowly_the_server_pages() -> None:
    started = time.monotonic()
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(slow_pages("drip", delayed_from=1))  # 8 pages × 0.5 s: 4 s against 2 s in all
    assert time.monotonic() - started < HANG_GUARD  # a guard against a hang; the code and message say it ended
    assert caught.value.code == "mcp_timeout"
    assert "did not finish connecting within 2 s (it reached page" in caught.value.message
    assert pj.sessions() == []


def test_bind_and_refresh_end_within_their_deadline_and_the_session_stays_usable() -> None:
    with pj.connect(slow_pages("drip-later", delayed_from=9)) as session:  # the first listing is quick
        for operation, words in (
            (lambda: session.bind("tool_000"), "binding 'tool_000'"),
            (session.refresh, "refreshing the catalog"),
        ):
            started = time.monotonic()
            with pytest.raises(pj.McpSessionError) as caught:
                operation()
            assert time.monotonic() - started < HANG_GUARD  # a guard against a hang, not a speed claim
            assert caught.value.code == "mcp_timeout"
            assert f"did not finish {words} within 2 s (it reached page" in caught.value.message
            assert session.state == "ready"
        wait_until(lambda: len(session.log.events("cancel")) >= 4, what="the late pages to be discarded")
        assert session.ping(timeout=HANG_GUARD) >= 0
        assert session.state == "ready"


def test_cancelling_a_running_call_stops_it_on_the_server() -> None:
    with pj.connect(demo_config("cancelled")) as session:
        pending = session.call("sleep", {"seconds": 30}, timeout=60)
        pending.approve()
        wait_until(lambda: "sleep: 30 s" in session.stderr, what="the server to start sleeping")
        pending.cancel()
        wait_until(lambda: pending.state == "done", what="the cancelled call to settle")
        assert pending.result.error_code == "mcp_interrupted"
        assert "the call was cancelled" in pending.result.message
        wait_until(lambda: "sleep: cancelled" in session.stderr, what="the server to stop")
        wait_until(lambda: any("discarded" in row.detail for row in session.log.events("cancel")), what="late answer")
        assert session.state == "ready" and session.ping() >= 0
