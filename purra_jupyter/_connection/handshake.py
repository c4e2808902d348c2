"""The handshake: ``initialize``, and for a server that speaks only the protocol without it, ``server/discover``, so
that the refusal names the versions it speaks; purra-mcp's monitor takes the version offered, or refuses it and
the session opens beside the contract (an older era's)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import anyio

from .._base.session_log import DETAIL_CHARS, SessionLog
from .._base.untrusted import json_within
from .._base.visible import one_line
from .._base.wire import EVENT_INITIALIZE, PROTOCOL_UNSUPPORTED
from .seam import DISCOVER, DISCOVER_KEYS, MODERN_ERA, MODERN_ONLY_CODES, ErrorSeam, versions_in
from .tracking import Deadline

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import InitializeResult
    from purra_mcp import McpCatalogMonitor

# The longest a connect waits for ``server/discover`` after ``initialize`` was refused (at most half of what is left of
# its deadline, so that ending the server fits in it too).
DISCOVER_SECONDS = 5.0


async def initialize(client: ClientSession, deadline: Deadline, log: SessionLog, errors: ErrorSeam) -> InitializeResult:
    """``initialize``. A server that answers it with method not found or -32022 speaks only protocol 2026-07-28
    (no ``initialize``): it is asked ``server/discover`` for its versions, on the same connection, and refused
    by name."""
    from mcp.shared.exceptions import McpError

    try:
        return await client.initialize()
    except McpError as error:
        if error.error.code not in MODERN_ONLY_CODES:
            raise
        refused = error.error
    log.add(EVENT_INITIALIZE, f"initialize answered with error {refused.code}: asking {DISCOVER}")
    discovered = await discover(client, min(DISCOVER_SECONDS, deadline.remaining() / 2), log)
    raise errors.modern_only(refused, discovered)  # outside the handler: no chain to the server's words


async def discover(client: ClientSession, seconds: float, log: SessionLog) -> list[str] | None:
    """The versions the server's ``server/discover`` lists within ``seconds`` (``None``: no answer, an error,
    nothing listed); the log says what it answered. A request left unanswered is cancelled on the server when
    the wait ends."""
    from mcp import types
    from mcp.shared.exceptions import McpError

    meta = {"io.modelcontextprotocol/protocolVersion": MODERN_ERA, "io.modelcontextprotocol/clientCapabilities": {}}
    request = types.Request[dict[str, Any], str](method=DISCOVER, params={"_meta": meta})
    with anyio.move_on_after(seconds):
        try:  # (a request outside the SDK's own union: it sends any request model)
            answer = await client.send_request(cast(Any, request), types.Result)
        except McpError as error:
            log.add(EVENT_INITIALIZE, f"{DISCOVER} answered with error {error.error.code}")
            return None
        except ValueError:
            log.add(EVENT_INITIALIZE, f"{DISCOVER} answered with something that is not a result")
            return None
        result = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        listed = versions_in(result, DISCOVER_KEYS)
        said = one_line(json_within(result, 4 * DETAIL_CHARS), DETAIL_CHARS)
        log.add(EVENT_INITIALIZE, f"{DISCOVER} answered {said}")
        return listed
    log.add(EVENT_INITIALIZE, f"{DISCOVER} not answered within {seconds:g} s")
    return None


def accept_protocol(monitor: McpCatalogMonitor, offered: str, errors: ErrorSeam) -> bool:
    """Whether purra-mcp's monitor takes the version the server offered. A version the MCP SDK negotiated (it
    refuses the others in ``initialize``) that purra-mcp refuses, an older era's (2024-11-05, 2025-03-26), fails
    nothing: the session opens beside the contract, its tools explored on the raw path. Any other refusal raises."""
    from purra.errors import CodedAgentCoreError

    try:
        monitor.accept_protocol_version(offered)
    except CodedAgentCoreError as exc:
        if exc.code == PROTOCOL_UNSUPPORTED:
            return False
        failure = errors.translate(exc, connecting=True)
    else:
        return True
    raise failure  # outside the handler: its chain holds nothing the server said


__all__ = ["DISCOVER_SECONDS", "accept_protocol", "discover", "initialize"]
