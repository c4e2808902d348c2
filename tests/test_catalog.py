"""Catalog verdicts, limits, digests and bindings, checked against purra-mcp's own decisions."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import pytest
from conftest import assert_verdicts_match_purra, demo_in_memory, purra_refusal, raw_config, read_binding, wait_until
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import Server
from purra.contracts import ToolPolicy
from purra_mcp import McpAdapterError, McpCatalogMonitor, McpToolBinding, McpToolLimits, discover_mcp_tools

import purra_jupyter as pj
from purra_jupyter._base.egress import cell_text
from purra_jupyter._base.markup import escape
from purra_jupyter._base.wire import CATALOG_MIME
from purra_jupyter._purra.catalog import (
    CALLABLE,
    CALLABLE_UNDER,
    DROPPED,
    FRAME_COLUMNS,
    NOT_CALLABLE,
    REASONS_MIN_WIDTH,
    SHARED_BELOW,
    SHARED_BY,
    catalog_labels,
    default_local_name,
)

DEMO_COMPATIBLE = {
    "search_documents", "get_document", "echo", "add", "sleep", "tiny_image", "fail", "toggle_extra_tool",
    "call_counts", "list_notes", "add_note", "delete_note",
}  # fmt: skip


def purra_accepts(session: pj.McpSession, tool: str) -> bool:
    return purra_refusal(session, tool) is None


@pytest.fixture
def demo() -> Iterator[pj.McpSession]:
    with pj.connect(demo_in_memory()) as session:
        yield session


def test_demo_catalog_verdicts_reasons_and_frame(demo: pj.McpSession) -> None:
    catalog = demo.catalog
    assert {tool.name for tool in catalog.tools if tool.callable} == DEMO_COMPATIBLE
    greet = catalog["greet"]
    assert (greet.input_verdict, greet.output_verdict, greet.callable) == ("unsupported", "none", False)
    [reason] = greet.reasons
    assert reason.startswith("inputSchema.properties.punctuation.default: ")
    assert "document the default in the description" in reason
    assert catalog["search_documents"].output_verdict == "compatible"

    frame = catalog.to_frame()
    assert list(frame.columns) == FRAME_COLUMNS
    assert frame.index.name == "tool"
    assert frame.loc["echo", "read_only_hint"] is True or frame.loc["echo", "read_only_hint"] == True  # noqa: E712
    assert frame.loc["greet", "reasons"] == greet.reasons[0] and isinstance(frame.loc["greet", "reasons"], str)
    assert frame.loc["greet", "refusal"] == greet.refusal == "mcp_schema_unsupported"
    assert frame.loc["search_documents", "reasons"] == "" and frame.loc["search_documents", "refusal"] is pd.NA
    assert frame.loc["echo", "schema_bytes"] > 0
    # bindable_as: the profile's verdict and the kind the server's hints suggest (they grant nothing)
    bindable = frame["bindable_as"]
    assert (bindable["echo"], bindable["add_note"], bindable["delete_note"], bindable["greet"]) == (
        "read", "write", "write", "—",
    )  # fmt: skip
    assert set(bindable[frame["callable"]]) == {"read", "write"} and set(bindable[~frame["callable"]]) == {"—"}
    assert_verdicts_match_purra(demo)


def test_a_256_tool_catalog_over_many_pages() -> None:
    with pj.connect(raw_config("big", "--tools", "256", "--page-size", "10")) as session:
        assert session.state == "ready"
        assert len(session.catalog) == 256
        assert session.catalog.tools[0].name == "tool_000" and session.catalog.tools[-1].name == "tool_255"
        assert all(tool.callable for tool in session.catalog.tools)
        assert purra_accepts(session, "tool_255")


@asynccontextmanager
async def raw_client(args: list[str]) -> Any:
    params = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).parent / "servers" /
                                                                     "raw_server.py"), *args])  # fmt: skip
    async with stdio_client(params) as (read, write):
        monitor = McpCatalogMonitor()
        async with ClientSession(read, write, message_handler=monitor.on_message) as client:
            result = await client.initialize()
            monitor.accept_protocol_version(result.protocolVersion)
            yield client, monitor


def purra_listing_code(args: list[str], limits: McpToolLimits) -> str | None:
    """The code purra-mcp's own discovery gives on this server (binding its first tool)."""

    async def run() -> str | None:
        async with raw_client(args) as (client, monitor):
            try:
                await discover_mcp_tools(client, "raw", {"tool_000": read_binding("tool_000")}, monitor=monitor,
                                         limits=limits)  # fmt: skip
            except McpAdapterError as error:
                return error.code
        return None

    return anyio.run(run)


