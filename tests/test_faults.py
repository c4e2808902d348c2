"""The fault matrix: a hand-written server misbehaves in every way the SDK would refuse to, and each
fault has its documented outcome — the error code, the session's state afterwards (with the cause in
its log), no wait beyond the configured timeout plus one second, a kernel thread that is never held,
and no child process left once the session is closed."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from conftest import HANG_GUARD, SERVERS, children, demo_config, plan_argument, raw_config, wait_until

import purra_jupyter as pj
from purra_jupyter._base.errors import KEPT_APART, SERVER_TEXT_CHARS
from purra_jupyter._ui.approval import PendingCall

TIMEOUT = 2.0  # each faulty session's configured timeout, in seconds


@pytest.fixture
def no_child_left() -> Iterator[None]:
    """Every server process a test started is gone once its sessions are closed."""
    before = children()
    yield
    for session in pj.sessions():
        session.close("test cleanup")
    wait_until(lambda: not (children() - before), what="no server process left")


def faulty(*args: str, timeout: float = TIMEOUT) -> pj.ServerConfig:
    return raw_config("faulty", *args, timeout=timeout)


# --- faults before the session is ready: connect fails with a code and leaves nothing behind --------------


@pytest.mark.parametrize(
    ("fault", "args", "code"),
    [
        ("an unsupported protocol version", ["--protocol", "2099-01-01"], "mcp_protocol_unsupported"),
        ("initialize never answered", ["--fault", "mute"], "mcp_timeout"),
        ("tools/list never answered", ["--fault", "mute-list"], "mcp_timeout"),
        ("exits during initialize", ["--fault", "exit-on-initialize"], "mcp_connect_failed"),
        ("non-JSON on stdout after initialize", ["--fault", "garbage-at-once"], "mcp_connect_failed"),
        ("257 tools", ["--tools", "257", "--page-size", "100"], "mcp_catalog_limit_exceeded"),
        ("33 pages", ["--tools", "33", "--page-size", "1"], "mcp_catalog_limit_exceeded"),
        ("a repeated cursor", ["--tools", "4", "--page-size", "1", "--cursor", "repeat"], "mcp_pagination_invalid"),
        ("a 513-byte cursor", ["--tools", "4", "--page-size", "1", "--cursor", "long"], "mcp_pagination_invalid"),
        ("duplicate tool names", ["--tools", "3", "--duplicate-name"], "mcp_name_conflict"),
    ],
)
def test_a_fault_while_connecting_fails_connect_with_its_code(
    fault: str, args: list[str], code: str, no_child_left: None
) -> None:
    started = time.monotonic()
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(faulty(*args))
    # The code says what ended the connect (mcp_timeout: its own timeout); the bound is a guard against a hang,
    # not a speed claim.
    assert time.monotonic() - started < HANG_GUARD, fault
    assert caught.value.code == code, caught.value
    assert "\n" not in str(caught.value)  # one line
    assert pj.sessions() == []


def test_non_json_on_stdout_after_ready_fails_the_session_with_the_cause_in_the_log(no_child_left: None) -> None:
    session = pj.connect(faulty("--fault", "garbage"))
    try:
        with pytest.raises(pj.McpSessionError) as caught:
            session.ping()  # the server writes its garbage line before this answer: the ping ends with it
        assert caught.value.code == "mcp_connection_closed"
        assert session.state == "failed"
        assert "not valid JSON-RPC" in session.cause
        assert any("this line is not JSON-RPC" in row.detail for row in session.log.events("error"))
        with pytest.raises(pj.McpSessionError) as caught:
            session.ping()
        assert caught.value.code == "mcp_connection_closed"
        assert "not valid JSON-RPC" in caught.value.message
    finally:
        session.close()
    assert session.state == "closed"


def test_a_connection_that_fails_while_connecting_never_comes_back_ready(no_child_left: None) -> None:
    """The garbage line may come before, during or after the listing request starts: whichever it is, connect
    fails with the cause (a race that once let about one connect in ten through as 'ready')."""
    for attempt in range(30):
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(raw_config(f"garbage-{attempt}", "--fault", "garbage-at-once", timeout=TIMEOUT))
        assert caught.value.code == "mcp_connect_failed" and "not valid JSON-RPC" in caught.value.message
    assert pj.sessions() == []


QUIET_SCRIPT = """
import sys
import purra_jupyter as pj
config = pj.ServerConfig("quiet", command=sys.executable, args=[{server!r}, "--fault", "garbage"], timeout=5)
s = pj.connect(config)
try:
    s.ping()
