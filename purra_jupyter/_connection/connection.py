"""A monitored connection to one MCP server: the session's life over a transport it is given.

The transport, the SDK's ``ClientSession`` and purra-mcp's ``McpCatalogMonitor`` are entered and left by one task
on the runner's loop. The connection owns the state (``connecting`` to ``closed`` or ``failed``, and why), the
handling of what the server sends, and the SDK's log records; its waits (deadlines, cancellation, late answers)
are its ``RequestTracker``'s, and what the SDK raises becomes a kit code in ``seam``; the handshake is
``handshake``'s, what the server says unasked ``notices``'. Server text the kit
shows (stderr, log, causes, error messages) is scrubbed of the config's secrets.

This layer knows nothing of catalogs or calls: higher layers hand it coroutines to run.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import Future
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from traitlets import Enum, HasTraits

from .._base import runner
from .._base.app_rules import client_extensions
from .._base.config import Scrubber, ServerConfig, secret_names
from .._base.errors import McpSessionError
from .._base.session_log import LogEntry, SessionLog
from .._base.transcript import RECEIVED, SENT, Transcript
from .._base.visible import one_line
from .._base.wire import (
    CANCELLED,
    CLOSED,
    CONFIG_INVALID,
    CONNECTING,
    CONNECTION_CLOSED,
    EVENT_CLOSE,
    EVENT_CONNECT,
    EVENT_ERROR,
    EVENT_INITIALIZE,
    EVENT_SDK,
    EVENT_SETTING,
    FAILED,
    HTTP,
    READY,
    STALE,
    STATES,
)
from .._transports.base import RequestId, Transport, TransportContext
from .._transports.ingress import Ingress
from .._transports.stdio import EXIT_SECONDS, StderrTail
from . import purra_adapter
from .handshake import accept_protocol, initialize
from .notices import ServerNotices
from .questions import Answers, QuestionDesk, Session
from .seam import ErrorSeam, purra_refusal, unreadable
from .tracking import WAITING, CancelToken, Deadline, RequestTracker

T = TypeVar("T")

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from mcp import ClientSession
    from mcp.types import InitializeResult, JSONRPCMessage
    from purra_mcp import McpCatalogMonitor, McpToolLimits

# What a stdio line or an HTTP message may hold with purra-mcp's default limits (16 x its 1-MiB catalog limit: room
# for a tool's view or a resource of several MB, read beside the PurrA path), before the session's limits are known
# (a stdio server starts before purra-mcp is imported); see ``message_bytes``.
MESSAGE_FACTOR = 16
DEFAULT_MESSAGE_BYTES = MESSAGE_FACTOR << 20
LABEL_CHARS = 200  # of a server's name and version as the kit shows them (``s.server_info`` keeps them whole)
# Loggers of the pinned SDK's client side ("client" is ClientSession's; "" is the root logger, which
# BaseSession logs to directly). Only records from SDK code running for one of our connections are taken.
_SDK_LOGGERS = ("", "client", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.auth.oauth2",
                "mcp.client.auth.utils", "mcp.shared.tool_name_validation")  # fmt: skip

_connection_var: ContextVar[Connection | None] = ContextVar("purra_jupyter_connection", default=None)


class _WatchedStream(ObjectReceiveStream[Any]):
    """The transport's read stream, as ``ClientSession`` reads it, noticing the moment the server's
    stream ends (a server that exits), so the session fails at once instead of at the next timeout, and a withdrawal of
    a question (``on_withdrawal(request_id)``) before the SDK acts on it."""

    def __init__(
        self,
        inner: ObjectReceiveStream[Any],
        on_end: Callable[[], Awaitable[None]],
        on_withdrawal: Callable[[RequestId], None],
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._on_withdrawal = on_withdrawal

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._on_end()
            raise
        root = getattr(getattr(item, "message", None), "root", None)
        if getattr(root, "method", None) == CANCELLED and isinstance(getattr(root, "params", None), dict):
            request_id = root.params.get("requestId")  # type: ignore[union-attr]
            if isinstance(request_id, str | int):
                self._on_withdrawal(request_id)
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


class _RecordingStream(ObjectSendStream[Any]):
    """The transport's write stream, noting each JSON-RPC request (id and method) for the kit's wait that
    sent it, so that wait can cancel exactly its own requests."""

    def __init__(
        self,
        inner: ObjectSendStream[Any],
        on_request: Callable[[RequestId, str], None],
        tap: Callable[[Any], None] | None,
    ) -> None:
        self._inner = inner
        self._on_request = on_request
        self._tap = tap

    async def send(self, item: Any) -> None:
        from mcp import types

        root = item.message.root
        if isinstance(root, types.JSONRPCRequest):
            self._on_request(root.id, root.method)  # before sending: a cancelled send may still have gone out
        if self._tap is not None:
            self._tap(item)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SdkRecords(logging.Filter):
    """Takes the SDK's log records emitted for one of our connections into that session's log."""

    def __init__(self, sdk_dir: str) -> None:
        super().__init__()
        self._sdk_dir = sdk_dir

    def filter(self, record: logging.LogRecord) -> bool:
        connection = _connection_var.get()
        if connection is None or not record.pathname.startswith(self._sdk_dir):
            return True
        # The level, logger and message, and the exception's class: its text may quote a whole server
        # message, which the session's error row already shows once.
        detail = f"{record.levelname} {record.name or 'root'}: {record.getMessage()}"
        if record.exc_info and record.exc_info[0] is not None:
            detail += f" ({record.exc_info[0].__name__})"
        connection.log.add(EVENT_SDK, detail)
        return False


_sdk_filter_lock = threading.Lock()
_sdk_filter: _SdkRecords | None = None


_CLIENT_MODULES = ("mcp.client.session", "purra_mcp")


def _import_client() -> None:
    """Import what a connection needs of the SDK and purra-mcp, checking purra's pins."""
    purra_adapter.check()
    for name in _CLIENT_MODULES:
        importlib.import_module(name)


