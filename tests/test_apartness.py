"""One server's cost is its own (issue 55): what a server sends unasked is weighed before it is parsed. A message over
the bound of one is dropped unread (a request answered with an error), a session whose unasked messages outrun the
rate fails alone, and meanwhile another session of the same kernel keeps answering its calls and memory stays
bounded. Each hostile test runs ``tests/servers/untrusted_server.py`` over stdio and Streamable HTTP beside a
bystander, the demo server over stdio; the helpers that read a message before it is parsed are tested on their own.
"""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import HANG_GUARD, demo_config
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import LoggingMessageNotificationParams
from test_untrusted import tool, untrusted

import purra_jupyter as pj
from purra_jupyter._base.config import Scrubber
from purra_jupyter._base.session_log import DETAIL_CHARS
from purra_jupyter._base.untrusted import HEAD_BYTES, Head, count_values, head, json_within, tail_id
from purra_jupyter._base.wire import EVENT_DROPPED, EVENT_ERROR, FLOOD_LIMIT, UNASKED_TOO_LARGE
from purra_jupyter._connection.notices import server_log_line
from purra_jupyter._transports.ingress import UNASKED_BYTES, Budget, Ingress

TRANSPORTS = ["stdio", "http"]
PLAN = {"tools": [tool("flood", {"type": "object"})], "calls": {"flood": "unasked"}}
MIB = 1 << 20
MEMORY_BOUND = 64 * MIB  # what the flood of a test may have held at once (on main: hundreds of MiB, parse trees)


def objects(size: int) -> dict[str, int]:
    """``unasked``'s arguments for a message of ``size`` bytes of ``[{}, {}, ...]`` (four bytes an object)."""
    return {"bytes": size, "values": (size - 1024) // 4}


@contextmanager
def apart(transport: str) -> Iterator[tuple[pj.McpSession, pj.McpSession]]:
    """A hostile session over ``transport`` and a bystander session (the demo server over stdio), both open."""
    with (
        untrusted(transport, PLAN, "hostile") as config,
        pj.connect(config) as hostile,
        pj.connect(demo_config("bystander")) as bystander,
    ):
        assert bystander.call("echo", {"text": "hi"}, approve=True).ok  # (binds echo first)
        yield hostile, bystander


def meanwhile(hostile: pj.McpSession, bystander: pj.McpSession, arguments: dict[str, Any]) -> tuple[Any, int, int]:
    """The hostile session's ``flood`` call with ``arguments`` while the bystander calls ``echo`` again and again (each
    call must answer): the hostile call's result, how many bystander calls answered meanwhile, and the most memory
    this process held at once meanwhile, over what it held before (tracemalloc)."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        call = hostile.call("flood", arguments, raw=True)
        call.approve()
        deadline = time.monotonic() + HANG_GUARD  # a guard against a hang, not a bound on the time it takes
        answered = 0
        while answered == 0 or call.state != "done":
            assert time.monotonic() < deadline, "the hostile call did not end within the hang guard"
            result = bystander.call("echo", {"text": "hi"}, approve=True)
            assert result.ok, result
            answered += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert bystander.state == "ready" and bystander.ping() >= 0
    return call.result, answered, peak - before


def dropped(session: pj.McpSession) -> list[str]:
    """The session log's rows of unasked messages dropped unread for their size."""
    return [row.detail for row in session.log.events(EVENT_DROPPED) if row.detail.startswith(UNASKED_TOO_LARGE)]


def answered(result: Any) -> dict[str, Any]:
    assert result.ok, result
    said: dict[str, Any] = json.loads(result.content[0]["text"])
    return said


# --- what a server sends unasked, over the bound of one message ----------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unasked_notification_over_the_bound_is_dropped_unread_while_another_session_answers(
    transport: str,
) -> None:
    """Two log notifications of 8 MiB of ``[{}, {}, ...]`` (what held another session's calls for seconds and grew the
    kernel by hundreds of MiB, parsed): each is dropped unread with a row that says why; the session stays ready, the
    bystander answers meanwhile, and this process never held more than the messages' bytes."""
    with apart(transport) as (hostile, bystander):
        result, calls, peak = meanwhile(hostile, bystander, {"kind": "log", **objects(8 * MIB), "count": 2})
        assert answered(result)["sent"] == 2
        rows = dropped(hostile)
        assert len(rows) == 2, rows
        assert rows[0] == (
            f"{UNASKED_TOO_LARGE}: a notification (notifications/message) of {8 * MIB} bytes, over the "
            f"{UNASKED_BYTES} bytes the kit reads of one a server sends unasked; dropped unread"
        ), rows
        assert hostile.state == "ready" and hostile.ping() >= 0
        assert not hostile.log.events("server_log"), "a log line of a message dropped unread"
        assert calls >= 1 and peak < MEMORY_BOUND, (calls, peak / MIB)


