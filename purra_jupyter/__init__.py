"""purra-jupyter: evaluate the tools of any MCP server from a notebook, under PurrA's rules.

Importing this package is cheap: the MCP SDK is imported on the first connect.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .bindings import allow_any_scope
from .config import OAuth, ServerConfig, load_servers
from .errors import McpSessionError
from .session import McpSession, connect, sessions

try:
    __version__ = version("purra-jupyter")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0+unknown"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext purra_jupyter``: register the ``%mcp_*`` magics (the MCP SDK stays unloaded)."""
    from .magics import McpMagics

    ipython.register_magics(McpMagics(ipython))


__all__ = [
    "McpSession",
    "McpSessionError",
    "OAuth",
    "ServerConfig",
    "__version__",
    "allow_any_scope",
    "connect",
    "load_servers",
    "sessions",
]