except pj.McpSessionError as error:
    print(error.code)
s.close()
print(sum("this line is not JSON-RPC" in row.detail for row in s.log))
"""


def test_a_non_json_line_fails_the_session_once_and_quietly(
    no_child_left: None, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing reaches the cell's stderr (no traceback, no log record a handler prints), and the offending line
    is in one row of the session's log, never in the cause."""
    caplog.set_level(logging.DEBUG)
    capfd.readouterr()
    session = pj.connect(faulty("--fault", "garbage"))
    with pytest.raises(pj.McpSessionError):
        session.ping()
    assert "this line is not JSON-RPC" not in session.cause  # the server's line is in the log, never in a message
    assert f"its line is {KEPT_APART}, and in the session log" in session.cause
    with pytest.raises(pj.McpSessionError) as again:
        session.ping()
    assert "this line is not JSON-RPC" in again.value.server_text  # what the server sent, apart from the message
    session.close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Failed to parse" not in err, err
    assert [record for record in caplog.records if "JSONRPC" in record.getMessage()] == []  # no handler saw it
    assert sum("this line is not JSON-RPC" in row.detail for row in session.log) == 1

    # The same in a fresh interpreter with no logging set up, as in a notebook: Python's last-resort handler
    # would print the traceback there.
    server = str(SERVERS / "raw_server.py")
    done = subprocess.run([sys.executable, "-c", QUIET_SCRIPT.format(server=server)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["mcp_connection_closed", "1"]
    assert done.stderr == ""


def test_a_line_that_is_not_utf8_fails_the_session_with_the_line_in_the_log(no_child_left: None) -> None:
    session = pj.connect(faulty("--fault", "not-utf8"))
    with pytest.raises(pj.McpSessionError) as caught:
        session.ping()
    assert caught.value.code == "mcp_connection_closed"
    assert f"not valid JSON-RPC (its line is {KEPT_APART}" in session.cause
    [row] = [row for row in session.log if "not UTF-8" in row.detail]
    assert "not UTF-8: \ufffd\ufffd" in row.detail  # the bytes shown as text
    assert session.state == "failed"
    session.close()


CRASH_CAUSE = "RuntimeError: the configuration file /etc/untrusted/server.toml is missing"  # (untrusted_server's)
# A traceback whose last 20 lines (what a failure keeps) are under the 2,000-character cut, and one over it; each
# starts with an indented line, as every Python traceback's tail does.
CRASHES = {"under the cut": {"frames": 40, "name_chars": 12}, "over the cut": {"frames": 60, "name_chars": 100}}


@pytest.mark.parametrize("crash", CRASHES)
def test_a_server_that_dies_of_a_traceback_shows_its_tail_once_ending_with_the_exception(
    crash: str, no_child_left: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stderr tail was added twice when its first line was indented, and a tail over 2,000 characters lost its
    last lines, the exception itself: now ``server_text`` holds it once, cut from the front (saying so), in the API and
    in ``purra-jupyter check``."""
    from purra_jupyter.cli import main

    with plan_argument({"crash": CRASHES[crash]}) as plan:
        server = [sys.executable, str(SERVERS / "untrusted_server.py"), plan]
        with pytest.raises(pj.McpSessionError) as caught:
            pj.connect(pj.ServerConfig("dying", command=server[0], args=server[1:], timeout=TIMEOUT))
        capsys.readouterr()
        assert main(["check", "--", *server]) == 2
        printed = capsys.readouterr().out
    error = caught.value
    assert error.code == "mcp_connect_failed" and "kept apart from this message" in error.message, error
    said = error.server_text
    lines = said.splitlines()
    assert lines[-1] == CRASH_CAUSE and said.count(CRASH_CAUSE) == 1, said
    assert len(lines) == len(set(lines)) and lines[-2].startswith('  File "untrusted_loader.py"'), said  # once
    assert len(said) <= SERVER_TEXT_CHARS
    if crash == "over the cut":
        assert re.fullmatch(r"… \(\d+ earlier characters cut\)", lines[0]), lines[0]
    else:
        assert lines[0].startswith('  File "untrusted_loader.py"') and len(lines) == 20, said
    shown = printed.splitlines()
    assert shown.count(f"  | {CRASH_CAUSE}") == 1 and printed.count(CRASH_CAUSE) == 1, printed
    assert shown[shown.index(f"  | {CRASH_CAUSE}") - 1] == f"  | {lines[-2]}", printed


# --- faults in the catalog: the session is ready, the tool is not callable, and says why -----------------


@pytest.mark.parametrize(
    ("fault", "args", "refusal", "words"),
    [
        ("a 9 KiB description", ["--description-bytes", str(9 * 1024)], "mcp_catalog_limit_exceeded", "9216 bytes"),
        ("a schema 40 objects deep", ["--schema", "deep"], "mcp_schema_unsupported", "levels deep, over 32"),
        ("a schema of about 5,000 nodes", ["--schema", "wide"], "mcp_schema_unsupported", "schema nodes, over 4096"),
    ],
)
def test_a_tool_beyond_the_limits_is_listed_as_not_callable(
    fault: str, args: list[str], refusal: str, words: str, no_child_left: None
) -> None:
    with pj.connect(faulty(*args)) as session:
        tool = session.catalog["tool_000"]
        assert not tool.callable and tool.refusal == refusal, fault
        assert any(words in reason for reason in tool.reasons), tool.reasons
        with pytest.raises(pj.McpSessionError) as caught:
            session.call("tool_000", {"x": "a"}, approve=True)
        assert caught.value.code == refusal
        assert "got tools/call" not in session.stderr  # refused before anything was sent
        assert session.state == "ready"


# --- faults in a call: the result carries the code; the session is as documented -----------------------


@dataclass(frozen=True)
class CallFault:
    result: str  # the raw server's --call-result
    code: str | None
    state: str  # the session's state after the call
    raw_code: str | None = None  # the same call on the raw path, when it differs
    # the session's timeout: the storm's 10,000 notifications before its answer take seconds on a loaded machine,
    # so there it is a guard against a hang, not a bound the server must meet
    timeout: float = TIMEOUT


CALL_FAULTS = [
    CallFault("mute", "mcp_timeout", "ready"),
    CallFault("exit", "mcp_connection_closed", "failed"),
    CallFault("huge", "mcp_result_too_large", "ready", "mcp_result_too_large"),
    CallFault("blocks", "mcp_result_too_large", "ready", "mcp_result_too_large"),
    CallFault("image", "mcp_result_unsupported", "ready", None),
    CallFault("error", "mcp_tool_error", "ready", "mcp_tool_error"),
    CallFault("bad-structured", "mcp_result_invalid", "ready", None),
    CallFault("no-structured", "mcp_result_invalid", "ready", None),
    CallFault("list-changed", "mcp_catalog_stale", "stale", None),
    CallFault("storm", "mcp_catalog_stale", "stale", None, timeout=HANG_GUARD),
]


@pytest.mark.parametrize("fault", CALL_FAULTS, ids=lambda fault: fault.result)
def test_a_fault_in_a_call_has_its_documented_outcome(fault: CallFault, no_child_left: None) -> None:
    session = pj.connect(faulty("--call-result", fault.result, timeout=fault.timeout))
    pending = session.call("tool_000", {"x": "a"})
    assert isinstance(pending, PendingCall)
    pending.approve()  # returns at once: the kernel's thread never waits for the server
    if fault.result == "mute":  # the server never answers: had approve() waited, the call would be done by now
        assert pending.state == "running"
    wait_until(lambda: pending.state == "done", what=f"the {fault.result} call to settle")
    result = pending.result
    assert result.error_code == fault.code, result
    assert session.state == fault.state
    assert any("tool_000 (purra)" in row.detail and (fault.code or "ok") in row.detail for row in session.log)
    if fault.state == "failed":
        assert "closed the connection" in session.cause
        assert any("closed the connection" in row.detail for row in session.log.events("error"))
    if fault.state == "ready":
        assert session.ping() >= 0  # still usable
        raw = session.call("tool_000", {"x": "a"}, raw=True, approve=True)
        expected = fault.raw_code if fault.result != "mute" else "mcp_timeout"
        assert raw.error_code == expected, raw
    session.close()
    assert session.state == "closed" and session.cause


def test_the_loop_serves_other_sessions_while_a_server_never_answers(no_child_left: None) -> None:
    with pj.connect(faulty("--call-result", "mute")) as silent, pj.connect(demo_config()) as healthy:
        pending = silent.call("tool_000", {"x": "a"})
        pending.approve()
        assert pending.state == "running"
        for _ in range(5):
            assert healthy.call("echo", {"text": "still served"}, approve=True).ok
        assert pending.state == "running"  # the silent server still holds its call; nothing else waits on it
        wait_until(lambda: pending.state == "done", what="the silent call to time out")
        assert pending.result.error_code == "mcp_timeout"


def test_a_shorter_deadline_ends_first_while_a_longer_one_still_waits(no_child_left: None) -> None:
    # A connection checks its waits' deadlines with one timer: a wait with a sooner deadline than those already
    # waiting must still end at its own (the first call's 300 s would otherwise hold the second's 2 s).
    with pj.connect(faulty("--call-result", "mute", timeout=300)) as session:
        first = session.call("tool_000", {"x": "a"})
        first.approve()
        session.set_timeout(TIMEOUT)
        second = session.call("tool_000", {"x": "b"})
        second.approve()
        wait_until(lambda: second.state == "done", what="the call with the shorter timeout to end")
        assert second.result.error_code == "mcp_timeout"
        assert f"within {TIMEOUT:g} s" in second.result.message
        assert first.state == "running"  # its own deadline is 5 minutes away
        third = session.call("tool_000", {"x": "c"}, approve=True)  # and the check runs again for a later wait
        assert third.error_code == "mcp_timeout"
        assert first.state == "running"


def test_a_notification_storm_during_a_call_leaves_a_stale_session_and_a_bounded_log(no_child_left: None) -> None:
    with pj.connect(faulty("--call-result", "storm", timeout=HANG_GUARD)) as session:
        started = time.monotonic()
        envelope = session.call("tool_000", {"x": "a"}, approve=True)
        assert time.monotonic() - started < HANG_GUARD  # a guard against a hang (the storm kept it busy), not speed
        assert envelope.error_code == "mcp_catalog_stale" and session.state == "stale"
        assert len(session.log) <= 10_000
        # the storm did reach the session: its first change went on, the 9,999 after it said nothing new (the tools
        # were not listed again meanwhile) and are counted, not handed on
        assert len(session.log.events("list_changed")) == 1
        repeats = "notifications/tools/list_changed repeated before the list was read again"
        dropped = [row.detail for row in session.log.events("dropped") if repeats in row.detail]
        assert sum(int(row.split("not handed on: ")[1].split(" ")[0]) for row in dropped) == 9_999, dropped
        session.refresh()  # and it recovers with an explicit rediscovery
        assert session.state == "ready" and session.ping() >= 0


def test_a_repeated_list_change_goes_on_again_once_the_list_was_read_again(no_child_left: None) -> None:
    """A change repeated before the kit read the list again says nothing new and is not handed on; once the list was
    read again (a refresh), the next change goes on and the session turns stale again."""
    with pj.connect(faulty("--list-changed-on-ping")) as session:
        session.ping()  # the server announces tools/list_changed before it answers each ping
        wait_until(lambda: session.state == "stale", what="the first change")
        session.ping()
        assert len(session.log.events("list_changed")) == 1 and session.state == "stale"
        session.refresh()
        assert session.state == "ready"
        session.ping()
        wait_until(lambda: session.state == "stale", what="the change after the refresh")
        assert len(session.log.events("list_changed")) == 2


def test_list_changed_between_approval_prompt_and_click_voids_the_call(no_child_left: None) -> None:
    with pj.connect(faulty("--list-changed-on-ping")) as session:
        pending = session.call("tool_000", {"x": "a"})
        session.ping()  # the server announces tools/list_changed before it answers
        wait_until(lambda: pending.state == "void", what="the pending call to turn void")
        pending.approve()
        assert pending.state == "void" and pending.result.error_code == "mcp_catalog_stale"
        assert "got tools/call" not in session.stderr
        assert session.state == "stale"


def test_a_stderr_flood_keeps_only_a_bounded_tail(no_child_left: None) -> None:
    # the flood is read (under tracemalloc) before the answer: the timeout is a guard against a hang, not a bound
    with pj.connect(faulty("--call-result", "stderr-flood", timeout=HANG_GUARD)) as session:
        tracemalloc.start()
        try:
            baseline, _ = tracemalloc.get_traced_memory()
            envelope = session.call("tool_000", {"x": "a"}, approve=True)
            wait_until(lambda: "raw server: flood done" in session.stderr, what="the whole flood to be read")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert envelope.error_code is None
        assert len(session.stderr.splitlines()) <= 200
        assert len(session.log) <= 10_000
        assert peak - baseline < 8 * 1024 * 1024  # the flood was 10 MB: only a tail was ever held
        assert session.state == "ready" and session.ping() >= 0
