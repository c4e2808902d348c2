"""An MCP server object in this process, reached over memory streams: no process, no pipe, no network.

For a server a notebook or a test builds itself (the SDK's low-level ``Server``): the kit's whole session (the
monitor, the listing, bindings, calls, deadlines and cancellation) runs as it does over stdio or HTTP, each message
of the server's through the connection's ``Ingress`` as a line would be; only the bytes on a wire are missing. The
server runs as a task on the runner's loop, and leaving ``open`` ends it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from .._base.wire import MEMORY
from .base import RequestId, Streams, TransportContext

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server


class MemoryTransport:
    """The SDK's own in-memory streams (``mcp.shared.memory``) to ``server``, served for as long as it is open."""

    kind = MEMORY
    stderr = ""  # (the server writes to this process's own stderr, if anywhere)

    def __init__(self, server: Server[Any, Any]) -> None:
        self._server = server

    @asynccontextmanager
    async def open(self, context: TransportContext) -> AsyncIterator[Streams]:
        from mcp.shared.memory import create_client_server_memory_streams

        server = self._server
        async with create_client_server_memory_streams() as ((from_server, to_server), (read, write)):
            async with anyio.create_task_group() as tasks, context.ingress.admit_all(from_server) as admitted:
                tasks.start_soon(lambda: server.run(read, write, server.create_initialization_options()))
                try:
                    yield admitted, to_server
                finally:
                    tasks.cancel_scope.cancel()

    async def ended(self) -> None:
        """(Nothing comes after the server's task.)"""

    def drop(self, request_id: RequestId) -> None:
        """(A request has no exchange of its own in memory.)"""

    async def forget_authorization(self) -> None:
        """(An in-process server takes no authorization.)"""


__all__ = ["MemoryTransport"]
