"""The one door through which a server's messages enter the kit: parsed, bounded and scrubbed once, as values.

Every transport hands each message it reads (a stdio line, an HTTP body or event, a message of a server in this
process) to its connection's ``Ingress`` before anything else sees it: the SDK's ``ClientSession``, purra-mcp's
monitor, the transcript, the session log, a result. ``message`` parses the text within ``untrusted``'s bounds,
replaces every secret in every string of it (``Scrubber.value``: values, never the serialized text, so a secret
holding ``"`` or ``\\`` is found and JSON syntax is never rewritten), and validates it as a JSON-RPC message.

It also keeps a flood from starving the session: notifications that only inform (log lines, progress, a resource
updated) pass at most ``FLOOD_RATE`` a second (after a burst of ``FLOOD_BURST``); past that they are counted, not
handed on, and the session log says how many went. Notifications the SDK does not know are counted the same way (the
SDK would only log and ignore them). Requests, responses and the notices that change what the kit knows (a list
changed, a cancellation, a task's status) always pass; a response with no id, which answers nothing, is logged and
dropped (``_stray``; one to an id the session is not waiting for is the request tracker's to drop).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ObjectReceiveStream

from .._base.config import Scrubber
from .._base.errors import shown
from .._base.untrusted import JsonRefused, parse
from .._base.wire import EVENT_DROPPED

if TYPE_CHECKING:
    from mcp.types import JSONRPCMessage

FLOOD_RATE = 1_000  # informing notifications a second that pass once a burst is spent
FLOOD_BURST = 5_000  # informing notifications that pass at once
NOTE_SECONDS = 1.0  # the most often the log says how many were dropped
# The notifications that only inform: past the rate they are dropped. Every other known one always passes.
INFORMING = frozenset({"notifications/message", "notifications/progress", "notifications/resources/updated"})


class NotJsonRpc(ValueError):
    """A server's message that is not JSON-RPC: ``reason`` in the kit's words, ``excerpt`` the start of the text,
    scrubbed and on one line (for the session log, drawn as text)."""

    def __init__(self, reason: str, excerpt: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.excerpt = excerpt


@functools.cache
def _known_notifications() -> frozenset[str]:
    """The methods of the notifications a server may send, as the SDK knows them."""
    import typing

    from mcp import types

    kinds = typing.get_args(types.ServerNotification.model_fields["root"].annotation)
    return frozenset(method for kind in kinds for method in typing.get_args(kind.model_fields["method"].annotation))


class Ingress:
    """One connection's door (see the module's docstring). Used on the loop thread only."""

    def __init__(
        self,
        scrub: Scrubber,
        note: Callable[[str, str], None],
        *,
        record: Callable[[str], None] | None = None,
        rate: int = FLOOD_RATE,
        burst: int = FLOOD_BURST,
    ) -> None:
        """``record(text)`` keeps each message admitted as the server sent it (a transcript, which scrubs it as it is
        read out)."""
        self.scrub = scrub
        self._note = note
        self._record = record
        self._rate = rate
        self._burst = burst
        self._tokens = float(burst)
        self._refilled = time.monotonic()
        self._dropped: Counter[str] = Counter()
        self._noted = 0.0

    def message(self, data: bytes | str) -> JSONRPCMessage | None:
        """The message ``data`` holds, scrubbed; ``None`` when it is a notification the flood budget drops (or one
        the SDK does not know). Raises ``NotJsonRpc`` when it is not a JSON-RPC message."""
        from mcp.types import JSONRPCMessage

        try:
            value = parse(data)
        except JsonRefused as refused:
            raise NotJsonRpc(refused.reason, self._excerpt(data)) from None
        if self._drops(value) or self._stray(value, data):
            return None
        value = self.scrub.value(value)
        try:
            message = JSONRPCMessage.model_validate(value)
        except ValueError:
            raise NotJsonRpc("not a JSON-RPC message", self._excerpt(data)) from None
        if self._record is not None:
            self._record(data.decode(errors="replace") if isinstance(data, bytes) else data)
        return message

    def admitted(self, data: bytes | str, metadata: Any = None) -> Any:
        """What a transport hands the SDK for ``data``: its ``SessionMessage`` (with ``metadata``, e.g. the request a
        server's request relates to), the ``NotJsonRpc`` that says why it is not one (the session decides what that
        means), or ``None`` when it is dropped."""
        from mcp.shared.message import SessionMessage

        try:
            message = self.message(data)
        except NotJsonRpc as refused:
            return refused
        return None if message is None else SessionMessage(message, metadata=metadata)

    @asynccontextmanager
    async def admit_all(self, read: ObjectReceiveStream[Any]) -> AsyncIterator[ObjectReceiveStream[Any]]:
        """``read``'s messages (a server in this process; the SDK's own stdio client) through this door, as if each
        came as a line: dumped, then ``admitted``."""
        to_session, admitted = anyio.create_memory_object_stream[Any](0)

        async def forward() -> None:
            async with to_session:
                async for item in read:
                    message = item if isinstance(item, Exception) else self.admitted(
                        item.message.model_dump_json(by_alias=True, exclude_none=True), item.metadata)  # fmt: skip
                    if message is None:
                        continue
                    try:
                        await to_session.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return

        async with anyio.create_task_group() as tasks, admitted:
            tasks.start_soon(forward)
            try:
                yield admitted
            finally:
                tasks.cancel_scope.cancel()

    def _excerpt(self, data: bytes | str) -> str:
        head = data[: self.scrub.margin(200)]
        text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
        return repr(shown(self.scrub(text)))

    def _drops(self, value: Any) -> bool:
        """Whether ``value`` is a notification to drop: unknown to the SDK, or informing past the budget."""
        if not isinstance(value, dict) or "id" in value or not isinstance(value.get("method"), str):
            self._report(now=isinstance(value, dict) and "method" not in value)  # (an answer: say it before it)
            return False
        method, known = value["method"], _known_notifications()
        if method in known and (method not in INFORMING or self._take()):
            self._report()
            return False
        self._dropped[method if method in known else "unknown notifications"] += 1
        self._report()
        return True

    def _stray(self, value: Any, data: bytes | str) -> bool:
        """Whether ``value`` is a response with no id (``{"jsonrpc": "2.0", "result": null}``, as the published
        @leanspec/mcp answers the ``initialized`` notification; an error with ``"id": null``): an answer to nothing the
        session asked, which the SDK's own client logs and ignores. It is logged (its start, scrubbed) and dropped:
        validated as a message, it would fail the session."""
        if not isinstance(value, dict) or "method" in value or value.get("id") is not None:
            return False
        if "result" not in value and "error" not in value:
            return False
        self._note(EVENT_DROPPED, f"a response with no id, an answer to nothing this session asked, not handed on: "
                   f"{self._excerpt(data)}")  # fmt: skip
        return True

    def _take(self) -> bool:
        now = time.monotonic()
        self._tokens = min(float(self._burst), self._tokens + (now - self._refilled) * self._rate)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _report(self, *, now: bool = False) -> None:
        """Say in the log how many were dropped since it last said so: at most once every ``NOTE_SECONDS``, or ``now``
        (before an answer, so that what was dropped while a call ran is in the log when it settles)."""
        if not self._dropped:
            return
        clock = time.monotonic()
        if clock - self._noted < NOTE_SECONDS and not now:
            return
        self._noted = clock
        counts = ", ".join(f"{count} {what}" for what, count in sorted(self._dropped.items()))
        self._dropped.clear()
        self._note(EVENT_DROPPED, f"not handed on: {counts} (past a burst of {self._burst}, informing notifications "
                   f"pass at most {self._rate} a second; notifications the SDK does not know are ignored)")  # fmt: skip


__all__ = ["FLOOD_BURST", "FLOOD_RATE", "Ingress", "NotJsonRpc"]