@pytest.mark.parametrize(
    ("args", "limits", "code"),
    [
        (["--tools", "257", "--page-size", "100"], McpToolLimits(), "mcp_catalog_limit_exceeded"),
        (["--tools", "33", "--page-size", "1"], McpToolLimits(), "mcp_catalog_limit_exceeded"),
        (["--tools", "200", "--description-bytes", "6000"], McpToolLimits(), "mcp_catalog_limit_exceeded"),
        (["--tools", "6"], McpToolLimits(max_tools=5), "mcp_catalog_limit_exceeded"),
        (["--tools", "4", "--page-size", "1", "--cursor", "repeat"], McpToolLimits(), "mcp_pagination_invalid"),
        (["--tools", "4", "--page-size", "1", "--cursor", "long"], McpToolLimits(), "mcp_pagination_invalid"),
        (["--tools", "4", "--page-size", "1", "--cursor", "empty"], McpToolLimits(), "mcp_pagination_invalid"),
        (["--tools", "3", "--duplicate-name"], McpToolLimits(), "mcp_name_conflict"),
    ],
)
def test_each_listing_limit_fails_connect_with_purras_code(args: list[str], limits: McpToolLimits, code: str) -> None:
    assert purra_listing_code(args, limits) == code
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(raw_config("limits", *args), limits=limits)
    assert caught.value.code == code
    assert pj.sessions() == []


def test_a_cursor_of_the_longest_length_purra_follows_is_followed() -> None:
    args = ["--tools", "4", "--page-size", "1", "--cursor", "longest"]  # 512 bytes; "long" above is 513
    assert purra_listing_code(args, McpToolLimits()) is None
    with pj.connect(raw_config("longest", *args)) as session:
        assert [tool.name for tool in session.catalog.tools] == ["tool_000", "tool_001", "tool_002", "tool_003"]


def test_an_over_long_description_makes_only_that_tool_uncallable() -> None:
    with pj.connect(raw_config("desc", "--tools", "1", "--description-bytes", "9000")) as session:
        tool = session.catalog["tool_000"]
        assert not tool.callable and tool.input_verdict == "compatible"
        assert tool.reasons == ("description: 9000 bytes, over the 8192-byte limit — shorten it",)
        assert_verdicts_match_purra(session)


def test_a_server_without_tools_connects_with_an_empty_catalog_that_says_why() -> None:
    with pj.connect(raw_config("notools", "--no-tools-capability")) as session:
        assert session.state == "ready"
        assert len(session.catalog) == 0
        assert "does not advertise the tools capability" in session.catalog.note
        with pytest.raises(pj.McpSessionError) as caught:
            session.bind("tool_000")
        assert caught.value.code == "mcp_tools_unavailable"


def test_list_changed_right_after_initialized_still_gives_a_ready_current_catalog() -> None:
    with pj.connect(raw_config("eager", "--list-changed-after-initialized")) as session:
        assert session.state == "ready"
        assert "tool_new" in session.catalog
        assert session.log.events("list_changed")


def test_stale_catalog_refresh_rebinds_and_drops_what_disappeared(demo: pj.McpSession) -> None:
    demo.bind("echo")
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: demo.state == "stale", what="the catalog to turn stale")
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("add")
    assert caught.value.code == "mcp_catalog_stale"

    catalog = demo.refresh()
    assert demo.state == "ready"
    assert "extra_tool" in catalog and catalog["extra_tool"].bound_as is None  # a refresh never binds
    assert catalog["echo"].bound_as == "echo"
    demo.bind("extra_tool")
    assert {entry["remoteName"] for entry in demo.bindings["entries"]} == {"echo", "extra_tool"}

    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))  # removes extra_tool
    wait_until(lambda: demo.state == "stale", what="the catalog to turn stale again")
    catalog = demo.refresh()
    assert catalog.dropped == ("extra_tool",)
    assert [entry["remoteName"] for entry in demo.bindings["entries"]] == ["echo"]
    assert any("dropped the binding of extra_tool" in row.detail for row in demo.log.events("bind"))
    assert f"<p>{DROPPED}: &#x27;extra_tool&#x27;</p>" in catalog._repr_mimebundle_()["text/html"]  # (quoted)


