"""A server's tools listed under purra-mcp's limits, each with the verdict purra-mcp would reach on binding it.

The decision "could a PurrA host bind this tool?" is purra-mcp's own code (pinned 1.0.3): its paged listing rules and
its schema contract (through ``purra_adapter``); ``reasons`` says why in words.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._base.app_rules import tool_app
from .._base.errors import McpSessionError
from .._base.visible import look_alikes
from .._base.wire import (
    BINDING_INVALID,
    CATALOG_STALE,
    DIGEST_MISMATCH,
    EVENT_LIST,
    EVENT_LIST_CHANGED,
    PROTOCOL_UNSUPPORTED,
)
from .._connection import purra_adapter
from .._connection.connection import Connection

if TYPE_CHECKING:
    from mcp import ClientSession, types
    from purra_mcp import McpToolLimits

from .catalog import COMPATIBLE, NONE, UNSUPPORTED, Catalog, ToolVerdict
from .reasons import TASK_REQUIRED_REASON, protocol_reason, schema_reasons

MAX_RELISTS = 3  # list_changed while listing: list again at most this often, then give up (stale)
_SERVER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # purra-mcp's rule for remote tool names


# --- purra-mcp's own rules (through purra_adapter: the same code a PurrA host runs on the same listing) ---


def verdict_of(tool: types.Tool, limits: McpToolLimits, protocol_refused: str | None = None) -> ToolVerdict:
    """The verdict purra-mcp would reach on binding ``tool``, with a reason per problem. The schema codes are
    purra-mcp's own; its name, description and task checks are inline in its discovery, so repeated here. On a
    session whose protocol PurrA refuses (``protocol_refused`` says why) no tool is callable, whatever its schema."""
    listing = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    description = tool.description or ""
    task_support = tool.execution.taskSupport if tool.execution is not None else None
    input_refusal = purra_adapter.schema_refusal(tool.inputSchema, limits)
    output_refusal = None if tool.outputSchema is None else purra_adapter.schema_refusal(tool.outputSchema, limits)
    input_ok, output_ok = input_refusal is None, output_refusal is None
    reasons: list[str] = []
    codes: list[str] = []  # in the order discover_mcp_tools checks (the protocol is its monitor's, before all)
    if protocol_refused is not None:
        codes.append(PROTOCOL_UNSUPPORTED)
        reasons.append(protocol_reason(protocol_refused))
    if not _SERVER_NAME.fullmatch(tool.name):
        codes.append(BINDING_INVALID)
        reasons.append("name: not a name PurrA binds — use 1 to 128 letters, digits, '_', '.' or '-'")
    size = len(description.encode("utf-8"))
    if size > limits.max_description_bytes:
        codes.append("mcp_catalog_limit_exceeded")
        reasons.append(f"description: {size} bytes, over the {limits.max_description_bytes}-byte limit — shorten it")
    if task_support == "required":
        codes.append("mcp_tool_unsupported")
        reasons.append(TASK_REQUIRED_REASON)
    if input_refusal is not None:
        codes.append(input_refusal)
        reasons.extend(schema_reasons(tool.inputSchema, "inputSchema", limits))
    if output_refusal is not None:
        codes.append(output_refusal)
        reasons.extend(schema_reasons(tool.outputSchema, "outputSchema", limits))
    sizes = [_safe_bytes(schema) for schema in (tool.inputSchema, tool.outputSchema) if schema is not None]
    return ToolVerdict(
        name=tool.name,
        title=tool.title or (tool.annotations.title if tool.annotations else None),
        description=description,
        input_schema=tool.inputSchema,
        output_schema=tool.outputSchema,
        annotations=tool.annotations.model_dump(exclude_none=True) if tool.annotations else {},
        task_support=task_support,
        input_verdict=COMPATIBLE if input_ok else UNSUPPORTED,
        output_verdict=NONE if tool.outputSchema is None else COMPATIBLE if output_ok else UNSUPPORTED,
        callable=not reasons and input_ok and output_ok,
        reasons=tuple(reasons),
        refusal=codes[0] if codes else None,
        schema_bytes=sum(sizes),
        listing=listing,
        app=tool_app(listing),
    )


def _safe_bytes(value: Any) -> int:
    try:
        return purra_adapter.json_bytes(value)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return 0


# --- listing ------------------------------------------------------------------------------------


async def list_tools(client: ClientSession, limits: McpToolLimits) -> list[types.Tool] | None:
    """Page through ``tools/list`` under purra-mcp's limits and codes; ``None`` when the server has no
    tools capability.

    A copy of the loop inside purra-mcp's ``discover_mcp_tools``, which cannot serve here: it needs the bound names
    before it lists, returns only the bound tools (never the listed ones) and stops at the first it refuses, where
    the catalog shows every tool with its verdict. purra-mcp exposes no listing or cursor check of its own, so the
    loop runs on its page request, byte count, limits and codes (``purra_adapter``), and its cursor rule is
    ``purra_adapter.cursor_refused``; tests compare each failure's code with ``discover_mcp_tools``'s."""
    capabilities = client.get_server_capabilities()
    if capabilities is None or capabilities.tools is None:
        return None
    seen: set[str] = set()
    cursors: set[str] = set()
    tools: list[types.Tool] = []
    cursor = None
    total = 0
    fail = purra_adapter.fail
    for _ in range(limits.max_pages):
        result = await purra_adapter.list_page(client, cursor, limits)
        try:
            total += purra_adapter.json_bytes(result.model_dump(mode="json", by_alias=True, exclude_none=True))
        except (ValueError, TypeError, OverflowError, RecursionError):
            fail("mcp_catalog_invalid")
        if total > limits.max_catalog_bytes or len(seen) + len(result.tools) > limits.max_tools:
            fail("mcp_catalog_limit_exceeded")
        for tool in result.tools:
            if tool.name in seen:
                fail("mcp_name_conflict")
            seen.add(tool.name)
            tools.append(tool)
        cursor = result.nextCursor
        if cursor is None:
            return tools
        if purra_adapter.cursor_refused(cursor, cursors):
            fail("mcp_pagination_invalid")
        cursors.add(cursor)
    fail("mcp_catalog_limit_exceeded")


async def build_catalog(connection: Connection, client: ClientSession) -> Catalog:
    """List until the catalog holds still: a ``tools/list_changed`` during the listing lists again."""
    for attempt in range(MAX_RELISTS + 1):
        revision = connection.revision
        listed = await list_tools(client, connection.limits)
        if connection.revision == revision:
            break
        connection.log.add(EVENT_LIST_CHANGED, f"tools changed while listing; listing again ({attempt + 1})")
    else:
        raise McpSessionError(
            CATALOG_STALE, f"Server '{connection.name}' kept changing its tools while they were listed."
        )
    refused = connection.protocol_refused
    notes = (
        "The server does not advertise the tools capability: it has no tools." if listed is None else "",
        f"Not callable under PurrA: {refused}; explore the tools on the raw path." if refused is not None else "",
    )
    note = " ".join(filter(None, notes))
    verdicts = sorted((verdict_of(tool, connection.limits, refused) for tool in listed or ()), key=lambda t: t.name)
    alikes = look_alikes(verdict.name for verdict in verdicts)
    tools = tuple(replace(verdict, look_alikes=alikes.get(verdict.name, ())) for verdict in verdicts)
    callable_count = sum(t.callable for t in tools)
    beside = f"; {refused}" if refused is not None else ""
    connection.log.add(EVENT_LIST, f"{len(tools)} tools, {callable_count} callable (revision {revision}){beside}")
    return Catalog(connection.name, connection.hello.protocol_version, tools, revision, note)


def check_digest(catalog: Catalog, expected: str | None) -> None:
    if expected is not None and expected.lower() != catalog.digest:
        raise McpSessionError(
            DIGEST_MISMATCH,
            f"The catalog of '{catalog.server}' changed: expected digest {expected}, got {catalog.digest}.",
        )


__all__ = ["MAX_RELISTS", "build_catalog", "check_digest", "list_tools", "verdict_of"]
