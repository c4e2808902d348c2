"""Embedded demo MCP server: ``python -m purra_jupyter.demo [--http 127.0.0.1:PORT]``.

``build_server()`` returns the tool set (a low-level ``mcp.server.lowlevel.Server``) used by both transports;
``main(argv)`` is the command line. The MCP SDK is imported lazily, so refusing a bad command line is quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from purra_jupyter.demo.transports import EXIT_USAGE, LISTENING_PREFIX, READY_STDIO, main

if TYPE_CHECKING:
    from purra_jupyter.demo.server import BASE_TOOL_NAMES, EXTRA_TOOL, DemoServer, build_server

__all__ = [
    "BASE_TOOL_NAMES",
    "EXIT_USAGE",
    "EXTRA_TOOL",
    "LISTENING_PREFIX",
    "READY_STDIO",
    "DemoServer",
    "build_server",
    "main",
]
_FROM_SERVER = frozenset({"BASE_TOOL_NAMES", "EXTRA_TOOL", "DemoServer", "build_server"})


def __getattr__(name: str) -> Any:
    if name in _FROM_SERVER:
        from purra_jupyter.demo import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
