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

    from ._base.app_rules import ToolApp
    from ._base.charts import Chart
    from ._base.config import OAuth, ServerConfig, load_servers
    from ._base.errors import McpSessionError
    from ._base.session_log import LogEntry, SessionLog
    from ._base.transcript import Transcript, TranscriptMessage
    from ._beside.offerings import Offerings, PromptMessages, ResourceContents
    from ._beside.views import AppView
    from ._evaluation.batches import EvaluationSummary, assert_checks
    from ._evaluation.replays import ReplaySummary
    from ._purra.bindings import BindingEntry, Bindings, WriteTerms, allow_any_scope
    from ._purra.catalog import Catalog, SharedReason, ToolVerdict
    from ._purra.envelope import Envelope, RawResult
    from ._session.opening import connect, replay
    from ._session.pool import Engine, evaluate
    from ._session.session import McpSession, sessions
    from ._ui.approval import PendingCall
    from ._ui.forms import SchemaForm
    from ._ui.offering_forms import OfferingForm
    from ._ui.status import SessionStatus
    from ._ui.views import ViewedCall

# Each public name and the module that defines it: every type a user gets back from the API is here.
_PUBLIC = {
    "AppView": "_beside.views",
    "BindingEntry": "_purra.bindings",
    "Bindings": "_purra.bindings",
    "Catalog": "_purra.catalog",
    "Chart": "_base.charts",
    "Engine": "_session.pool",
    "Envelope": "_purra.envelope",
    "EvaluationSummary": "_evaluation.batches",
    "LogEntry": "_base.session_log",
    "McpSession": "_session.session",
    "McpSessionError": "_base.errors",
    "OAuth": "_base.config",
    "OfferingForm": "_ui.offering_forms",
    "Offerings": "_beside.offerings",
    "PendingCall": "_ui.approval",
    "PromptMessages": "_beside.offerings",
    "RawResult": "_purra.envelope",
    "ReplaySummary": "_evaluation.replays",
    "ResourceContents": "_beside.offerings",
    "SchemaForm": "_ui.forms",
    "ServerConfig": "_base.config",
    "SessionLog": "_base.session_log",
    "SessionStatus": "_ui.status",
    "SharedReason": "_purra.catalog",
    "ToolApp": "_base.app_rules",
    "ToolVerdict": "_purra.catalog",
    "Transcript": "_base.transcript",
    "TranscriptMessage": "_base.transcript",
    "ViewedCall": "_ui.views",
    "WriteTerms": "_purra.bindings",
    "allow_any_scope": "_purra.bindings",
    "assert_checks": "_evaluation.batches",
    "connect": "_session.opening",
    "evaluate": "_session.pool",
    "load_servers": "_base.config",
    "replay": "_session.opening",
    "sessions": "_session.session",
}


# Modules still reachable by the name they had before the package had rooms (``from purra_jupyter import runner``):
# the one event loop, which tools that watch the kit (its tasks, its thread) look at. Not part of ``__all__``.
_MODULES = {"runner": "_base.runner"}


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
    elif name in _MODULES:
        value = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """``%load_ext purra_jupyter``: register the ``%mcp_*`` magics, and start importing the MCP SDK in a
    background thread (the cell does not wait for it)."""
    from ._session.opening import warm_up
    from .magics import MAGICS, show_frames

    ipython.register_magics(*(magics(shell=ipython) for magics in MAGICS))
    show_frames(ipython)
    warm_up()


__all__ = [
    "AppView",
    "BindingEntry",
    "Bindings",
    "Catalog",
    "Chart",
    "Engine",
    "Envelope",
    "EvaluationSummary",
    "LogEntry",
    "McpSession",
    "McpSessionError",
    "OAuth",
    "OfferingForm",
    "Offerings",
    "PendingCall",
    "PromptMessages",
    "RawResult",
    "ReplaySummary",
    "ResourceContents",
    "SchemaForm",
    "ServerConfig",
    "SessionLog",
    "SessionStatus",
    "SharedReason",
    "ToolApp",
    "ToolVerdict",
    "Transcript",
    "TranscriptMessage",
    "ViewedCall",
    "WriteTerms",
    "__version__",
    "allow_any_scope",
    "assert_checks",
    "connect",
    "evaluate",
    "load_servers",
    "replay",
    "sessions",
]