def test_bindings_snapshot_equals_purras_for_the_same_bindings(demo: pj.McpSession) -> None:
    assert demo.bindings is None
    entry = demo.bind("search_documents", title="Search the demo corpus")
    assert entry["localName"] == "search_documents"
    demo.bind("add", local_name="plus", concurrency_safe=True)
    bindings = {
        "search_documents": McpToolBinding(
            "search_documents", ToolPolicy(mode="read", title="Search the demo corpus", risk_level="read"), None
        ),
        "add": McpToolBinding("plus", ToolPolicy(mode="read", title="add", risk_level="read"), None, True),
    }
    expected = demo.connection.request(
        lambda client: discover_mcp_tools(client, "demo", bindings, monitor=demo.monitor, limits=demo.limits)
    )
    assert demo.bindings == expected.snapshot.to_mapping()
    assert demo.bindings["revisionDigest"] == expected.snapshot.revision_digest
    assert demo.catalog["add"].bound_as == "plus"
    assert demo.catalog["add"].bound_effect == "read"
    assert demo.catalog.to_frame().loc["add", "bound_as"] == "plus (read)"

    demo.unbind("plus")
    assert [entry["localName"] for entry in demo.bindings["entries"]] == ["search_documents"]
    with pytest.raises(pj.McpSessionError) as caught:
        demo.unbind("plus")
    assert caught.value.code == "mcp_binding_missing"


def test_binding_refusals_carry_purras_code_and_the_reasons(demo: pj.McpSession) -> None:
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("greet")
    assert caught.value.code == "mcp_schema_unsupported"
    assert "1 reason, kept apart from this message" in caught.value.message  # the reasons quote the server
    assert "inputSchema.properties.punctuation.default" in caught.value.server_text
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("no_such_tool")
    assert caught.value.code == "mcp_binding_missing"
    assert "search_documents" in caught.value.server_text and "search_documents" not in caught.value.message
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("serch_documents")  # a typo: the nearest names come first, then every tool it lists
    said = caught.value.server_text.splitlines()
    assert said[0].startswith("did you mean: 'search_documents'") and "search_documents" not in caught.value.message
    assert said[1] == "tools it lists: " + ", ".join(tool.quoted_label for tool in demo.catalog.tools), said
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("echo", local_name="not valid!")
    assert caught.value.code == "mcp_binding_invalid"
    demo.bind("echo")
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("add", local_name="echo")
    assert caught.value.code == "mcp_name_conflict"
    with pytest.raises(pj.McpSessionError) as caught:
        demo.bind("echo", local_name="echo2")
    assert caught.value.code == "mcp_binding_invalid"
    assert [entry["remoteName"] for entry in demo.bindings["entries"]] == ["echo"]


def test_sync_and_async_scope_validators_both_work(demo: pj.McpSession) -> None:
    def only_ok(state: Any, arguments: Any, signal: Any = None) -> str | None:
        return None if arguments["text"] == "ok" else f"denied {arguments['text']}"

    async def only_small(state: Any, arguments: Any, signal: Any = None) -> str | None:
        return None if arguments["a"] < 10 else f"refused {arguments['a']}"

    demo.bind("echo", scope_validator=only_ok)
    demo.bind("add", scope_validator=only_small)
    assert demo.call("echo", {"text": "ok"}, approve=True).structured == {"text": "ok"}
    assert demo.call("echo", {"text": "x"}, approve=True).error_code == "mcp_scope_denied"
    assert demo.call("add", {"a": 1, "b": 2}, approve=True).structured == {"sum": 3}
    assert demo.call("add", {"a": 11, "b": 2}, approve=True).error_code == "mcp_scope_denied"


def test_default_local_names() -> None:
    assert default_local_name("git-status.v2") == "git_status_v2"
    assert default_local_name("2fa") == "_2fa"
    assert default_local_name("plain_name") == "plain_name"


def test_digest_is_stable_and_pinned(demo: pj.McpSession) -> None:
    digest = demo.catalog.digest
    with pj.connect(demo_in_memory("again"), expect_digest=digest) as again:
        assert again.catalog.digest == digest
    other = "0" * 64
    with pytest.raises(pj.McpSessionError) as caught:
        pj.connect(demo_in_memory("pinned"), expect_digest=other)
    assert caught.value.code == "mcp_digest_mismatch"
    assert digest in caught.value.message and other in caught.value.message
    assert pj.sessions() == [demo]


