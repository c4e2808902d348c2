"""What the test servers over stdio share (they import it from beside them): serving a low-level server on this
process's stdin and stdout until stdin closes."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def serve(server: Server[Any, Any]) -> None:
    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
