"""Files the kit reads back are untrusted input: a checkpoint, a transcript, a request line sent to the mock. A crafted
or foreign one (a five-thousand-digit integer, a hundred thousand nested arrays, a line that is not UTF-8, fields of
the wrong type, a directory in place of a file) gives ``mcp_config_invalid`` naming the file and the line, a skipped
checkpoint line (the good rows kept), or a JSON-RPC error from the mock, which answers the next request; never a
Python exception. U+2028, U+2029 and U+0085 in a result round-trip through a checkpoint and a transcript."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from conftest import HANG_GUARD, demo_in_memory

import purra_jupyter as pj
from purra_jupyter._base.transcript import load
from purra_jupyter._base.untrusted import MAX_DEPTH, MAX_INT_DIGITS, json_line
from purra_jupyter._base.wire import CONFIG_INVALID
from purra_jupyter._evaluation.checkpoint import CHECKS, Checkpoint
from purra_jupyter._purra.envelope import Envelope, RawResult
from purra_jupyter.demo.server import build_server

SEPARATORS = "a\u2028b\u2029c\x85d"  # what str.splitlines (and old JavaScript) split a line at
DIGITS = "1" * 5_000  # an integer over the parser's bound
NESTED = "[" * 100_000 + "]" * 100_000  # nesting over the parser's bound
NOT_UTF8 = b'{"key": "\xff\xfe"}'
TOO_MANY_DIGITS = f"a number of over {MAX_INT_DIGITS} digits"
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"
MOCK = [sys.executable, "-m", "purra_jupyter.mock"]


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    """``lines`` as a file, each ending in a newline (text as UTF-8, bytes as they are)."""
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()).rstrip(b"\n") + b"\n"
                              for line in lines))  # fmt: skip
    return path


def echo_count(session: pj.McpSession) -> int:
    counts = session.call("call_counts", {}, approve=True).structured["counts"]
    return int(counts.get("echo", 0))


def unreadable(tmp_path: Path, how: str) -> Path:
    """A path the kit cannot read as a file, for a reason other than its absence."""
    if how == "a directory":
        (tmp_path / "dir.jsonl").mkdir()
        return tmp_path / "dir.jsonl"
    if how == "under a file":
        (tmp_path / "plain").write_text("x\n")
        return tmp_path / "plain" / "file.jsonl"
    if how == "a symlink loop":
        (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
        return tmp_path / "loop.jsonl"
    raise AssertionError(how)


UNREADABLE = [
    pytest.param("a directory", "Is a directory", id="directory"),
    pytest.param("under a file", "Not a directory", id="under-a-file"),
    pytest.param("a symlink loop", "Too many levels of symbolic links", id="symlink-loop"),
]  # fmt: skip
# (a file without read permission is the same OSError; these machines run as root, which reads it all the same)


# --- checkpoints --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Rows of a real checkpoint: two of a PurrA batch (envelopes) and two of a raw one, as the kit wrote them."""
    path = tmp_path_factory.mktemp("checkpoint") / "good.jsonl"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        demo.evaluate("echo", [{"text": "one"}, {"text": "two"}], checkpoint=path)
        demo.evaluate("echo", [{"text": "three"}, {"text": "four"}], raw=True, approve=True, checkpoint=path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [row["kind"] for row in rows] == ["envelope", "envelope", "raw", "raw"]
    return rows


def crafted(row: dict[str, Any], **result: Any) -> str:
    """``row`` with fields of its result replaced (``...`` removes one)."""
    data = {k: v for k, v in {**row["result"], **result}.items() if v is not ...}
    return json.dumps({**row, "result": data})


def with_text(row: dict[str, Any], name: str, text: str) -> str:
    """``row`` with its result's ``name`` written as the JSON text ``text`` (what ``json.dumps`` cannot write)."""
    return crafted(row, **{name: "@text@"}).replace('"@text@"', text)


ENVELOPE, RAW = 0, 2  # a good row of each kind in ``good_rows``
# (the row it is made from, the bad line, words of why it was skipped)
BAD_LINES: list[Any] = [
    pytest.param(RAW, lambda row: with_text(row, "elapsed_ms", DIGITS), TOO_MANY_DIGITS, id="5000-digit-integer"),
    pytest.param(RAW, lambda row: NESTED, TOO_DEEP, id="100000-nested-arrays"),
    pytest.param(RAW, lambda row: NOT_UTF8, "not JSON", id="invalid-utf8"),
    pytest.param(RAW, lambda row: "not json", "not JSON", id="not-json"),
    pytest.param(RAW, lambda row: '{1: "key not a string"}', "not JSON", id="key-not-a-string"),
    pytest.param(RAW, lambda row: json.dumps({**row, "key": 7}), "its key is not a string", id="row-key-a-number"),
    pytest.param(RAW, lambda row: json.dumps([row]), "a row is an object of key, kind and result", id="a-list"),
    pytest.param(RAW, lambda row: json.dumps({**row, "more": 1}), "a row is an object of key", id="extra-row-field"),
    pytest.param(RAW, lambda row: json.dumps({**row, "kind": "other"}), "its kind is neither", id="kind-other"),
    pytest.param(RAW, lambda row: json.dumps({**row, "kind": ["raw"]}), "its kind is neither", id="kind-a-list"),
    pytest.param(RAW, lambda row: json.dumps({**row, "result": [1]}), "its result is not an object", id="result-list"),
    pytest.param(RAW, lambda row: crafted(row, elapsed_ms="x"), "elapsed_ms is not a number", id="elapsed-ms-text"),
    pytest.param(RAW, lambda row: crafted(row, elapsed_ms=True), "elapsed_ms is not a number", id="elapsed-ms-bool"),
    pytest.param(RAW, lambda row: crafted(row, elapsed_ms=1e400), "elapsed_ms is not a number", id="elapsed-ms-inf"),
    pytest.param(RAW, lambda row: crafted(row, elapsed_ms=float("nan")), "elapsed_ms is not", id="elapsed-ms-nan"),
    pytest.param(RAW, lambda row: crafted(row, server=...), "its result has no server", id="missing-server"),
    pytest.param(RAW, lambda row: crafted(row, extra=1), "holds a field no raw result has", id="extra-field"),
    pytest.param(RAW, lambda row: crafted(row, error_code=5), "error_code is not a string or null", id="code-number"),
    pytest.param(RAW, lambda row: crafted(row, is_error="no"), "is_error is not true or false", id="is-error-text"),
    pytest.param(RAW, lambda row: crafted(row, content={"type": "text"}), "content is not", id="content-object"),
    pytest.param(RAW, lambda row: crafted(row, content=[{"type": "text", "text": 5}]), "content is not",
                 id="content-text-a-number"),
    pytest.param(RAW, lambda row: crafted(row, content=[{"type": "resource", "resource": [1]}]), "content is not",
                 id="content-resource-a-list"),
    pytest.param(RAW, lambda row: crafted(row, content=[[1]]), "content is not", id="content-block-a-list"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json='{"text": 5, "structured": null}'), "json is not",
                 id="envelope-text-a-number"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json='{"text": [5], "structured": null}'), "json is not",
                 id="envelope-text-block-a-number"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json='{"text": []}'), "json is not", id="envelope-no-structured"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json="not json"), "json is not", id="envelope-not-json"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json=f'{{"text": [], "structured": {DIGITS}}}'), "json is not",
                 id="envelope-5000-digit-integer"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json=f'{{"text": [], "structured": {NESTED}}}'), "json is not",
                 id="envelope-100000-nested-arrays"),
    pytest.param(ENVELOPE, lambda row: crafted(row, json=5), "json is not", id="envelope-json-a-number"),
    pytest.param(ENVELOPE, lambda row: crafted(row, write="yes"), "write is not true or false", id="write-text"),
    pytest.param(ENVELOPE, lambda row: crafted(row, effect_state=None), "effect_state is not a string",
                 id="effect-state-null"),
    pytest.param(ENVELOPE, lambda row: crafted(row, content=[]), "holds a field no envelope result has",
                 id="raw-field-in-an-envelope"),
    pytest.param(ENVELOPE, lambda row: json.dumps({**row, "kind": "raw"}), "holds a field no raw result has",
                 id="envelope-called-raw"),
]  # fmt: skip