def test_diff_between_catalogs(demo: pj.McpSession) -> None:
    before = demo.catalog
    demo.connection.request(lambda client: client.call_tool("toggle_extra_tool", {}))
    wait_until(lambda: demo.state == "stale", what="stale")
    after = demo.refresh()
    diff = before.diff(after)
    assert diff.to_dict("index") == {"extra_tool": {"change": "added", "fields": ""}}
    assert after.diff(before).loc["extra_tool", "change"] == "removed"
    assert before.digest != after.digest


def test_catalog_html_escapes_server_text() -> None:
    script = "<script>window.pwned=1</script><img src=x onerror=alert(1)>"
    with pj.connect(raw_config("xss", "--description", script)) as session:
        bundle = session.catalog._repr_mimebundle_()
        assert "<script>" not in bundle["text/html"] and "<img" not in bundle["text/html"]
        assert "&lt;script&gt;" in bundle["text/html"]
        assert bundle["application/vnd.purra.catalog+json"]["tools"][0]["description"] == script
        assert "tool_000" in bundle["text/plain"]


def test_the_catalog_payload_carries_the_kits_fixed_words_apart_from_its_data(demo: pj.McpSession) -> None:
    """The labextension shows the verdict and summary words the payload brings (typed once, in catalog.py);
    ``to_json()`` stays the catalog's data."""
    catalog = demo.catalog
    payload = catalog._repr_mimebundle_()[CATALOG_MIME]
    labels = {"callable": CALLABLE, "notCallable": NOT_CALLABLE, "callableUnder": CALLABLE_UNDER, "dropped": DROPPED,
              "sharedBy": SHARED_BY, "sharedBelow": SHARED_BELOW}  # fmt: skip
    assert payload["labels"] == catalog_labels() == labels
    assert {key: value for key, value in payload.items() if key != "labels"} == catalog.to_json()
    assert "labels" not in catalog.to_json()
    tools = {tool["tool"]: tool for tool in payload["tools"]}
    assert tools["echo"]["input_schema"] == dict(catalog["echo"].input_schema)  # a reader can open the schemas
    assert all(tool["output_schema"] == catalog[name].output_schema for name, tool in tools.items())
    assert CALLABLE_UNDER in catalog.summary and NOT_CALLABLE in repr(catalog)  # the demo's greet is not callable


OBJECT_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
DRAFT_07 = {"$schema": "http://json-schema.org/draft-07/schema#", **OBJECT_SCHEMA}


def test_a_reason_many_tools_give_is_shown_once_naming_them_and_each_row_keeps_it() -> None:
    """A TypeScript server's ``$schema`` on every tool: the text, the HTML and the payload show that reason once,
    with the tools it stops; each tool's own reason stays on its row, and the DataFrame keeps every reason per tool."""
    names = [f"t{number:02}" for number in range(13)]
    tools = [types.Tool(name=name, inputSchema=DRAFT_07) for name in names]
    defaulted = {**DRAFT_07, "properties": {"x": {"type": "string", "default": ""}}}  # a reason of its own too
    tools.append(types.Tool(name="own", inputSchema=defaulted))
    tools.append(types.Tool(name="fine", inputSchema=OBJECT_SCHEMA))
    with pj.connect(served(*tools)) as session:
        catalog = session.catalog
    (shared,) = catalog.shared_reasons
    stopped = sorted([*names, "own"])
    assert [tool.name for tool in shared.tools] == stopped and "$schema" in shared.reason
    assert catalog.own_reasons(catalog["t00"]) == () and len(catalog.own_reasons(catalog["own"])) == 1
    text = repr(catalog)
    assert text.count(cell_text(shared.reason)) == 1  # (as a cell shows it: its address defanged)
    assert f"Shared by 14 tools: {', '.join(repr(name) for name in stopped)}" in text  # each name quoted
    assert text.count("+ 1 shared, below") == 14
    html = catalog._repr_mimebundle_()["text/html"]
    assert html.count(str(escape(shared.reason))) == 1 and "Shared by 14 tools:" in html
    assert all(f"<code class='purra-tool-name'>{name}</code>" in html.split("Shared by")[1] for name in stopped)
    assert html.count("+ 1 shared, below") == 14
    payload = catalog._repr_mimebundle_()[CATALOG_MIME]
    assert payload["sharedReasons"] == [{"reason": shared.reason, "tools": stopped}]
    assert all(shared.reason in tool["reasons"] for tool in payload["tools"] if tool["tool"] != "fine")
    frame = catalog.to_frame()  # people filter it: every row keeps its own reasons, whole
    assert all(shared.reason in frame.loc[name, "reasons"] for name in stopped)
    assert frame.loc["own", "reasons"] == "; ".join(catalog["own"].reasons)


