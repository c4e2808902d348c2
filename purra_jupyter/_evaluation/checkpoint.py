"""A batch's checkpoint: each row that ran, appended to a file as it settles, so that a rerun sends only the rest.

The file is JSON Lines, one row a line: ``{"key": ..., "kind": "envelope" | "raw", "result": {...}}``. A row's key
is its tool's remote name, its path (PurrA or raw), the digest of its arguments, the digest of the catalog it was
planned against and which occurrence of those it is among the batch's rows (two rows asking the same thing are two
rows), so a rerun takes a row from the file only for the same call on the same tools. Each line is written and
flushed as its row settles: a kernel that is killed loses at most the rows in flight, and the last line, if the
kill cut it, is dropped when the file is read again (and cut from the file).

The file is read back as untrusted input (``untrusted.read_lines``' bounds): a line that is not a row the kit could
have written (not JSON, a field of the wrong type, a field too many or missing, an envelope that is not one) is
skipped and named in ``Checkpoint.skipped``, its row sent again; the good rows are kept. A file that holds lines but
no row at all is not a checkpoint (another file named by mistake): ``mcp_config_invalid``, and it is left as it is.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from functools import cache
from pathlib import Path
from typing import Any

from .._base.errors import McpSessionError
from .._base.untrusted import FileRefused, JsonRefused, json_line, parse, read_lines
from .._base.wire import CONFIG_INVALID
from .._purra.envelope import Envelope, RawResult

Result = Envelope | RawResult
ENVELOPE, RAW = "envelope", "raw"
ROW_FIELDS = frozenset({"key", "kind", "result"})
SHOWN_SKIPPED = 3  # skipped lines ``skipped_words`` names one by one
_TAIL_CHUNK = 1 << 16  # bytes read at a time, from the end, to find where a cut last line starts


def row_keys(remote: str, raw: bool, argument_digests: Sequence[str], catalog_digest: str) -> list[str]:
    """The key of each row, in order (see the module's docstring)."""
    seen: Counter[str] = Counter()
    keys = []
    for digest in argument_digests:
        seen[digest] += 1
        keys.append(json.dumps([remote, RAW if raw else "purra", digest, catalog_digest, seen[digest]]))
    return keys


class Checkpoint:
    """The rows of ``path`` already done, by key, the lines skipped (``(line number, why)``), and the way to add
    a row."""

    def __init__(self, path: str | Path) -> None:
        if not isinstance(path, str | Path) or not str(path):
            raise McpSessionError(CONFIG_INVALID, "checkpoint must be a file path (str or pathlib.Path).")
        self.path = Path(path)
        self.skipped: list[tuple[int, str]] = []
        self.done: dict[str, Result] = self._read()

    def _read(self) -> dict[str, Result]:
        done: dict[str, Result] = {}
        cut = False
        try:
            for line in read_lines(self.path):
                if not line.complete:  # a write the kill cut short: that row was not done
                    cut = True
                    continue
                row = _row(line.value) if line.refused is None else line.refused
                if isinstance(row, str):
                    self.skipped.append((line.number, row))
                else:
                    done[row[0]] = row[1]
        except FileNotFoundError:
            return {}
        except FileRefused as error:
            raise McpSessionError(CONFIG_INVALID, f"Cannot read the checkpoint {self.path}: {error.reason}.") from None
        if self.skipped and not done:  # not one row: not a checkpoint, and not the kit's to append to
            number, why = self.skipped[0]
            message = f"{self.path}, line {number}: not a checkpoint row ({why}); remove the file to start anew."
            raise McpSessionError(CONFIG_INVALID, message)
        if cut:
            self._cut_last_line()
        return done

    def _cut_last_line(self) -> None:
        """Cut the file after its last newline (a last line without one is a write a kill cut short), so that the
        next row appended starts a line of its own."""
        try:
            with self.path.open("r+b") as file:
                end = file.seek(0, os.SEEK_END)
                while end > 0:
                    start = max(0, end - _TAIL_CHUNK)
                    file.seek(start)
                    found = file.read(end - start).rfind(b"\n")
                    if found >= 0:
                        file.truncate(start + found + 1)
                        return
                    end = start
                file.truncate(0)
        except OSError as error:
            why = error.strerror or error.__class__.__name__
            message = f"Cannot cut the unfinished last line of the checkpoint {self.path}: {why}."
            raise McpSessionError(CONFIG_INVALID, message) from None

    @property
    def skipped_words(self) -> str:
        """The lines skipped, in words a batch's approval, log and summary can add to theirs (``""``: none)."""
        if not self.skipped:
            return ""
        shown = ", ".join(f"line {number} ({why})" for number, why in self.skipped[:SHOWN_SKIPPED])
        more = f" and {len(self.skipped) - SHOWN_SKIPPED} more" if len(self.skipped) > SHOWN_SKIPPED else ""
        lines = "1 line" if len(self.skipped) == 1 else f"{len(self.skipped)} lines"
        return f"{lines} skipped, not checkpoint rows (those rows are sent again): {shown}{more}"

    def append(self, key: str, result: Result) -> None:
        """Add one settled row (on the loop: one writer), flushed at once. A string that is not Unicode (a lone
        surrogate) is written as ``?``: the row stays one the file can be read back with."""
        kind = ENVELOPE if isinstance(result, Envelope) else RAW
        data = {field.name: getattr(result, field.name) for field in fields(result) if field.init}
        line = json_line({"key": key, "kind": kind, "result": data}, default=str)
        with self.path.open("a", encoding="utf-8", errors="replace") as file:
            file.write(line)


# --- reading a row back: each field of the result the type its dataclass expects, or the line is skipped ---------


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _code(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _any(value: Any) -> bool:
    return True


def _milliseconds(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # (an integer too large for a float)
        return False


def _envelope_json(value: Any) -> bool:
    """PurrA's envelope as JSON text: an object whose ``text`` is a list of strings, and its ``structured``."""
    if not isinstance(value, str):
        return False
    try:
        envelope = parse(value)
    except JsonRefused:
        return False
    text = envelope.get("text") if isinstance(envelope, dict) else None
    return isinstance(text, list) and all(isinstance(block, str) for block in text) and "structured" in envelope


@cache
def _content_blocks() -> Any:
    from mcp import types
    from pydantic import TypeAdapter

    return TypeAdapter(list[types.ContentBlock])


def _blocks(value: Any) -> bool:
    """MCP content blocks, as a raw result keeps them (the dicts the SDK's models dump to)."""
    if not isinstance(value, list) or not all(isinstance(block, dict) for block in value):
        return False
    try:
        _content_blocks().validate_python(value)
    except (ValueError, RecursionError):
        return False
    return True


Check = tuple[Callable[[Any], bool], str]
STRING: Check = (_text, "a string")
CODE: Check = (_code, "a string or null")
MILLISECONDS: Check = (_milliseconds, "a number of milliseconds")
FLAG: Check = (_flag, "true or false")
# Each init field of the two results, and what its value must be (a test holds these to the dataclasses' fields).
CHECKS: dict[str, dict[str, Check]] = {
    ENVELOPE: {"server": STRING, "tool": STRING, "json": (_envelope_json, "a PurrA envelope's JSON text"),
               "error_code": CODE, "elapsed_ms": MILLISECONDS, "message": STRING, "server_text": STRING,
               "effect_state": STRING, "write": FLAG},
    RAW: {"server": STRING, "tool": STRING, "content": (_blocks, "a list of MCP content blocks"),
          "structured_content": (_any, "JSON"), "is_error": FLAG, "error_code": CODE, "elapsed_ms": MILLISECONDS,
          "message": STRING, "server_text": STRING},
}  # fmt: skip
CLASSES: dict[str, type[Envelope] | type[RawResult]] = {ENVELOPE: Envelope, RAW: RawResult}


@cache
def _required(kind: str) -> tuple[str, ...]:
    init = (f for f in fields(CLASSES[kind]) if f.init)
    return tuple(f.name for f in init if f.default is MISSING and f.default_factory is MISSING)


def _row(value: Any) -> tuple[str, Result] | str:
    """A line's value as a row (its key and result), or why it is not one, in the kit's words."""
    if not isinstance(value, dict) or set(value) != ROW_FIELDS:
        return "a row is an object of key, kind and result"
    key, kind, data = value["key"], value["kind"], value["result"]
    if not isinstance(key, str):
        return "its key is not a string"
    if not isinstance(kind, str) or kind not in CLASSES:
        return f"its kind is neither {ENVELOPE} nor {RAW}"
    if not isinstance(data, dict):
        return "its result is not an object"
    checks = CHECKS[kind]
    if not set(data) <= set(checks):
        return f"its result holds a field no {kind} result has"
    missing = [name for name in _required(kind) if name not in data]
    if missing:
        return f"its result has no {missing[0]}"
    for name, (check, words) in checks.items():
        if name in data and not check(data[name]):
            return f"its result's {name} is not {words}"
    if "elapsed_ms" in data:
        data = {**data, "elapsed_ms": float(data["elapsed_ms"])}
    try:
        result: Result = CLASSES[kind](**data)
    except (ValueError, TypeError, RecursionError):  # (checked above: a guard against what the checks miss)
        return f"its result is not a {kind} result"
    return key, result


__all__ = ["Checkpoint", "row_keys"]