@pytest.mark.parametrize("layout", ["id-first", "id-last"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_unasked_request_over_the_bound_is_answered_with_an_error_at_once(transport: str, layout: str) -> None:
    """An elicitation of 2 MiB, its id first (the Python SDK's order) or last (the TypeScript SDK's): refused unread,
    the server gets JSON-RPC error -32600 to its id (saying ``mcp_unasked_too_large``), and a row says so."""
    with apart(transport) as (hostile, bystander):
        arguments = {"kind": "elicit", "bytes": 2 * MIB, "layout": layout, "count": 1, "wait": HANG_GUARD}
        result, _, _ = meanwhile(hostile, bystander, arguments)
        error = answered(result)["answers"]["q-0"]["error"]
        assert error["code"] == -32600 and UNASKED_TOO_LARGE in error["message"], error
        assert error["message"].startswith("Refused unread: a request (elicitation/create) of 2097152 bytes"), error
        rows = dropped(hostile)
        assert len(rows) == 1 and rows[0].endswith("refused unread, request 'q-0' answered with error -32600"), rows
        assert hostile.state == "ready" and hostile.ping() >= 0


@pytest.mark.parametrize(
    ("kind", "layout", "said"),
    [
        ("sampling", "params-first", f"a message whose first {HEAD_BYTES} bytes do not say what it is"),
        ("answer", "id-first", "an answer no request of this session awaits"),
    ],
    ids=["reordered", "stray-answer"],
)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_large_message_that_its_head_does_not_show_as_an_awaited_answer_is_dropped_unread(
    transport: str, kind: str, layout: str, said: str
) -> None:
    """A request of 2 MiB whose members come params first (so its first bytes name neither a method nor an id), and
    an answer of 2 MiB to an id no request of the session awaits, while the session's own call runs: neither is read
    whole (what it might be costs its own session, not the loop): each is dropped unread, a row says what it was."""
    with apart(transport) as (hostile, bystander):
        arguments = {"kind": kind, **objects(2 * MIB), "layout": layout, "count": 1, "wait": 0.5}
        result, calls, peak = meanwhile(hostile, bystander, arguments)
        assert answered(result)["sent"] == 1
        rows = dropped(hostile)
        assert len(rows) == 1 and rows[0].startswith(f"{UNASKED_TOO_LARGE}: {said} of "), rows
        assert hostile.state == "ready" and hostile.ping() >= 0
        assert calls >= 1 and peak < MEMORY_BOUND, (calls, peak / MIB)


# --- the rate of all of them ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unasked_messages_past_the_rate_fail_their_own_session_and_no_other(transport: str) -> None:
    """96 log notifications of 1 MiB and 14,000 values each, as fast as the server writes them (about 190 MiB of weight,
    three times the burst): the hostile session fails with ``mcp_flood_limit_exceeded``, its call too, its cause and
    log say why, and nothing more of it is read; the bystander stays ready and answers meanwhile."""
    with apart(transport) as (hostile, bystander):
        arguments = {"kind": "log", "bytes": MIB - 1024, "values": 7_000, "count": 96}
        result, calls, peak = meanwhile(hostile, bystander, arguments)
        assert result.error_code == FLOOD_LIMIT, result
        assert hostile.state == "failed" and FLOOD_LIMIT in hostile.cause, hostile.cause
        assert hostile.cause.startswith("its unasked messages outran 4 MiB a second after a burst of 64 MiB")
        assert any(FLOOD_LIMIT in row.detail for row in hostile.log.events(EVENT_ERROR))
        with pytest.raises(pj.McpSessionError) as failed:
            hostile.ping()
        assert failed.value.code == FLOOD_LIMIT
        assert calls >= 1 and peak < MEMORY_BOUND, (calls, peak / MIB)
        assert bystander.call("echo", {"text": "after"}, approve=True).ok


# --- the door itself, without a server -----------------------------------------------------------------------


def test_an_answer_that_its_head_showed_and_that_is_none_is_weighed_once_read() -> None:
    """A message whose head shows an answer (``result`` first) while a request awaits one is read whole; when it turns
    out to be a notification after all, it is weighed then, whole: past the budget, the session fails."""
    failed: list[tuple[str, str]] = []
    ingress = Ingress(Scrubber(()), lambda event, detail: None, fail=lambda cause, code: failed.append((code, cause)),
                      budget=Budget(burst=64 * 1024))  # fmt: skip
    disguised = {"result": {"pad": "x" * HEAD_BYTES}, "jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": [{}] * 30_000}}  # fmt: skip
    data = json.dumps(disguised).encode()
    assert head(data) == Head(answer=True)
    assert ingress.message(data) is None
    assert [code for code, _ in failed] == [FLOOD_LIMIT] and ingress.ended
    assert ingress.message(b'{"jsonrpc": "2.0", "id": 1, "result": {}}') is None  # nothing more is read


def test_the_error_answering_a_refused_request_goes_beside_the_sdk_to_its_id() -> None:
    sent: list[Any] = []
    ingress = Ingress(Scrubber(()), lambda event, detail: None, answer=sent.append)
    request = {"method": "sampling/createMessage", "params": {"text": "x" * UNASKED_BYTES}, "jsonrpc": "2.0", "id": 7}
    assert ingress.message(json.dumps(request).encode()) is None
    (message,) = sent
    error = message.root.model_dump(by_alias=True, exclude_none=True)
    assert error["id"] == 7 and error["error"]["code"] == -32600 and UNASKED_TOO_LARGE in error["error"]["message"]


def test_a_log_row_of_a_value_of_a_million_items_holds_only_what_it_shows() -> None:
    """The session log's row of a log message is a bounded walk of its data (never a ``json.dumps`` of all of it):
    the row is the start of the data's JSON, cut, and rendering it holds a few KiB, not the whole text."""
    params = LoggingMessageNotificationParams(level="info", data=[{"k": index} for index in range(1_000_000)])
    tracemalloc.start()
    try:
        line = server_log_line(params)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert line.startswith('info: [{"k": 0}, {"k": 1}, {"k": 2}, ') and line.endswith("…"), line
    assert len(line) <= DETAIL_CHARS and peak < 256 * 1024, peak


# --- reading a message before it is parsed -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":3,"method":"ping"}', Head("ping", 3, whole=True)),
        (b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"' + b"x" * HEAD_BYTES + b'"}}',
         Head("notifications/message")),
        (b'{"result":{"content":[{"text":"' + b"x" * HEAD_BYTES + b'"}]},"jsonrpc":"2.0","id":4}', Head(answer=True)),
        (b'{"jsonrpc":"2.0","id":12' + b"3" * HEAD_BYTES + b',"result":{}}', Head()),  # (an id cut short is no id)
        (b'{"params":{"x":"' + b"x" * HEAD_BYTES + b'"},"method":"ping","id":5}', Head()),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', Head("ping", whole=True)),
        (b"[1, 2]", Head(whole=True)),
        (b"\xff\xfe not JSON", Head()),
    ],
    ids=["whole", "notification", "answer-first", "cut-id", "params-first", "bool-id", "not-an-object", "not-json"],
)  # fmt: skip
def test_the_head_of_a_message_says_what_it_is_when_it_can(message: bytes, expected: Head) -> None:
    assert head(message) == expected


