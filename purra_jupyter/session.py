"""A monitored MCP client session that lives across cells.

The transport and the SDK's ``ClientSession`` are entered and left by one task on the runner's
loop; purra-mcp's ``McpCatalogMonitor`` sees every server message, composed with the session's
own event log. ``state`` is an observable trait: ``ready``, ``stale`` (the server changed its
tools), ``closed`` or ``failed`` (the log says why).
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.abc import ObjectReceiveStream
from traitlets import Enum, HasTraits, Int

from . import runner
from .config import ServerConfig, redact_url
from .errors import McpSessionError, without_groups
from .wire import (
    APPROVAL_POLICIES,
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
    EVENT_STDERR,
    FAILED,
    HTTP,
    PROTOCOL_ERROR,
    READY,
    SESSION_EXISTS,
    SESSION_UNKNOWN,
    STALE,
    STATES,
    STDIO,
    TIMEOUT,
    TRANSPORT_ERROR,
)

if TYPE_CHECKING:
    import httpx
    import pandas as pd
    from mcp import ClientSession
    from purra_mcp import McpCatalogMonitor, McpToolBinding, McpToolCatalog, McpToolLimits

    from .approval import PendingCall
    from .catalog import Catalog
    from .envelope import Envelope, RawResult
    from .forms import SchemaForm
    from .status import SessionStatus

T = TypeVar("T")

STDERR_LINES = 200
LOG_ROWS = 10_000
_MAX_LINE_BYTES = 8_192
_DETAIL_CHARS = 500


@dataclass(frozen=True, slots=True)
class LogEntry:
    time: datetime
    event: str
    detail: str


class SessionLog:
    """The last ``LOG_ROWS`` events of a session; appended from the loop thread, read from the kernel."""

    def __init__(self, maxlen: int = LOG_ROWS) -> None:
        self._rows: deque[LogEntry] = deque(maxlen=maxlen)

    def add(self, event: str, detail: str = "") -> None:
        if len(detail) > _DETAIL_CHARS:
            detail = detail[:_DETAIL_CHARS] + "…"
        self._rows.append(LogEntry(datetime.now(UTC), event, detail))

    def __iter__(self) -> Iterator[LogEntry]:
        return iter(tuple(self._rows))

    def __len__(self) -> int:
        return len(self._rows)

    def events(self, event: str) -> list[LogEntry]:
        return [row for row in self if row.event == event]

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([(row.time, row.event, row.detail) for row in self], columns=["time", "event", "detail"])

    def __repr__(self) -> str:
        return "\n".join(f"{row.time:%H:%M:%S.%f}"[:-3] + f"  {row.event:<12} {row.detail}" for row in self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = "".join(
            f"<tr><td>{row.time:%H:%M:%S}</td><td>{escape(row.event)}</td><td><pre>{escape(row.detail)}</pre></td></tr>"
            for row in self
        )
        html = f"<table><thead><tr><th>time</th><th>event</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>"
        return {"text/plain": repr(self), "text/html": html}


class StderrTail:
    """A pipe handed to a stdio server as its stderr; a thread keeps the last lines and logs each.

    ipykernel's ``sys.stderr`` has no file descriptor, and a pipe read at once never blocks the
    server the way an unread one would.
    """

    def __init__(self, on_line: Callable[[str], None], max_lines: int = STDERR_LINES) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = open(write_fd, "wb", buffering=0)
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._on_line = on_line
        self._thread = threading.Thread(target=self._read, args=(read_fd,), name="purra-jupyter-stderr", daemon=True)
        self._thread.start()

    def release(self) -> None:
        """Drop our copy of the write end once the child holds its own, so EOF follows its exit."""
        self.writer.close()

    def join(self, timeout: float = 2.0) -> None:
        self._thread.join(timeout)

    @property
    def text(self) -> str:
        return "\n".join(self._lines)

    def _read(self, fd: int) -> None:
        pending = b""
        with open(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(65_536):
                *lines, pending = (pending + chunk).split(b"\n")
                if len(pending) > _MAX_LINE_BYTES:
                    lines.append(pending)
                    pending = b""
                for line in lines:
                    self._keep(line)
        if pending:
            self._keep(pending)

    def _keep(self, raw: bytes) -> None:
        line = raw[:_MAX_LINE_BYTES].decode("utf-8", "replace").rstrip("\r")
        self._lines.append(line)
        self._on_line(line)


class _WatchedStream(ObjectReceiveStream[Any]):
    """The transport's read stream, as ``ClientSession`` reads it, noticing the moment the server's
    stream ends (a server that exits), so the session fails at once instead of at the next timeout."""

    def __init__(self, inner: ObjectReceiveStream[Any], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class McpSession(HasTraits):
    """One monitored connection to one MCP server. Open it with ``connect()``."""

    state = Enum(STATES, default_value=CONNECTING, help="ready | stale | closed | failed")
    bound_count = Int(0, help="how many tools are bound (changes with bind, unbind and refresh)")

    def __init__(self, config: ServerConfig, *, approval: str = "prompt", limits: McpToolLimits | None = None) -> None:
        super().__init__()
        from purra_mcp import McpCatalogMonitor, McpToolLimits

        self.config = config
        self.approval = approval
        self.limits = limits or McpToolLimits(timeout_ms=round(config.timeout * 1000))
        self.log = SessionLog()
        self.monitor: McpCatalogMonitor = McpCatalogMonitor()
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self._client: ClientSession | None = None
        self._catalog: Catalog | None = None
        self._bindings: dict[str, McpToolBinding] = {}
        self._purra_catalog: McpToolCatalog | None = None
        self._stderr: StderrTail | None = None
        self._cause = ""
        self._closing = False
        self._in_flight: set[anyio.CancelScope] = set()
        self._close_lock = threading.Lock()
        self._host: runner.HostedContext[tuple[ClientSession, Any]] = runner.HostedContext(self._connection, self._lost)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def transport(self) -> str:
        return self.config.transport

    @property
    def stderr(self) -> str:
        """The last lines the server wrote to its stderr (stdio servers; empty for HTTP)."""
        return self._stderr.text if self._stderr is not None else ""

    @property
    def cause(self) -> str:
        """Why the session is ``closed`` or ``failed`` (empty while it is usable)."""
        return self._cause

    # --- lifecycle -------------------------------------------------------------------------

    def _open(self) -> None:
        self.log.add(EVENT_CONNECT, f"{self.transport} {self.config.target}")
        if self.approval == "auto":
            self.log.add(EVENT_CONNECT, "approval policy 'auto': every call of this session is approved")
        if self.transport == STDIO:
            self._stderr = StderrTail(lambda line: self.log.add(EVENT_STDERR, line))
        try:
            with self._translate_errors(connecting=True):
                self._client, result = self._host.open()
        except BaseException as exc:
            self._finish(FAILED, f"connect failed: {exc}")
            raise
        self.protocol_version = result.protocolVersion
        self.server_info = result.serverInfo.model_dump(mode="json", exclude_none=True)
        self.capabilities = result.capabilities.model_dump(mode="json", exclude_none=True)
        self.log.add(EVENT_INITIALIZE, f"protocol {self.protocol_version}, server {self._server_label()}")

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[tuple[ClientSession, Any]]:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        config = self.config
        async with AsyncExitStack() as stack:
            if config.transport == STDIO:
                assert self._stderr is not None
                params = StdioServerParameters(
                    command=config.command or "",
                    args=list(config.args),
                    env=dict(config.env) if config.env is not None else None,
                    cwd=config.cwd,
                )
                try:
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=self._stderr.writer))
                finally:
                    self._stderr.release()
            else:
                http = await stack.enter_async_context(_http_client(config, self.log))
                read, write, _ = await stack.enter_async_context(
                    streamable_http_client(config.url or "", http_client=http)
                )
            watched = _WatchedStream(read, lambda: self._fail("the server closed the connection"))
            client = await stack.enter_async_context(ClientSession(watched, write, message_handler=self._on_message))
            with anyio.fail_after(config.timeout):
                result = await client.initialize()
            self.monitor.accept_protocol_version(result.protocolVersion)
            yield client, result

    async def _on_message(self, message: Any) -> None:
        """Every server message: purra-mcp's monitor first (it decides staleness), then our log."""
        from mcp import types

        await self.monitor.on_message(message)
        if isinstance(message, Exception):
            detail = "the server sent a message that is not valid JSON-RPC: " + " ".join(str(message).split())
            self.log.add(EVENT_ERROR, detail)
            self._fail(f"{detail}; purra-mcp's monitor closed the session")
        elif isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self.log.add(EVENT_LIST_CHANGED, f"catalog revision {self.monitor.revision}")
            if self.state == READY:
                self._set_state(STALE)

    def _mark_current(self, revision: int) -> None:
        """``ready`` if no ``tools/list_changed`` came since ``revision`` was listed, else ``stale``.
        Runs on the loop, where notifications are handled, so none can slip in between."""

        def mark() -> None:
            if self.state in (CONNECTING, READY, STALE):
                self._set_state(READY if self.monitor.revision == revision else STALE)

        runner.portal().call(mark)

    def _set_state(self, state: str) -> None:
        """Set ``state``; an observer that raises is logged, never allowed to break the transport."""
        try:
            self.state = state
        except Exception as exc:
            self.log.add(EVENT_ERROR, f"a state observer raised {exc.__class__.__name__}: {exc}")

    def _lost(self, error: BaseException | None) -> None:
        reason = f"{error.__class__.__name__}: {error}" if error is not None else "the transport ended"
        self._fail(f"connection lost ({reason})")

    def _fail(self, cause: str, *, on_loop: bool = True) -> None:
        """Mark the session failed (while connecting, ``connect`` fails with the cause instead); on the
        loop thread, also end the requests waiting on it."""
        if self.state in (CLOSED, FAILED) or self._closing or self._cause:
            return
        self._cause = cause
        self.log.add(EVENT_ERROR, cause)
        if self.state != CONNECTING:
            self._set_state(FAILED)
        if on_loop:
            for scope in tuple(self._in_flight):
                scope.cancel()

    def close(self, cause: str = "closed by user") -> None:
        """End the session and its server process. Idempotent."""
        with self._close_lock:
            if self.state == CLOSED:
                return
            self._closing = True
            self.monitor.close()
            try:
                self._host.close()
            finally:
                self._finish(CLOSED, cause)

    def _finish(self, state: str, cause: str) -> None:
        if self._stderr is not None:
            self._stderr.join()
        # A failure keeps its first cause; a close says who closed the session.
        self._cause = (self._cause or cause) if state == FAILED else cause
        self.log.add(EVENT_CLOSE, cause)
        self._set_state(state)
        registry.remove(self)

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close("left the with block")

    # --- requests --------------------------------------------------------------------------

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server for a ping; returns the round trip in milliseconds."""
        started = time.perf_counter()
        self._request(lambda client: client.send_ping(), timeout=timeout)
        return (time.perf_counter() - started) * 1000

    def _request(self, func: Callable[[ClientSession], Awaitable[T]], *, timeout: float | None = None) -> T:
        """Run ``func(client)`` on the loop within ``timeout`` seconds (default: the config's) and wait."""
        future = self._submit(func, timeout=timeout)
        with self._translate_errors():
            return runner.wait(future)

    def _submit(self, func: Callable[[ClientSession], Awaitable[T]], *, timeout: float | None = None) -> Future[T]:
        """Schedule ``func(client)`` on the loop without waiting (widget callbacks); errors from the
        future go through ``translate_error``."""
        self._check_usable()
        return runner.submit(self._bounded, func, timeout)

    async def _bounded(self, func: Callable[[ClientSession], Awaitable[T]], timeout: float | None = None) -> T:
        """``func(client)`` on the loop within ``timeout`` seconds (default: the config's); cancelled with
        ``mcp_connection_closed`` when the connection is lost."""
        client = self._client
        assert client is not None
        limit = timeout if timeout is not None else self.config.timeout
        try:
            with anyio.fail_after(limit), anyio.CancelScope() as scope:
                if not self._cause:
                    self._in_flight.add(scope)
                    try:
                        return await func(client)
                    finally:
                        self._in_flight.discard(scope)
        except TimeoutError:
            message = f"Server '{self.name}' did not answer within {limit:g} s.{_stderr_hint(self)}"
            raise McpSessionError(TIMEOUT, message) from None
        raise McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' lost its connection: {self._cause}.")

    def translate_error(self, error: BaseException) -> BaseException:
        """``error`` as an ``McpSessionError`` (what ``_request`` would have raised)."""
        if isinstance(error, McpSessionError) or not isinstance(error, Exception):
            return error
        return _translate(error, self, connecting=False)

    def _check_usable(self) -> None:
        if self.state in (CLOSED, FAILED):
            how = f"Open a new one with pj.connect() ({self._cause})." if self._cause else "Open a new one."
            raise McpSessionError(CONNECTION_CLOSED, f"Session '{self.name}' is {self.state}. {how}")

    @contextmanager
    def _translate_errors(self, *, connecting: bool = False) -> Iterator[None]:
        """The one seam where SDK, transport and purra-mcp errors become ``McpSessionError``s."""
        try:
            yield
        except McpSessionError:
            raise
        except Exception as exc:
            error = _translate(exc, self, connecting=connecting)
            if error.code == CONNECTION_CLOSED and not connecting:
                self._fail(error.message, on_loop=False)
            raise error from without_groups(exc)

    # --- catalog and bindings (catalog.py does the work) ------------------------------------

    @property
    def catalog(self) -> Catalog:
        """Every tool the server listed, with verdicts; as of the last listing (see ``state``)."""
        assert self._catalog is not None
        return self._catalog

    @property
    def bindings(self) -> dict[str, Any] | None:
        """purra-mcp's snapshot of the read bindings (``schemaVersion, serverId, protocolVersion,
        revisionDigest, entries``); ``None`` until a tool is bound."""
        return self._purra_catalog.snapshot.to_mapping() if self._purra_catalog is not None else None

    def refresh(self) -> Catalog:
        """List the tools again (after ``tools/list_changed``); bindings that no longer hold are dropped."""
        from . import catalog

        return catalog.refresh(self)

    def bind(
        self,
        tool: str,
        local_name: str | None = None,
        title: str | None = None,
        scope_validator: Callable[..., Any] | None = None,
        concurrency_safe: bool = False,
    ) -> dict[str, Any]:
        """Bind ``tool`` as a PurrA read tool (through purra-mcp, with every current binding).

        ``scope_validator(state, arguments, signal)`` (sync or async) returns a non-empty string to deny
        a call. Returns the binding's snapshot entry."""
        from . import catalog

        return catalog.bind(
            self,
            tool,
            local_name=local_name,
            title=title,
            scope_validator=scope_validator,
            concurrency_safe=concurrency_safe,
        )

    def unbind(self, local_name: str) -> None:
        from . import catalog

        catalog.unbind(self, local_name)

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        approve: bool | None = None,
        raw: bool = False,
        timeout: float | None = None,
    ) -> Envelope | RawResult | PendingCall:
        """Call ``tool`` (a local or remote name) and return its result; tool failures never raise.

        PurrA path (default): arguments are checked against the binding's contract before anything is
        sent, an unbound tool is bound as a read tool first, and the result is purra-mcp's envelope.
        ``raw=True`` calls any listed tool and keeps every content block (outside the PurrA contract).
        ``approve=True`` approves this call in code (logged as such); otherwise the session's policy
        decides: ``prompt`` returns a ``PendingCall`` that displays as the approval widget and sends
        nothing until approved. ``timeout`` is in seconds (at most 300)."""
        from . import calls

        if approve is not None and not isinstance(approve, bool):
            raise McpSessionError(CONFIG_INVALID, "approve must be True, False or None.")
        plan = calls.plan_call(self, tool, arguments, raw=raw, timeout=timeout)
        refused = calls.refusal(plan)
        if refused is not None:
            return refused
        if approve is True:
            return calls.run(plan, "approved in code")
        if approve is False:
            return calls.denied(plan, "denied in code")
        if self.approval == "deny":
            return calls.denied(plan, "the session's deny policy")
        if self.approval == "auto":
            return calls.run(plan, "approved by the session's auto policy")
        from .approval import PendingCall

        return PendingCall(plan)

    def evaluate(
        self,
        tool: str,
        rows: Any,
        *,
        approve: bool | None = None,
        concurrency: int = 1,
        timeout: float | None = None,
        check: Callable[[Any], object] | None = None,
        raw: bool = False,
    ) -> pd.DataFrame | PendingCall:
        """Call ``tool`` once per row of ``rows`` (a DataFrame, or a list of argument dicts) and return
        a DataFrame: the input columns, then ``ok, error_code, text, structured, elapsed_ms, message``,
        and ``passed, check_message`` when ``check(result)`` (returning a bool or a failure message)
        is given. ``.attrs["summary"]`` holds the counts per outcome and p50/p95 latency.

        Missing cells (None, NaN) are left out of a row's arguments. Rows whose arguments do not fit
        are refused before anything is sent; one approval covers the rest (``prompt`` returns a
        ``PendingCall`` whose ``result`` becomes the DataFrame). ``concurrency`` > 1 (at most 64) needs
        a binding declared ``concurrency_safe``. A kernel interrupt stops the batch: finished rows keep
        their results, the others get ``mcp_interrupted``."""
        from .evaluate import evaluate

        return evaluate(
            self, tool, rows, approve=approve, concurrency=concurrency, timeout=timeout, check=check, raw=raw
        )

    def form(self, tool: str) -> SchemaForm:
        """An argument form for ``tool``, generated from its input schema; its "Review call" button
        produces the ``PendingCall`` (a JSON editor for tools outside the profile)."""
        from .forms import tool_form

        return tool_form(self, tool)

    def status_widget(self) -> SessionStatus:
        """A live status widget: state, protocol, tool counts, bindings, last error."""
        from .status import SessionStatus

        return SessionStatus(self)

    # --- display ---------------------------------------------------------------------------

    def _server_label(self) -> str:
        info = self.server_info
        return " ".join(str(info[key]) for key in ("name", "version") if key in info) or "unknown"

    def __repr__(self) -> str:
        protocol = f", protocol {self.protocol_version}" if self.protocol_version else ""
        return f"<McpSession {self.name!r} {self.transport} {self.state}{protocol}, server {self._server_label()}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = [
            ("session", self.name),
            ("transport", f"{self.transport}: {self.config.target}"),
            ("state", self.state + (f" ({self._cause})" if self._cause else "")),
            ("protocol", self.protocol_version or ""),
            ("server", self._server_label()),
        ]
        body = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
        return {"text/plain": repr(self), "text/html": f"<table class='purra-session'>{body}</table>"}


