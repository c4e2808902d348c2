"""purra-jupyter: evaluate the tools of any MCP server from a notebook, under PurrA's rules.

Importing this package is cheap: the MCP SDK is imported on the first connect.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from .config import ServerConfig, load_servers
from .errors import McpSessionError
from .session import McpSession, connect, sessions

try:
    __version__ = version("purra-jupyter")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0+unknown"

__all__ = [
    "McpSession",
    "McpSessionError",
    "ServerConfig",
    "__version__",
    "connect",
    "load_servers",
    "sessions",
]
