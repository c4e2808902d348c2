"""A session's log: the last events of one connection, each detail scrubbed of secrets before it is cut."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .egress import CellText, bundle, cell_text
from .markup import table, tag, td

LOG_ROWS = 10_000
DETAIL_CHARS = 500


@dataclass(frozen=True, slots=True)
class LogEntry:
    time: datetime
    event: str
    detail: str


class SessionLog:
    """The last ``LOG_ROWS`` events of a session, each detail scrubbed of secrets; appended from any thread.
    Times are the machine's local time; shown as ``HH:MM:SS.mmm`` with each detail whole."""

    def __init__(
        self, scrub: Callable[[str], str] = str, maxlen: int = LOG_ROWS, rows: Iterable[LogEntry] = ()
    ) -> None:
        self._rows: deque[LogEntry] = deque(rows, maxlen=maxlen)
        self._scrub = scrub

    def add(self, event: str, detail: str = "") -> None:
        detail = self._scrub(detail)  # before cutting, so no part of a secret survives the cut
        if len(detail) > DETAIL_CHARS:
            detail = detail[:DETAIL_CHARS] + "…"
        self._rows.append(LogEntry(datetime.now(UTC), event, detail))  # local time when shown: a stderr flood
        # adds rows by the thousand, and a time zone lookup per row would slow it down

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(tuple(self._rows))

    def __len__(self) -> int:
        return len(self._rows)

    def events(self, event: str) -> list[LogEntry]:
        return [row for row in self if row.event == event]

    def last(self, count: int) -> SessionLog:
        """A copy holding the last ``count`` rows (what ``%mcp_log`` shows)."""
        return SessionLog(maxlen=max(count, 1), rows=tuple(self._rows)[-count:] if count > 0 else ())

    def to_frame(self) -> Any:
        import pandas as pd

        rows = [(row.time.astimezone(), row.event, row.detail) for row in self]  # the machine's local time
        return pd.DataFrame(rows, columns=["time", "event", "detail"])

    def __repr__(self) -> CellText:
        return cell_text(
            "\n".join(f"{_clock(row.time)}  {row.event:<12} {row.detail}" for row in self) or "(no events)"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = (
            tag("tr", td(tag("code", _clock(row.time))), td(row.event), td(row.detail, wrapped=True)) for row in self
        )
        html = table(("time", "event", "detail"), rows, "purra-log")
        return bundle(html, self.__repr__())


def _clock(time: datetime) -> str:
    """``HH:MM:SS.mmm`` in the machine's local time."""
    return f"{time.astimezone():%H:%M:%S.%f}"[:-3]


__all__ = ["LogEntry", "SessionLog"]