@pytest.mark.parametrize(("source", "bad", "why"), BAD_LINES)
def test_a_bad_checkpoint_line_is_skipped_and_named_and_the_good_rows_are_kept(
    tmp_path: Path, good_rows: list[dict[str, Any]], source: int, bad: Callable[[dict[str, Any]], str | bytes], why: str
) -> None:
    path = write_lines(tmp_path / "batch.jsonl", [json.dumps(good_rows[0]), bad(good_rows[source]),
                                                  *(json.dumps(row) for row in good_rows[1:])])  # fmt: skip
    checkpoint = Checkpoint(path)
    assert sorted(checkpoint.done) == sorted(row["key"] for row in good_rows)
    [(number, reason)] = checkpoint.skipped
    assert number == 2 and why in reason, reason
    said = checkpoint.skipped_words
    assert said == f"1 line skipped, not checkpoint rows (those rows are sent again): line 2 ({reason})"
    assert isinstance(checkpoint.done[good_rows[ENVELOPE]["key"]], Envelope)
    assert isinstance(checkpoint.done[good_rows[RAW]["key"]], RawResult)
    # Only bad lines: not a checkpoint (another file named by mistake): refused, naming the file and the line, and
    # left as it is (nothing is appended to it).
    only_bad = write_lines(tmp_path / "only-bad.jsonl", [bad(good_rows[source])])
    before = only_bad.read_bytes()
    with pytest.raises(pj.McpSessionError) as raised:
        Checkpoint(only_bad)
    assert raised.value.code == CONFIG_INVALID
    assert (
        raised.value.message.startswith(f"{only_bad}, line 1: not a checkpoint row (") and why in raised.value.message
    )
    assert only_bad.read_bytes() == before