def _translate(exc: BaseException, session: McpSession, *, connecting: bool) -> McpSessionError:
    """Map one SDK/transport/adapter failure to a code and a one-line message without secrets."""
    import httpx
    from mcp import types
    from mcp.shared.exceptions import McpError
    from purra_mcp import McpAdapterError

    exc = runner.leaf_exception(exc)
    name = session.name
    hint = _stderr_hint(session)
    if isinstance(exc, McpAdapterError):
        what = _ADAPTER_MESSAGES.get(exc.code, "purra-mcp refused the operation")
        return McpSessionError(exc.code, f"Server '{name}': {what}.{hint if exc.code == TIMEOUT else ''}")
    if isinstance(exc, TimeoutError):
        what = "answer initialize" if connecting else "answer"
        return McpSessionError(TIMEOUT, f"Server '{name}' did not {what} within {session.config.timeout:g} s.{hint}")
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
        return McpSessionError(PROTOCOL_ERROR, f"Server '{name}' answered with error {code}: {exc.error.message[:200]}")
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        # The transport's streams are gone: the server exited or the connection dropped.
        code = CONNECT_FAILED if connecting else CONNECTION_CLOSED
        return McpSessionError(code, f"Server '{name}' closed the connection.{hint}")
    if isinstance(exc, httpx.HTTPError):
        detail = (
            f"{exc.__class__.__name__} for {redact_url(str(exc.request.url))}"
            if _has_request(exc)
            else (exc.__class__.__name__)
        )
        if isinstance(exc, httpx.HTTPStatusError):
            detail = f"HTTP {exc.response.status_code} from {redact_url(str(exc.request.url))}"
        return McpSessionError(CONNECT_FAILED if connecting else TRANSPORT_ERROR, f"Server '{name}': {detail}.")
    if isinstance(exc, OSError) and connecting and session.transport == STDIO:
        cwd = session.config.cwd
        if cwd is not None and not os.path.isdir(cwd):
            return McpSessionError(CONNECT_FAILED, f"The working directory {cwd!r} of '{name}' does not exist.")
        return McpSessionError(
            CONNECT_FAILED, f"Could not start {session.config.command!r} for '{name}': {exc.strerror or exc}."
        )
    code = CONNECT_FAILED if connecting else TRANSPORT_ERROR
    return McpSessionError(code, f"Server '{name}': {exc.__class__.__name__}: {str(exc)[:200]}{hint}")


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


