"""A monitored connection to one MCP server, and the requests sent over it.

The transport, the SDK's ``ClientSession`` and purra-mcp's ``McpCatalogMonitor`` are entered and left
by one task on the runner's loop. Every request runs within a deadline; when the kit stops waiting for
one (timeout, interrupt, a stopped batch, a cancelled call) it sends ``notifications/cancelled`` for
its id and discards the answer that may still come, so a late answer never fails the session. Server
text the kit shows (stderr, log, causes, error messages) is scrubbed of the config's secrets, and the
SDK's own log records go into the session log instead of the running cell's stderr.

This layer knows nothing of catalogs or calls: higher layers hand it coroutines to run.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import select
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from traitlets import Enum, HasTraits

from . import purra_adapter, runner
from .config import Scrubber, ServerConfig
from .errors import KEPT_APART, SERVER_TEXT_NOTE, SHOWN_CHARS, McpSessionError
from .markup import CELL, WRAPPED_CELL
from .oauth import AuthorizationRequest, Person
from .stdio_transport import EXIT_SECONDS, LineTooLong, open_stdio
from .wire import (
    CLOSED,
    CONFIG_INVALID,
    CONNECT_FAILED,
    CONNECTING,
    CONNECTION_CLOSED,
    EVENT_CANCEL,
    EVENT_CLOSE,
    EVENT_CONNECT,
    EVENT_ERROR,
    EVENT_INITIALIZE,
    EVENT_LIST_CHANGED,
    EVENT_SDK,
    EVENT_STDERR,
    FAILED,
    INTERRUPTED,
    PROTOCOL_ERROR,
    READY,
    RESULT_TOO_LARGE,
    STALE,
    STATES,
    STDIO,
    TIMEOUT,
    TRANSPORT_ERROR,
)

T = TypeVar("T")

if TYPE_CHECKING:
    from purra_mcp import McpCatalogMonitor

    from .http_transport import Failure as HttpFailure
    from .http_transport import HttpTransport

STDERR_LINES = 200  # the server's last stderr lines a session keeps
FAILURE_STDERR_LINES = 20  # the last of those a failure carries as its server_text
LINE_CHARS = 8_192  # what is kept of one stderr line (scrubbed first)
LOG_ROWS = 10_000
_DETAIL_CHARS = 500
# What a stdio line or an HTTP message may hold with purra-mcp's default limits (4 x its 1-MiB catalog limit), before
# the session's limits are known (a stdio server starts before purra-mcp is imported); see ``_message_bytes``.
DEFAULT_MESSAGE_BYTES = 4 << 20
STDERR_NOTE = f"The server's last stderr lines are {KEPT_APART}."
# While connecting, a failure that names nothing more specific (timeout, credentials, protocol version ...)
# is a failed connect.
_NOT_CONNECTED = (CONNECTION_CLOSED, TRANSPORT_ERROR, PROTOCOL_ERROR)
_ABANDONED_KEPT = 4_096  # ids whose late answer may still come (a server may never send one)
# Loggers of the pinned SDK's client side ("client" is ClientSession's; "" is the root logger, which
# BaseSession logs to directly). Only records from SDK code running for one of our connections are taken.
_SDK_LOGGERS = ("", "client", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.auth.oauth2",
                "mcp.client.auth.utils", "mcp.shared.tool_name_validation")  # fmt: skip

_connection_var: ContextVar[Connection | None] = ContextVar("purra_jupyter_connection", default=None)
_request_var: ContextVar[_Request | None] = ContextVar("purra_jupyter_request", default=None)


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
        if len(detail) > _DETAIL_CHARS:
            detail = detail[:_DETAIL_CHARS] + "…"
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

    def __repr__(self) -> str:
        return "\n".join(f"{_clock(row.time)}  {row.event:<12} {row.detail}" for row in self) or "(no events)"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = "".join(
            f"<tr><td {CELL}><code>{_clock(row.time)}</code></td><td {CELL}>{escape(row.event)}</td>"
            f"<td {WRAPPED_CELL}>{escape(row.detail)}</td></tr>"
            for row in self
        )
        head = "".join(f"<th {CELL}>{name}</th>" for name in ("time", "event", "detail"))
        html = f"<table class='purra-log'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        return {"text/plain": repr(self), "text/html": html}


def _clock(time: datetime) -> str:
    """``HH:MM:SS.mmm`` in the machine's local time."""
    return f"{time.astimezone():%H:%M:%S.%f}"[:-3]


