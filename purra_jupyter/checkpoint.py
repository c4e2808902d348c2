"""A batch's checkpoint: each row that ran, appended to a file as it settles, so that a rerun sends only the rest.

The file is JSON Lines, one row a line: ``{"key": ..., "kind": "envelope" | "raw", "result": {...}}``. A row's key
is its tool's remote name, its path (PurrA or raw), the digest of its arguments, the digest of the catalog it was
planned against and which occurrence of those it is among the batch's rows (two rows asking the same thing are two
rows), so a rerun takes a row from the file only for the same call on the same tools. Each line is written and
flushed as its row settles: a kernel that is killed loses at most the rows in flight, and the last line, if the
kill cut it, is dropped when the file is read again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from .envelope import Envelope, RawResult
from .errors import McpSessionError
from .wire import CONFIG_INVALID

Result = Envelope | RawResult
ENVELOPE, RAW = "envelope", "raw"


def row_keys(remote: str, raw: bool, argument_digests: Sequence[str], catalog_digest: str) -> list[str]:
    """The key of each row, in order (see the module's docstring)."""
    seen: Counter[str] = Counter()
    keys = []
    for digest in argument_digests:
        seen[digest] += 1
        keys.append(json.dumps([remote, RAW if raw else "purra", digest, catalog_digest, seen[digest]]))
    return keys


class Checkpoint:
    """The rows of ``path`` already done, by key, and the way to add one."""

    def __init__(self, path: str | Path) -> None:
        if not isinstance(path, str | Path) or not str(path):
            raise McpSessionError(CONFIG_INVALID, "checkpoint must be a file path (str or pathlib.Path).")
        self.path = Path(path)
        self.done: dict[str, Result] = self._read()

    def _read(self) -> dict[str, Result]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            what = exc.__class__.__name__
            raise McpSessionError(CONFIG_INVALID, f"Cannot read the checkpoint {self.path}: {what}.") from None
        if text and not text.endswith("\n"):  # a write the kill cut short: that row was not done
            text = text[: text.rfind("\n") + 1]
            self.path.write_text(text, encoding="utf-8")
        done: dict[str, Result] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            key, result = _parsed(line, f"{self.path}, line {number}")
            done[key] = result
        return done

    def append(self, key: str, result: Result) -> None:
        """Add one settled row (on the loop: one writer), flushed at once."""
        kind = ENVELOPE if isinstance(result, Envelope) else RAW
        data = {field.name: getattr(result, field.name) for field in fields(result) if field.init}
        line = json.dumps({"key": key, "kind": kind, "result": data}, ensure_ascii=False, default=str)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(line + "\n")


def _parsed(line: str, where: str) -> tuple[str, Result]:
    try:
        entry: Any = json.loads(line)
        key, kind, data = entry["key"], entry["kind"], entry["result"]
        if not isinstance(key, str) or kind not in (ENVELOPE, RAW):
            raise ValueError(kind)
        result: Result = Envelope(**data) if kind == ENVELOPE else RawResult(**data)
    except (ValueError, TypeError, KeyError):
        message = f"{where}: not a checkpoint row; remove the file to start anew."
        raise McpSessionError(CONFIG_INVALID, message) from None
    return key, result


__all__ = ["Checkpoint", "row_keys"]