def _has_request(exc: Exception) -> bool:
    try:
        exc.request  # type: ignore[attr-defined]  # noqa: B018 - httpx raises when no request is attached
    except RuntimeError:
        return False
    return True


def _stderr_hint(session: McpSession) -> str:
    last = session.stderr.strip().splitlines()[-3:]
    return (" Its stderr ended with: " + " | ".join(last)) if last else ""


@asynccontextmanager
async def _http_client(config: ServerConfig, log: SessionLog) -> AsyncIterator[httpx.AsyncClient]:
    """Our own httpx client: config timeouts, and redirects followed only within the server's origin,
    so custom headers (credentials) never reach another origin."""
    import httpx

    origin = _origin(httpx.URL(config.url or ""))

    async def same_origin_only(request: httpx.Request) -> None:
        if _origin(request.url) != origin:
            log.add(EVENT_ERROR, f"refused a redirect to another origin: {redact_url(str(request.url))}")
            raise httpx.UnsupportedProtocol(
                "redirect to another origin refused (headers are never sent there)", request=request
            )

    timeout = httpx.Timeout(config.timeout, read=max(config.timeout, 300.0))
    async with httpx.AsyncClient(
        headers=dict(config.headers or {}),
        timeout=timeout,
        follow_redirects=True,
        event_hooks={"request": [same_origin_only]},
    ) as client:
        yield client


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