class StderrTail:
    """A pipe handed to a stdio server as its stderr; a thread keeps the last lines (scrubbed) and logs each.

    ipykernel's ``sys.stderr`` has no file descriptor, and a pipe read at once never blocks the server the way an
    unread one would. A line is kept whole up to what is shown of it (``LINE_CHARS``) and scrubbed before it is
    cut, however it arrives; the rest of a longer line is read and dropped. ``stop()`` ends the thread (and its
    descriptors) even when a process the kit does not know still holds the pipe.
    """

    def __init__(self, on_line: Callable[[str], None], scrub: Scrubber, max_lines: int = STDERR_LINES) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = open(write_fd, "wb", buffering=0)
        self._wake_read, self._wake = os.pipe()  # a byte here ends the thread's wait
        self._wake_lock = threading.Lock()
        self._done = False  # the thread ended and closed its descriptors
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._on_line = on_line
        self._scrub = scrub
        self._thread = threading.Thread(target=self._read, args=(read_fd,), name="purra-jupyter-stderr", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF follows its exit."""
        self.writer.close()

    def stop(self) -> None:
        """End the thread now, whether or not the pipe reached its end."""
        with self._wake_lock:
            if not self._done:
                os.write(self._wake, b"x")

    async def ended(self, timeout: float = 2.0) -> None:
        """Wait (on the loop, without a thread of its own) until the server's stderr reached its end; after
        ``timeout`` seconds (a process holds the pipe that the server's group did not include) stop reading it."""
        with anyio.move_on_after(timeout):
            while self._thread.is_alive():
                await anyio.sleep(0.01)
        if self._thread.is_alive():
            self.stop()
            while self._thread.is_alive():
                await anyio.sleep(0.01)

    @property
    def text(self) -> str:
        return "\n".join(self._lines)

    def _read(self, fd: int) -> None:
        held = bytearray()  # the start of the line being read, as much as showing it scrubbed needs
        longer = False  # whether the line went on past that
        try:
            for chunk in self._chunks(fd):
                *ends, rest = chunk.split(b"\n")
                for part in ends:
                    longer = self._hold(held, part) or longer
                    self._keep(bytes(held), longer)
                    held.clear()
                    longer = False
                longer = self._hold(held, rest) or longer
            if held:
                self._keep(bytes(held), longer)
        finally:
            with self._wake_lock:
                self._done = True
                for descriptor in (fd, self._wake_read, self._wake):
                    os.close(descriptor)

    def _chunks(self, fd: int) -> Iterator[bytes]:
        """What the server writes, until the pipe's end or ``stop()`` (Windows cannot wait on pipes: there the
        pipe's end alone ends it)."""
        while True:
            if sys.platform != "win32":
                ready, _, _ = select.select([fd, self._wake_read], [], [])
                if self._wake_read in ready:
                    return
            chunk = os.read(fd, 65_536)
            if not chunk:
                return
            yield chunk

    def _hold(self, held: bytearray, part: bytes) -> bool:
        """Add what ``held`` still has room for of ``part``; ``True`` if some of it did not fit."""
        room = self._scrub.margin(LINE_CHARS) - len(held)
        held += part[: max(room, 0)]
        return len(part) > room

    def _keep(self, raw: bytes, longer: bool) -> None:
        line = self._scrub(raw.decode("utf-8", "replace").rstrip("\r"))  # whole, then cut
        if longer or len(line) > LINE_CHARS:
            line = line[:LINE_CHARS] + f"… (cut at {LINE_CHARS} characters)"
        self._lines.append(line)
        self._on_line(line)


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

    A request started after ``cancel()`` is not sent at all."""

    def __init__(self) -> None:
        self.code: str | None = None
        self.reason = ""
        self._requests: set[_Request] = set()

    def cover(self, request: _Request) -> None:
        self._requests.add(request)

    def release(self, request: _Request) -> None:
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
            request.connection.abandon(request, self.code or CONNECTION_CLOSED, self.reason, message)


@dataclass(eq=False)
class _Request:
    """One wait of the kit: the JSON-RPC requests sent while it lasts, and how it ended if it was abandoned."""

    connection: Connection
    ids: list[Any] = field(default_factory=list)
    methods: list[str] = field(default_factory=list)
    scope: anyio.CancelScope | None = None
    ended: tuple[str, str, str] | None = None  # (code, message, server text) once abandoned
    server_text: str = ""  # the server's own error text in an answer to one of ``ids`` (scrubbed, bounded)
    deadline: Deadline | None = None  # when the kit stops waiting (moved on by a person's turn)


class _WatchedStream(ObjectReceiveStream[Any]):
    """The transport's read stream, as ``ClientSession`` reads it, noticing the moment the server's
    stream ends (a server that exits), so the session fails at once instead of at the next timeout."""

    def __init__(self, inner: ObjectReceiveStream[Any], on_end: Callable[[], Awaitable[None]]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            await self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class _RecordingStream(ObjectSendStream[Any]):
    """The transport's write stream, noting each JSON-RPC request (id and method) for the kit's wait that
    sent it, so that wait can cancel exactly its own requests."""

    def __init__(self, inner: ObjectSendStream[Any], on_request: Callable[[Any, str], None]) -> None:
        self._inner = inner
        self._on_request = on_request

    async def send(self, item: Any) -> None:
        from mcp import types

        root = item.message.root
        if isinstance(root, types.JSONRPCRequest):
            self._on_request(root.id, root.method)  # before sending: a cancelled send may still have gone out
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


def _import_client(transport: str) -> None:
    """Import what a connection needs of the SDK and purra-mcp, checking purra's pins."""
    purra_adapter.check()
    names = _CLIENT_MODULES if transport == STDIO else (*_CLIENT_MODULES, f"{__package__}.http_transport")
    for name in names:
        importlib.import_module(name)


def _route_sdk_records() -> None:
    global _sdk_filter
    import mcp

    with _sdk_filter_lock:
        if _sdk_filter is None:
            _sdk_filter = _SdkRecords(os.path.dirname(mcp.__file__) + os.sep)
            for name in _SDK_LOGGERS:
                logging.getLogger(name).addFilter(_sdk_filter)


class Connection(HasTraits):
    """One monitored connection to one MCP server. ``state``: connecting, ready, stale (the server changed its
    tools), closed or failed (``cause`` says why); it changes on the loop thread only."""

    state = Enum(STATES, default_value=CONNECTING, help="connecting | ready | stale | closed | failed")

    def __init__(
        self, config: ServerConfig, *, limits: Any = None, ask: Callable[[AuthorizationRequest], str] | None = None
    ) -> None:
        """``limits``: purra-mcp's ``McpToolLimits`` (by default PurrA's, with the config's timeout). ``ask`` shows
        a person an authorization and returns the address their browser was sent back to (in the cell that
        waits); used when the config's OAuth has no ``authorize`` function. Nothing of the SDK is imported
        before ``open``, which starts a stdio server's process first."""
        super().__init__()
        self.config = config
        self._ask = ask
        self._persons_turns = 0
        self.limits = limits
        self.scrub = Scrubber(config.secrets)
        self.log = SessionLog(self.scrub)
        self._monitor: McpCatalogMonitor | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._client: Any = None
        self._tasks: Any = None  # the connection's task group (cancellation notices)
        self._http: HttpTransport | None = None
        self._stderr: StderrTail | None = None
        self._cause = ""
        self._cause_code = CONNECTION_CLOSED
        self._cause_text = ""  # the server's words of the failure (an offending line), scrubbed and bounded
        self._connect_deadline: Deadline | None = None
        self._closing = False
        self._close_cause = ""
        self._close_lock = threading.Lock()
        # Owned by the loop thread: the kit's waits in flight, requests sent and not answered yet, and
        # the ids of requests given up on whose answers are discarded when they come.
        self._requests: set[_Request] = set()
        self._pending: dict[Any, _Request] = {}
        self._abandoned: OrderedDict[Any, None] = OrderedDict()
        self._host: runner.HostedContext[Any] = runner.HostedContext(self._transport, self._ended)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def transport(self) -> str:
        return self.config.transport

    @property
    def stderr(self) -> str:
        """The last lines the server wrote to its stderr (stdio servers; empty for HTTP), scrubbed."""
        return self._stderr.text if self._stderr is not None else ""

    @property
    def cause(self) -> str:
        """Why the connection is ``closed`` or ``failed`` (empty while it is usable)."""
        return self._cause

    @property
    def monitor(self) -> McpCatalogMonitor:
        """purra-mcp's monitor of this connection (made when ``open`` has imported purra-mcp)."""
        if self._monitor is None:
            raise McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' was never opened.")
        return self._monitor

    @property
    def revision(self) -> int:
        """purra-mcp's catalog revision: how many ``tools/list_changed`` the server has sent."""
        return self._monitor.revision if self._monitor is not None else 0

    @property
    def server_label(self) -> str:
        info = self.server_info
        return " ".join(str(info[key]) for key in ("name", "version") if key in info) or "unknown"

    # --- lifecycle -------------------------------------------------------------------------

    def open(self, deadline: Deadline) -> None:
        """Start or reach the server and initialize it within ``deadline`` (ending what it started included); on
        failure, fail and raise."""
        self.log.add(EVENT_CONNECT, f"{self.transport} {self.config.target}")
        self._connect_deadline = deadline
        if self.transport == STDIO:
            self._stderr = StderrTail(lambda line: self.log.add(EVENT_STDERR, line), self.scrub)
        failure: BaseException | None = None
        try:
            result = self._host.open(deadline)
        except McpSessionError as exc:
            code = CONNECT_FAILED if exc.code in _NOT_CONNECTED else exc.code
            failure = self._with_stderr(McpSessionError(code, exc.message, server_text=exc.server_text))
        except Exception as exc:
            failure = self.error(exc, connecting=True, deadline=deadline)
        except BaseException as exc:  # an interrupt: the connect ends now, the server in the background
            failure = exc
        if failure is not None:  # raised here, outside the handler: its chain holds nothing the server said
            self._cause = self.scrub(f"connect failed: {failure}")
            self.log.add(EVENT_CLOSE, self._cause)
            runner.on_loop(self._set_state, FAILED)
            raise failure
        self.protocol_version = result.protocolVersion
        self.server_info = result.serverInfo.model_dump(mode="json", exclude_none=True)
        self.capabilities = result.capabilities.model_dump(mode="json", exclude_none=True)
        self.log.add(EVENT_INITIALIZE, f"protocol {self.protocol_version}, server {self.server_label}")

    def _ending_grace(self) -> float:
        """The seconds each step of ending the server may take: ``EXIT_SECONDS``, or while connecting half of what
        is left of the connect's deadline (so that a failed connect ends within it)."""
        deadline = self._connect_deadline
        if self.state != CONNECTING or deadline is None:
            return EXIT_SECONDS
        return min(EXIT_SECONDS, deadline.remaining() / 2)

    @asynccontextmanager
    async def _transport(self, deadline: Deadline) -> AsyncIterator[Any]:
        _connection_var.set(self)  # the transport's tasks inherit it: their SDK log records are ours
        config = self.config
        started = time.monotonic()
        async with AsyncExitStack() as stack:
            if config.transport == STDIO:  # first: the server starts while the SDK is imported
                assert self._stderr is not None
                stdio = open_stdio(
                    config, self._stderr.writer, max_message_bytes=self._message_bytes(), grace=self._ending_grace
                )
                try:
                    read, write = await stack.enter_async_context(stdio)
                finally:
                    self._stderr.release()
            await self._load_client(deadline, started)
            from mcp import ClientSession

            if config.transport != STDIO:
                from .http_transport import TransportEvents, open_http

                events = TransportEvents(self._request_failed, self._fail, self.log.add)
                person = None
                if config.oauth is not None and self._ask is not None:
                    person = Person(config.name, self._ask, self.persons_turn, config.oauth.timeout)
                read, write, self._http = await stack.enter_async_context(
                    open_http(
                        config,
                        events,
                        max_message_bytes=self._message_bytes(),
                        scrub=self.scrub,
                        grace=self._ending_grace,
                        person=person,
                    )
                )
            watched = _WatchedStream(read, self._stream_ended)
            recording = _RecordingStream(write, self._sent)
            client = await stack.enter_async_context(
                ClientSession(watched, recording, message_handler=self._on_message)
            )
            client.add_response_router(self)
            self._tasks = await stack.enter_async_context(anyio.create_task_group())
            self._client = client
            try:
                result = await self.run(lambda client: client.initialize(), deadline)  # a wait like any other
                self.monitor.accept_protocol_version(result.protocolVersion)
                yield result
            finally:
                self._tasks.cancel_scope.cancel()  # cancellation notices still going out are not waited for

    async def _load_client(self, deadline: Deadline, started: float) -> None:
        """The SDK and purra-mcp, imported off the loop (seconds on a first connect, while a stdio server starts
        and the loop serves other sessions), then this connection's monitor and default limits. The imports are
        not the server's time: the connect's timeout, counted from ``started``, gets it back."""
        await runner.off_loop(_import_client, self.config.transport)
        deadline.extend(time.monotonic() - started)
        from purra_mcp import McpCatalogMonitor, McpToolLimits

        _route_sdk_records()
        self._monitor = McpCatalogMonitor()
        if self.limits is None:
            self.limits = McpToolLimits(timeout_ms=round(self.config.timeout * 1000))

    def _message_bytes(self) -> int:
        """The most of one message a transport keeps (a stdio line, an HTTP body or event): escapes and spacing on
        the wire can make a message several times purra-mcp's measure of it; purra-mcp's own limits decide after
        that. Before the limits are known (a stdio server starts first), purra-mcp's defaults'."""
        if self.limits is None:
            return DEFAULT_MESSAGE_BYTES
        return 4 * max(self.limits.max_catalog_bytes, self.limits.max_result_bytes)

    async def _on_message(self, message: Any) -> None:
        """Every server message the SDK hands on: purra-mcp's monitor first (it decides staleness), then ours.
        An exception here is the SDK's report of a message it could not read: the session fails with it."""
        from mcp import types

        await self.monitor.on_message(message)
        if isinstance(message, LineTooLong):
            self._fail(f"the server wrote a line of over {message.limit} bytes on its stdout, more than one message "
                       "may be; it was not read", RESULT_TOO_LARGE)  # fmt: skip
        elif isinstance(message, Exception):  # the line goes to the log and the failure's server_text, not its cause
            if not self._cause:  # the first one ends the session; what follows is its echo
                line = _offending(message, self.scrub)
                self.log.add(EVENT_ERROR, f"the server's line that is not valid JSON-RPC: {line}")
                self._cause_text = line
            self._fail(f"the server sent a message that is not valid JSON-RPC (its line is {KEPT_APART}, and in "
                       "the session log)")  # fmt: skip
        elif isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self.log.add(EVENT_LIST_CHANGED, f"catalog revision {self.monitor.revision}")
            if self.state == READY:
                self._set_state(STALE)

    async def _stream_ended(self) -> None:
        if self._stderr is not None:  # a server that exits ends both: its last words belong to the cause
            await self._stderr.ended()
        self._fail("the server closed the connection")

    def mark_current(self, revision: int) -> None:
        """``ready`` if no ``tools/list_changed`` came since ``revision`` was listed, else ``stale``. Call it
        on the loop (where notifications are handled), so none can slip in between."""
        if self.state in (CONNECTING, READY, STALE) and not self._cause:
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
        if self.state in (CLOSED, FAILED) or self._closing or self._cause:
            return
        self._cause, self._cause_code = self.scrub(cause), code
        self.log.add(EVENT_ERROR, self._cause)
        for request in tuple(self._requests):
            message = f"Session '{self.name}' lost its connection: {self._cause}.{self.stderr_hint()}"
            self.abandon(request, code, message, server_text=self._cause_text)
        if self.state != CONNECTING:
            self._set_state(FAILED)

    async def _ended(self, error: BaseException | None) -> None:
        """The owner task left the transport (closed, or lost): wait for the last stderr lines, then say so. What
        an error says goes to the log (drawn as text); the cause names only its kind."""
        if self._stderr is not None:
            await self._stderr.ended()
        if self._closing:
            self._finish(self._close_cause)
        elif error is not None:
            kind = error.__class__.__name__
            self.log.add(EVENT_ERROR, f"the transport ended with {kind}: {self.scrub.shown(str(error))}")
            self._fail(f"connection lost ({kind})")
        else:
            self._fail("connection lost (the transport ended)")

    def close(self, cause: str = "closed by user") -> None:
        """End the connection and its server process. Idempotent. From the loop thread (a state observer)
        it only starts the close; ``state`` turns ``closed`` once the transport is gone."""
        with self._close_lock:
            if self.state == CLOSED or self._closing:
                return
            self._closing = True
            self._close_cause = cause
        if self._monitor is not None:
            self._monitor.close()
        runner.call_soon(self._abandon_all, f"Session '{self.name}' was closed ({cause}).")
        if self._host.running:
            self._host.close()
        else:
            runner.on_loop(self._finish, cause)

    def _abandon_all(self, message: str) -> None:
        for request in tuple(self._requests):
            self.abandon(request, CONNECTION_CLOSED, message)

    def _finish(self, cause: str) -> None:
        if self.state == CLOSED:
            return
        self._cause = self.scrub(cause)
        self.log.add(EVENT_CLOSE, self._cause)
        self._set_state(CLOSED)

    # --- requests --------------------------------------------------------------------------

    def check_usable(self) -> None:
        said = self._cause_text
        if self.state in (CLOSED, FAILED) or self._closing:
            how = f"Open a new one with pj.connect() ({self._cause})." if self._cause else "Open a new one."
            code = self._cause_code if self.state == FAILED else CONNECTION_CLOSED
            raise McpSessionError(code, f"Session '{self.name}' is {self.state}. {how}", server_text=said)
        if self._cause:  # failed while connecting: the state stays "connecting" until connect() gives up
            message = f"Session '{self.name}' lost its connection: {self._cause}."
            raise McpSessionError(self._cause_code, message, server_text=said)

    def request(
        self,
        func: Callable[[Any], Awaitable[T]],
        *,
        timeout: float | Deadline | None = None,
        cancel: CancelToken | None = None,
    ) -> T:
        """Run ``func(client)`` on the loop (see ``run``) and wait; a kernel interrupt cancels it on the server
        and raises ``mcp_interrupted``."""
        token = cancel or CancelToken()
        future = runner.submit(self.run, func, timeout, token)
        return runner.wait(future, on_interrupt=token.interrupt)

    def reauthorize(self) -> None:
        """Forget this session's tokens and run the authorization flow again now (a ping carries it)."""
        if self.config.oauth is None:
            raise McpSessionError(CONFIG_INVALID, f"Session '{self.name}' was not connected with OAuth.")
        self.check_usable()
        self.log.add(EVENT_CONNECT, "reauthorizing: the tokens were forgotten")
        assert self._http is not None
        runner.run(self._http.forget_authorization)
        self.request(lambda client: client.send_ping(), timeout=Deadline(self.config.timeout, "reauthorizing"))

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server for a ping; returns the round trip in milliseconds."""
        started = time.perf_counter()
        self.request(lambda client: client.send_ping(), timeout=timeout)
        return (time.perf_counter() - started) * 1000

    async def run(
        self,
        func: Callable[[Any], Awaitable[T]],
        timeout: float | Deadline | None = None,
        cancel: CancelToken | None = None,
    ) -> T:
        """``func(client)`` on the loop within ``timeout`` seconds (default: the config's; a ``Deadline`` gives
        what is left of a total). When the kit stops waiting (the timeout, ``cancel``, a lost connection) the
        requests ``func`` sent are cancelled on the server, their late answers discarded, and this raises
        ``McpSessionError`` with the code that says why. SDK and transport errors are translated here."""
        self.check_usable()
        if cancel is not None and cancel.code is not None:
            raise McpSessionError(cancel.code, f"{cancel.reason}; nothing was sent.")
        limit = self._seconds(timeout)
        request = _Request(self, deadline=timeout if isinstance(timeout, Deadline) else Deadline(limit, "waiting"))
        loop = asyncio.get_running_loop()

        def expire() -> None:
            nonlocal timer
            left = 1.0 if self._persons_turns else request.deadline.remaining()  # a person's turn moves it
            if left > 0.01:  # (asyncio may run a timer a clock tick early)
                timer = loop.call_later(left, expire)
                return
            self.abandon(request, TIMEOUT, f"no answer within {limit:g} s", self._missed(timeout, limit, request))

        timer = loop.call_later(limit, expire)
        connection_token, request_token = _connection_var.set(self), _request_var.set(request)
        self._requests.add(request)
        if cancel is not None:
            cancel.cover(request)
        failure: McpSessionError | None = None
        try:
            with anyio.CancelScope() as request.scope:
                return await func(self._client)
        except Exception as exc:
            if request.ended is None:
                failure = self.error(exc, connecting=self.protocol_version is None)
        finally:
            timer.cancel()
            _request_var.reset(request_token)
            _connection_var.reset(connection_token)
            self._requests.discard(request)
            if cancel is not None:
                cancel.release(request)
            if request.ended is None:  # ended without its answer (the SDK gave up on it): the same rule
                self._forget(request, "the client stopped waiting for it")
        if failure is not None:  # raised here, outside the handler: its chain holds nothing the server said
            raise failure
        code, message, said = request.ended or (CONNECTION_CLOSED, f"Session '{self.name}' lost its connection.", "")
        raise self._with_stderr(McpSessionError(code, message, server_text=said))

    @asynccontextmanager
    async def persons_turn(self) -> AsyncIterator[None]:
        """While a person authorizes in the browser, no wait of this session times out; each gets the time
        back afterwards (the person has a timeout of their own)."""
        started = time.monotonic()
        self._persons_turns += 1
        try:
            yield
        finally:
            self._persons_turns -= 1
            for request in self._requests:
                if request.deadline is not None:
                    request.deadline.extend(time.monotonic() - started)

    def _seconds(self, timeout: float | Deadline | None) -> float:
        if isinstance(timeout, Deadline):
            return timeout.remaining()
        return self.config.timeout if timeout is None else timeout

    def abandon(
        self,
        request: _Request,
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
        request.ended = (code, message or reason, server_text)
        self._forget(request, reason, tell_server=tell_server)
        if request.scope is not None:
            request.scope.cancel()

    def _forget(self, request: _Request, reason: str, *, tell_server: bool = True) -> None:
        """``request``'s unanswered ids: stop their HTTP exchanges, tell the server to stop
        (``notifications/cancelled``) and discard whatever answer still comes. A connection that is gone has
        neither a server to tell nor answers."""
        gone = self._tasks is None or bool(self._cause) or self._closing
        for request_id, method in zip(request.ids, request.methods, strict=True):
            if self._http is not None:
                self._http.drop(request_id)
            if self._pending.pop(request_id, None) is None or gone:
                continue  # answered, or nothing more will come
            self._abandoned[request_id] = None
            while len(self._abandoned) > _ABANDONED_KEPT:
                self._abandoned.popitem(last=False)
            if tell_server:
                self.log.add(EVENT_CANCEL, f"cancelled request {request_id} ({method}): {reason}")
                self._tasks.start_soon(self._send_cancelled, request_id, reason)

    def _request_failed(self, request_id: Any, failure: HttpFailure) -> None:
        """The HTTP transport's report that one request failed (an error status, a bad body, a broken
        stream): that wait ends now with the failure's code; the session stays as it is."""
        said = f" The server said: {failure.server_text}" if failure.server_text else ""
        self.log.add(EVENT_ERROR, failure.message + said)  # the log is drawn as text, never linked
        request = self._pending.get(request_id)
        if request is not None:
            self.abandon(request, failure.code, failure.message, tell_server=not failure.answered,
                         server_text=failure.server_text)  # fmt: skip

    async def _send_cancelled(self, request_id: Any, reason: str) -> None:
        from mcp import types

        params = types.CancelledNotificationParams(requestId=request_id, reason=reason[:SHOWN_CHARS])
        notice = types.ClientNotification(types.CancelledNotification(params=params))
        with anyio.move_on_after(self.config.timeout):
            try:
                await self._client.send_notification(notice)
            except Exception as exc:
                self.log.add(EVENT_CANCEL, f"could not send the cancellation of request {request_id}: {exc!r}")

    def _sent(self, request_id: Any, method: str) -> None:
        request = _request_var.get()
        if request is None or request.connection is not self:
            return
        request.ids.append(request_id)
        request.methods.append(method)
        self._pending[request_id] = request

    # The SDK's response router protocol (``ClientSession.add_response_router``): it sees every response
    # first, and claims those to requests the kit gave up on, which the SDK would hand on as an error.

    # It also keeps the server's own error text of an answer (a tool result flagged ``isError``, a JSON-RPC
    # error) for the wait that sent the request: purra-mcp rightly keeps it out of the envelope, and the
    # person at the notebook still needs to read it (``server_text``).

    def route_response(self, request_id: Any, response: dict[str, Any]) -> bool:
        return self._routed(request_id, _tool_error_text(response))

    def route_error(self, request_id: Any, error: Any) -> bool:
        return self._routed(request_id, f"JSON-RPC error {error.code}: {error.message}")

    def _routed(self, request_id: Any, server_text: str) -> bool:
        if request_id in self._abandoned:
            del self._abandoned[request_id]
            self.log.add(EVENT_CANCEL, f"late answer to request {request_id} discarded")
            return True
        request = self._pending.pop(request_id, None)
        if request is not None and server_text:
            request.server_text = self.scrub.words(server_text)
        return False

    def server_text(self) -> str:
        """The server's own error text in the answers to the current wait (inside ``run``), or ``""``."""
        request = _request_var.get()
        return request.server_text if request is not None and request.connection is self else ""

    def _missed(self, timeout: float | Deadline | None, limit: float, request: _Request) -> str:
        """What a timeout says: the limit, and for an operation of several requests how far it got."""
        if not isinstance(timeout, Deadline):
            return f"Server '{self.name}' did not answer within {limit:g} s.{self.stderr_hint()}"
        pages = request.methods.count("tools/list")
        reached = f" (it reached page {pages} of the listing)" if pages else ""
        what = f"did not finish {timeout.doing} within {timeout.seconds:g} s{reached}"
        return f"Server '{self.name}' {what}.{self.stderr_hint()}"

    def stderr_hint(self) -> str:
        """What a failure's message says of the server's stderr: where its last lines are (never the lines
        themselves: a message is shown where URLs become links)."""
        return f" {STDERR_NOTE}" if self.stderr.strip() else ""

    def _with_stderr(self, error: McpSessionError) -> McpSessionError:
        """``error`` carrying the server's last stderr lines after what else it carries, when its message points to
        them."""
        tail = "\n".join(self.stderr.strip().splitlines()[-FAILURE_STDERR_LINES:])
        if STDERR_NOTE not in error.message or not tail or tail in error.server_text:
            return error
        said = "\n".join(filter(None, (error.server_text, tail)))
        return McpSessionError(error.code, error.message, server_text=self.scrub.words(said))

    # --- errors ------------------------------------------------------------------------------

    def error(
        self, exc: BaseException, *, connecting: bool = False, deadline: Deadline | None = None
    ) -> McpSessionError:
        """One SDK, transport or purra-mcp failure as a code and a one-line message without secrets (and
        the server's stderr tail, when the message points to it)."""
        if isinstance(exc, McpSessionError):
            return self._with_stderr(exc)
        error = _translate(runner.leaf_exception(exc), self, connecting=connecting, deadline=deadline)
        return self._with_stderr(McpSessionError(error.code, self.scrub(error.message), server_text=error.server_text))


def _tool_error_text(result: dict[str, Any]) -> str:
    """The text blocks of a tool result the server flagged ``isError`` (else ``""``)."""
    if result.get("isError") is not True or not isinstance(result.get("content"), list):
        return ""
    blocks = [block.get("text") for block in result["content"] if isinstance(block, dict)]
    return "\n".join(text for text in blocks if isinstance(text, str))


def _offending(error: Exception, scrub: Scrubber) -> str:
    """The server's line that is not JSON-RPC (pydantic keeps it as the error's input) or not UTF-8: scrubbed,
    then bounded."""
    found: Any = error.object.decode("utf-8", "replace") if isinstance(error, UnicodeDecodeError) else None
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = next((item.get("input") for item in errors() if isinstance(item.get("input"), str)), None)
        except Exception:
            found = None
    return repr(scrub.shown(found if isinstance(found, str) else str(error)))


def _translate(exc: BaseException, connection: Connection, *, connecting: bool, deadline: Deadline | None) -> Any:
    """Map one failure to a code and a message (most specific first) that names only what the kit knows; what the
    server said goes to ``server_text``, scrubbed before it is cut. HTTP failures never get here: the HTTP
    transport reports each as its request's ``Failure``."""
    from mcp import types
    from mcp.shared.exceptions import McpError
    from purra_mcp import McpAdapterError

    name = connection.name
    hint = connection.stderr_hint()
    if isinstance(exc, McpAdapterError):
        what = _ADAPTER_MESSAGES.get(exc.code, "purra-mcp refused the operation")
        return McpSessionError(exc.code, f"Server '{name}': {what}.{hint if exc.code == TIMEOUT else ''}")
    if isinstance(exc, TimeoutError):
        within = f"{deadline.seconds:g}" if deadline is not None else f"{connection.config.timeout:g}"
        what = "answer initialize" if connecting else "answer"
        return McpSessionError(TIMEOUT, f"Server '{name}' did not {what} within {within} s.{hint}")
    if isinstance(exc, McpError):
        code = exc.error.code
        if code in (408, -32001):
            return McpSessionError(TIMEOUT, f"Server '{name}' did not answer in time.{hint}")
        if code == types.CONNECTION_CLOSED:
            if connecting:
                return McpSessionError(
                    CONNECT_FAILED, f"Server '{name}' closed the connection during initialize.{hint}"
                )
            return McpSessionError(CONNECTION_CLOSED, f"Server '{name}' closed the connection.{hint}")
        return McpSessionError(
            PROTOCOL_ERROR,
            f"Server '{name}' answered with error {code}. {SERVER_TEXT_NOTE}",
            server_text=connection.scrub.words(exc.error.message),
        )
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        # The transport's streams are gone: the server exited or the connection dropped.
        code = CONNECT_FAILED if connecting else CONNECTION_CLOSED
        return McpSessionError(code, f"Server '{name}' closed the connection.{hint}")
    if isinstance(exc, OSError) and connecting and connection.transport == STDIO:
        cwd = connection.config.cwd
        if cwd is not None and not os.path.isdir(cwd):
            return McpSessionError(CONNECT_FAILED, f"The working directory {cwd!r} of '{name}' does not exist.")
        return McpSessionError(
            CONNECT_FAILED, f"Could not start {connection.config.command!r} for '{name}': {exc.strerror or exc}."
        )
    code = CONNECT_FAILED if connecting else TRANSPORT_ERROR
    what = "an answer the MCP SDK cannot read" if isinstance(exc, ValueError) else "a failure"
    return McpSessionError(
        code,
        f"Server '{name}': {what} ({exc.__class__.__name__}). {SERVER_TEXT_NOTE}{hint}",
        server_text=connection.scrub.words(str(exc)),
    )


# purra-mcp's codes carry no message (remote text is never attached); these say what each means.
_ADAPTER_MESSAGES = {
    "mcp_protocol_unsupported": "negotiated a protocol version PurrA does not accept (it accepts 2025-06-18 "
    "and 2025-11-25)",
    "mcp_catalog_limit_exceeded": "the tool catalog exceeds PurrA's limits (pages, tool count, catalog, "
    "schema or description bytes)",
    "mcp_pagination_invalid": "tools/list returned an invalid cursor (empty, over 512 bytes, or repeated)",
    "mcp_name_conflict": "two tools (or two bindings) share a name",
    "mcp_catalog_invalid": "the tool listing is not valid JSON that PurrA can measure",
    "mcp_tools_unavailable": "the server does not advertise the tools capability",
    "mcp_schema_unsupported": "a tool's schema is outside PurrA's purra.output-schema/v1 profile",
    "mcp_tool_unsupported": "the tool requires task-augmented execution, which PurrA does not use",
    "mcp_binding_missing": "a bound tool is no longer listed",
    "mcp_binding_invalid": "a binding is invalid (local name, title or scope validator)",
    "mcp_catalog_stale": "its tools changed since they were listed; call refresh()",
    "mcp_connection_closed": "the session is closed",
    "mcp_not_initialized": "the session is not initialized",
    TIMEOUT: "did not answer within the time limit",
    PROTOCOL_ERROR: "answered with a protocol error",
    TRANSPORT_ERROR: "the transport failed",
}


__all__ = ["CancelToken", "Connection", "Deadline", "LogEntry", "SessionLog", "StderrTail"]
