"""purra-jupyter: evaluate the tools of any MCP server from a notebook, under PurrA's rules.

Importing this package costs next to nothing: each public name is loaded on first use (``pj.connect``), the MCP
SDK on the first connect or in a background thread that ``%load_ext purra_jupyter`` starts. The embedded demo
server (``python -m purra_jupyter.demo``, a subpackage) so imports none of the client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from .batches import assert_checks
    from .bindings import allow_any_scope
    from .config import OAuth, ServerConfig, load_servers
    from .errors import McpSessionError
    from .pool import evaluate
    from .session import McpSession, connect, replay, sessions

# Each public name and the module that defines it.
_PUBLIC = {
    "McpSession": "session",
    "McpSessionError": "errors",
    "OAuth": "config",
    "ServerConfig": "config",
    "allow_any_scope": "bindings",
    "assert_checks": "batches",
    "connect": "session",
    "evaluate": "pool",
    "load_servers": "config",
    "replay": "session",
    "sessions": "session",
}


def __getattr__(name: str) -> Any:
    """A public name, loaded (and kept) on first use."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value: Any = version("purra-jupyter")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
            value = "0+unknown"
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext purra_jupyter``: register the ``%mcp_*`` magics, and start importing the MCP SDK in a
    background thread (the cell does not wait for it)."""
    from .magics import McpMagics
    from .session import warm_up

    ipython.register_magics(McpMagics(ipython))
    warm_up()


__all__ = [
    "McpSession",
    "McpSessionError",
    "OAuth",
    "ServerConfig",
    "__version__",
    "allow_any_scope",
    "assert_checks",
    "connect",
    "evaluate",
    "load_servers",
    "replay",
    "sessions",
]