def _route_sdk_records() -> None:
    global _sdk_filter
    import mcp

    with _sdk_filter_lock:
        if _sdk_filter is None:
            _sdk_filter = _SdkRecords(os.path.dirname(mcp.__file__) + os.sep)
            for name in _SDK_LOGGERS:
                logging.getLogger(name).addFilter(_sdk_filter)


async def load_client(
    config: ServerConfig, limits: McpToolLimits | None, deadline: Deadline, started: float
) -> tuple[McpCatalogMonitor, McpToolLimits]:
    """The SDK and purra-mcp, imported off the loop (seconds on a first connect, while a stdio server starts and
    the loop serves other sessions), then a connection's monitor and limits (by default PurrA's, with the config's
    timeout). The imports are not the server's time: the connect's ``deadline``, counted from ``started``, gets it
    back."""
    await runner.off_loop(_import_client)
    deadline.extend(time.monotonic() - started)
    from purra_mcp import McpCatalogMonitor, McpToolLimits

    _route_sdk_records()
    return McpCatalogMonitor(), limits or McpToolLimits(timeout_ms=round(config.timeout * 1000))


def client_session_class(
    extensions: Mapping[str, Any], requests: RequestTracker, desk: QuestionDesk
) -> type[ClientSession]:
    """The SDK's ``ClientSession``, telling ``requests`` when it stops waiting for each request it sends (so a late
    answer is discarded, see ``tracking``), and advertising ``extensions`` (e.g. MCP Apps') in ``initialize``'s
    capabilities when given: mcp 1.29.1 builds the capabilities inside ``initialize`` with no way in, and its model
    keeps extra fields, so the request is extended on its way out. The server's questions go to ``desk``, each
    answered apart from the SDK's receive loop (see ``questions``)."""
    from mcp import ClientSession, types

    class KitClientSession(ClientSession):
        async def _received_request(self, responder: Any) -> None:
            if not await desk.receive(responder, partial(super()._received_request, responder)):
                await super()._received_request(responder)

        async def send_request(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            root = getattr(request, "root", None)
            if extensions and isinstance(root, types.InitializeRequest):
                capabilities = root.params.capabilities.model_copy(update={"extensions": dict(extensions)})
                params = root.params.model_copy(update={"capabilities": capabilities})
                request = types.ClientRequest(root.model_copy(update={"params": params}))
            with requests.sending():
                return await super().send_request(request, *args, **kwargs)

    return KitClientSession


def message_bytes(limits: McpToolLimits | None) -> int:
    """The most of one message a transport keeps (a stdio line, an HTTP body or event): escapes and spacing on
    the wire can make a message several times purra-mcp's measure of it, and a view or a resource is read beside
    the PurrA path; purra-mcp's own limits decide after that. Before the limits are known (a stdio server starts
    first), purra-mcp's defaults'."""
    if limits is None:
        return DEFAULT_MESSAGE_BYTES
    return MESSAGE_FACTOR * max(int(limits.max_catalog_bytes), int(limits.max_result_bytes))


class Ending:
    """Why a connection ended or is ending: the first failure's words win (what follows is its echo). A close may
    begin on any thread (``begin_close``, under a lock); the rest changes on the loop thread."""

    def __init__(self) -> None:
        self.cause = ""  # scrubbed
        self.code = CONNECTION_CLOSED
        self.server_text = ""  # the server's words of the failure (an offending line), scrubbed and bounded
        self.closing: str | None = None  # the close's cause, once a close began
        self.connect_deadline: Deadline | None = None
        self._lock = threading.Lock()

    def grace(self, connecting: bool) -> float:
        """The seconds each step of ending the server may take: ``EXIT_SECONDS``, or while connecting half of what
        is left of the connect's deadline (so that a failed connect ends within it)."""
        if not connecting or self.connect_deadline is None:
            return EXIT_SECONDS
        return min(EXIT_SECONDS, self.connect_deadline.remaining() / 2)

    def begin_close(self, cause: str, *, closed: bool) -> bool:
        """Whether this is the close that ends the connection (not ``closed`` already, no close begun)."""
        with self._lock:
            if closed or self.closing is not None:
                return False
            self.closing = cause
            return True

    def unusable(self, name: str, state: str) -> McpSessionError | None:
        """What a request meets on a connection in ``state``, or ``None`` while it is usable."""
        if state in (CLOSED, FAILED) or self.closing is not None:
            how = f"Open a new one with pj.connect() ({self.cause})." if self.cause else "Open a new one."
            code = self.code if state == FAILED else CONNECTION_CLOSED
            return McpSessionError(code, f"Session '{name}' is {state}. {how}", server_text=self.server_text)
        if self.cause:  # failed while connecting: the state stays "connecting" until connect() gives up
            message = f"Session '{name}' lost its connection: {self.cause}."
            return McpSessionError(self.code, message, server_text=self.server_text)
        return None


def recorder(transcript: Transcript | None) -> Callable[[Any], None] | None:
    """What records each message the kit sends (``None``: no transcript): its JSON text, which the transcript scrubs
    as it is read out. (What the server sends is recorded as it sent it, by the ingress that admits it.)"""
    if transcript is None:
        return None

    def record(item: Any) -> None:
        transcript.record(SENT, item.message.model_dump_json(by_alias=True, exclude_none=True))

    return record


@dataclass(frozen=True)
class ServerHello:
    """What the server said of itself in ``initialize`` (nothing before): set once, on the loop."""

    protocol_version: str | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    instructions: str | None = None  # the server's words on how to use it (for a model, says the spec)

    @classmethod
    def of(cls, result: InitializeResult) -> ServerHello:
        info = result.serverInfo.model_dump(mode="json", exclude_none=True)
        capabilities = result.capabilities.model_dump(mode="json", exclude_none=True)
        return cls(str(result.protocolVersion), info, capabilities, result.instructions)

    @property
    def label(self) -> str:
        """``name version`` of the server, or ``unknown``: the server's words on one line (``visible.one_line``), cut
        at ``LABEL_CHARS``, so that no session's repr, log row or table holds its line breaks or its megabytes."""
        said = " ".join(str(self.info[key]) for key in ("name", "version") if key in self.info)
        return one_line(said, LABEL_CHARS) or "unknown"


async def _send_quietly(stream: ObjectSendStream[Any], item: Any) -> None:
    """``item`` on ``stream``, unless the stream is closed by then (the session ended)."""
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        await stream.send(item)


def _opened(part: T | None, name: str) -> T:
    """``part`` of a connection that ``open`` makes, or ``mcp_connection_closed`` before it did."""
    if part is None:
        raise McpSessionError(CONNECTION_CLOSED, f"Session '{name}' was never opened.")
    return part


class Connection(HasTraits):
    """One monitored connection to one MCP server over ``transport``. ``state``: connecting, ready, stale (the
    server changed its tools), closed or failed (``cause`` says why). State, cause and requests change on the loop
    thread only."""

    state = Enum(STATES, default_value=CONNECTING, help="connecting | ready | stale | closed | failed")

    def __init__(
        self,
        config: ServerConfig,
        transport: Transport,
        *,
        limits: McpToolLimits | None = None,
        record: bool = False,
        answers: Answers | None = None,
    ) -> None:
        """``limits``: purra-mcp's ``McpToolLimits`` (by default PurrA's, with the config's timeout). ``record``: keep
        a ``transcript`` of every message. ``answers``: how the server's questions are answered (none by default;
        the roots are the config's). Nothing of the SDK is imported before ``open``, which starts a stdio server's
        process first."""
        super().__init__()
        self.config = config
        self.link = transport
        self._limits = limits
        self.scrub = Scrubber(config.secrets)
        self.log = SessionLog(self.scrub)
        self.transcript = (
            Transcript(config.name, transport.kind, config.target, self.scrub, scrub_value=self.scrub.value)
            if record
            else None
        )
        received = partial(self.transcript.record, RECEIVED) if self.transcript is not None else None
        # The one door of the server's messages (it reads an answer whole only while a request of this session awaits
        # one, answers a request it refuses unread beside the SDK, and fails a session that outruns its budget).
        self.ingress = Ingress(self.scrub, self.log.add, record=received, awaits=lambda id_: self.requests.awaits(id_),
                               answer=self._answer_beside, fail=self._fail)  # fmt: skip
        self._beside: tuple[TaskGroup, ObjectSendStream[Any]] | None = None  # where ``_answer_beside`` sends
        self.errors = ErrorSeam(config, transport.kind, self.scrub, lambda: transport.stderr)
        self.requests = RequestTracker(
            config.name, self.log, self.scrub, drop=transport.drop, hint=self.errors.hint, notice_seconds=config.timeout
        )
        roots = tuple(str(uri) for uri in config.roots) if config.roots is not None else None
        answers = replace(answers or Answers(), roots=roots)
        asked = Session(config.name, self._protocol, self._calls_asking, self.requests.persons_turn)
        self.questions = QuestionDesk(answers, self.log, self.scrub, asked)
        self._monitor: McpCatalogMonitor | None = None
        self.hello = ServerHello()
        self.protocol_refused: str | None = None  # why a PurrA host refuses the protocol (one line); None: accepted
        self._client: ClientSession | None = None
        self.ending = Ending()
        self.notices = ServerNotices(self.log, self.scrub, self._tools_changed)  # what the server says unasked
        self._host: runner.HostedContext[InitializeResult] = runner.HostedContext(self._session, self._ended)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def cause(self) -> str:
        """Why the connection is ``closed`` or ``failed`` (empty while it is usable)."""
        return self.ending.cause

    @property
    def monitor(self) -> McpCatalogMonitor:
        """purra-mcp's monitor of this connection (made when ``open`` has imported purra-mcp)."""
        return _opened(self._monitor, self.name)

    @property
    def limits(self) -> McpToolLimits:
        """purra-mcp's limits of this connection (known once ``open`` has imported purra-mcp)."""
        return _opened(self._limits, self.name)

    @property
    def revision(self) -> int:
        """purra-mcp's catalog revision: how many ``tools/list_changed`` the server has sent."""
        return self._monitor.revision if self._monitor is not None else 0

    @property
    def protocol_label(self) -> str:
        """The protocol as a session's table and status line show it: the version, and in one line why PurrA refuses
        it when it does."""
        version = self.hello.protocol_version or ""
        return f"{version} ({self.protocol_refused}: raw path only)" if self.protocol_refused else version

    def _protocol(self) -> str | None:
        return self.hello.protocol_version

    def _calls_asking(self, related: RequestId | None) -> tuple[CancelToken, ...]:
        """The running calls a question of the server belongs to: over HTTP the stream it came on ties it to a request
        (or to none: the server's own stream); elsewhere only what the server's SDK says does (see
        ``RequestTracker.calls_asking``)."""
        return self.requests.calls_asking(related, tied=self.link.kind == HTTP)

    def check_purra_protocol(self) -> None:
        """Refuse (``mcp_protocol_unsupported``) what only the PurrA path does when a PurrA host refuses the
        session's protocol."""
        if self.protocol_refused is not None:
            raise self.errors.beside_contract(str(self.hello.protocol_version))

    def set_timeout(self, seconds: float) -> None:
        """The default of each request and call from now on (a request already sent keeps its own): a person who
        lowers the timeout of the notebook means the sessions it has open too."""
        self.config = self.config.with_timeout(seconds)  # validated there
        if self._limits is not None:
            self._limits = replace(self._limits, timeout_ms=round(seconds * 1000))
        self.log.add(EVENT_SETTING, f"timeout {seconds:g} s for each request and call from now on")

    # --- lifecycle -------------------------------------------------------------------------

    def open(self, deadline: Deadline) -> None:
        """Start or reach the server and initialize it within ``deadline`` (ending what it started included); on
        failure, fail and raise."""
        self.log.add(EVENT_CONNECT, f"{self.link.kind} {self.config.target}")
        secrets = secret_names(self.config)
        if secrets.scrubbed or secrets.too_short:  # which of the person's values are scrubbed (by name), and why not
            self.log.add(EVENT_CONNECT, f"secrets: {secrets}")
        self.ending.connect_deadline = deadline
        failure: BaseException | None = None
        try:
            result = self._host.open(deadline, serving=(self.requests,))
        except Exception as exc:
            failure = self.errors.connect_failure(exc, deadline)
        except BaseException as exc:  # an interrupt: the connect ends now, the server in the background
            failure = exc
        if failure is not None:  # raised here, outside the handler: its chain holds nothing the server said
            runner.on_loop(self._end, f"connect failed: {failure}", FAILED)
            raise failure
        self.log.add(EVENT_INITIALIZE, f"protocol {result.protocolVersion}, server {self.hello.label}")
        if self.protocol_refused is not None:
            self.log.add(EVENT_INITIALIZE, f"{self.protocol_refused}: the session opens beside the contract, its "
                         "tools on the raw path only")  # fmt: skip

    def _context(self) -> TransportContext:
        return TransportContext(
            ingress=self.ingress,
            note=self.log.add,
            request_failed=self.requests.failed,
            session_ended=self._fail,
            max_message_bytes=lambda: message_bytes(self._limits),
            grace=lambda: self.ending.grace(self.state == CONNECTING),
            persons_turn=self.requests.persons_turn,
            waiting_cell=self.requests,
        )

    @asynccontextmanager
    async def _session(self, deadline: Deadline) -> AsyncIterator[InitializeResult]:
        _connection_var.set(self)  # the transport's tasks inherit it: their SDK log records are ours
        started = time.monotonic()
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self.link.open(self._context()))  # a server starts first
            self._monitor, self._limits = await load_client(self.config, self._limits, deadline, started)
            extensions = client_extensions(bool(self.config.views))
            session_class = client_session_class(extensions, self.requests, self.questions)
            watched = _WatchedStream(read, self._stream_ended, self.questions.withdrawing)
            recording = _RecordingStream(write, self._sending, recorder(self.transcript))
            # (ClientSession reads and writes any anyio object stream; its annotation names the memory streams)
            client = await stack.enter_async_context(
                session_class(
                    cast(Any, watched),
                    cast(Any, recording),
                    message_handler=self._on_message,
                    **self.questions.callbacks(),
                )
            )
            client.add_response_router(self.requests)
            tasks = await stack.enter_async_context(anyio.create_task_group())
            self.requests.attach(client, tasks)
            self._beside = (tasks, recording)
            self.questions.start(tasks)
            self._client = client
            try:
                result = await self.run(lambda client: initialize(client, deadline, self.log, self.errors), deadline)
                offered = str(result.protocolVersion)  # (the SDK admits an int)
                if not accept_protocol(self.monitor, offered, self.errors):
                    self.protocol_refused = purra_refusal(offered, self.scrub)
                self.hello = ServerHello.of(result)
                yield result
            finally:
                self._beside = None
                tasks.cancel_scope.cancel()  # cancellation notices still going out are not waited for

    def _answer_beside(self, message: JSONRPCMessage) -> None:
        """Send ``message`` to the server on the session's write stream, beside the SDK: the ingress' error answering a
        request it refused unread, which the SDK never saw. (Before the session is up nothing is sent.)"""
        if self._beside is not None:
            from mcp.shared.message import SessionMessage

            tasks, write = self._beside
            tasks.start_soon(_send_quietly, write, SessionMessage(message))

    async def _on_message(self, message: Any) -> None:
        """Every server message the SDK hands on: purra-mcp's monitor first (it decides staleness), then ours.
        An exception here is the SDK's report of a message it could not read: the session fails with it."""
        from mcp import types

        await self.monitor.on_message(message)
        if isinstance(message, Exception):
            cause, code, line = unreadable(message, self.scrub)
            if line is not None and not self.ending.cause:  # the first one ends the session; what follows is its echo
                self.log.add(EVENT_ERROR, f"the server's line that is not valid JSON-RPC: {line}")
                self.ending.server_text = line
            self._fail(cause, code)
        elif isinstance(message, types.ServerNotification):
            self.notices.heard(message, self.monitor.revision)

    def _sending(self, request_id: RequestId, method: str) -> None:
        """A request goes out: its wait notes it, and the ingress learns which list is read again."""
        self.requests.sent(request_id, method)
        self.ingress.asking(method)

    def _tools_changed(self, revision: int) -> None:
        if self.state == READY:
            self._set_state(STALE)

    async def _stream_ended(self) -> None:
        await self.link.ended()  # a server that exits ends both: its last words belong to the cause
        self._fail("the server closed the connection")

    def mark_current(self, revision: int) -> None:
        """``ready`` if no ``tools/list_changed`` came since ``revision`` was listed, else ``stale``. Call it
        on the loop (where notifications are handled), so none can slip in between."""
        if self.state in (CONNECTING, READY, STALE) and not self.ending.cause:
            self._set_state(READY if self.monitor.revision == revision else STALE)

    def _set_state(self, state: str) -> None:
        """Set ``state``; an observer that raises is logged, never allowed to break the transport."""
        try:
            self.state = state
        except Exception as exc:
            self.log.add(EVENT_ERROR, f"a state observer raised {exc.__class__.__name__}: {exc}")

    def _fail(self, cause: str, code: str = CONNECTION_CLOSED) -> None:
        """Mark the connection failed (while connecting, ``open`` fails with the cause instead) and end the
        requests waiting on it with ``code`` (and the server's words of the failure, if any). On the loop thread."""
        ending = self.ending
        if self.state in (CLOSED, FAILED) or ending.closing is not None or ending.cause:
            return
        ending.cause, ending.code = self.scrub(cause), code
        self.log.add(EVENT_ERROR, ending.cause)
        message = f"Session '{self.name}' lost its connection: {ending.cause}.{self.errors.hint()}"
        self.requests.end_all(McpSessionError(code, message, server_text=ending.server_text))
        if self.state != CONNECTING:
            self._set_state(FAILED)

    async def _ended(self, error: BaseException | None) -> None:
        """The owner task left the transport (closed, or lost): wait for the last stderr lines, then say so. What
        an error says goes to the log (drawn as text); the cause names only its kind."""
        await self.link.ended()
        if self.ending.closing is not None:
            self._end(self.ending.closing)
        elif error is not None:
            kind = error.__class__.__name__
            self.log.add(EVENT_ERROR, f"the transport ended with {kind}: {self.scrub.shown(str(error))}")
            self._fail(f"connection lost ({kind})")
        else:
            self._fail("connection lost (the transport ended)")

    def close(self, cause: str = "closed by user") -> None:
        """End the connection and its server. Idempotent: a close that another thread began is waited for too. From
        the loop thread (a state observer) it only starts the close; ``state`` turns ``closed`` once the transport is
        gone."""
        if not self.ending.begin_close(cause, closed=self.state == CLOSED):
            self._host.wait_left()
            return
        if self._monitor is not None:
            self._monitor.close()
        closed = McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' was closed ({cause}).")
        runner.call_soon(self.requests.end_all, closed)
        if self._host.running:
            self._host.close()
        else:
            runner.on_loop(self._end, cause)

    def _end(self, cause: str, state: str = CLOSED) -> None:
        """Say why the connection ended, and turn it ``state`` (closed; failed when its connect failed)."""
        if self.state == CLOSED:
            return
        self.ending.cause = self.scrub(cause)
        self.log.add(EVENT_CLOSE, self.ending.cause)
        self._set_state(state)

    # --- requests --------------------------------------------------------------------------

    def check_usable(self) -> None:
        error = self.ending.unusable(self.name, self.state)
        if error is not None:
            raise error

    def request(
        self,
        func: Callable[[ClientSession], Awaitable[T]],
        *,
        timeout: float | Deadline | None = None,
        cancel: CancelToken | None = None,
    ) -> T:
        """Run ``func(client)`` on the loop (see ``run``) and wait; a kernel interrupt cancels it on the server
        and raises ``mcp_interrupted``."""
        token = cancel or CancelToken()
        future: Future[T] = runner.submit(self.run, func, timeout, token)
        return runner.wait(future, on_interrupt=token.interrupt, serving=(self.requests,))

    async def run(
        self,
        func: Callable[[ClientSession], Awaitable[T]],
        timeout: float | Deadline | None = None,
        cancel: CancelToken | None = None,
    ) -> T:
        """``func(client)`` on the loop within ``timeout`` seconds (default: the config's; a ``Deadline`` gives
        what is left of a total). When the kit stops waiting (the timeout, ``cancel``, a lost connection) the
        requests ``func`` sent are cancelled on the server, their late answers discarded, and this raises
        ``McpSessionError`` with the code that says why."""
        self.check_usable()
        client = self._client
        assert client is not None  # (usable: opened)
        seconds = self.config.timeout if timeout is None else timeout
        deadline = seconds if isinstance(seconds, Deadline) else Deadline(seconds, WAITING)
        token = _connection_var.set(self)
        failure: McpSessionError | None = None
        try:
            return await self.requests.run(partial(func, client), deadline, cancel=cancel, translate=self._translated)
        except McpSessionError as error:
            failure = self.errors.with_stderr(error)
        finally:
            _connection_var.reset(token)
        raise failure

    def set_roots(self, uris: tuple[str, ...]) -> None:
        """The folders the server may work in from now on; the server is told they changed
        (``notifications/roots/list_changed``) and asks again when it needs them."""
        if self.questions.answers.roots is None:
            raise McpSessionError(
                CONFIG_INVALID,
                f"Session '{self.name}' declared no roots when it connected: the server would not ask for them. "
                "Connect with ServerConfig(..., roots=[...]).",
            )
        self.check_usable()

        async def changed(client: ClientSession) -> None:
            self.questions.answers.roots = uris
            self.log.add(EVENT_SETTING, f"roots: {', '.join(uris) or '(none)'}")
            await client.send_roots_list_changed()

        self.request(changed)

    def _translated(self, error: Exception) -> McpSessionError:
        return self.errors.translate(error, connecting=self.hello.protocol_version is None)


__all__ = ["CancelToken", "Connection", "Deadline", "LogEntry", "ServerHello", "SessionLog", "StderrTail"]