def test_the_id_of_a_request_written_id_last_is_read_from_its_tail() -> None:
    big = {"text": "y" * (2 * HEAD_BYTES)}
    assert tail_id(json.dumps({"method": "m", "params": big, "jsonrpc": "2.0", "id": 7}).encode()) == 7
    assert tail_id(json.dumps({"method": "m", "params": big, "id": "q-1"}).encode()) == "q-1"
    assert tail_id(json.dumps({"jsonrpc": "2.0", "method": "m", "params": big}).encode()) is None
    assert tail_id(json.dumps({"method": "m", "params": {"a": {"id": 9}}}).encode()) is None  # (not the top level)
    assert tail_id(b'{"method": "m", "params": "' + b"}" * 10 + b'", "id": 1') is None  # (not an object's end)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=40,
)


def values_in(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(values_in(inner) for inner in value.values())
    if isinstance(value, list):
        return 1 + sum(values_in(inner) for inner in value)
    return 1


@given(JSON, st.integers(min_value=0, max_value=50))
def test_the_count_of_values_read_from_bytes_is_never_fewer_than_there_are(value: Any, limit: int) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    assert count_values(data, limit) >= values_in(value)


@given(JSON, st.integers(min_value=1, max_value=200))
def test_json_within_a_bound_is_the_start_of_what_json_dumps_writes(value: Any, chars: int) -> None:
    whole = json.dumps(value, ensure_ascii=False)
    shown = json_within(value, chars)
    assert shown == (whole if len(whole) <= chars else whole[:chars] + "…")


def test_json_within_a_bound_of_a_deep_value_stops_where_it_is_cut() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):  # far deeper than any recursion would go
        inner.append([])
        inner = inner[0]
    assert json_within(deep, 10) == "[" * 10 + "…"
    assert json_within({"long": "z" * 10**6}, 12) == '{"long": "zz…'