def test_the_catalog_html_wraps_words_whole_in_columns_wide_enough_to_read() -> None:
    """A wrapped cell breaks a word only when it is longer than the cell (``overflow-wrap:anywhere``): each has a
    least width, so a table does not squeeze a column until its words break ("idempoten/t"); the reasons' is
    wider."""
    tool = types.Tool(name="t", description="idempotent " * 40, inputSchema=DRAFT_07)
    with pj.connect(served(tool)) as session:
        html = session.catalog._repr_mimebundle_()["text/html"]
    styles = re.findall(r"<td style='([^']*)'", html)
    wrapped = [style for style in styles if "white-space:pre-wrap" in style]
    assert len(wrapped) == 2 and all(re.search(r"min-width:\d+em", style) for style in wrapped), wrapped
    assert "word-break:break-all" not in html
    assert wrapped[-1].endswith(f"min-width:{REASONS_MIN_WIDTH}") and int(REASONS_MIN_WIDTH[:-2]) >= 16


# --- hints that lead to a fix --------------------------------------------------------------------------------

OUTSIDE = "is outside the profile"
DOCUMENT_DEFAULT = (
    "drop it and document the default in the description (an optional parameter is simply left out of required)"
)


def served(*tools: types.Tool) -> pj.ServerConfig:
    """A server of its own listing ``tools``, reached in memory (the verdicts are the kit's, the server a stand-in
    for a published one)."""
    server: Server[Any] = Server("hinted")

    @server.list_tools()
    async def listed() -> list[types.Tool]:
        return list(tools)

    return pj.ServerConfig("hinted", server=server)


def reasons_for(input_schema: dict[str, Any], output_schema: dict[str, Any] | None = None) -> list[str]:
    """The reasons of one tool with these schemas, listed by a server and checked against purra-mcp's verdict."""
    tool = types.Tool(name="t", inputSchema=input_schema, outputSchema=output_schema)
    with pj.connect(served(tool)) as session:
        assert_verdicts_match_purra(session)
        return list(session.catalog["t"].reasons)


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (_object(n={"type": "integer", "exclusiveMinimum": 0}), f'inputSchema.properties.n.exclusiveMinimum: '
         f'"exclusiveMinimum" {OUTSIDE} — use minimum: 1 (the same bound, for an integer)'),
        (_object(n={"type": "integer", "exclusiveMaximum": 2.5}), f'inputSchema.properties.n.exclusiveMaximum: '
         f'"exclusiveMaximum" {OUTSIDE} — use maximum: 2 (the same bound, for an integer)'),
        (_object(n={"type": ["integer", "null"], "minimum": 5, "exclusiveMinimum": 0}),
         f'inputSchema.properties.n.exclusiveMinimum: "exclusiveMinimum" {OUTSIDE} — use minimum: 5 (the same '
         "bound, for an integer)"),
        (_object(n={"type": "integer", "minimum": 3, "exclusiveMinimum": True}),  # draft-04's flag
         f'inputSchema.properties.n.exclusiveMinimum: "exclusiveMinimum" {OUTSIDE} — use minimum: 4 (the same '
         "bound, for an integer)"),
        (_object(x={"type": "number", "exclusiveMinimum": 0}), f'inputSchema.properties.x.exclusiveMinimum: '
         f'"exclusiveMinimum" {OUTSIDE} — drop it and check the bound on the server (minimum: 0 would accept 0 '
         "itself), or use minimum: 0 if 0 may be accepted"),
        ({**_object(), "additionalProperties": {"type": "string"}}, "inputSchema.additionalProperties: a schema for "
         f"extra properties {OUTSIDE}, which takes true or false — use true (extra properties of any shape: check "
         "them on the server) or false (no extra properties)"),
        (_object(a={"type": "array", "items": True}), f"inputSchema.properties.a.items: a boolean schema {OUTSIDE} "
         "— use {} (it accepts any value, as true does)"),
        (_object(a=True), f"inputSchema.properties.a: a boolean schema {OUTSIDE} — use {{}} (it accepts any value, "
         "as true does)"),
        (_object(a=False), f"inputSchema.properties.a: false (the property must be absent) {OUTSIDE} — drop it "
         "(with additionalProperties: false the object still refuses the property; otherwise check on the server "
         "that it is absent)"),
        (_object(a={"type": "array", "items": False}), f"inputSchema.properties.a.items: false (no items) {OUTSIDE} "
         "— drop it and use maxItems: 0 (the array must be empty)"),
        (_object(a={"anyOf": [{"type": "string"}, False]}), f"inputSchema.properties.a.anyOf[1]: false (matches "
         f"nothing) {OUTSIDE} — drop it (a branch no value takes)"),
        ({"$schema": "http://json-schema.org/draft-07/schema#", **_object()}, "inputSchema.$schema: declares "
         "'http://json-schema.org/draft-07/schema#', PurrA reads only JSON Schema 2020-12 — drop it (the rest is "
         "then read as 2020-12) or declare https://json-schema.org/draft/2020-12/schema"),
        (_object(a={"type": "string", "description": None}), "inputSchema.properties.a.description: null — drop it "
         "or give it a value of its type"),
        (_object(a={"$ref": "#/$defs/gone"}), f'inputSchema.properties.a.$ref: "$ref" {OUTSIDE} — drop it: '
         '"#/$defs/gone" points at nothing in this schema'),
    ],
)  # fmt: skip
def test_each_corrected_hint_says_exactly_what_fixes_it(schema: dict[str, Any], reason: str) -> None:
    assert reasons_for(schema) == [reason]


