"""A session's log: the last events of one connection, each detail scrubbed of secrets before it is cut.

What it shows is bounded (``egress.Room``): the newest rows that fit, saying how many of how many, the rest in
``s.log.to_frame()``; in its plain text each detail is one line, so a server's words cannot pass for a row.

The log of a long session (a batch of 100,000 calls logs a row for each) is kept as text: the rows are packed
``PACKED`` at a time into one JSON string, so the session's heap holds a few large strings, not three Python objects
per row scattered among what the rest of the session frees (which would keep that memory from going back).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from .egress import CellText, Room, bundle, cell_text, shown_note
from .frames import kit_frame
from .markup import Html, join, table, tag, td
from .visible import one_line

LOG_ROWS = 10_000
DETAIL_CHARS = 500
PACKED = 1_000  # rows packed together once logged
S = TypeVar("S", str, Html)
WHOLE = "s.log.to_frame()"  # what holds every row a display of the log leaves out


@dataclass(frozen=True, slots=True)
class LogEntry:
    time: datetime
    event: str
    detail: str


Row = tuple[float, str, str]  # a row as kept: its time (seconds since the epoch), event and detail


class SessionLog:
    """The last ``maxlen`` events of a session, each detail scrubbed of secrets; appended from any thread.
    Times are the machine's local time; shown as ``HH:MM:SS.mmm`` with each detail whole."""

    def __init__(
        self, scrub: Callable[[str], str] = str, maxlen: int = LOG_ROWS, rows: Iterable[LogEntry] = ()
    ) -> None:
        self._scrub = scrub
        self._maxlen = maxlen
        self._packs: deque[str] = deque()  # PACKED rows each, as one JSON array of rows
        self._recent: list[Row] = []  # the rows not packed yet
        self._lock = threading.Lock()
        for row in rows:
            self._keep((row.time.timestamp(), row.event, row.detail))

    def add(self, event: str, detail: str = "") -> None:
        detail = self._scrub(detail)  # before cutting, so no part of a secret survives the cut
        if len(detail) > DETAIL_CHARS:
            detail = detail[:DETAIL_CHARS] + "…"
        self._keep((time.time(), event, detail))  # a time zone is looked up when shown: a stderr flood adds rows
        # by the thousand

    def _keep(self, row: Row) -> None:
        with self._lock:
            self._recent.append(row)
            if len(self._recent) < PACKED:
                return
            self._packs.append(json.dumps(self._recent))
            self._recent = []
            while (len(self._packs) - 1) * PACKED >= self._maxlen:  # the rows past the oldest pack are enough
                self._packs.popleft()

    def _kept(self) -> list[Row]:
        with self._lock:
            packs, recent = tuple(self._packs), list(self._recent)
        rows: list[Row] = [tuple(row) for pack in packs for row in json.loads(pack)]
        rows.extend(recent)
        return rows[-self._maxlen :]

    def __iter__(self) -> Iterator[LogEntry]:
        return iter([LogEntry(datetime.fromtimestamp(t, UTC), event, detail) for t, event, detail in self._kept()])

    def __len__(self) -> int:
        with self._lock:
            return min(len(self._packs) * PACKED + len(self._recent), self._maxlen)

    def events(self, event: str) -> list[LogEntry]:
        return [row for row in self if row.event == event]

    def last(self, count: int) -> SessionLog:
        """A copy holding the last ``count`` rows (what ``%mcp_log`` shows)."""
        return SessionLog(maxlen=max(count, 1), rows=tuple(self)[-count:] if count > 0 else ())

    def to_frame(self) -> Any:
        import pandas as pd

        rows = [(row.time.astimezone(), row.event, row.detail) for row in self]  # the machine's local time
        return kit_frame(pd.DataFrame(rows, columns=["time", "event", "detail"]))

    def __repr__(self) -> CellText:
        rows = list(self)
        lines = _newest((_row_text(row) for row in reversed(rows)), Room.text())
        note = [_note(len(lines), len(rows))] if len(lines) < len(rows) else []
        return cell_text("\n".join([*note, *lines]) or "(no events)")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = list(self)
        shown = _newest((_row_html(row) for row in reversed(rows)), Room.html())
        note = tag("p", tag("small", _note(len(shown), len(rows)))) if len(shown) < len(rows) else None
        html = join([note, table(("time", "event", "detail"), shown, "purra-log")])
        return bundle(html, self.__repr__())


def _newest(newest_first: Iterable[S], room: Room) -> list[S]:
    """The rows (made for the medium, newest first) that fit ``room``, oldest first."""
    return list(room.parts(newest_first))[::-1]


def _row_html(row: LogEntry) -> Html:
    return tag("tr", td(tag("code", _clock(row.time))), td(row.event), td(row.detail, wrapped=True))


def _row_text(row: LogEntry) -> str:
    """A row on one line of the log's text: the detail's line breaks made spaces, every other control an escape."""
    return f"{_clock(row.time)}  {row.event:<12} {one_line(row.detail, DETAIL_CHARS + 1)}"


def _note(shown: int, total: int) -> str:
    return shown_note(shown, total, "events", WHOLE, last=True)


def _clock(moment: datetime) -> str:
    """``HH:MM:SS.mmm`` in the machine's local time."""
    return f"{moment.astimezone():%H:%M:%S.%f}"[:-3]


__all__ = ["LogEntry", "SessionLog"]