class SessionRegistry:
    """The open sessions of this process, by name."""

    def __init__(self) -> None:
        self._sessions: dict[str, McpSession] = {}
        self._lock = threading.Lock()

    def add(self, session: McpSession) -> None:
        with self._lock:
            if session.name in self._sessions:
                raise McpSessionError(
                    SESSION_EXISTS,
                    f"A session named '{session.name}' is already open. Close it first "
                    f"(pj.sessions() lists them) or choose another name.",
                )
            self._sessions[session.name] = session

    def remove(self, session: McpSession) -> None:
        with self._lock:
            if self._sessions.get(session.name) is session:
                del self._sessions[session.name]

    def get(self, name: str) -> McpSession:
        with self._lock:
            session = self._sessions.get(name)
        if session is None:
            raise McpSessionError(SESSION_UNKNOWN, f"No session named '{name}'. Open one with pj.connect().")
        return session

    def list(self) -> list[McpSession]:
        with self._lock:
            return sorted(self._sessions.values(), key=lambda s: s.name)

    def close_all(self, cause: str = "closed with all sessions") -> None:
        for session in self.list():
            session.close(cause)


registry = SessionRegistry()
runner.on_stop(lambda: registry.close_all("interpreter exit"))


def connect(
    config: ServerConfig,
    *,
    approval: str = "prompt",
    limits: McpToolLimits | None = None,
    expect_digest: str | None = None,
) -> McpSession:
    """Open a monitored session: start or reach the server, initialize, check the protocol, list the
    tools with their verdicts.

    ``approval`` is the policy for tool calls: ``prompt`` (default), ``auto`` (every call of this
    session is approved; logged) or ``deny``. ``limits`` (purra-mcp's ``McpToolLimits``) may be lower
    than PurrA's defaults; its ``timeout_ms`` defaults to the config's timeout. ``expect_digest`` pins
    the catalog: connecting fails with ``mcp_digest_mismatch`` if the server's tools changed.
    """
    if not isinstance(config, ServerConfig):
        raise McpSessionError(CONFIG_INVALID, "connect() takes a ServerConfig (see pj.ServerConfig, pj.load_servers).")
    if approval not in APPROVAL_POLICIES:
        raise McpSessionError(CONFIG_INVALID, f"approval must be one of {', '.join(APPROVAL_POLICIES)}.")
    from purra_mcp import McpToolLimits

    if limits is not None and not isinstance(limits, McpToolLimits):
        raise McpSessionError(CONFIG_INVALID, "limits must be a purra_mcp.McpToolLimits.")
    if expect_digest is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(expect_digest)):
        raise McpSessionError(CONFIG_INVALID, "expect_digest must be a 64-digit hex digest (Catalog.digest).")
    session = McpSession(config, approval=approval, limits=limits)
    registry.add(session)
    session._open()
    from .catalog import build_catalog, check_digest

    try:
        catalog = session._request(lambda client: build_catalog(session, client), timeout=math.inf)
        check_digest(catalog, expect_digest)
    except BaseException as exc:
        session.close(f"connect failed: {exc}")
        raise
    session._catalog = catalog
    session._mark_current(catalog.revision)
    return session


def sessions() -> list[McpSession]:
    """The sessions that are open (ready, stale or failed but not closed), by name."""
    return registry.list()


__all__ = ["HTTP", "STDIO", "LogEntry", "McpSession", "SessionLog", "SessionRegistry", "connect", "sessions"]
