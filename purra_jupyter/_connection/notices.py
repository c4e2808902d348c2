"""What a server says unasked, once purra-mcp's monitor has seen it: its tools changed (the session turns stale),
its resources or prompts changed (their listings know it), a resource was updated, and its log lines (kept in the
session log, and heard by a running call that listens)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from .._base.config import Scrubber
from .._base.session_log import DETAIL_CHARS, SessionLog
from .._base.untrusted import json_within
from .._base.visible import one_line
from .._base.wire import EVENT_LIST_CHANGED, EVENT_RESOURCE_UPDATED, EVENT_SERVER_LOG, PROMPTS, RESOURCES

LINE_CHARS = 4 * DETAIL_CHARS  # of the data a log row reads: room for runs of spaces that ``one_line`` collapses


def server_log_line(params: Any) -> str:
    """A server's log message as a row of the session log: ``level logger: data`` on one line (data that is not a
    string as its JSON), its invisible characters made visible. Only what the row shows is read of the data (a
    bounded walk: a million values cost what a row of ``DETAIL_CHARS`` does)."""
    data = params.data[:LINE_CHARS] if isinstance(params.data, str) else json_within(params.data, LINE_CHARS)
    logger = f" {str(params.logger)[:LINE_CHARS]}" if params.logger else ""
    return one_line(f"{params.level}{logger}: {data}", DETAIL_CHARS)


class ServerNotices:
    """The server's notifications of one connection: the counts of its list changes, and who listens to its log."""

    def __init__(self, log: SessionLog, scrub: Scrubber, tools_changed: Callable[[int], None]) -> None:
        """``tools_changed(revision)``: the server said its tools changed (purra-mcp's monitor counted it)."""
        self.log = log
        self.scrub = scrub
        self.tools_changed = tools_changed
        # How often the server said its resources or prompts changed (``RESOURCES``, ``PROMPTS``): listings of them
        # know they are stale by it; the session stays ready (its tools did not change). purra's monitor counts tools.
        self.list_changes: Counter[str] = Counter()
        self._listeners: list[Callable[[str], None]] = []

    def heard(self, notification: Any, revision: int) -> None:
        """One server notification (``revision``: purra-mcp's catalog revision after it). On the loop."""
        from mcp import types

        notice = notification.root
        if isinstance(notice, types.ToolListChangedNotification):
            self.log.add(EVENT_LIST_CHANGED, f"catalog revision {revision}")
            self.tools_changed(revision)
        elif isinstance(notice, types.LoggingMessageNotification):
            line = self.scrub(server_log_line(notice.params))
            self.log.add(EVENT_SERVER_LOG, line)
            for listener in tuple(self._listeners):
                listener(line)
        else:
            self._offerings_notice(notice)

    def _offerings_notice(self, notice: Any) -> None:
        """What the server says of its resources and prompts: a list that changed (counted in ``list_changes``,
        logged) or a resource that was updated (logged)."""
        from mcp import types

        kind = (RESOURCES if isinstance(notice, types.ResourceListChangedNotification)
                else PROMPTS if isinstance(notice, types.PromptListChangedNotification) else None)  # fmt: skip
        if kind is not None:
            self.list_changes[kind] += 1
            self.log.add(EVENT_LIST_CHANGED, f"{kind} changed (revision {self.list_changes[kind]}); listed again on "
                         "next use")  # fmt: skip
        elif isinstance(notice, types.ResourceUpdatedNotification):
            said = self.scrub(f"resource updated: {notice.params.uri}")  # scrubbed before it is cut
            self.log.add(EVENT_RESOURCE_UPDATED, one_line(said, DETAIL_CHARS))

    def listening(self, listener: Callable[[str], None]) -> _Listening:
        """``listener(line)`` for each log message of the server's while the block lasts, the line as the session
        log keeps it (scrubbed, on one line): a running call shows what the server says meanwhile. On the loop."""
        return _Listening(self._listeners, listener)


class _Listening:
    """(A class, not a generator: every call enters one.)"""

    def __init__(self, listeners: list[Callable[[str], None]], listener: Callable[[str], None]) -> None:
        self._listeners, self._listener = listeners, listener

    def __enter__(self) -> None:
        self._listeners.append(self._listener)

    def __exit__(self, *exc: object) -> None:
        self._listeners.remove(self._listener)


__all__ = ["ServerNotices", "server_log_line"]