def test_the_checks_cover_every_field_of_both_results() -> None:
    for kind, result in (("envelope", Envelope), ("raw", RawResult)):
        assert set(CHECKS[kind]) == {field.name for field in fields(result) if field.init}


def test_a_batch_resumes_the_good_rows_around_a_bad_line_and_sends_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    rows = [{"text": f"row {i}"} for i in range(6)]
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        demo.evaluate("echo", rows[:4], checkpoint=path)
        lines = path.read_text().splitlines(keepends=True)
        path.write_text(lines[0] + "[" * 100_000 + "\n" + "".join(lines[2:]))  # row 1's line: crafted
        checkpoint = Checkpoint(path)
        assert len(checkpoint.done) == 3 and checkpoint.skipped == [(2, TOO_DEEP)]
        frame = demo.evaluate("echo", rows, checkpoint=path)
        assert frame.attrs["summary"].resumed == 3 and echo_count(demo) == 4 + 3  # row 1, and rows 4 and 5, again
        assert frame["text"].tolist() == [row["text"] for row in rows] and frame["ok"].all()
        again = Checkpoint(path)  # the rows sent again were appended, each on a line of its own
        assert len(again.done) == 6 and again.skipped == checkpoint.skipped


def test_a_cut_last_line_is_dropped_even_when_the_cut_splits_a_character(tmp_path: Path) -> None:
    path = tmp_path / "batch.jsonl"
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        demo.evaluate("echo", [{"text": "é"}, {"text": "ü"}], checkpoint=path)
    whole = path.read_bytes()
    cut = whole.index("ü".encode()) + 1  # the kill cut the second row inside its ü
    path.write_bytes(whole[:cut])
    checkpoint = Checkpoint(path)
    assert len(checkpoint.done) == 1 and checkpoint.skipped == []
    assert path.read_bytes() == whole[: whole.index(b"\n") + 1]  # cut back to the last whole line


@pytest.mark.parametrize(("how", "said"), UNREADABLE)
def test_a_checkpoint_that_cannot_be_read_is_refused_naming_it(tmp_path: Path, how: str, said: str) -> None:
    path = unreadable(tmp_path, how)
    with pytest.raises(pj.McpSessionError) as raised:
        Checkpoint(path)
    assert raised.value.code == CONFIG_INVALID and raised.value.message == f"Cannot read the checkpoint {path}: {said}."


