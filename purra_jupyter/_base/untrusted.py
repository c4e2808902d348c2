"""JSON the kit did not write itself, read within bounds, and JSON Lines written so that every reader splits them
where the writer did.

A server's message and a file the kit reads back (a transcript, a checkpoint) are untrusted alike: a line may be
huge, nest a hundred thousand arrays, hold a five-thousand-digit integer or not be UTF-8. ``parse`` reads one JSON
text with the parser's own bounds (``MAX_DEPTH`` levels of nesting, integers of at most ``MAX_INT_DIGITS`` digits:
pydantic's, which the MCP SDK reads messages with too) and raises ``JsonRefused`` for anything else, never
``RecursionError`` or another exception; ``read_lines`` reads a file's lines, each at most ``MAX_LINE_BYTES``.

``json_line`` is the one writer of a JSON Lines file: ``json.dumps`` leaves U+2028, U+2029 and U+0085 unescaped,
and Python's ``str.splitlines`` (and JavaScript's parsers of old) split lines there, so it escapes them.

What a message costs before it is parsed: ``head`` reads what a JSON-RPC message is from its first ``HEAD_BYTES``
(a prefix parsed as far as it goes), ``tail_id`` its id where the TypeScript SDK writes it (last), and
``count_values`` about how many values it holds, from a count of bytes. After it is parsed, ``json_within`` shows a
value as JSON text within a number of characters, by a walk that stops there: a log line of a value of a million
items costs what the line shows.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_DEPTH = 200  # levels of arrays and objects: pydantic-core's (jiter's) recursion limit
MAX_INT_DIGITS = 4_300  # digits of an integer: Python's int_max_str_digits, which pydantic-core keeps to
MAX_LINE_BYTES = 64 << 20  # of one line of a file: a transcript's whole bound (``transcript.MAX_BYTES``)
MAX_FILE_BYTES = 256 << 20  # of a whole file the kit reads back
_LINE_SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}
# What ``head`` reads of a message: in every SDK's layout a message's top-level method, result or error comes before
# its params or its content (only a request's id may come last: the TypeScript SDK's, which ``tail_id`` reads).
HEAD_BYTES = 4_096


class JsonRefused(ValueError):
    """A text that is not JSON within the bounds; ``reason`` says why in the kit's words (never the text itself)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@functools.cache
def _any_json() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Any)


def parse(data: bytes | str) -> Any:
    """One JSON text as Python values (objects as ``dict``); ``JsonRefused`` when it is not JSON, is not UTF-8, or
    breaks a bound."""
    from pydantic import ValidationError

    try:
        return _any_json().validate_json(data)
    except ValidationError as error:
        raise JsonRefused(_reason(error)) from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise JsonRefused(f"not JSON ({error.__class__.__name__})") from None


def _reason(error: Any) -> str:
    """pydantic's words, in the kit's: its message names a position, never the text's content."""
    said = str(error.errors(include_url=False, include_input=False)[0].get("msg", ""))
    said = said.removeprefix("Invalid JSON: ")
    if said.startswith("recursion limit exceeded"):
        return f"nested deeper than {MAX_DEPTH} levels"
    if said.startswith("number out of range"):
        return f"a number of over {MAX_INT_DIGITS} digits"
    words = said.split(" at line ")[0]
    return f"not JSON ({words})" if words else "not JSON"


RequestId = str | int


@dataclass(frozen=True, slots=True)
class Head:
    """What the first bytes of a JSON-RPC message say it is (``head``): its top-level ``method`` and ``id`` when they
    are there whole, and whether it holds a ``result`` or an ``error`` without a method (an ``answer``). ``whole``:
    the head was the whole message, so what it does not hold, the message does not either."""

    method: str | None = None
    id: RequestId | None = None
    answer: bool = False
    whole: bool = False


def head(data: bytes) -> Head:
    """What ``data`` is, from its first ``HEAD_BYTES`` parsed as far as they go (pydantic-core's partial JSON): the
    rest is never read, so a message of any size costs the same here. A member cut by the end of the head is not
    taken (a number cut short would be another number); text that is not JSON says nothing (``Head()``)."""
    from pydantic_core import from_json

    whole = len(data) <= HEAD_BYTES
    try:
        top = from_json(data[:HEAD_BYTES], allow_partial=not whole)
    except ValueError:
        return Head()
    if isinstance(top, dict) and not whole and top and isinstance(top[next(reversed(top))], int | float):
        top.pop(next(reversed(top)))  # (a cut string, true or null is left out by the parser itself)
    return _head(top, whole)


def head_of(value: Any) -> Head:
    """What a message already parsed whole is (a small one is parsed once, its head read from its value)."""
    return _head(value, True)


def _head(top: Any, whole: bool) -> Head:
    if not isinstance(top, dict):
        return Head(whole=whole)
    method = top.get("method")
    method = method if isinstance(method, str) else None
    answer = method is None and ("result" in top or "error" in top)
    return Head(method, _request_id(top.get("id")), answer, whole)


def tail_id(data: bytes) -> RequestId | None:
    """The top-level ``id`` of a message written ``{"method": ..., "params": {...}, "jsonrpc": "2.0", "id": 7}`` (the
    TypeScript SDK's requests): the members after its last object or array, read from its last ``HEAD_BYTES``.
    ``None`` when they hold none (a message of another layout: its id, if any, is in its ``head``)."""
    from pydantic_core import from_json

    end = data[-HEAD_BYTES:].rstrip()
    if not end.endswith(b"}"):
        return None
    body = end[:-1]
    last = max(body.rfind(b"}"), body.rfind(b"]"))
    members = body[last + 1 :].strip().removeprefix(b",")
    try:
        after = from_json(b"{" + members + b"}")
    except ValueError:
        return None
    return _request_id(after.get("id")) if last >= 0 and isinstance(after, dict) else None


