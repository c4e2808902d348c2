"""The one door through which a server's messages enter the kit: weighed, parsed, bounded and scrubbed once, as values.

Every transport hands each message it reads (a stdio line, an HTTP body or event, a message of a server in this
process) to its connection's ``Ingress`` before anything else sees it: the SDK's ``ClientSession``, purra-mcp's
monitor, the transcript, the session log, a result. ``message`` parses the text within ``untrusted``'s bounds,
replaces every secret in every string of it (``Scrubber.value``: values, never the serialized text, so a secret
holding ``"`` or ``\\`` is found and JSON syntax is never rewritten), and validates it as a JSON-RPC message.

One server's cost is its own. All sessions share one loop, and parsing, scrubbing and validating a message of
a million values holds it for seconds; so before a message is parsed its head says what it is (``untrusted.head``):

- an answer that a request of this session awaits is read whole (what the person asked for; the transport's bound
  on one message holds);
- anything else is *unasked* (a notification, a request of the server's, an answer no request awaits, a message
  whose head does not say) and is weighed before it is parsed: its bytes, ``VALUE_WEIGHT`` for each value it holds
  (``untrusted.count_values``, a count of bytes) and ``MESSAGE_WEIGHT`` for being handed on. One over
  ``UNASKED_BYTES`` or ``UNASKED_VALUES`` is dropped unread (a request is answered with an error to its id, beside
  the SDK, so the server does not wait), with a row ``mcp_unasked_too_large`` in the session log; a transport may
  stop holding it once it is past ``unasked_bytes`` (``drops_unread``). The weight of all of them is held to
  ``UNASKED_RATE`` a second after a burst of ``UNASKED_BURST``: a session past that fails with
  ``mcp_flood_limit_exceeded``, and nothing more of it is read.

The bounds are far above what servers send unasked (log lines, progress, a list changed, sampling requests of a few
hundred KiB, forms of a few fields), and low enough that a session at them holds the loop for milliseconds at a time
and for a small part of its time (``bench/apartness.py`` measures another session's calls meanwhile).

It also keeps a flood from starving the session: notifications that only inform (log lines, progress, a resource
updated) are handed on at most ``FLOOD_RATE`` a second (after a burst of ``FLOOD_BURST``); past that they are counted,
not handed on (unread, when the head names their method), and the session log says how many went. Notifications the
SDK does not know are counted the same way (the SDK would only log and ignore them). Requests, answers and the
notices that change what the kit knows (a list changed, a cancellation, a task's status) pass within the budget; a
response with no id, which answers nothing, is logged and dropped (``_stray``; one to an id the session is not
waiting for is the request tracker's to drop).
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ObjectReceiveStream

from .._base.config import Scrubber
from .._base.errors import shown
from .._base.untrusted import (
    HEAD_BYTES,
    Head,
    JsonRefused,
    RequestId,
    count_values,
    head,
    head_of,
    parse,
    tail_id,
)
from .._base.wire import EVENT_DROPPED, FLOOD_LIMIT, UNASKED_TOO_LARGE

if TYPE_CHECKING:
    from mcp.types import JSONRPCMessage

FLOOD_RATE = 1_000  # informing notifications a second that are handed on once a burst is spent
FLOOD_BURST = 5_000  # informing notifications handed on at once
NOTE_SECONDS = 1.0  # the most often the log says how many were dropped
# The notifications that only inform: past the rate they are dropped. Every other known one passes (within the budget).
INFORMING = frozenset({"notifications/message", "notifications/progress", "notifications/resources/updated"})
# A list that changed, by the request that reads it again: once one such notice went on, another says nothing new
# until the kit has asked for the list again (it is then stale either way), so it is dropped as a repeat.
CHANGES = {"tools/list": "notifications/tools/list_changed", "resources/list": "notifications/resources/list_changed",
           "prompts/list": "notifications/prompts/list_changed"}  # fmt: skip
# What a server may send unasked (see the module's docstring), measured on the bench's machine: a value costs the
# parser, the scrubber and two validations about a microsecond, a byte of text a few nanoseconds, handing a message on
# over three tasks about 100 µs, reading and weighing one that is dropped unread about 15 µs.
# One message: a sampling request of a few hundred KiB and its escapes, or a form, a log line's data or a sampling
# request's tools of a few thousand values fit; one at both bounds holds the loop for about 10 ms.
UNASKED_BYTES = 1 << 20
UNASKED_VALUES = 16_384
# A message's weight in bytes: its bytes, ``VALUE_WEIGHT`` a value, ``MESSAGE_WEIGHT`` if it is handed on, else
# ``READ_WEIGHT`` (``DROP_WEIGHT`` for a notification the flood budget drops: small, read, and that is all).
VALUE_WEIGHT = 64
MESSAGE_WEIGHT = 2 << 10
READ_WEIGHT = 512
DROP_WEIGHT = 128
# All of a session's: 4 MiB a second after a burst of 64 MiB (four messages at the transport's bound of one, 16 MiB,
# dropped unread; or the 150,000 small notifications of one flood, most of them dropped by the flood budget). At that
# rate a session takes a tenth of the loop's time with messages at the bounds (two a second), a fifth with small ones
# (the flood budget's thousand log lines a second and the rest dropped), in steps of at most a message's; several
# times what an ordinary server sends unasked at its busiest (hundreds of log lines or progress notices a second,
# sampling requests of a few hundred KiB one after another).
UNASKED_RATE = 4 << 20
UNASKED_BURST = 64 << 20
REFUSED = -32600  # JSON-RPC's "invalid request": the error a request refused unread is answered with


@dataclass(frozen=True, slots=True)
class Budget:
    """What one session's server may send unasked: ``bytes`` and ``values`` of one message; the ``rate`` (a second)
    and ``burst`` of their weight (their bytes, ``value_weight`` a value, ``message_weight`` a message handed on,
    ``read_weight`` one dropped unread, ``drop_weight`` one the flood budget drops); and how many informing
    notifications are handed on a second (``notices_rate``), after ``notices_burst``."""

    bytes: int = UNASKED_BYTES
    values: int = UNASKED_VALUES
    value_weight: int = VALUE_WEIGHT
    message_weight: int = MESSAGE_WEIGHT
    read_weight: int = READ_WEIGHT
    drop_weight: int = DROP_WEIGHT
    rate: float = UNASKED_RATE
    burst: float = UNASKED_BURST
    notices_rate: int = FLOOD_RATE
    notices_burst: int = FLOOD_BURST


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


class _Bucket:
    """A token bucket: ``take(amount)`` is whether ``amount`` fits in what ``rate`` a second refilled, up to
    ``burst``."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate, self.burst = rate, burst
        self._tokens = float(burst)
        self._refilled = time.monotonic()

    def take(self, amount: float) -> bool:
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._refilled) * self.rate)
        self._refilled = now
        if self._tokens < amount:
            return False
        self._tokens -= amount
        return True