@pytest.mark.parametrize("raw", [False, True], ids=["envelope", "raw"])
def test_line_separators_in_a_result_round_trip_through_a_checkpoint(tmp_path: Path, raw: bool) -> None:
    path = tmp_path / "batch.jsonl"
    rows = [{"text": SEPARATORS}, {"text": f"{SEPARATORS} again"}, {"text": "plain"}]
    with pj.connect(demo_in_memory(), approval="auto") as demo:
        demo.bind("echo")
        first = demo.evaluate("echo", rows, raw=raw, approve=True, checkpoint=path)
        assert first["text"].tolist() == [row["text"] for row in rows]
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) == len(rows)  # escaped: every reader splits the file where the kit did
        checkpoint = Checkpoint(path)
        assert len(checkpoint.done) == len(rows) and checkpoint.skipped == []
        copy = Checkpoint(tmp_path / "copy.jsonl")  # (a new file)
        for key, result in checkpoint.done.items():
            copy.append(key, result)
        assert Checkpoint(copy.path).done == checkpoint.done and copy.path.read_bytes() == path.read_bytes()
        again = demo.evaluate("echo", rows, raw=raw, approve=True, checkpoint=path)
        assert again.attrs["summary"].resumed == len(rows) and echo_count(demo) == len(rows)
        assert again["text"].tolist() == first["text"].tolist()


# --- transcripts, the mock, replays --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The lines of a real transcript: the demo in memory, listed, then two raw echo calls (texts "first", "second")."""
    path = tmp_path_factory.mktemp("transcript") / "demo.jsonl"
    with pj.connect(pj.ServerConfig("recorded", server=build_server()), approval="auto", record=True) as session:
        for text in ("first", "second"):
            assert session.call("echo", {"text": text}, raw=True).ok
        session.transcript.save(path)
    return [json.loads(line) for line in path.read_text().splitlines()]


def message_of(lines: list[dict[str, Any]], method: str, nth: int = 0, *, response: bool = False) -> dict[str, Any]:
    """The ``nth`` request of ``method`` (or its response) in a transcript's lines, to craft in place."""
    requests = [line["message"] for line in lines[1:] if line["message"].get("method") == method]
    request = requests[nth]
    if not response:
        return request
    return next(line["message"] for line in lines[1:] if line["dir"] == "received"
                and line["message"].get("id") == request["id"] and "method" not in line["message"])  # fmt: skip


def saved(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json_line(line) for line in lines), encoding="utf-8")
    return path


BAD_TRANSCRIPT_LINES = [
    pytest.param(f'{{"t_ms": 1, "dir": "sent", "message": {{"id": {DIGITS}}}}}'.encode(), TOO_MANY_DIGITS,
                 id="5000-digit-integer"),
    pytest.param(f'{{"t_ms": 1, "dir": "sent", "message": {NESTED}}}'.encode(), TOO_DEEP, id="100000-nested-arrays"),
    pytest.param(b'{"t_ms": 1, "dir": "sent", "message": {"method": "\xff"}}', "not JSON", id="invalid-utf8"),
    pytest.param(b'{"t_ms": 1, "dir": "sent", "message": [1]}', "not a transcript message", id="message-a-list"),
    pytest.param(b'{"t_ms": 1e400, "dir": "sent", "message": {}}', "not a transcript message", id="t-ms-inf"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "said"), BAD_TRANSCRIPT_LINES)
def test_a_crafted_transcript_is_refused_with_its_line_by_load_the_mock_and_replay(
    tmp_path: Path, recorded: list[dict[str, Any]], bad: bytes, said: str
) -> None:
    path = write_lines(tmp_path / "crafted.jsonl", [json.dumps(recorded[0]), json.dumps(recorded[1]), bad])
    expected = f"{path}, line 3: {said}"
    with pytest.raises(pj.McpSessionError) as raised:
        load(path)
    assert raised.value.code == CONFIG_INVALID and raised.value.message.startswith(expected)
    with pytest.raises(pj.McpSessionError) as raised:
        pj.replay(path, pj.ServerConfig("demo", server=build_server()), approve=True)
    assert raised.value.code == CONFIG_INVALID and raised.value.message.startswith(expected)
    run = subprocess.run([*MOCK, str(path)], capture_output=True, text=True, timeout=HANG_GUARD)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith(f"{CONFIG_INVALID}: {expected}") and run.stderr.count("\n") == 1, run.stderr


