"""Opening sessions: ``connect()``, which opens one and adds it to the registry; the sessions a replay or a pool
opens for itself alone; and the imports a first connect needs, warmed when the extension loads."""

from __future__ import annotations

import importlib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._base.config import ServerConfig
from .._base.errors import McpSessionError
from .._base.wire import CONFIG_INVALID, EVENT_CONNECT, MEMORY, STDIO
from .._connection.connection import Connection, Deadline
from .._connection.questions import ELICITATION, SAMPLING, Answerer, Answers, code_answerer
from .._purra.bindings import Bindings
from .._purra.calls import Call, check_approve
from .._purra.catalog import Catalog
from .._purra.listing import build_catalog, check_digest
from .._transports.base import Transport
from .._transports.memory import MemoryTransport
from .._transports.stdio import StdioTransport
from .caller import AUTO_APPROVAL_NOTE, check_approval
from .session import McpSession, registry

if TYPE_CHECKING:
    import pandas as pd
    from mcp.server.lowlevel import Server
    from purra_mcp import McpToolLimits

    from .._ui.approval import PendingCall


# The default way of answering a server's question (``...``): a person in a kernel, nobody elsewhere.
IN_A_KERNEL: Any = ...


def connect(
    config: ServerConfig,
    *,
    approval: str = "prompt",
    limits: McpToolLimits | None = None,
    expect_digest: str | None = None,
    record: bool = False,
    sampling: str | Callable[[dict[str, Any]], Any] | None = IN_A_KERNEL,
    elicitation: str | Callable[[dict[str, Any]], Any] | None = IN_A_KERNEL,
) -> McpSession:
    """Open a monitored session: start or reach the server, initialize, check the protocol, list the
    tools with their verdicts. All of it ends within ``config.timeout`` seconds in all (``mcp_timeout``
    says what was reached, e.g. a page of the listing), not counting the kit's imports on a first connect.

    ``approval`` is the policy for tool calls: ``prompt`` (default), ``auto`` (every call of this
    session is approved; logged) or ``deny``. ``limits`` (purra-mcp's ``McpToolLimits``) may be lower
    than PurrA's defaults; its ``timeout_ms`` defaults to the config's timeout. ``expect_digest`` pins
    the catalog: connecting fails with ``mcp_digest_mismatch`` if the server's tools changed. ``record`` keeps the
    session's ``transcript``: every JSON-RPC message sent and received, from ``initialize`` on.

    ``sampling`` and ``elicitation`` answer what the server asks during a call (a message from your model, the
    person's input): ``"prompt"`` asks the person (the default in a kernel), a function ``fn(params) -> dict`` gets the
    request's params as JSON and returns the result as JSON (a ``CreateMessageResult``, an ``ElicitResult``), and
    ``None`` (the default elsewhere) refuses; the capability is declared only for a way given. The server's
    ``roots/list`` is answered with ``config.roots``.
    """
    if not isinstance(config, ServerConfig):
        raise McpSessionError(CONFIG_INVALID, "connect() takes a ServerConfig (see pj.ServerConfig, pj.load_servers).")
    check_approval(approval)
    if limits is not None:  # (not imported otherwise: a stdio server starts before the SDK is imported)
        from purra_mcp import McpToolLimits

        if not isinstance(limits, McpToolLimits):
            raise McpSessionError(CONFIG_INVALID, "limits must be a purra_mcp.McpToolLimits.")
    if expect_digest is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(expect_digest)):
        raise McpSessionError(CONFIG_INVALID, "expect_digest must be a 64-digit hex digest (Catalog.digest).")
    config = with_views_decided(config)
    if not isinstance(record, bool):
        raise McpSessionError(CONFIG_INVALID, "record must be True or False.")
    answers = Answers(sampling=answerer(SAMPLING, sampling), elicitation=answerer(ELICITATION, elicitation))
    connection = Connection(config, transport_for(config), limits=limits, record=record, answers=answers)
    with registry.reserving(config.name):
        deadline = Deadline(config.timeout, "connecting")
        connection.open(deadline)
        if approval == "auto":
            connection.log.add(EVENT_CONNECT, AUTO_APPROVAL_NOTE)
        failure: BaseException | None = None
        try:
            catalog = connection.request(lambda client: _first_catalog(connection, client), timeout=deadline)
            check_digest(catalog, expect_digest)
        except McpSessionError as exc:  # the first listing is part of the connect: a broken connection fails it
            failure = connection.errors.connect_failure(exc, deadline)
        except BaseException as exc:
            failure = exc
        if failure is not None:  # (raised outside the handler, as ``Connection.open`` raises)
            connection.close(f"connect failed: {failure}")
            raise failure
        session = McpSession(connection, Bindings(connection, catalog), approval=approval)
        registry.add(session)
    return session