def test_reasons_continue_inside_the_definitions_at_their_paths() -> None:
    schema = {
        **_object(a={"$ref": "#/$defs/Foo"}),
        "$defs": {
            "Foo": {**_object(x={"type": "string", "default": "d", "format": "uri"}, y={"$ref": "#/$defs/Bar"}),
                    "additionalProperties": {"type": "string"}},
            "Bar": {"type": "string", "pattern": "^a"},
        },
    }  # fmt: skip
    assert reasons_for(schema) == [
        f'inputSchema.$defs: "$defs" {OUTSIDE} — drop it once every $ref into it is inlined',
        f'inputSchema.properties.a.$ref: "$ref" {OUTSIDE} — inline "#/$defs/Foo" here (its keywords in place of '
        "the $ref)",
        f'inputSchema.$defs.Foo.properties.x.default: "default" {OUTSIDE} — {DOCUMENT_DEFAULT}',
        f'inputSchema.$defs.Foo.properties.x.format: "format" {OUTSIDE} — drop it and describe the expected format '
        "in the description",
        f'inputSchema.$defs.Foo.properties.y.$ref: "$ref" {OUTSIDE} — inline "#/$defs/Bar" here (its keywords in '
        "place of the $ref)",
        f"inputSchema.$defs.Foo.additionalProperties: a schema for extra properties {OUTSIDE}, which takes true or "
        "false — use true (extra properties of any shape: check them on the server) or false (no extra properties)",
        f'inputSchema.$defs.Bar.pattern: "pattern" {OUTSIDE} — drop it, describe the pattern in the description and '
        "check it on the server",
    ]


def test_a_recursive_ref_says_it_cannot_be_inlined() -> None:
    schema = {**_object(tree={"$ref": "#/$defs/Node"}), "definitions": {"unused": {}},
              "$defs": {"Node": _object(next={"$ref": "#/$defs/Node"})}}  # fmt: skip
    assert reasons_for(schema) == [
        f'inputSchema.$defs: "$defs" {OUTSIDE} — drop it once every $ref into it is inlined',
        f'inputSchema.definitions: "definitions" {OUTSIDE} — drop it once every $ref into it is inlined',
        f'inputSchema.properties.tree.$ref: "$ref" {OUTSIDE} — inline "#/$defs/Node" here (its keywords in place of '
        "the $ref)",
        f'inputSchema.$defs.Node.properties.next.$ref: "$ref" {OUTSIDE}, and "#/$defs/Node" cannot be inlined: it '
        "leads back to itself (a recursive schema, which PurrA cannot represent) — drop it (any value is then "
        "accepted here: check it on the server) or write the recursion out to a bounded depth",
    ]


