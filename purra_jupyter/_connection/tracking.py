"""The kit's waits on one connection: each request's deadline, its cancellation, and the answers that come late.

Every wait (``RequestTracker.run``) notes the JSON-RPC requests sent while it lasts. When the kit stops waiting (a
timeout, an interrupt, a stopped batch, a cancelled call, a lost connection) the wait ends with the code that says
why, the server is told ``notifications/cancelled`` for each request it still owes an answer, and the answer that
may still come is discarded by the SDK's response router (this class), so a late answer never fails the session.
That holds for every request the session sends, inside a wait or not (a ``tasks/cancel`` sent while a call ends):
the tracker knows each one from the moment it goes out (``sent``) until the SDK stops waiting for it (``sending``),
and an answer that comes after that is logged and dropped, never handed to the SDK, which would fail the session
with it; so is an answer to an id it never sent, or a second answer to one. Owned by the loop thread: only
``CancelToken.cancel`` is called from others, and it hops to the loop.

What a wait costs is kept small, since every call makes one: a connection has one deadline check (a loop timer at
its waits' earliest deadline, not a timer per request), and a wait is stopped with the standard library's
``asyncio.timeout`` (a native cancellation, which anyio's scopes in the SDK pass through).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from .._base import runner
from .._base.config import Scrubber
from .._base.errors import SHOWN_CHARS, McpSessionError, shown
from .._base.session_log import SessionLog
from .._base.wire import CONNECTION_CLOSED, EVENT_CANCEL, EVENT_DROPPED, EVENT_ERROR, INTERRUPTED, TIMEOUT
from .._transports.base import Failure, RequestId

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import ClientSession
    from mcp.types import ErrorData

T = TypeVar("T")

WAITING = "waiting"  # what a deadline of one request is doing (an operation names itself: "connecting" ...)
ABANDONED_KEPT = 4_096  # ids whose late answer may still come (a server may never send one)


class Deadline:
    """A total time, in seconds, for an operation of several requests (connect, bind, refresh)."""

    def __init__(self, seconds: float, doing: str) -> None:
        self.seconds = seconds
        self.doing = doing  # "connecting", "binding 'echo'" ...: what a timeout says was not finished
        self._ends = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._ends - time.monotonic())

    def extend(self, seconds: float) -> None:
        """Give back time the operation spent waiting for a person (an authorization in the browser)."""
        self._ends += seconds


class CancelToken:
    """Stops the requests it covers, from any thread: each ends with ``code`` and is cancelled on the server.

    A request started after ``cancel()`` is not sent at all. A token of a call a person made names it (``call``, the
    tool as shown): the server's questions meanwhile belong to it, and the cell that waits for it (or its widget) is
    where they are asked."""

    def __init__(self, call: str | None = None) -> None:
        self.call = call
        self.code: str | None = None
        self.reason = ""
        self._requests: set[Request] = set()

    def cover(self, request: Request) -> None:
        self._requests.add(request)

    def release(self, request: Request) -> None:
        self._requests.discard(request)

    def interrupt(self) -> None:
        """What a kernel interrupt does to the waits this token covers."""
        self.cancel(INTERRUPTED, "interrupted by the user")

    def cancel(self, code: str, reason: str) -> None:
        if self.code is not None:
            return
        self.code, self.reason = code, reason
        runner.call_soon(self._fire)

    def _fire(self) -> None:
        message = f"{self.reason}; it was cancelled on the server and its result is discarded"
        for request in tuple(self._requests):
            request.tracker.abandon(request, self.code or CONNECTION_CLOSED, self.reason, message)


@dataclass(eq=False, slots=True)
class Request:
    """One wait of the kit: the JSON-RPC requests sent while it lasts, and how it ended if it was abandoned."""

    tracker: RequestTracker
    deadline: Deadline  # when the kit stops waiting (moved on by a person's turn)
    limit: float  # the seconds it had when it started (what a timeout says)
    cancel: CancelToken | None = None  # what stops it; a call's names the call
    ids: list[RequestId] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    stop: asyncio.Timeout | None = None  # what stops the wait's ``send()``, while it runs
    ended: McpSessionError | None = None  # how it ended, once abandoned
    server_text: str = ""  # the server's own error text in an answer to one of ``ids`` (scrubbed, bounded)


_request_var: ContextVar[Request | None] = ContextVar("purra_jupyter_request", default=None)
_sending_var: ContextVar[list[RequestId] | None] = ContextVar("purra_jupyter_sending", default=None)


class RequestTracker:
    """The waits of one connection; also the SDK's response router for it (``ClientSession.add_response_router``):
    it sees every response first, claims those to requests given up on, and keeps the server's own error text of
    an answer (a tool result flagged ``isError``, a JSON-RPC error) for the wait that sent it: purra-mcp rightly
    keeps that text out of the envelope, and the person at the notebook still needs to read it."""

    def __init__(
        self,
        name: str,
        log: SessionLog,
        scrub: Scrubber,
        *,
        drop: Callable[[RequestId], None],
        hint: Callable[[], str],
        notice_seconds: float,
    ) -> None:
        """``drop`` stops one request's own exchange (HTTP); ``hint`` is what a timeout's message says of the
        server's stderr; a cancellation notice may take ``notice_seconds``."""
        self._name = name
        self._log = log
        self._scrub = scrub
        self._drop = drop
        self._hint = hint
        self._notice_seconds = notice_seconds
        self._client: ClientSession | None = None
        self._tasks: TaskGroup | None = None  # where cancellation notices go out, while the server is there
        self._persons_turns = 0
        self._check: asyncio.TimerHandle | None = None  # the deadline check, by the earliest deadline of ``_waits``
        self._waits: set[Request] = set()
        self._live: dict[RequestId, str] = {}  # every request sent whose answer the SDK still waits for: its method
        self._pending: dict[RequestId, Request] = {}  # requests of a wait, sent and not answered yet
        self._abandoned: OrderedDict[RequestId, None] = OrderedDict()  # given up on: their answers are discarded

    def attach(self, client: ClientSession, tasks: TaskGroup) -> None:
        """The session is up: cancellation notices go to ``client``, sent from ``tasks``."""
        self._client, self._tasks = client, tasks

    def end_all(self, error: McpSessionError) -> None:
        """The connection is gone (lost or closed): every wait ends with ``error``; no server is told anything."""
        self._tasks = None
        if self._check is not None:
            self._check.cancel()
            self._check = None
        for request in tuple(self._waits):
            self.abandon(request, error.code, error.message, server_text=error.server_text)

    async def run(
        self,
        send: Callable[[], Awaitable[T]],
        deadline: Deadline,
        *,
        cancel: CancelToken | None,
        translate: Callable[[Exception], McpSessionError],
    ) -> T:
        """``send()`` within ``deadline``; raises the ``McpSessionError`` that says why it did not answer (one
        ``translate`` made of what it raised, or the code it was abandoned with)."""
        if cancel is not None and cancel.code is not None:
            raise McpSessionError(cancel.code, f"{cancel.reason}; nothing was sent.")
        request = Request(self, deadline, deadline.remaining(), cancel)
        self._waits.add(request)
        self._watch(request)
        token = _request_var.set(request)
        if cancel is not None:
            cancel.cover(request)
        failure: McpSessionError | None = None
        try:
            async with asyncio.timeout(None) as request.stop:
                return await send()
        except Exception as exc:  # (an abandoned wait's ``send()`` ends in the ``TimeoutError`` of its stop)
            if request.ended is None:
                failure = translate(exc)
        finally:
            request.stop = None
            _request_var.reset(token)
            self._waits.discard(request)
            if cancel is not None:
                cancel.release(request)
            if request.ended is None:  # ended without its answer (the SDK gave up on it): the same rule
                self._forget(request, "the client stopped waiting for it")
        # Raised here, outside the handler: its chain holds nothing the server said.
        raise (
            failure
            or request.ended
            or McpSessionError(CONNECTION_CLOSED, f"Session '{self._name}' lost its connection.")
        )

    def _watch(self, request: Request) -> None:
        """The deadline check runs by ``request``'s deadline at the latest (it is set again only when this one is
        sooner than every other wait's: calls one after another with one timeout leave it as it is)."""
        check = self._check
        if check is None or asyncio.get_running_loop().time() + request.limit < check.when():
            self._check_in(request.limit)

    def _check_in(self, seconds: float) -> None:
        if self._check is not None:
            self._check.cancel()
        self._check = asyncio.get_running_loop().call_later(seconds, self._expire)

    def _expire(self) -> None:
        """The deadline check: each wait whose deadline passed ends with ``mcp_timeout`` (none while a person has
        their turn, which moves them); then it runs again by the next deadline, while there are waits."""
        self._check = None
        if not self._waits:
            return
        if self._persons_turns:
            self._check_in(1.0)
            return
        soonest = math.inf
        for request in tuple(self._waits):
            left = request.deadline.remaining()
            if left > 0.01:  # (asyncio may run a timer a clock tick early)
                soonest = min(soonest, left)
            elif request.ended is None:
                self.abandon(request, TIMEOUT, f"no answer within {request.limit:g} s", self._missed(request))
        if soonest < math.inf:
            self._check_in(soonest)

    def _missed(self, request: Request) -> str:
        """What a timeout says: the limit, and for an operation of several requests how far it got."""
        deadline = request.deadline
        if deadline.doing == WAITING:
            return f"Server '{self._name}' did not answer within {deadline.seconds:g} s.{self._hint()}"
        pages = request.methods.count("tools/list")
        reached = f" (it reached page {pages} of the listing)" if pages else ""
        what = f"did not finish {deadline.doing} within {deadline.seconds:g} s{reached}"
        return f"Server '{self._name}' {what}.{self._hint()}"

    @asynccontextmanager
    async def persons_turn(self) -> AsyncIterator[None]:
        """While a person authorizes in the browser, no wait times out; each gets the time back afterwards (the
        person has a timeout of their own)."""
        started = time.monotonic()
        self._persons_turns += 1
        try:
            yield
        finally:
            self._persons_turns -= 1
            for request in self._waits:
                request.deadline.extend(time.monotonic() - started)

    def abandon(
        self,
        request: Request,
        code: str,
        reason: str,
        message: str | None = None,
        *,
        tell_server: bool = True,
        server_text: str = "",
    ) -> None:
        """Stop waiting for ``request`` (on the loop): cancel what it sent on the server (telling it ``reason``;
        not when the server already answered, ``tell_server=False``) and end the wait with ``code`` and
        ``message`` (default: the reason)."""
        if request.ended is not None:
            return
        request.ended = McpSessionError(code, message or reason, server_text=server_text)
        self._forget(request, reason, tell_server=tell_server)
        if request.stop is not None:
            request.stop.reschedule(0.0)  # (a time past: its ``send()`` is cancelled as the loop goes round)

    def failed(self, request_id: RequestId, failure: Failure) -> None:
        """The transport's report that one request failed (an HTTP status, a bad body, a broken stream): the wait
        that sent it ends now with the failure's code; the session stays as it is."""
        said = f" The server said: {failure.server_text}" if failure.server_text else ""
        self._log.add(EVENT_ERROR, failure.message + said)  # the log is drawn as text, never linked
        request = self._pending.get(request_id)
        if request is not None:
            self.abandon(request, failure.code, failure.message, tell_server=not failure.answered,
                         server_text=failure.server_text)  # fmt: skip

    def _forget(self, request: Request, reason: str, *, tell_server: bool = True) -> None:
        """``request``'s unanswered ids: stop their exchanges, tell the server to stop (``notifications/cancelled``)
        and discard whatever answer still comes. A connection that is gone has neither a server to tell nor
        answers."""
        for request_id, method in zip(request.ids, request.methods, strict=True):
            self._drop(request_id)
            if self._pending.pop(request_id, None) is None or self._tasks is None:
                continue  # answered, or nothing more will come
            self._expect_late(request_id)
            if tell_server:
                self._log.add(EVENT_CANCEL, f"cancelled request {request_id} ({method}): {reason}")
                self._tasks.start_soon(self._send_cancelled, request_id, reason)

    async def _send_cancelled(self, request_id: RequestId, reason: str) -> None:
        from mcp import types

        params = types.CancelledNotificationParams(requestId=request_id, reason=reason[:SHOWN_CHARS])
        notice = types.ClientNotification(types.CancelledNotification(params=params))
        client = self._client
        with anyio.move_on_after(self._notice_seconds):
            try:
                if client is not None:
                    await client.send_notification(notice)
            except Exception as exc:
                self._log.add(EVENT_CANCEL, f"could not send the cancellation of request {request_id}: {exc!r}")

    @contextmanager
    def sending(self) -> Iterator[None]:
        """Around the SDK's ``send_request``: once it returns or raises, nobody waits for the request it sent, so an
        answer that still comes for it is late, and discarded."""
        sent: list[RequestId] = []
        token = _sending_var.set(sent)
        try:
            yield
        finally:
            _sending_var.reset(token)
            for request_id in sent:
                if self._live.pop(request_id, None) is not None:
                    self._expect_late(request_id)

    def _expect_late(self, request_id: RequestId) -> None:
        self._abandoned[request_id] = None
        while len(self._abandoned) > ABANDONED_KEPT:
            self._abandoned.popitem(last=False)

    def sent(self, request_id: RequestId, method: str) -> None:
        """A JSON-RPC request is going out: the SDK waits for its answer, and it belongs to the wait that sends it
        (if it is one of ours)."""
        self._live[request_id] = method
        sending = _sending_var.get()
        if sending is not None:
            sending.append(request_id)
        request = _request_var.get()
        if request is None or request.tracker is not self:
            return
        request.ids.append(request_id)
        request.methods.append(method)
        self._pending[request_id] = request

    def awaits(self, request_id: RequestId | None = None) -> bool:
        """Whether the SDK waits for the answer to ``request_id`` (``None``: to any request): the ingress reads an
        answer whole only then."""
        return bool(self._live) if request_id is None else str(request_id) in map(str, self._live)

    # The SDK's response router protocol.

    def route_response(self, request_id: RequestId, response: dict[str, Any]) -> bool:
        return self._routed(request_id, tool_error_text(response))

    def route_error(self, request_id: RequestId, error: ErrorData) -> bool:
        return self._routed(request_id, f"JSON-RPC error {error.code}: {error.message}")

    def _routed(self, request_id: RequestId, server_text: str) -> bool:
        """Whether the SDK must not see this answer (claimed here): a late one, discarded; or one to an id the SDK is
        not waiting for (never sent, or answered already), logged and dropped as the SDK's own client would log it,
        where the SDK here would fail the session with it."""
        if request_id in self._abandoned:
            del self._abandoned[request_id]
            self._log.add(EVENT_CANCEL, f"late answer to request {request_id} discarded")
            return True
        if self._live.pop(request_id, None) is None:
            self._log.add(EVENT_DROPPED, f"an answer to request {shown(repr(request_id))}, which this session is not "
                          "waiting for (never sent, or answered already), not handed on")  # fmt: skip
            return True
        request = self._pending.pop(request_id, None)
        if request is not None and server_text:
            request.server_text = self._scrub.words(server_text)
        return False

    def calls_asking(self, related: RequestId | None, *, tied: bool) -> tuple[CancelToken, ...]:
        """The running calls a question of the server belongs to: the call whose request ``related`` is (the request
        the transport says the question came with), or, where a transport does not tie questions to requests
        (``tied=False``: stdio), every call running now; none when the question belongs to no running call."""
        if related is not None or tied:
            request = self._pending.get(related) if related is not None else None
            waits: Iterable[Request] = (request,) if request is not None else ()
        else:
            waits = self._waits
        tokens = (wait.cancel for wait in waits if wait.ended is None and wait.cancel is not None)
        return tuple(dict.fromkeys(token for token in tokens if token.call is not None and token.code is None))

    def server_text(self) -> str:
        """The server's own error text in the answers to the current wait (inside ``run``), or ``""``."""
        request = _request_var.get()
        return request.server_text if request is not None and request.tracker is self else ""


def tool_error_text(result: dict[str, Any]) -> str:
    """The text blocks of a tool result the server flagged ``isError`` (else ``""``)."""
    if result.get("isError") is not True or not isinstance(result.get("content"), list):
        return ""
    blocks = [block.get("text") for block in result["content"] if isinstance(block, dict)]
    return "\n".join(text for text in blocks if isinstance(text, str))


__all__ = ["CancelToken", "Deadline", "Request", "RequestTracker"]