@pytest.mark.parametrize(("how", "said"), UNREADABLE)
def test_a_transcript_that_cannot_be_read_is_refused_naming_it(tmp_path: Path, how: str, said: str) -> None:
    path = unreadable(tmp_path, how)
    expected = f"{CONFIG_INVALID}: Cannot read the transcript {path}: {said}.\n"
    run = subprocess.run([*MOCK, str(path)], capture_output=True, text=True, timeout=HANG_GUARD)
    assert run.returncode == 2 and run.stderr == expected and run.stdout == ""
    with pytest.raises(pj.McpSessionError) as raised:
        load(path)
    assert raised.value.code == CONFIG_INVALID and f"{raised.value.code}: {raised.value.message}\n" == expected


def ask_mock(path: Path, lines: list[bytes]) -> list[dict[str, Any]]:
    """Send ``lines`` to the mock serving ``path``, each ending in a newline, and read every answer: it ends as the
    input ends, without a word on stderr."""
    run = subprocess.run([*MOCK, str(path)], input=b"".join(line + b"\n" for line in lines), capture_output=True,
                         timeout=HANG_GUARD)  # fmt: skip
    assert run.returncode == 0 and run.stderr == b"", run.stderr.decode(errors="replace")
    text = run.stdout.decode("utf-8")
    assert text.endswith("\n") and len(text.splitlines()) == text.count("\n")  # no line can be split elsewhere
    return [json.loads(line) for line in text.splitlines()]


PING = b'{"jsonrpc": "2.0", "id": 99, "method": "ping"}'
# (the request line, the code of the error it gets, the id it is answered with)
CRAFTED_REQUESTS = [
    pytest.param(f'{{"jsonrpc": "2.0", "id": {DIGITS}, "method": "ping"}}'.encode(), -32602, None,
                 id="5000-digit-id"),
    pytest.param(f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {NESTED}}}'.encode(), -32602, None,
                 id="100000-nested-arrays"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "\xff"}}', -32700, None,
                 id="invalid-utf8"),
    pytest.param(b"not json", -32700, None, id="not-json"),
    pytest.param(b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32602, None, id="id-an-object"),
    pytest.param(b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32602, None, id="id-a-list"),
    pytest.param(b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32602, None, id="id-a-bool"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "x"}', -32602, 1, id="params-text"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]}', -32602, 1,
                 id="params-a-list"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": '
                 b'{"text": NaN}}}', -32602, 1, id="nan-argument"),
    pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": {"a": 1}}}', -32602, 1,
                 id="name-an-object"),
    pytest.param('{"jsonrpc": "2.0", "id": "a\u2028b", "method": "x\u2029y"}'.encode(), -32601, "a\u2028b",
                 id="line-separators"),
]  # fmt: skip


@pytest.mark.parametrize(("request_line", "code", "answered_id"), CRAFTED_REQUESTS)
def test_the_mock_answers_a_crafted_request_with_an_error_and_goes_on(
    tmp_path: Path, recorded: list[dict[str, Any]], request_line: bytes, code: int, answered_id: Any
) -> None:
    path = saved(tmp_path / "demo.jsonl", recorded)
    crafted_answer, ping = ask_mock(path, [request_line, PING])
    assert crafted_answer["jsonrpc"] == "2.0" and crafted_answer["id"] == answered_id
    assert crafted_answer["error"]["code"] == code and crafted_answer["error"]["message"].startswith("purra-jupyter")
    assert len(crafted_answer["error"]["message"]) < 200 and "result" not in crafted_answer
    assert ping == {"jsonrpc": "2.0", "id": 99, "result": {}}


