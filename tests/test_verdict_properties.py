"""Property: over generated schemas, a tool is callable exactly when purra-mcp binds it, and every
refusal comes with a specific reason."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_connected_server_and_client_session
from purra.contracts import ToolPolicy
from purra_mcp import McpAdapterError, McpCatalogMonitor, McpToolBinding, McpToolLimits, discover_mcp_tools

from purra_jupyter._purra.listing import verdict_of
from purra_jupyter._purra.reasons import DRAFT_2020_12, FALLBACK_REASON

LIMITS = McpToolLimits()
NAMES = st.sampled_from(["a", "b", "c"])
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([2**60, -(2**60), 1.5, 1e300, "x", ""]),
    st.lists(st.integers(0, 2), max_size=2),
)
TYPES = st.sampled_from(["string", "number", "integer", "boolean", "null", "array", "object", ["string", "null"],
                         [], ["string", "string"], "float", 3])  # fmt: skip
LEAF = st.fixed_dictionaries(
    {},
    optional={
        "type": TYPES,
        "description": st.one_of(st.text(max_size=3), st.none(), st.just(1)),
        "title": st.text(max_size=3),
        "minLength": st.one_of(st.integers(-1, 4), st.none()),
        "maxLength": st.integers(0, 4),
        "minimum": VALUES,
        "maximum": VALUES,
        "minItems": st.integers(-1, 3),
        "maxItems": st.integers(0, 3),
        "enum": st.lists(VALUES, max_size=3),
        "const": VALUES,
        "default": VALUES,
        "format": st.just("uri"),
        "pattern": st.just("^a"),
        "$ref": st.just("#/$defs/x"),
        "uniqueItems": st.one_of(st.booleans(), st.just("yes")),
        "nullable": st.booleans(),
    },
)


def _extend(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"type": st.sampled_from(["object", "array", ["object", "null"]])},
        optional={
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "required": st.one_of(st.lists(NAMES, max_size=3), st.just("a")),
            "additionalProperties": st.one_of(st.booleans(), children, st.none()),
            "items": children,
            "anyOf": st.lists(children, max_size=2),
            "oneOf": st.lists(children, max_size=2),
            "$defs": st.dictionaries(NAMES, children, max_size=1),
        },
    )


SCHEMAS = st.recursive(LEAF, _extend, max_leaves=6)
ROOTS = st.builds(
    lambda body, root: {**body, **root},
    SCHEMAS,
    st.fixed_dictionaries(
        {"type": st.sampled_from(["object", "object", "object", "array"])},
        optional={"$schema": st.sampled_from([DRAFT_2020_12, "http://json-schema.org/draft-07/schema#"])},
    ),
)


async def list_and_bind(input_schema: dict, output_schema: dict | None, **extra: Any) -> tuple[types.Tool, str | None]:
    """Serve one tool in memory; return it as the client lists it, and the code purra-mcp refuses to bind it with
    (``None`` when it binds it)."""
    server: Server[Any] = Server("generated")

    @server.list_tools()
    async def tools() -> list[types.Tool]:
        return [types.Tool(name="t", inputSchema=input_schema, outputSchema=output_schema, **extra)]

    monitor = McpCatalogMonitor()
    async with create_connected_server_and_client_session(server, message_handler=monitor.on_message) as client:
        monitor.accept_protocol_version(types.LATEST_PROTOCOL_VERSION)
        [listed] = (await client.list_tools()).tools
        binding = McpToolBinding("t", ToolPolicy(mode="read", title="t", risk_level="read"), None)
        try:
            await discover_mcp_tools(client, "generated", {"t": binding}, monitor=monitor, limits=LIMITS)
        except McpAdapterError as error:
            assert error.code in {"mcp_schema_unsupported", "mcp_tool_unsupported"}, error.code
            return listed, error.code
        return listed, None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(input_schema=ROOTS, output_schema=st.one_of(st.none(), ROOTS))
def test_generated_schemas_get_purras_verdict_with_specific_reasons(input_schema: dict, output_schema: Any) -> None:
    listed, refusal = anyio.run(list_and_bind, input_schema, output_schema)
    verdict = verdict_of(listed, LIMITS)
    accepted = refusal is None
    assert verdict.refusal == refusal
    assert verdict.callable == accepted
    if not accepted:
        assert verdict.reasons
        assert FALLBACK_REASON not in " ".join(verdict.reasons), verdict.reasons


def _nested(depth: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


WIDE = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x"} for i in range(1100)}}
BIG = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 1000} for i in range(70)}}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, "inputSchema.$schema: declares"),
        ({"type": "array", "items": {"type": "string"}}, 'inputSchema.type: the root type is "array"'),
        ({"type": "object", "properties": {"a": {"enum": [2**60]}}}, "inputSchema.properties.a.enum[0]: "),
        ({"type": "object", "properties": {"a": {"type": "number", "maximum": 1e300}}}, "outside ±(2^53−1)"),
        (_nested(40), "nested"),
        (WIDE, "schema nodes, over 4096"),
        (BIG, "bytes, over the 65536-byte limit"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, "which takes true or false — use true"),
        ({"type": "object", "properties": {"a": {"type": "string", "description": None}}}, "description: null"),
        ({"type": "object", "properties": {"a": {"type": "string", "format": "uri"}}}, '"format" is outside'),
        ({"type": "object", "properties": {"a: b": {"format": "uri"}}}, 'inputSchema.properties.a: b.format: "format"'),
        ({"type": "object", "properties": {"a": {"type": "float"}}}, "a.type: unsupported type(s): float — fix"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}, 'inline "#/$defs/a" here'),
        ({"type": "object", "properties": {"a": {"type": ["string", "null"], "default": None}}}, "default"),
    ],
)
def test_each_kind_of_refusal_has_its_reason_and_matches_purra(schema: dict, reason: str) -> None:
    listed, refusal = anyio.run(list_and_bind, schema, None)
    verdict = verdict_of(listed, LIMITS)
    accepted = refusal is None
    assert verdict.refusal == refusal
    assert not accepted and not verdict.callable
    assert any(reason in text for text in verdict.reasons), verdict.reasons
    assert FALLBACK_REASON not in " ".join(verdict.reasons)


def test_task_support_required_is_refused_with_its_reason() -> None:
    execution = types.ToolExecution(taskSupport="required")
    listed, refusal = anyio.run(lambda: list_and_bind({"type": "object"}, None, execution=execution))
    verdict = verdict_of(listed, LIMITS)
    accepted = refusal is None
    assert verdict.refusal == refusal
    assert not accepted
    assert not verdict.callable and verdict.input_verdict == "compatible"
    assert verdict.reasons == (
        "execution.taskSupport: 'required' — PurrA calls a tool directly and waits for its result, never as a task: "
        "run it on the raw path, outside the PurrA contract, with s.call(tool, args, raw=True, task=True); "
        "or (the server's author) make tasks optional",
    )