def _request_id(value: object) -> RequestId | None:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def count_values(data: bytes, limit: int) -> int:
    """About how many values (objects, arrays, their items) the JSON text ``data`` holds, never fewer, read without
    parsing it: one more than its ``{``, ``[`` and ``,``. Those inside strings (prose is full of commas) are left out
    only when counting them all passes ``limit``: a count of bytes, a few milliseconds a MiB."""
    marks = data.count(b"{") + data.count(b"[") + data.count(b",")
    if marks < limit:
        return marks + 1
    if b"\\" in data:  # escaped backslashes first, so that what is left of ``\"`` is an escaped quote
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(data.split(b'"')[0::2])  # (every other piece lies between strings)
    return outside.count(b"{") + outside.count(b"[") + outside.count(b",") + 1


def json_within(value: Any, chars: int) -> str:
    """What ``json.dumps(value, ensure_ascii=False)`` writes (what is not JSON as its ``str``), within ``chars``
    characters, ending in ``…`` when cut. The walk stops once it has them, and a string is cut before it is escaped:
    a value of any size costs what is shown."""
    pieces: list[str] = []
    size = 0
    for piece in _json_pieces(value, chars):
        pieces.append(piece)
        size += len(piece)
        if size > chars:
            return "".join(pieces)[:chars] + "…"
    return "".join(pieces)


class _Text(str):
    """A piece of ``json_within``'s output (punctuation, a key) among the values still to write."""


def _json_pieces(value: Any, chars: int) -> Iterator[str]:
    """``value``'s JSON text in pieces, depth first, with a stack of its own (no recursion, whatever the depth)."""
    todo: list[Iterator[Any]] = [iter((value,))]
    while todo:
        item = next(todo[-1], _Text())
        if type(item) is _Text:
            if not item:
                todo.pop()
            yield item
        elif isinstance(item, dict | list | tuple) and not item:
            yield "{}" if isinstance(item, dict) else "[]"
        elif isinstance(item, dict):
            todo.append(_members(item, chars))
        elif isinstance(item, list | tuple):
            todo.append(_items(item))
        elif isinstance(item, str):
            yield json.dumps(item[:chars], ensure_ascii=False)
        elif item is None or isinstance(item, bool | int | float):
            yield json.dumps(item)
        else:
            yield str(item)[:chars]


def _members(value: dict[Any, Any], chars: int) -> Iterator[Any]:
    yield _Text("{")
    for index, (key, inner) in enumerate(value.items()):
        yield _Text((", " if index else "") + json.dumps(str(key)[:chars], ensure_ascii=False) + ": ")
        yield inner
    yield _Text("}")


def _items(value: Iterable[Any]) -> Iterator[Any]:
    yield _Text("[")
    for index, inner in enumerate(value):
        if index:
            yield _Text(", ")
        yield inner
    yield _Text("]")


def json_line(value: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """``value`` as one line of a JSON Lines file, with its newline (compact, UTF-8 as it is, line separators
    escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default)
    if any(char in text for char in _LINE_SEPARATORS):
        for char, escape in _LINE_SEPARATORS.items():
            text = text.replace(char, escape)
    return text + "\n"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a file as read: its number (from 1) and its value, or why it is not one (``refused``)."""

    number: int
    value: Any = None
    refused: str | None = None
    complete: bool = True  # ``False`` for a last line without its newline (a write cut short)


class FileRefused(Exception):
    """A file that cannot be read at all: missing rights, too large, a directory. ``reason`` in the kit's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_lines(path: Path) -> Iterator[Line]:
    """Each non-empty line of ``path`` (split at ``\\n`` only), parsed; a line over ``MAX_LINE_BYTES`` is refused
    without being read whole. Raises ``FileRefused`` before the first line when the file cannot be read;
    ``FileNotFoundError`` is left to the caller (a missing checkpoint is a new one)."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise FileRefused(f"it is {size} bytes, more than the {MAX_FILE_BYTES} the kit reads")
        file = path.open("rb")
    except FileNotFoundError:
        raise
    except OSError as error:
        raise FileRefused(error.strerror or error.__class__.__name__) from None
    with file:
        try:
            yield from parsed_lines(file)
        except OSError as error:
            raise FileRefused(error.strerror or error.__class__.__name__) from None


def parsed_lines(stream: IO[bytes]) -> Iterator[Line]:
    """Each non-empty line of ``stream`` (a file, a pipe), split at ``\\n`` only and parsed as it comes; a line over
    ``MAX_LINE_BYTES`` is refused without being held whole."""
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            yield Line(number, refused=f"a line of over {MAX_LINE_BYTES} bytes")
            while raw and not raw.endswith(b"\n"):  # the rest of that line
                raw = stream.readline(MAX_LINE_BYTES + 1)
            continue
        complete = raw.endswith(b"\n")
        if not raw.strip():
            continue
        try:
            yield Line(number, parse(raw), complete=complete)
        except JsonRefused as refused:
            yield Line(number, refused=refused.reason, complete=complete)


__all__ = [
    "HEAD_BYTES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_LINE_BYTES",
    "FileRefused",
    "Head",
    "JsonRefused",
    "Line",
    "RequestId",
    "count_values",
    "head",
    "head_of",
    "json_line",
    "json_within",
    "parse",
    "parsed_lines",
    "read_lines",
    "tail_id",
]