def call_line(request_id: int, text: str) -> bytes:
    params = {"name": "echo", "arguments": {"text": text}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


# Odd shapes inside a transcript's messages that ``transcript.load`` takes (each a JSON object): each edits, in
# place, the lines of the recording (listing, then echo "first" and "second"); the first echo is left well-formed.
GONE = "gone"  # (a request that is no call: left out of the replay)


def second_call(edit: Callable[[dict[str, Any]], None]) -> Callable[[list[dict[str, Any]]], None]:
    return lambda lines: edit(message_of(lines, "tools/call", 1))


def second_answer(edit: Callable[[dict[str, Any]], None]) -> Callable[[list[dict[str, Any]]], None]:
    return lambda lines: edit(message_of(lines, "tools/call", 1, response=True))


def listing(edit: Callable[[dict[str, Any]], None]) -> Callable[[list[dict[str, Any]]], None]:
    return lambda lines: edit(message_of(lines, "tools/list", response=True))


ODD_SHAPES = [  # (the edit, whether the listing is still one, the second call's "same": GONE when it is no call)
    pytest.param(listing(lambda m: m.update(result=[1])), False, True, id="listing-result-a-list"),
    pytest.param(listing(lambda m: m["result"]["tools"].extend([1, "x", [2], {"name": 5}])), True, True,
                 id="tools-not-objects"),
    pytest.param(listing(lambda m: m["result"].update(tools={"name": "echo"})), False, True, id="tools-an-object"),
    pytest.param(listing(lambda m: m["result"].update(nextCursor={"a": 1})), False, True, id="cursor-an-object"),
    pytest.param(listing(lambda m: m["result"].update(nextCursor=7)), False, True, id="cursor-a-number"),
    pytest.param(listing(lambda m: m.update(error="x")), True, True, id="listing-error-text"),
    pytest.param(lambda lines: message_of(lines, "tools/list").update(params="x"), True, True,
                 id="listing-params-text"),
    pytest.param(second_call(lambda m: m.update(params="x")), True, GONE, id="call-params-text"),
    pytest.param(second_call(lambda m: m["params"].update(arguments=[1, 2])), True, GONE, id="arguments-a-list"),
    pytest.param(second_call(lambda m: m["params"].update(arguments="x")), True, GONE, id="arguments-text"),
    pytest.param(second_call(lambda m: m["params"].update(name={"a": 1})), True, GONE, id="name-an-object"),
    pytest.param(second_call(lambda m: m["params"].update(name=None)), True, GONE, id="name-null"),
    pytest.param(second_answer(lambda m: m.update(result=[1])), True, None, id="call-result-a-list"),
    pytest.param(second_answer(lambda m: m.update(result="x")), True, None, id="call-result-text"),
    pytest.param(second_answer(lambda m: m.pop("result")), True, None, id="call-answer-empty"),
    pytest.param(second_answer(lambda m: (m.pop("result"), m.update(error=[1]))), True, None,
                 id="call-error-a-list"),
    pytest.param(second_answer(lambda m: (m.pop("result"), m.update(error={"code": "x", "message": 5}))), True, False,
                 id="call-error-odd-fields"),
    pytest.param(second_answer(lambda m: m["result"].update(content="x", isError=[1])), True, False,
                 id="call-result-odd-fields"),
    pytest.param(lambda lines: [m.update(id=[m["id"]]) for m in (message_of(lines, "tools/call", 1),
                 message_of(lines, "tools/call", 1, response=True))], True, True, id="ids-lists"),
    pytest.param(lambda lines: [m.update(id={"n": m["id"]}) for m in (message_of(lines, "tools/call", 1),
                 message_of(lines, "tools/call", 1, response=True))], True, True, id="ids-objects"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "still_a_listing", "second_same"), ODD_SHAPES)
def test_a_replay_of_a_transcript_with_odd_shapes_skips_what_is_not_a_call_or_an_answer(
    tmp_path: Path,
    recorded: list[dict[str, Any]],
    edit: Callable[[list[dict[str, Any]]], None],
    still_a_listing: bool,
    second_same: bool | str | None,
) -> None:
    lines = json.loads(json.dumps(recorded))  # (a copy to edit)
    edit(lines)
    path = saved(tmp_path / "odd.jsonl", lines)
    load(path)  # a transcript, as far as the file goes
    frame = pj.replay(path, pj.ServerConfig("demo", server=build_server()), approve=True)
    assert frame["tool"].tolist() == (["echo"] if second_same == GONE else ["echo", "echo"])
    # the well-formed call: replayed, the same; the odd one as said (unknown when its answer is no answer)
    assert frame["same"].tolist() == ([True] if second_same == GONE else [True, second_same]) and frame["now_ok"].all()
    if second_same is None:
        assert frame["difference"].iloc[1] == "no answer was recorded" and frame["then_ok"].iloc[1] is None
    assert frame.attrs["summary"].calls == len(frame)
    assert frame["verdict_then"].iloc[0] == ("callable" if still_a_listing else None)
    assert (frame.attrs["summary"].digest_then is not None) == still_a_listing
    # The mock serves the same file: what it cannot answer gets a JSON-RPC error, the rest as recorded.
    first, second, ping = ask_mock(path, [call_line(1, "first"), call_line(2, "second"), PING])
    assert first["id"] == 1 and first["result"]["content"][0]["text"] == "first"
    assert second["id"] == 2 and ping == {"jsonrpc": "2.0", "id": 99, "result": {}}
    if "result" not in second:  # (answered as recorded, however odd, or refused)
        assert second["error"]["code"] in (-32602, -32603) and second["error"]["message"].startswith("purra-jupyter")


def test_the_mock_answers_an_answer_it_cannot_give_with_an_internal_error(
    tmp_path: Path, recorded: list[dict[str, Any]]
) -> None:
    lines = json.loads(json.dumps(recorded))
    message_of(lines, "tools/call", 1, response=True)["result"] = [1]
    listed = message_of(lines, "tools/list", response=True)
    listed.pop("result")
    listed["error"] = {"code": "not a number", "message": "x"}
    answers = ask_mock(saved(tmp_path / "odd.jsonl", lines), [call_line(1, "second"), call_line(2, "first"),
                       b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}', PING])  # fmt: skip
    second, first, tools, ping = answers
    assert second["id"] == 1 and second["error"]["code"] == -32603
    assert second["error"]["message"] == "purra-jupyter mock: the recorded answer is not a JSON-RPC result or error"
    assert first["result"]["content"][0]["text"] == "first"
    assert tools["id"] == 3 and tools["error"]["code"] == -32603 and ping["result"] == {}


@pytest.fixture
def separators_transcript(tmp_path: Path) -> tuple[Path, list[Any]]:
    """A transcript of echo calls whose texts hold U+2028, U+2029 and U+0085 (raw, and through a PurrA binding)."""
    path = tmp_path / "separators.jsonl"
    with pj.connect(demo_in_memory("recorded"), approval="auto", record=True) as session:
        session.bind("echo")
        results = [session.call("echo", {"text": SEPARATORS}, raw=True), session.call("echo", {"text": SEPARATORS})]
        session.transcript.save(path)
    return path, results


def test_line_separators_in_a_result_round_trip_through_a_transcript_the_mock_and_a_replay(
    separators_transcript: tuple[Path, list[Any]],
) -> None:
    path, (raw, envelope) = separators_transcript
    assert isinstance(raw, RawResult) and raw.content[0]["text"] == SEPARATORS
    assert isinstance(envelope, Envelope) and envelope.text == [SEPARATORS]
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) == text.count("\n")  # escaped where saved: one message a line, for every reader
    answers = [e.response.message for e in load(path).exchanges("tools/call") if e.response is not None]
    assert [answer["result"]["content"][0]["text"] for answer in answers] == [SEPARATORS, SEPARATORS]
    mock = pj.ServerConfig("mock", command=sys.executable, args=["-m", "purra_jupyter.mock", str(path)])
    with pj.connect(mock, approval="auto") as served:
        served.bind("echo")
        assert served.call("echo", {"text": SEPARATORS}, raw=True).content == raw.content
        again = served.call("echo", {"text": SEPARATORS})
        assert isinstance(again, Envelope) and again.to_dict() == envelope.to_dict()
    frame = pj.replay(path, pj.ServerConfig("demo", server=build_server()), approve=True)
    assert frame["same"].tolist() == [True, True] and frame["now_ok"].all()
