"""A monitored connection to one MCP server: the session's life over a transport it is given.

The transport, the SDK's ``ClientSession`` and purra-mcp's ``McpCatalogMonitor`` are entered and left by one task
on the runner's loop. The connection owns the state (``connecting`` to ``closed`` or ``failed``, and why), the
handling of what the server sends, and the SDK's log records; its waits (deadlines, cancellation, late answers)
are its ``RequestTracker``'s, and what the SDK raises becomes a kit code in ``sdk_errors``. Server text the kit
shows (stderr, log, causes, error messages) is scrubbed of the config's secrets.

This layer knows nothing of catalogs or calls: higher layers hand it coroutines to run.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from traitlets import Enum, HasTraits

from . import purra_adapter, runner
from .config import Scrubber, ServerConfig
from .errors import KEPT_APART, McpSessionError
from .sdk_errors import Speaker, offending_line, stderr_hint, translate, with_stderr
from .session_log import LogEntry, SessionLog
from .stdio_transport import EXIT_SECONDS, LineTooLong, StderrTail
from .tracking import WAITING, CancelToken, Deadline, RequestTracker
from .transport import Failure, RequestId, Transport, TransportContext
from .wire import (
    CLOSED,
    CONFIG_INVALID,
    CONNECT_FAILED,
    CONNECTING,
    CONNECTION_CLOSED,
    EVENT_CLOSE,
    EVENT_CONNECT,
    EVENT_ERROR,
    EVENT_INITIALIZE,
    EVENT_LIST_CHANGED,
    EVENT_SDK,
    FAILED,
    PROTOCOL_ERROR,
    READY,
    RESULT_TOO_LARGE,
    STALE,
    STATES,
    TRANSPORT_ERROR,
)

T = TypeVar("T")

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import InitializeResult
    from purra_mcp import McpCatalogMonitor, McpToolLimits

# What a stdio line or an HTTP message may hold with purra-mcp's default limits (4 x its 1-MiB catalog limit), before
# the session's limits are known (a stdio server starts before purra-mcp is imported); see ``_message_bytes``.
DEFAULT_MESSAGE_BYTES = 4 << 20
# While connecting, a failure that names nothing more specific (timeout, credentials, protocol version ...)
# is a failed connect.
_NOT_CONNECTED = (CONNECTION_CLOSED, TRANSPORT_ERROR, PROTOCOL_ERROR)
# Loggers of the pinned SDK's client side ("client" is ClientSession's; "" is the root logger, which
# BaseSession logs to directly). Only records from SDK code running for one of our connections are taken.
_SDK_LOGGERS = ("", "client", "mcp.client.stdio", "mcp.client.streamable_http", "mcp.client.auth.oauth2",
                "mcp.client.auth.utils", "mcp.shared.tool_name_validation")  # fmt: skip

_connection_var: ContextVar[Connection | None] = ContextVar("purra_jupyter_connection", default=None)


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

    def __init__(self, inner: ObjectSendStream[Any], on_request: Callable[[RequestId, str], None]) -> None:
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


def message_bytes(limits: McpToolLimits | None) -> int:
    """The most of one message a transport keeps (a stdio line, an HTTP body or event): escapes and spacing on
    the wire can make a message several times purra-mcp's measure of it; purra-mcp's own limits decide after
    that. Before the limits are known (a stdio server starts first), purra-mcp's defaults'."""
    if limits is None:
        return DEFAULT_MESSAGE_BYTES
    return 4 * max(int(limits.max_catalog_bytes), int(limits.max_result_bytes))


class Connection(HasTraits):
    """One monitored connection to one MCP server over ``transport``. ``state``: connecting, ready, stale (the
    server changed its tools), closed or failed (``cause`` says why). State, cause and requests change on the loop
    thread only."""

    state = Enum(STATES, default_value=CONNECTING, help="connecting | ready | stale | closed | failed")

    def __init__(self, config: ServerConfig, transport: Transport, *, limits: McpToolLimits | None = None) -> None:
        """``limits``: purra-mcp's ``McpToolLimits`` (by default PurrA's, with the config's timeout). Nothing of the
        SDK is imported before ``open``, which starts a stdio server's process first."""
        super().__init__()
        self.config = config
        self.link = transport
        self._limits = limits
        self.scrub = Scrubber(config.secrets)
        self.log = SessionLog(self.scrub)
        self.requests = RequestTracker(
            config.name, self.log, self.scrub, drop=transport.drop, hint=self.stderr_hint, notice_seconds=config.timeout
        )
        self._monitor: McpCatalogMonitor | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._client: ClientSession | None = None
        self._cause = ""
        self._cause_code = CONNECTION_CLOSED
        self._cause_text = ""  # the server's words of the failure (an offending line), scrubbed and bounded
        self._connect_deadline: Deadline | None = None
        self._closing = False
        self._close_cause = ""
        self._close_lock = threading.Lock()
        self._host: runner.HostedContext[InitializeResult] = runner.HostedContext(self._session, self._ended)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def transport(self) -> str:
        """``stdio``, ``http`` or ``memory``."""
        return self.link.kind

    @property
    def stderr(self) -> str:
        """The last lines the server wrote to its stderr (stdio servers; empty for the others), scrubbed."""
        return self.link.stderr

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
    def limits(self) -> McpToolLimits:
        """purra-mcp's limits of this connection (known once ``open`` has imported purra-mcp)."""
        if self._limits is None:
            raise McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' was never opened.")
        return self._limits

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
            runner.on_loop(self._connect_failed, f"connect failed: {failure}")
            raise failure
        self.protocol_version = str(result.protocolVersion)
        self.server_info = result.serverInfo.model_dump(mode="json", exclude_none=True)
        self.capabilities = result.capabilities.model_dump(mode="json", exclude_none=True)
        self.log.add(EVENT_INITIALIZE, f"protocol {self.protocol_version}, server {self.server_label}")

    def _connect_failed(self, cause: str) -> None:
        self._cause = self.scrub(cause)
        self.log.add(EVENT_CLOSE, self._cause)
        self._set_state(FAILED)

    def _ending_grace(self) -> float:
        """The seconds each step of ending the server may take: ``EXIT_SECONDS``, or while connecting half of what
        is left of the connect's deadline (so that a failed connect ends within it)."""
        deadline = self._connect_deadline
        if self.state != CONNECTING or deadline is None:
            return EXIT_SECONDS
        return min(EXIT_SECONDS, deadline.remaining() / 2)

    def _context(self) -> TransportContext:
        return TransportContext(
            scrub=self.scrub,
            note=self.log.add,
            request_failed=self._request_failed,
            session_ended=self._fail,
            max_message_bytes=lambda: message_bytes(self._limits),
            grace=self._ending_grace,
            persons_turn=self.requests.persons_turn,
        )

    @asynccontextmanager
    async def _session(self, deadline: Deadline) -> AsyncIterator[InitializeResult]:
        _connection_var.set(self)  # the transport's tasks inherit it: their SDK log records are ours
        started = time.monotonic()
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self.link.open(self._context()))  # a server starts first
            self._monitor, self._limits = await load_client(self.config, self._limits, deadline, started)
            from mcp import ClientSession

            watched = _WatchedStream(read, self._stream_ended)
            recording = _RecordingStream(write, self.requests.sent)
            # (ClientSession reads and writes any anyio object stream; its annotation names the memory streams)
            client = await stack.enter_async_context(
                ClientSession(cast(Any, watched), cast(Any, recording), message_handler=self._on_message)
            )
            client.add_response_router(self.requests)
            tasks = await stack.enter_async_context(anyio.create_task_group())
            self.requests.attach(client, tasks)
            self._client = client
            try:
                result = await self.run(lambda client: client.initialize(), deadline)  # a wait like any other
                self.monitor.accept_protocol_version(str(result.protocolVersion))  # the SDK admits an int
                yield result
            finally:
                tasks.cancel_scope.cancel()  # cancellation notices still going out are not waited for

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
                line = offending_line(message, self.scrub)
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
        await self.link.ended()  # a server that exits ends both: its last words belong to the cause
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
        message = f"Session '{self.name}' lost its connection: {self._cause}.{self.stderr_hint()}"
        self.requests.end_all(McpSessionError(code, message, server_text=self._cause_text))
        if self.state != CONNECTING:
            self._set_state(FAILED)

    async def _ended(self, error: BaseException | None) -> None:
        """The owner task left the transport (closed, or lost): wait for the last stderr lines, then say so. What
        an error says goes to the log (drawn as text); the cause names only its kind."""
        await self.link.ended()
        if self._closing:
            self._finish(self._close_cause)
        elif error is not None:
            kind = error.__class__.__name__
            self.log.add(EVENT_ERROR, f"the transport ended with {kind}: {self.scrub.shown(str(error))}")
            self._fail(f"connection lost ({kind})")
        else:
            self._fail("connection lost (the transport ended)")

    def close(self, cause: str = "closed by user") -> None:
        """End the connection and its server. Idempotent. From the loop thread (a state observer) it only starts
        the close; ``state`` turns ``closed`` once the transport is gone."""
        with self._close_lock:
            if self.state == CLOSED or self._closing:
                return
            self._closing = True
            self._close_cause = cause
        if self._monitor is not None:
            self._monitor.close()
        closed = McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' was closed ({cause}).")
        runner.call_soon(self.requests.end_all, closed)
        if self._host.running:
            self._host.close()
        else:
            runner.on_loop(self._finish, cause)

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
        func: Callable[[ClientSession], Awaitable[T]],
        *,
        timeout: float | Deadline | None = None,
        cancel: CancelToken | None = None,
    ) -> T:
        """Run ``func(client)`` on the loop (see ``run``) and wait; a kernel interrupt cancels it on the server
        and raises ``mcp_interrupted``."""
        token = cancel or CancelToken()
        future: Future[T] = runner.submit(self.run, func, timeout, token)
        return runner.wait(future, on_interrupt=token.interrupt)

    def reauthorize(self) -> None:
        """Forget this session's tokens and run the authorization flow again now (a ping carries it)."""
        if self.config.oauth is None:
            raise McpSessionError(CONFIG_INVALID, f"Session '{self.name}' was not connected with OAuth.")
        self.check_usable()
        self.log.add(EVENT_CONNECT, "reauthorizing: the tokens were forgotten")
        runner.run(self.link.forget_authorization)
        self.request(lambda client: client.send_ping(), timeout=Deadline(self.config.timeout, "reauthorizing"))

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server for a ping; returns the round trip in milliseconds."""
        started = time.perf_counter()
        self.request(lambda client: client.send_ping(), timeout=timeout)
        return (time.perf_counter() - started) * 1000

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
            failure = self._with_stderr(error)
        finally:
            _connection_var.reset(token)
        raise failure

    def _translated(self, error: Exception) -> McpSessionError:
        return self.error(error, connecting=self.protocol_version is None)

    def _request_failed(self, request_id: RequestId, failure: Failure) -> None:
        """The HTTP transport's report that one request failed (an error status, a bad body, a broken stream):
        that wait ends now with the failure's code; the session stays as it is."""
        said = f" The server said: {failure.server_text}" if failure.server_text else ""
        self.log.add(EVENT_ERROR, failure.message + said)  # the log is drawn as text, never linked
        self.requests.failed(request_id, failure.code, failure.message, answered=failure.answered,
                             server_text=failure.server_text)  # fmt: skip

    def server_text(self) -> str:
        """The server's own error text in the answers to the current wait (inside ``run``), or ``""``."""
        return self.requests.server_text()

    def stderr_hint(self) -> str:
        return stderr_hint(self.stderr)

    def _with_stderr(self, error: McpSessionError) -> McpSessionError:
        return with_stderr(error, self.stderr, self.scrub)

    def error(
        self, exc: BaseException, *, connecting: bool = False, deadline: Deadline | None = None
    ) -> McpSessionError:
        """One SDK, transport or purra-mcp failure as a code and a one-line message without secrets (and
        the server's stderr tail, when the message points to it)."""
        if isinstance(exc, McpSessionError):
            return self._with_stderr(exc)
        speaker = Speaker(self.name, self.config, self.transport, self.scrub, self.stderr_hint())
        error = translate(runner.leaf_exception(exc), speaker, connecting=connecting, deadline=deadline)
        return self._with_stderr(McpSessionError(error.code, self.scrub(error.message), server_text=error.server_text))


__all__ = ["CancelToken", "Connection", "Deadline", "LogEntry", "SessionLog", "StderrTail"]
