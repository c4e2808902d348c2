"""Transcripts: a session connected with ``record=True`` keeps every JSON-RPC message it sent and received (over
stdio, HTTP and in memory), scrubbed of its config's secrets and bounded; saved as JSON Lines and read back; served
by ``python -m purra_jupyter.mock`` to a fresh session, whose results equal the recording."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from conftest import demo_config, demo_in_memory

import purra_jupyter as pj
from purra_jupyter._base.transcript import FORMAT, PACKED, RECEIVED, SENT, Transcript, load
from purra_jupyter._base.wire import CONFIG_INVALID, PROTOCOL_ERROR
from purra_jupyter._purra.envelope import Envelope, RawResult

SECRET = "tr4nscr1pt-s3cret-value"
CALLS: list[tuple[str, dict[str, Any], bool]] = [  # (tool, arguments, raw)
    ("search_documents", {"query": "PurrA envelope", "limit": 2}, False),
    ("echo", {"text": f"says the secret {SECRET}"}, True),
    ("greet", {"name": "Ada"}, True),
    ("fail", {"message": "as asked"}, True),
    ("echo", {"text": "twice"}, True),
    ("echo", {"text": "twice"}, True),
]


SECRET_CALL = 1  # the call whose arguments hold the secret


def recorded_session(config: pj.ServerConfig) -> tuple[pj.McpSession, list[Envelope | RawResult]]:
    session = pj.connect(config, approval="auto", record=True)
    session.bind("search_documents")
    results = [session.call(tool, arguments, raw=raw) for tool, arguments, raw in CALLS]
    return session, results


def same_result(left: Envelope | RawResult, right: Envelope | RawResult) -> bool:
    """The same outcome, as the kit reads it (latencies aside)."""
    if isinstance(left, Envelope) and isinstance(right, Envelope):
        return left.to_dict() == right.to_dict() and left.error_code == right.error_code
    assert isinstance(left, RawResult) and isinstance(right, RawResult)
    return (left.content, left.structured_content, left.is_error) == (right.content, right.structured_content,
                                                                          right.is_error)  # fmt: skip


def test_a_recorded_session_saves_every_message_scrubbed_and_the_mock_serves_it_back(tmp_path: Path) -> None:
    config = demo_config(env={"DEMO_SECRET": SECRET})
    session, results = recorded_session(config)
    with session:
        digest = session.catalog.digest
        saved = session.transcript.save(tmp_path / "demo.jsonl")
    text = saved.read_text()
    assert SECRET not in text and "***" in text  # the echo of the secret, scrubbed as everywhere
    transcript = load(saved)
    header = transcript.header
    assert header["format"] == FORMAT and header["server"] == "demo" and header["transport"] == "stdio"
    assert header["messages"] == len(transcript.messages) and header["dropped"] == 0
    first = transcript.messages[0]
    assert first.direction == SENT and first.message["method"] == "initialize"
    assert [m.t_ms for m in transcript.messages] == sorted(m.t_ms for m in transcript.messages)
    exchanges = transcript.exchanges("tools/call")
    assert [e.params["name"] for e in exchanges] == [tool for tool, _, _ in CALLS]
    assert all(e.response is not None and e.elapsed_ms is not None and e.elapsed_ms >= 0 for e in exchanges)
    assert transcript.exchanges("tools/list")[0].response.direction == RECEIVED  # type: ignore[union-attr]

    mock = pj.ServerConfig("mock", command=sys.executable, args=["-m", "purra_jupyter.mock", str(saved)])
    with pj.connect(mock, approval="auto") as replayed:
        assert replayed.catalog.digest == digest
        replayed.bind("search_documents")
        again = [replayed.call(tool, arguments, raw=raw) for tool, arguments, raw in CALLS]
        for index, ((tool, _, _), before, after) in enumerate(zip(CALLS, results, again, strict=True)):
            if index != SECRET_CALL:
                assert same_result(before, after), (tool, before, after)
        # The secret never reached the file: the call that carried it was recorded with *** in its place.
        for unrecorded in (again[SECRET_CALL], replayed.call("echo", {"text": "never said"}, raw=True)):
            assert isinstance(unrecorded, RawResult) and unrecorded.error_code == PROTOCOL_ERROR
            assert "holds no answer to the tools/call of 'echo' with these arguments" in unrecorded.server_text
        said = replayed.call("echo", {"text": "says the secret ***"}, raw=True)
        assert isinstance(said, RawResult) and said.content[0]["text"] == "says the secret ***"
        assert replayed.state == "ready"  # the session goes on


@pytest.mark.parametrize("transport", ["http", "memory"])
def test_every_transport_records(transport: str, demo_http_url: str, tmp_path: Path) -> None:
    config = pj.ServerConfig("demo", url=demo_http_url) if transport == "http" else demo_in_memory()
    session, results = recorded_session(config)
    with session:
        transcript = load(session.transcript.save(tmp_path / "t.jsonl"))
    assert transcript.header["transport"] == transport
    calls = transcript.exchanges("tools/call")
    assert len(calls) == len(CALLS) and all(call.response is not None for call in calls)
    echoed = calls[1].response.message["result"]["content"][0]["text"]  # type: ignore[union-attr]
    assert echoed == results[1].content[0]["text"]  # type: ignore[union-attr]


def test_a_transcript_keeps_its_bounds_and_says_how_many_it_dropped(tmp_path: Path) -> None:
    transcript = Transcript("demo", "stdio", "python -m demo", lambda text: text, max_messages=3, max_bytes=1 << 20)
    for number in range(5):
        transcript.record(SENT, json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}))
    assert len(transcript) == 3 and transcript.dropped == 2 and "2 dropped" in repr(transcript)
    saved = load(transcript.save(tmp_path / "t.jsonl"))
    assert saved.header["dropped"] == 2 and [m.message["id"] for m in saved.messages] == [0, 1, 2]
    by_bytes = Transcript("demo", "stdio", "x", lambda text: text, max_messages=10, max_bytes=60)
    for number in range(3):
        by_bytes.record(RECEIVED, json.dumps({"jsonrpc": "2.0", "id": number, "result": {}}))
    assert len(by_bytes) == 1 and by_bytes.dropped == 2


def test_a_session_without_record_says_how_to_get_a_transcript() -> None:
    with pj.connect(demo_in_memory()) as session:
        with pytest.raises(pj.McpSessionError) as raised:
            session.transcript  # noqa: B018
    assert raised.value.code == CONFIG_INVALID and "connect with record=True" in raised.value.message
    with pytest.raises(pj.McpSessionError, match="record must be True or False"):
        pj.connect(demo_in_memory(), record="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("", "is not a transcript"),
        ('{"format": "something/else"}\n', "is not a transcript"),
        (f'{{"format": "{FORMAT}"}}\n{{"dir": "sideways", "t_ms": 1, "message": {{}}}}\n', "line 2: not a transcript"),
        (f'{{"format": "{FORMAT}"}}\nnot json\n', "line 2: not JSON"),
    ],
)
def test_a_file_that_is_not_a_transcript_is_refused_with_its_line(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(pj.McpSessionError) as raised:
        load(path)
    assert raised.value.code == CONFIG_INVALID and said in raised.value.message


def test_the_mock_refuses_what_is_not_a_transcript_and_answers_unknown_methods(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    run = subprocess.run([sys.executable, "-m", "purra_jupyter.mock", str(bad)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert run.returncode == 2 and run.stderr.startswith(f"{CONFIG_INVALID}: ")
    good = tmp_path / "good.jsonl"
    Transcript("demo", "stdio", "x", lambda text: text).save(good)
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}, "not json"]  # fmt: skip
    lines = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    run = subprocess.run([sys.executable, "-m", "purra_jupyter.mock", str(good)], input=lines, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    assert answers[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert answers[1]["id"] == 2 and answers[1]["error"]["code"] == -32601
    assert answers[2]["id"] is None and answers[2]["error"]["code"] == -32700 and len(answers) == 3


def test_the_magic_records_with_record(ip: Any) -> None:
    session = ip.run_line_magic("mcp_connect", "rec --record -- {sys.executable} -m purra_jupyter.demo")
    with session:
        assert session.transcript.messages[0].message["method"] == "initialize"


def test_a_long_transcript_reads_back_whole_in_order_and_scrubbed(tmp_path: Path) -> None:
    """Kept packed as the session runs (thousands of messages), read back whole, in order, each scrubbed as it is read
    out: a request that carried a secret shows and saves ``***`` in its place."""
    secret = "sk-live-0123456789"
    transcript = Transcript(
        "demo",
        "stdio",
        "x",
        lambda text: text,
        scrub_value=lambda value: json.loads(json.dumps(value).replace(secret, "***")),
    )
    for number in range(2_500):
        transcript.record(SENT, json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping", "params": {"k": secret}}))
    assert len(transcript) == 2_500
    messages = transcript.messages
    assert [m.message["id"] for m in messages] == list(range(2_500))
    assert all(m.message["params"] == {"k": "***"} for m in messages)
    saved = transcript.save(tmp_path / "long.jsonl").read_text(encoding="utf-8")
    assert secret not in saved and saved.count('"***"') == 2_500


def test_a_pretty_printed_answer_is_kept_and_read_back_whole() -> None:
    """A server may send its JSON-RPC message over several lines (an HTTP body pretty-printed): the ingress admits it,
    the transcript keeps it, and reading it back gives the message, not fragments of it."""
    from purra_jupyter._base.config import Scrubber
    from purra_jupyter._transports.ingress import Ingress

    transcript = Transcript("demo", "http", "x", lambda text: text)
    ingress = Ingress(Scrubber([]), lambda event, detail: None, record=partial(transcript.record, RECEIVED))
    body = b'{\n  "jsonrpc": "2.0",\n  "id": 7,\n  "result": {"text": "a\\nb"}\n}'
    assert ingress.admitted(body) is not None
    for number in range(PACKED):  # (enough that the answer is packed with others)
        transcript.record(SENT, json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}))
    messages = transcript.messages
    assert len(messages) == PACKED + 1 and [m.message.get("method") for m in messages[1:]] == ["ping"] * PACKED
    assert (messages[0].direction, messages[0].message) == (
        RECEIVED, {"jsonrpc": "2.0", "id": 7, "result": {"text": "a\nb"}}
    )  # fmt: skip