class Ingress:
    """One connection's door (see the module's docstring). Used on the loop thread only."""

    def __init__(
        self,
        scrub: Scrubber,
        note: Callable[[str, str], None],
        *,
        record: Callable[[str], None] | None = None,
        awaits: Callable[[RequestId | None], bool] | None = None,
        answer: Callable[[JSONRPCMessage], None] | None = None,
        fail: Callable[[str, str], None] | None = None,
        budget: Budget = Budget(),
    ) -> None:
        """``record(text)`` keeps each message admitted as the server sent it (a transcript, which scrubs it as it is
        read out). ``awaits(id)``: whether a request of this session awaits the answer ``id`` (``None``: any), so
        that answer is read whole (by default every answer is). ``answer(message)`` sends the server the error that
        answers a request refused unread; ``fail(cause, code)`` ends the session that outran its budget."""
        self.scrub = scrub
        self._note = note
        self._record = record
        self._awaits = awaits or (lambda _: True)
        self._answer = answer
        self._fail = fail
        self._budget = budget
        self._weight = _Bucket(budget.rate, budget.burst)
        self._notices = _Bucket(budget.notices_rate, budget.notices_burst)
        self._dropped: Counter[str] = Counter()
        self._noted = 0.0
        self._changed: set[str] = set()  # list changes handed on that no request read again since
        self.ended = False  # the session outran its budget: nothing more of it is read

    def message(self, data: bytes | str) -> JSONRPCMessage | None:
        """The message ``data`` holds, scrubbed; ``None`` when it is dropped (unasked past the budget, a notification
        past the flood budget or one the SDK does not know). Raises ``NotJsonRpc`` when it is not a JSON-RPC
        message."""
        from mcp.types import JSONRPCMessage

        raw = data.encode() if isinstance(data, str) else data
        if self.ended:
            return None
        value = self._parsed(raw) if len(raw) <= HEAD_BYTES else None  # (a small message is parsed once)
        top = head(raw) if value is None else head_of(value)
        asked = top.answer and self._awaits(top.id)
        if not asked and not self._admits(raw, top):
            return None
        if value is None:
            value = self._parsed(raw)
        if not self._handed_on(raw, value, asked=asked, known=top.method is not None):
            return None
        value = self.scrub.value(value)
        try:
            message = JSONRPCMessage.model_validate(value)
        except ValueError:
            raise NotJsonRpc("not a JSON-RPC message", self._excerpt(raw)) from None
        if self._record is not None:
            self._record(raw.decode(errors="replace"))
        return message

    def _parsed(self, raw: bytes) -> Any:
        try:
            return parse(raw)
        except JsonRefused as refused:
            raise NotJsonRpc(refused.reason, self._excerpt(raw)) from None

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

    def _excerpt(self, data: bytes) -> str:
        head = data[: self.scrub.margin(200)]
        return repr(shown(self.scrub(head.decode("utf-8", "replace"))))

    # --- before parsing: the budget of what is unasked ---------------------------------------------------------

    @property
    def unasked_bytes(self) -> int:
        """The most the ingress reads of one unasked message (a transport may stop holding a longer one that
        ``drops_unread``)."""
        return self._budget.bytes

    def drops_unread(self, first: bytes) -> bool:
        """Whether a message over ``unasked_bytes`` whose first bytes are ``first`` (more than ``HEAD_BYTES`` of them)
        is dropped unread: unless it is an answer a request of this session awaits. If so the transport need keep only
        its head and tail for ``dropped_unread``."""
        top = head(first)
        return self.ended or not (top.answer and self._awaits(top.id))

    def dropped_unread(self, first: bytes, last: bytes, size: int) -> None:
        """A message of ``size`` bytes that ``drops_unread``, of which only the first and last ``HEAD_BYTES`` were
        kept: weighed, and said in the log (a request answered with an error)."""
        if not self.ended:
            self._unread(head(first), last, size)

    def _admits(self, raw: bytes, top: Head) -> bool:
        """Whether to parse ``raw``, an unasked message, weighed against the session's budget first (past it the
        session fails). One over the bounds of a message is dropped unread, and so is a notification its head names
        that the flood budget drops: they weigh only their reading."""
        budget, size = self._budget, len(raw)
        if size > budget.bytes:
            self._unread(top, raw[-HEAD_BYTES:], size)
            return False
        ident = self._request_id(top, raw)
        if top.method is not None and ident is None and self._drops(top.method):
            self._charged(size + budget.drop_weight)
            return False
        values = count_values(raw, budget.values)
        if values > budget.values:
            if self._charged(size + budget.read_weight):
                self._refuse(top, ident, size, values)
            return False
        return self._charged(size + budget.value_weight * values + budget.message_weight)

    def _unread(self, top: Head, last: bytes, size: int) -> None:
        """A message over the bytes of one, of which ``last`` are its last bytes: weighed, then refused."""
        if self._charged(size + self._budget.read_weight):
            self._refuse(top, self._request_id(top, last), size, 0)

    @staticmethod
    def _request_id(top: Head, last: bytes) -> RequestId | None:
        """The id of a message whose head names its method: in its head, or where the TypeScript SDK puts it."""
        if top.method is None or top.id is not None or top.whole:
            return top.id
        return tail_id(last)

    def _charged(self, weight: int) -> bool:
        """Whether the session's budget holds ``weight`` more; when it does not, the session fails (once)."""
        if self._weight.take(weight):
            return True
        budget = self._budget
        self.ended = True
        self._report(now=True)
        cause = (f"its unasked messages outran {budget.rate / 2**20:g} MiB a second after a burst of "
                 f"{budget.burst / 2**20:g} MiB (each message weighing its bytes, {budget.value_weight} a value and "
                 f"{budget.message_weight} for the message; {FLOOD_LIMIT}): nothing more of it is read")  # fmt: skip
        if self._fail is not None:
            self._fail(cause, FLOOD_LIMIT)
        else:
            self._note(EVENT_DROPPED, cause)
        return False

    def _refuse(self, top: Head, ident: RequestId | None, size: int, values: int) -> None:
        """Say in the log that a message over the bounds was dropped unread, and answer a request with an error."""
        budget = self._budget
        request = top.method is not None and ident is not None
        kind = "a request" if request else "a notification" if top.method is not None else (
            "an answer no request of this session awaits" if top.answer
            else f"a message whose first {HEAD_BYTES} bytes do not say what it is")  # fmt: skip
        method = f" ({top.method})" if top.method is not None else ""
        over = f"{size} bytes" if size > budget.bytes else f"about {values} values"
        bound = f"{budget.bytes} bytes" if size > budget.bytes else f"{budget.values} values"
        said = f"{kind}{method} of {over}, over the {bound} the kit reads of one a server sends unasked"
        if not request:
            self._note(EVENT_DROPPED, f"{UNASKED_TOO_LARGE}: {said}; dropped unread")
            return
        assert ident is not None
        self._note(EVENT_DROPPED, f"{UNASKED_TOO_LARGE}: {said}; refused unread, request {ident!r} answered with "
                   f"error {REFUSED}")  # fmt: skip
        if self._answer is not None:
            self._answer(_error(ident, f"Refused unread: {said} ({UNASKED_TOO_LARGE})."))

    # --- after parsing ---------------------------------------------------------------------------------------------

    def _handed_on(self, raw: bytes, value: Any, *, asked: bool, known: bool) -> bool:
        """Whether a parsed message goes on: an answer with no id (``_stray``) does not; one its head showed as an
        awaited answer that is none after all is weighed now, whole; a notification whose method its head did not name
        meets the flood budget now."""
        is_answer = isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value)
        if is_answer:
            self._report(now=True)  # (what was dropped while a call ran is in the log when it settles)
            return value.get("id") is not None or self._stray(raw)
        budget = self._budget
        if asked and not self._charged(len(raw) + budget.value_weight * count_values(raw, 0) + budget.message_weight):
            return False
        if known or not isinstance(value, dict) or "id" in value or not isinstance(value.get("method"), str):
            self._report()
            return True
        return not self._drops(value["method"])

    def _drops(self, method: str) -> bool:
        """Whether to drop a notification of ``method``: unknown to the SDK, informing past the budget, or a list's
        change repeated before the kit read the list again."""
        known = _known_notifications()
        if method in self._changed:
            self._dropped[f"{method} repeated before the list was read again"] += 1
        elif method in known and (method not in INFORMING or self._notices.take(1)):
            if method in CHANGES.values():
                self._changed.add(method)
            self._report()
            return False
        else:
            self._dropped[method if method in known else "unknown notifications"] += 1
        self._report()
        return True

    def asking(self, method: str) -> None:
        """The kit sends a request of ``method``: one that reads a list again lets its next change through."""
        change = CHANGES.get(method)
        if change is not None:
            self._changed.discard(change)

    def _stray(self, data: bytes) -> bool:
        """A response with no id (``{"jsonrpc": "2.0", "result": null}``, as the published @leanspec/mcp answers the
        ``initialized`` notification; an error with ``"id": null``) answers nothing the session asked; the SDK's own
        client logs and ignores it. It is logged (its start, scrubbed) and dropped (``False``): validated as a message,
        it would fail the session."""
        self._note(EVENT_DROPPED, f"a response with no id, an answer to nothing this session asked, not handed on: "
                   f"{self._excerpt(data)}")  # fmt: skip
        return False

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
        budget = self._budget
        self._note(EVENT_DROPPED, f"not handed on: {counts} (past a burst of {budget.notices_burst}, informing "
                   f"notifications pass at most {budget.notices_rate} a second; notifications the SDK does not know "
                   "are ignored)")  # fmt: skip


def _error(ident: RequestId, message: str) -> JSONRPCMessage:
    from mcp.types import ErrorData, JSONRPCError, JSONRPCMessage

    return JSONRPCMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=REFUSED, message=message)))


__all__ = [
    "DROP_WEIGHT",
    "FLOOD_BURST",
    "FLOOD_RATE",
    "MESSAGE_WEIGHT",
    "READ_WEIGHT",
    "UNASKED_BURST",
    "UNASKED_BYTES",
    "UNASKED_RATE",
    "UNASKED_VALUES",
    "VALUE_WEIGHT",
    "Budget",
    "Ingress",
    "NotJsonRpc",
]
