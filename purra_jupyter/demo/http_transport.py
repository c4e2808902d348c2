"""Streamable HTTP transport of the demo server: stateful sessions at ``/mcp`` on a loopback socket."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator

import anyio
import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from purra_jupyter.demo.server import DemoServer

MCP_PATH = "/mcp"


def _is_benign_stream_close(record: logging.LogRecord) -> bool:
    # mcp 1.29.1 logs a full traceback whenever a client ends its session (DELETE) while its standalone
    # GET stream is open: terminate() closes the stream the SSE writer is still iterating. Drop just that.
    exc_type = record.exc_info[0] if record.exc_info else None
    return not (
        record.getMessage() == "Error in standalone SSE writer"
        and exc_type is not None
        and issubclass(exc_type, anyio.ClosedResourceError)
    )


class _Uvicorn(uvicorn.Server):
    """uvicorn that reports once it accepts connections and exits with status 0 on SIGINT/SIGTERM."""

    def __init__(
        self,
        config: uvicorn.Config,
        on_started: Callable[[], None],
        before_shutdown: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._before_shutdown = before_shutdown

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self._before_shutdown()
        await super().shutdown(sockets=sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises a caught SIGINT/SIGTERM after its graceful shutdown, turning a clean stop into
        # death by signal; here the signal only requests the shutdown.
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def serve_http(server: DemoServer, host: str, port: int, on_listening: Callable[[str], None]) -> None:
    """Serve until SIGINT/SIGTERM; ``on_listening(url)`` runs once the socket accepts connections."""
    logging.getLogger("mcp.server.streamable_http").addFilter(_is_benign_stream_close)
    sock = _bind(host, port)
    real_port = sock.getsockname()[1]
    url_host = f"[{host}]" if ":" in host else host
    url = f"http://{url_host}:{real_port}{MCP_PATH}"
    hosts = [f"{url_host}:{real_port}", f"localhost:{real_port}"]
    manager = StreamableHTTPSessionManager(
        app=server,
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=[f"http://{item}" for item in hosts],
        ),
    )

    class McpEndpoint:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await manager.handle_request(scope, receive, send)

    async def end_sessions() -> None:
        # Open SSE streams (a client's GET stream) only end when their MCP session does, and uvicorn would
        # otherwise wait for them until its graceful-shutdown timeout, then cut them off mid-response.
        # mcp 1.29.1 has no public way to end all sessions, hence the private registry (absent: no-op).
        for transport in list(getattr(manager, "_server_instances", {}).values()):
            with contextlib.suppress(Exception):
                await transport.terminate()

    app = Starlette(routes=[Route(MCP_PATH, endpoint=McpEndpoint())], lifespan=lambda _app: manager.run())
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="on",
        loop="asyncio",
        ws="none",
        # A last resort: end_sessions() normally closes every open stream before uvicorn drains connections.
        timeout_graceful_shutdown=1,
    )
    try:
        runner = _Uvicorn(config, on_started=lambda: on_listening(url), before_shutdown=end_sessions)
        asyncio.run(runner.serve(sockets=[sock]))
    finally:
        sock.close()
