"""JSON the kit did not write itself, read within bounds, and JSON Lines written so that every reader splits them
where the writer did.

A server's message and a file the kit reads back (a transcript, a checkpoint) are untrusted alike: a line may be
huge, nest a hundred thousand arrays, hold a five-thousand-digit integer or not be UTF-8. ``parse`` reads one JSON
text with the parser's own bounds (``MAX_DEPTH`` levels of nesting, integers of at most ``MAX_INT_DIGITS`` digits:
pydantic's, which the MCP SDK reads messages with too) and raises ``JsonRefused`` for anything else, never
``RecursionError`` or another exception; ``read_lines`` reads a file's lines, each at most ``MAX_LINE_BYTES``.

``json_line`` is the one writer of a JSON Lines file: ``json.dumps`` leaves U+2028, U+2029 and U+0085 unescaped,
and Python's ``str.splitlines`` (and JavaScript's parsers of old) split lines there, so it escapes them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MAX_DEPTH = 200  # levels of arrays and objects: pydantic-core's (jiter's) recursion limit
MAX_INT_DIGITS = 4_300  # digits of an integer: Python's int_max_str_digits, which pydantic-core keeps to
MAX_LINE_BYTES = 64 << 20  # of one line of a file: a transcript's whole bound (``transcript.MAX_BYTES``)
MAX_FILE_BYTES = 256 << 20  # of a whole file the kit reads back
_LINE_SEPARATORS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


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
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT_DIGITS",
    "MAX_LINE_BYTES",
    "FileRefused",
    "JsonRefused",
    "Line",
    "json_line",
    "parse",
    "parsed_lines",
    "read_lines",
]