def test_a_root_given_by_reference_is_not_told_to_wrap_its_values() -> None:
    schema = {"$ref": "#/$defs/Root", "$defs": {"Root": _object(a={"type": "string"})}}
    assert reasons_for(schema) == [
        f'inputSchema.$defs: "$defs" {OUTSIDE} — drop it once every $ref into it is inlined',
        f'inputSchema.$ref: "$ref" {OUTSIDE} — inline "#/$defs/Root" here (its keywords in place of the $ref)',
    ]


def test_what_inlining_makes_too_big_is_said() -> None:
    """Each definition is small, but inlined as told the schema nests deeper than purra takes."""
    definitions = {f"D{i}": _object(a={"$ref": f"#/$defs/D{i + 1}"}) for i in range(40)}
    definitions["D40"] = {"type": "string"}
    reasons = reasons_for({**_object(a={"$ref": "#/$defs/D0"}), "$defs": definitions})
    assert reasons[-1] == "inputSchema (its definitions inlined): nested 83 levels deep, over 32 — flatten the schema"


def test_definitions_that_inlining_copies_past_purras_node_limit_are_said() -> None:
    """Each definition is used twice by the one before it: inlined, 2^14 copies of the last."""
    definitions = {f"D{i}": _object(a={"$ref": f"#/$defs/D{i + 1}"}, b={"$ref": f"#/$defs/D{i + 1}"})
                   for i in range(14)}  # fmt: skip
    definitions["D14"] = {"type": "string"}
    reasons = reasons_for({**_object(a={"$ref": "#/$defs/D0"}), "$defs": definitions})
    assert reasons[-1] == (
        "inputSchema (its definitions inlined): over 4096 schema nodes — simplify the schema, or keep the "
        "definitions few and small"
    )


def test_a_default_in_an_output_schema_is_told_to_go_not_to_be_optional() -> None:
    reasons = reasons_for(_object(), _object(count={"type": "integer", "default": 0}))
    assert reasons == [
        f'outputSchema.properties.count.default: "default" {OUTSIDE} — drop it (an output schema describes the '
        "values a tool returns: a default means nothing there)"
    ]
    assert reasons_for(_object(count={"type": "integer", "default": 0})) == [
        f'inputSchema.properties.count.default: "default" {OUTSIDE} — {DOCUMENT_DEFAULT}'
    ]


WRITE_HINTED = types.ToolAnnotations(readOnlyHint=False)


@pytest.mark.parametrize("effect", ["read", "write"])
def test_bind_names_the_schema_refusal_before_the_servers_write_hints(effect: str) -> None:
    """A tool both write-hinted and refused by schema: no declaration makes it bindable, so bind says why, whatever
    the effect asked for (not ``mcp_not_read_only`` and "bind it as a write", which would then fail too)."""
    tool = types.Tool(name="save", inputSchema=_object(path={"type": "string", "format": "uri"}),
                      annotations=WRITE_HINTED)  # fmt: skip
    with pj.connect(served(tool)) as session:
        assert purra_refusal(session, "save") == "mcp_schema_unsupported"
        options: dict[str, Any] = {} if effect == "read" else {"scope_validator": pj.allow_any_scope}
        with pytest.raises(pj.McpSessionError) as caught:
            session.bind("save", effect=effect, **options)
        assert caught.value.code == "mcp_schema_unsupported"
        assert "1 reason" in caught.value.message and "as a write" not in caught.value.message
        assert caught.value.server_text == session.catalog["save"].reasons[0]
        assert caught.value.server_text.startswith('inputSchema.properties.path.format: "format"')
        assert session.bindings is None and session.write_bindings is None


def test_a_write_hinted_tool_purra_binds_still_asks_to_be_bound_as_a_write() -> None:
    tool = types.Tool(name="save", inputSchema=_object(path={"type": "string"}), annotations=WRITE_HINTED)
    with pj.connect(served(tool)) as session:
        with pytest.raises(pj.McpSessionError) as caught:
            session.bind("save")
        assert caught.value.code == "mcp_not_read_only" and "Bind it as a write" in caught.value.message