def answerer(kind: str, way: str | Callable[[dict[str, Any]], Any] | None) -> Answerer | None:
    """How ``kind`` of question is answered, from what ``connect`` was given."""
    if way is IN_A_KERNEL:
        from .._ui.records import in_kernel

        way = "prompt" if in_kernel() else None
    if way is None:
        return None
    if way == "prompt":
        from .._ui.questions import prompt_answerer

        return prompt_answerer(kind)
    if callable(way):
        return code_answerer(way)
    raise McpSessionError(
        CONFIG_INVALID, f"{kind} must be 'prompt', a function of the request's params (returning JSON), or None."
    )


def with_views_decided(config: ServerConfig) -> ServerConfig:
    """``config`` with ``views`` True or False: left to the session (None), views are on where outputs reach a
    notebook frontend (a kernel: JupyterLab, Notebook 7), where the labextension draws them."""
    if config.views is not None:
        return config
    from .._ui.records import in_kernel

    return config.with_views(in_kernel())


def transport_for(config: ServerConfig) -> Transport:
    """The transport a config names: a process on pipes, Streamable HTTP (its module imports the SDK: a first
    connect's import is not the server's time, so it comes before the connect's deadline) or a server in memory."""
    if config.transport == STDIO:
        return StdioTransport(config)
    if config.transport == MEMORY:
        return MemoryTransport(cast("Server[Any, Any]", config.server))
    from .._transports.http import StreamableHttpTransport

    if config.oauth is not None and config.oauth.authorize is None:
        from .._ui.authorization import ask

        return StreamableHttpTransport(config, ask)
    return StreamableHttpTransport(config)


async def _first_catalog(connection: Connection, client: Any) -> Catalog:
    catalog = await build_catalog(connection, client)
    connection.mark_current(catalog.revision)
    connection.check_usable()  # a connection that failed while listing (garbage on stdout) fails connect
    return catalog


# What a first connect imports that takes seconds (``import mcp`` alone does, here): warmed in a thread of its own
# when the extension loads, so that it is usually done before the first %mcp_connect.
WARM_MODULES = ("mcp", "mcp.client.session", "purra_mcp", "purra_jupyter._transports.http")
WARM_THREAD = "purra-jupyter-warm-up"


def warm_up(modules: tuple[str, ...] = WARM_MODULES) -> threading.Thread:
    """Import ``modules`` in a daemon thread; a connect meanwhile waits for the module it needs (Python's import
    lock) instead of importing it again. A failure is logged, and the connect imports as it would have."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as exc:
                logging.getLogger("purra_jupyter").warning(
                    "warming up: importing %s failed (%s: %s); the first connect imports it", name,
                    exc.__class__.__name__, exc,
                )  # fmt: skip
                return

    thread = threading.Thread(target=run, name=WARM_THREAD, daemon=True)
    thread.start()
    return thread


def replay(
    transcript: str | Path, config: ServerConfig, *, approve: bool | None = None, timeout: float | None = None
) -> pd.DataFrame | PendingCall:
    """Connect to ``config``'s server and replay a saved transcript's tool calls on it (``McpSession.replay``): a
    server's later version, or another server, against what was recorded. The session closes once the replay
    settled: at once when decided in code (``approve``), else once a person decided and it ran."""
    check_approve(approve)
    work = lambda opened: opened[0].replay(transcript, approve=approve, timeout=timeout)  # noqa: E731
    outcome: pd.DataFrame | PendingCall = on_own_sessions([config], work, "replay")
    return outcome


def on_own_sessions(configs: Sequence[ServerConfig], work: Callable[[list[McpSession]], Any], what: str) -> Any:
    """``work`` on sessions opened for it alone (one per config, in order). They close once it settled: at once when it
    failed or was decided in code; when its call waits for a person (the call itself came back), once that call
    settles (decided, run, or void), whatever decided it."""
    opened: list[McpSession] = []
    try:
        for config in configs:
            opened.append(connect(config))
        outcome = work(opened)
    except BaseException:
        for session in opened:
            session.close(f"{what} failed")
        raise

    def close(_: object = None) -> None:
        for session in opened:
            session.close(f"{what} done")

    if isinstance(outcome, Call):
        outcome.when_settled(close)
    else:
        close()
    return outcome


__all__ = ["connect", "on_own_sessions", "replay", "transport_for", "warm_up", "with_views_decided"]
