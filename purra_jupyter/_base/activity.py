"""What the server says about a call while it runs: its progress, its task's status, the log lines it sends.

A call's ``Activity`` is written on the loop (a progress notification, a task's poll, a log message) and read by
whatever shows the running call: the approval widget, or the lines a cell prints while it waits for a call
approved in code. Both redraw at a bounded rate and the activity keeps a bounded number of lines, so a server
that floods costs the kernel a count, not a redraw per message. Everything in it is the server's words, scrubbed
and on one line: shown as text, never as markup.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from .egress import CellText, cell_text
from .visible import one_line

LINES_KEPT = 50  # the last log lines of one call an activity keeps (the session log keeps them all, bounded)
WORDS_CHARS = 300  # a progress or status message, on one line
LINES_PER_TICK = 20  # what a waiting cell prints of the new log lines each time it looks


@dataclass(frozen=True, slots=True)
class Progress:
    """The last ``notifications/progress`` of a call: how far (``total`` when the server knows it) and its words."""

    progress: float
    total: float | None = None
    message: str = ""

    @property
    def fraction(self) -> float | None:
        """How far, from 0 to 1, when the server gave a total (its numbers are not trusted to be sane)."""
        if self.total is None or not math.isfinite(self.total) or self.total <= 0 or not math.isfinite(self.progress):
            return None
        return min(max(self.progress / self.total, 0.0), 1.0)

    def words(self) -> str:
        """``progress 2 of 5 (40%): message``."""
        fraction = self.fraction
        of = f" of {self.total:g}" if self.total is not None else ""
        percent = f" ({fraction:.0%})" if fraction is not None else ""
        said = f": {self.message}" if self.message else ""
        return f"progress {self.progress:g}{of}{percent}{said}"


@dataclass(frozen=True, slots=True)
class TaskState:
    """A task's id and its last status, with the server's status message."""

    task_id: str
    status: str
    message: str = ""

    def words(self) -> str:
        said = f": {self.message}" if self.message else ""
        return f"task {self.task_id[:12]} {self.status}{said}"


@dataclass(frozen=True, slots=True)
class ActivityView:
    """What an activity holds at one moment (replaced whole on each change, so a reader on another thread sees one
    consistent state)."""

    progress: Progress | None = None
    task: TaskState | None = None
    lines: tuple[str, ...] = ()
    line_count: int = 0  # every log line seen, kept or not

    @property
    def empty(self) -> bool:
        return self.progress is None and self.task is None and not self.line_count

    def summary(self) -> list[str]:
        """Its state in lines: the task, the progress, then how many log lines came and the last ones kept."""
        head = [state.words() for state in (self.task, self.progress) if state is not None]
        dropped = self.line_count - len(self.lines)
        more = [f"… {dropped} earlier log lines (all in the session log)"] if dropped else []
        return [*head, *more, *self.lines]


class Activity:
    """One call's activity, written on the loop thread (see the module's docstring)."""

    def __init__(self, scrub: Callable[[str], str] = str) -> None:
        self._scrub = scrub
        self._lines: deque[str] = deque(maxlen=LINES_KEPT)
        self.view = ActivityView()

    def said(self, line: str) -> None:
        """A log line of the server's (already scrubbed and bounded, as the session log has it)."""
        self._lines.append(line)
        self.view = replace(self.view, lines=tuple(self._lines), line_count=self.view.line_count + 1)

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """The SDK's progress callback."""
        self.view = replace(self.view, progress=Progress(progress, total, self._words(message)))

    def task_moved(self, task_id: str, status: str, message: str | None) -> None:
        self.view = replace(self.view, task=TaskState(self._words(task_id), self._words(status), self._words(message)))

    def _words(self, text: Any) -> str:
        return one_line(self._scrub(str(text)), WORDS_CHARS) if text else ""


class ActivityLines:
    """The lines a waiting cell prints of an activity: each new state of the task and the progress once, and the
    new log lines, at most ``LINES_PER_TICK`` each time it looks (the rest counted). Text, so a saved notebook
    keeps it as it was shown, written as ``egress.CellText``: no server-chosen address becomes a link, no control
    character reaches the cell."""

    def __init__(self, activity: Activity, write: Callable[[CellText], object]) -> None:
        self._activity = activity
        self._write = write
        self._shown = ActivityView()

    def tick(self) -> None:
        view, shown = self._activity.view, self._shown
        self._shown = view
        for line in self._new_lines(view, shown):
            self._write(cell_text(f"  {line}\n"))

    @staticmethod
    def _new_lines(view: ActivityView, shown: ActivityView) -> Iterator[str]:
        if view.task is not None and view.task != shown.task:
            yield view.task.words()
        if view.progress is not None and view.progress != shown.progress:
            yield view.progress.words()
        new = view.line_count - shown.line_count
        if new <= 0:
            return
        lines = view.lines[-min(new, len(view.lines)) :]
        if len(lines) > LINES_PER_TICK or new > len(lines):
            kept = lines[-LINES_PER_TICK:]
            yield f"… {new - len(kept)} more server log lines (all in the session log)"
            lines = kept
        yield from (f"server log: {line}" for line in lines)


__all__ = ["Activity", "ActivityLines", "ActivityView", "Progress", "TaskState"]
