"""What a server offers besides tools: resources, resource templates, prompts and completions (raw exploration).

Against server-everything (pinned in tests/servers) for the counts and reads a real server gives, and against
small low-level servers of our own in memory for each content type's rendering, hostile text, bounds, list
changes and a server without the capabilities.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import anyio
import pytest
from conftest import assert_safe, demo_in_memory, tokens, wait_until
from hypothesis import given
from hypothesis import strategies as st
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from pydantic import AnyUrl

import purra_jupyter as pj
from purra_jupyter._base.egress import HTML_CHARS, TEXT_CHARS
from purra_jupyter._base.wire import (
    CAPABILITY_MISSING,
    CATALOG_LIMIT,
    EVENT_LIST_CHANGED,
    EVENT_RESOURCE_UPDATED,
    INVALID_ARGUMENTS,
    OFFERING_UNKNOWN,
    PAGINATION_INVALID,
    PROTOCOL_ERROR,
    RESULT_TOO_LARGE,
    TIMEOUT,
)
from purra_jupyter._beside.offerings import OFFERINGS_LABEL, SOURCE_NOTE, Offerings, blob_summary, expand
from purra_jupyter._ui.offering_forms import OfferingForm

EVERYTHING = Path(__file__).parent / "servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
TEXT_TEMPLATE = "demo://resource/dynamic/text/{resourceId}"
BLOB_TEMPLATE = "demo://resource/dynamic/blob/{resourceId}"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
SCRIPT = "<script>alert(1)</script>"
SVG = "<svg xmlns='http://www.w3.org/2000/svg' onload='alert(1)'><circle r='4'/></svg>"
PAGE = "<html><body onload='alert(2)'><h1>hi</h1><script>steal()</script></body></html>"


def everything() -> pj.ServerConfig:
    assert EVERYTHING.exists(), "scripts/test installs tests/servers' npm packages"
    return pj.ServerConfig("everything", command="node", args=[str(EVERYTHING), "stdio"])


def html_of(shown: Any) -> str:
    html: str = shown._repr_mimebundle_()["text/html"]
    return html


def plain_of(shown: Any) -> str:
    plain: str = shown._repr_mimebundle_()["text/plain"]
    return plain


# --- server-everything ------------------------------------------------------------------------------------


@pytest.mark.published  # a published MCP server from npm
def test_server_everything_lists_its_resources_templates_and_prompts() -> None:
    with pj.connect(everything()) as session:
        resources, templates, prompts = session.resources, session.resource_templates, session.prompts
        assert (len(resources), len(templates), len(prompts)) == (7, 2, 4)
        assert "demo://resource/static/document/architecture.md" in resources.keys()
        assert templates.keys() == [TEXT_TEMPLATE, BLOB_TEMPLATE]
        assert prompts.keys() == ["simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"]
        frame = resources.to_frame()
        assert frame.index.name == "uri" and set(frame["mime_type"]) == {"text/markdown"}
        assert templates.to_frame().loc[TEXT_TEMPLATE, "variables"] == "'resourceId'"
        assert prompts.to_frame().loc["args-prompt", "arguments"] == "'city' (required), 'state'"
        for listing in (resources, templates, prompts):
            assert OFFERINGS_LABEL in html_of(listing) and OFFERINGS_LABEL in plain_of(listing)
            assert_safe(html_of(listing))
        assert session.resources is resources  # listed once: nothing changed since
        assert session.state == "ready"


@pytest.mark.published  # a published MCP server from npm
def test_server_everything_reads_a_text_and_a_binary_resource() -> None:
    with pj.connect(everything()) as session:
        text = session.read_resource("demo://resource/static/document/architecture.md")
        assert text.text.startswith("# Everything Server")
        assert "# Everything Server" in html_of(text) and "# Everything Server" in plain_of(text)
        assert_safe(html_of(text))
        blob = session.read_resource(BLOB_TEMPLATE, {"resourceId": "1"})
        assert blob.uri == "demo://resource/dynamic/blob/1"
        (data,) = blob.blobs()
        shown = f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"
        assert shown in html_of(blob) and shown in plain_of(blob)
        assert data.decode() not in html_of(blob)  # a blob shows as its size and digest, not as its bytes
        with pytest.raises(pj.McpSessionError) as refused:
            session.read_resource("demo://resource/missing")
        assert refused.value.code == PROTOCOL_ERROR and "not found" in refused.value.server_text


@pytest.mark.published  # a published MCP server from npm
def test_server_everything_gives_prompts_and_completions() -> None:
    with pj.connect(everything()) as session:
        prompt = session.get_prompt("args-prompt", {"city": "Paris", "state": "TX"})
        assert prompt.text == ["What's weather in Paris, TX?"]
        assert "What&#x27;s weather in Paris, TX?" in html_of(prompt) and "user" in html_of(prompt)
        embedded = session.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "1"})
        assert "demo://resource/dynamic/text/1" in html_of(embedded)  # the embedded resource, as a read shows it
        assert "completions" in session.capabilities
        assert session.complete("department", prompt="completable-prompt") == [
            "Engineering", "Sales", "Marketing", "Support"]  # fmt: skip
        chosen = session.complete("name", prompt="completable-prompt", context={"department": "Engineering"})
        assert chosen == ["Alice", "Bob", "Charlie"]
        assert session.complete("resourceType", "B", prompt="resource-prompt") == ["Blob"]
        form = session.prompt_form("completable-prompt")
        assert form.completes and form.button.disabled
        form.fields["department"].value = "Sal"
        asked = form.ask("department")
        assert asked is not None and asked.result(timeout=30) is None
        assert form.fields["department"].options == ("Sales",)
        form.fields["department"].value = "Sales"
        form.fields["name"].value = "Bob"
        assert not form.button.disabled
        submitted = form.submit()
        assert submitted is not None
        assert submitted.result(timeout=30).text == ["Please promote Bob to the head of the Sales team."]


# --- a server of our own, in memory ------------------------------------------------------------------------


class Offering(Server[Any, Any]):
    """A low-level server whose resources, templates, prompts and contents a test sets; its ``change`` tool sends
    the list-changed notices (and a resource update) after changing the lists."""

    def __init__(
        self,
        resources: Iterable[types.Resource] = (),
        contents: Mapping[str, list[ReadResourceContents]] | None = None,
        *,
        templates: Iterable[types.ResourceTemplate] = (),
        prompts: Iterable[types.Prompt] = (),
        offers: tuple[str, ...] = ("resources", "prompts", "completions"),
        pages: list[tuple[list[types.Resource], str | None]] | None = None,
    ) -> None:
        super().__init__("offering-test")
        self.listed = list(resources)
        self.templates = list(templates)
        self.prompt_list = list(prompts)
        self.contents = dict(contents or {})
        self.pages = pages
        self.prompt_arguments: list[dict[str, str] | None] = []  # what each prompts/get carried, as it arrived
        self._register_tools()
        if "resources" in offers:
            self._register_resources()
        if "prompts" in offers:
            self._register_prompts()
        if "completions" in offers:
            self.completion()(self._complete)

    def _register_tools(self) -> None:
        tool = types.Tool(name="change", inputSchema={"type": "object", "properties": {}})
        self.list_tools()(lambda: _value([tool]))
        self.call_tool()(self._change)

    async def _change(self, name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        self.listed.append(types.Resource(uri=AnyUrl("test://added"), name="added"))
        self.prompt_list.append(types.Prompt(name="added"))
        session = self.request_context.session
        related = self.request_context.request_id
        for notice in (types.ResourceListChangedNotification(), types.PromptListChangedNotification(),
                       types.ResourceUpdatedNotification(params=types.ResourceUpdatedNotificationParams(
                           uri=AnyUrl("test://first")))):  # fmt: skip
            await session.send_notification(types.ServerNotification(notice), related_request_id=related)
        return [types.TextContent(type="text", text="changed")]

    def _register_resources(self) -> None:
        async def list_resources(request: types.ListResourcesRequest) -> types.ListResourcesResult:
            if self.pages is None:
                return types.ListResourcesResult(resources=self.listed)
            index = int(request.params.cursor) if request.params and request.params.cursor else 0
            listed, cursor = self.pages[min(index, len(self.pages) - 1)]
            return types.ListResourcesResult(resources=listed, nextCursor=cursor)

        async def read(uri: AnyUrl) -> list[ReadResourceContents]:
            if str(uri) == "test://slow":
                await anyio.sleep(30)
            if str(uri) not in self.contents:
                raise ValueError(f"no resource {uri}")
            return self.contents[str(uri)]

        self.list_resources()(list_resources)
        self.list_resource_templates()(lambda: _value(self.templates))
        self.read_resource()(read)

    def _register_prompts(self) -> None:
        async def get(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
            self.prompt_arguments.append(arguments)
            said = ", ".join(f"{key}={value}" for key, value in sorted((arguments or {}).items()))
            image = types.ImageContent(type="image", data=base64.b64encode(PNG).decode(), mimeType="image/png")
            page = types.TextResourceContents(uri=AnyUrl("test://page"), mimeType="text/html", text=PAGE)
            return types.GetPromptResult(description=f"described {SCRIPT}", messages=[
                types.PromptMessage(role="user", content=types.TextContent(type="text", text=f"{name}: {said}")),
                types.PromptMessage(role="assistant", content=image),
                types.PromptMessage(role="user", content=types.EmbeddedResource(type="resource", resource=page)),
            ])  # fmt: skip

        self.list_prompts()(lambda: _value(self.prompt_list))
        self.get_prompt()(get)

    async def _complete(self, ref: Any, argument: types.CompletionArgument, context: Any) -> types.Completion:
        if argument.name == "broken":
            raise ValueError("no completions for that")
        if argument.name == "flood":
            return types.Completion(values=[f"{n}\n{SCRIPT}{'x' * 500}" for n in range(100)], hasMore=True)
        chosen = dict(context.arguments or {}) if context is not None else {}
        values = [f"{argument.value}{suffix}" for suffix in ("-a", "-b")] + [f"{k}:{v}" for k, v in chosen.items()]
        return types.Completion(values=values, total=len(values), hasMore=False)


async def _value(value: Any) -> Any:
    return value


def connect(server: Server[Any, Any], **kwargs: Any) -> pj.McpSession:
    return pj.connect(pj.ServerConfig("offering", server=server), approval="auto", **kwargs)


def text(content: str, mime: str) -> list[ReadResourceContents]:
    return [ReadResourceContents(content, mime)]


def read_html(contents: list[ReadResourceContents]) -> tuple[str, str]:
    with connect(Offering(contents={"test://x": contents})) as session:
        read = session.read_resource("test://x")
        return html_of(read), plain_of(read)


def test_plain_text_is_shown_as_text() -> None:
    html, plain = read_html(text(f"hello {SCRIPT}", "text/plain"))
    assert_safe(html, f"hello {SCRIPT}")
    assert f"hello {SCRIPT}" in plain


def test_json_is_folded_and_escaped() -> None:
    value = {"items": [{"n": n, "label": SCRIPT} for n in range(20)]}
    html, _ = read_html(text(json.dumps(value), "application/json"))
    assert "<details>" in html and "lines of JSON" in html
    assert_safe(html, '"label": "<script>alert(1)</script>"')
    short, _ = read_html(text('{"a": 1}', "application/problem+json; charset=utf-8"))
    assert "<details>" not in short and "&quot;a&quot;: 1" in short


def test_csv_is_a_table_and_its_cells_are_text() -> None:
    rows = "id,name\n" + "".join(f"{n},{SCRIPT if n == 1 else f'row {n}'}\n" for n in range(60))
    html, _ = read_html(text(rows, "text/csv"))
    parsed = tokens(html)
    assert [tag for tag, _ in parsed.tags].count("tr") == 51  # the header and the first 50 rows
    assert "showing the first 50 of 60 rows; .text holds them all" in html
    assert_safe(html, SCRIPT)


@pytest.mark.parametrize("mime", ["image/png", "image/gif"])
def test_raster_images_are_data_uris(mime: str) -> None:
    html, plain = read_html([ReadResourceContents(PNG, mime)])
    (image,) = [attrs for tag, attrs in tokens(html).tags if tag == "img"]
    assert image["src"] == f"data:{mime};base64,{base64.b64encode(PNG).decode()}"
    assert_safe(html)
    assert blob_summary(PNG) in plain


def test_svg_and_html_are_never_rendered() -> None:
    for contents in (text(SVG, "image/svg+xml"), [ReadResourceContents(SVG.encode(), "image/svg+xml")],
                     text(PAGE, "text/html"), text(PAGE, "application/xhtml+xml")):  # fmt: skip
        html, _ = read_html(contents)
        source = SVG if "svg" in str(contents[0].mime_type) else PAGE
        assert_safe(html, source)
        assert SOURCE_NOTE in html
        assert not any(tag in ("svg", "img", "html", "body", "script") for tag, _ in tokens(html).tags)


def test_other_binary_is_its_size_and_digest() -> None:
    data = bytes(range(256)) * 3
    html, plain = read_html([ReadResourceContents(data, "application/octet-stream")])
    summary = f"768 bytes, sha256 {hashlib.sha256(data).hexdigest()}"
    assert summary in html and summary in plain
    assert_safe(html)


def test_hostile_listings_and_mime_types_are_text() -> None:
    hostile = f"{SCRIPT}<img src=x onerror=alert(3)>"
    shown = f"{hostile}\\u202e"  # a right-to-left override, written as its escape
    resource = types.Resource(uri=AnyUrl("test://x"), name=f"{hostile}\u202e", title=hostile, description=hostile,
                              mimeType='text/plain"><script>x()</script>',
                              annotations=types.Annotations(audience=["user"], priority=0.5))  # fmt: skip
    template = types.ResourceTemplate(uriTemplate="test://t/{id}", name=hostile, description=hostile)
    argument = types.PromptArgument(name=hostile, description=hostile, required=True)
    prompt = types.Prompt(name=hostile, description=hostile, arguments=[argument])
    contents = {"test://x": text(hostile, 'text/plain"><script>x()</script>')}
    server = Offering([resource], contents, templates=[template], prompts=[prompt])
    with connect(server) as session:
        for listing in (session.resources, session.resource_templates, session.prompts):
            assert_safe(html_of(listing), hostile)
        assert_safe(html_of(session.resources), shown)
        assert "\u202e" not in html_of(session.resources) and shown in plain_of(session.resources)
        assert '"priority": 0.5' in session.resources.to_frame().loc["test://x", "annotations"]
        read = session.read_resource("test://x")
        assert_safe(html_of(read), hostile, 'text/plain"><script>x()</script>')
        got = session.get_prompt(hostile)
        assert_safe(html_of(got), f"described {SCRIPT}", PAGE)
        form = session.prompt_form(hostile)
        assert form.fields[hostile].description == f"{hostile} *"  # a widget's label: text, never HTML
        assert not form.fields[hostile].description_allow_html


def test_a_prompt_shows_each_message_with_its_role_and_content() -> None:
    with connect(Offering(prompts=[types.Prompt(name="p")])) as session:
        got = session.get_prompt("p", {"topic": "cats", "tone": "dry"})
        html = html_of(got)
        assert got.text == ["p: tone=dry, topic=cats"] and got.description == f"described {SCRIPT}"
        roles = [text for text in tokens(html).text if text in ("user", "assistant")]
        assert roles == ["user", "assistant", "user"]
        assert any(tag == "img" for tag, _ in tokens(html).tags)  # the image content
        assert "test://page · text/html" in html and SOURCE_NOTE in html  # the embedded resource, as a read
        assert "user: p: tone=dry, topic=cats" in plain_of(got)
        with pytest.raises(pj.McpSessionError) as refused:
            session.get_prompt("p", {"n": 1})  # type: ignore[dict-item]
        assert refused.value.code == INVALID_ARGUMENTS


def test_a_prompt_is_asked_with_an_arguments_object_an_empty_one_too() -> None:
    """Some servers answer -32602 to a ``prompts/get`` without ``arguments`` (cyanheads git's ``git_wrapup``): the kit
    always sends the object, ``{}`` when there are none."""
    server = Offering(prompts=[types.Prompt(name="p")])
    with connect(server) as session:
        for arguments in (None, {}, {"a": "b"}):
            assert session.get_prompt("p", arguments).text[0].startswith("p: ")
    assert server.prompt_arguments == [{}, {}, {"a": "b"}]


def test_templates_are_filled_by_rfc_6570_with_values_percent_encoded() -> None:
    template = types.ResourceTemplate(uriTemplate="test://t/{id}{?q}", name="t")
    contents = {"test://t/a%20b%2Fc?q=1%262": text("found", "text/plain"), "test://t/7?q=x": text("7", "text/plain")}
    with connect(Offering(contents=contents, templates=[template])) as session:
        assert session.read_resource("test://t/{id}{?q}", {"id": "a b/c", "q": "1&2"}).text == "found"
        assert session.read_resource("test://t/{id}{?q}", {"id": 7, "q": "x"}).text == "7"
        form = session.resource_form("test://t/{id}{?q}")
        assert list(form.fields) == ["id", "q"]
        form.fields["id"].value, form.fields["q"].value = "7", "x"
        submitted = form.submit()
        assert submitted is not None and submitted.result(timeout=10).text == "7"
        for values, said in (({"id": "1"}, "no value for 'q'"), ({"id": "1", "q": "2", "z": "3"}, "no variable 'z'"),
                             ({"id": ["1"], "q": "2"}, "a string or a number")):  # fmt: skip
            with pytest.raises(pj.McpSessionError) as refused:
                session.read_resource("test://t/{id}{?q}", values)
            assert refused.value.code == INVALID_ARGUMENTS and said in refused.value.message
    with pytest.raises(pj.McpSessionError) as invalid:
        expand("test://{id", {"id": "1"})
    assert invalid.value.code == INVALID_ARGUMENTS


def test_completions_follow_the_typed_value_and_the_other_fields() -> None:
    template = types.ResourceTemplate(uriTemplate="test://t/{a}/{b}", name="t")
    with connect(Offering(templates=[template])) as session:
        assert session.complete("a", "x", template="test://t/{a}/{b}") == ["x-a", "x-b"]
        form = session.resource_form("test://t/{a}/{b}")
        form.fields["a"].value = "left"
        form.fields["b"].value = "ri"
        asked = form.ask("b")
        assert asked is not None
        asked.result(timeout=10)
        assert form.fields["b"].options == ("ri-a", "ri-b", "a:left")
        with pytest.raises(pj.McpSessionError) as one_of:
            session.complete("a")
        assert one_of.value.code == "mcp_config_invalid"
        flood = session.complete("flood", prompt="p")  # a server's values: one line each, cut
        assert len(flood) == 100 and all("\n" not in value and len(value) <= 200 for value in flood)
        assert flood[0].startswith("0") and SCRIPT in flood[0]


def test_a_server_without_the_capabilities_says_so() -> None:
    with connect(Offering(offers=())) as session:
        for ask in (lambda: session.resources, lambda: session.resource_templates, lambda: session.prompts,
                    lambda: session.read_resource("test://x"), lambda: session.get_prompt("p"),
                    lambda: session.complete("a", prompt="p")):  # fmt: skip
            with pytest.raises(pj.McpSessionError) as missing:
                ask()
            assert missing.value.code == CAPABILITY_MISSING
        assert session.state == "ready"
    prompt = types.Prompt(name="p", arguments=[types.PromptArgument(name="a")])
    with connect(Offering(prompts=[prompt], offers=("prompts",))) as session:
        form = session.prompt_form("p")
        assert not form.completes and form.ask("a") is None  # no completions: nothing asked, no error
        assert not form.button.disabled  # its one argument is optional
        with pytest.raises(pj.McpSessionError) as unknown:
            session.prompt_form("nope")
        assert unknown.value.code == OFFERING_UNKNOWN and "lists no prompt 'nope'" in unknown.value.message


def test_listings_are_bounded_like_the_tool_listing() -> None:
    from purra_mcp import McpToolLimits

    many = [types.Resource(uri=AnyUrl(f"test://{n}"), name=str(n)) for n in range(5)]
    with connect(Offering(many), limits=McpToolLimits(max_tools=4)) as session:
        with pytest.raises(pj.McpSessionError) as too_many:
            _ = session.resources
        assert too_many.value.code == CATALOG_LIMIT
    wordy = [types.Resource(uri=AnyUrl("test://w"), name="w", description="x" * 5000)]
    with connect(Offering(wordy), limits=McpToolLimits(max_catalog_bytes=4096)) as session:
        with pytest.raises(pj.McpSessionError) as too_big:
            _ = session.resources
        assert too_big.value.code == CATALOG_LIMIT
    page = [types.Resource(uri=AnyUrl("test://p"), name="p")]
    with connect(Offering(pages=[(page, "0")])) as session:  # the same cursor again
        with pytest.raises(pj.McpSessionError) as looping:
            _ = session.resources
        assert looping.value.code == PAGINATION_INVALID
    endless = [([types.Resource(uri=AnyUrl(f"test://{n}"), name=str(n))], str(n + 1)) for n in range(40)]
    with connect(Offering(pages=endless), limits=McpToolLimits(max_pages=3)) as session:
        with pytest.raises(pj.McpSessionError) as pages:
            _ = session.resources
        assert pages.value.code == CATALOG_LIMIT
    with connect(Offering(pages=[*endless[:2], (page, None)])) as session:
        assert session.resources.keys() == ["test://0", "test://1", "test://p"]  # followed page by page


def test_a_read_is_bounded_by_what_one_message_holds_not_by_a_tool_results_cap() -> None:
    """purra-mcp's limits of a tool's result (64 KiB by default) are the PurrA path's; a resource is read beside it,
    up to what one message may hold (16x the largest limit): a 1 MB resource reads, one over the bound is refused."""
    from purra_mcp import McpToolLimits

    contents = {"test://mb": text("x" * 1_000_000, "text/plain"), "test://big": text("y" * 20_000, "text/plain")}
    with connect(Offering(contents=contents)) as session:
        assert session.read_resource("test://mb").text == "x" * 1_000_000
        assert session.read_resource("test://big").text == "y" * 20_000
    small = McpToolLimits(max_catalog_bytes=1024, max_result_bytes=512)  # one message: 16 KiB
    with connect(Offering(contents=contents), limits=small) as session:
        with pytest.raises(pj.McpSessionError) as refused:
            session.read_resource("test://big")
        assert refused.value.code == RESULT_TOO_LARGE and "over 16384 bytes" in refused.value.message
        assert session.state == "ready"


def test_a_read_of_many_contents_shows_those_that_fit_and_says_so() -> None:
    """50,000 empty contents (each a head and no text): the HTML and the text hold what fits one display's bound, the
    markup of each content counted, and say how many of the contents they show; ``.contents`` holds them all."""
    with connect(Offering(contents={"test://many": text("", "text/plain") * 50_000})) as session:
        read = session.read_resource("test://many")
    assert len(read.contents) == 50_000
    for shown, most in ((html_of(read), HTML_CHARS), (plain_of(read), TEXT_CHARS)):
        assert len(shown) < most + 1_000, len(shown)
        assert re.search(r"showing the first [\d,]+ of 50,000 contents; \.contents holds them all", shown), shown[-300:]


def test_a_read_the_server_refuses_is_its_protocol_error() -> None:
    with connect(Offering()) as session:
        with pytest.raises(pj.McpSessionError) as refused:
            session.read_resource("test://nothing")
        assert refused.value.code == PROTOCOL_ERROR and "no resource test://nothing" in refused.value.server_text
        assert session.state == "ready"


def test_list_changed_marks_the_listings_stale_not_the_session() -> None:
    first = types.Resource(uri=AnyUrl("test://first"), name="first")
    with connect(Offering([first], prompts=[types.Prompt(name="p")])) as session:
        resources, prompts = session.resources, session.prompts
        assert not resources.stale and "stale" not in plain_of(resources)
        assert session.call("change", {}, raw=True).ok
        wait_until(lambda: resources.stale and prompts.stale, what="the list-changed notices")
        assert session.state == "ready"  # the tools did not change: PurrA calls stay valid
        assert "stale: the server changed its resources" in html_of(resources)
        assert "s.prompts lists them again" in plain_of(prompts)
        changed = [entry.detail for entry in session.log.events(EVENT_LIST_CHANGED)]
        assert any(detail.startswith("resources changed") for detail in changed), changed
        assert any(detail.startswith("prompts changed") for detail in changed), changed
        wait_until(lambda: session.log.events(EVENT_RESOURCE_UPDATED), what="the resource update")
        assert "resource updated: test://first" in session.log.events(EVENT_RESOURCE_UPDATED)[-1].detail
        again = session.resources
        assert isinstance(again, Offerings) and again is not resources and not again.stale
        assert again.keys() == ["test://first", "test://added"] and session.prompts.keys() == ["p", "added"]


def test_the_demo_offers_its_documents_and_a_prompt() -> None:
    with pj.connect(demo_in_memory()) as session:
        assert len(session.resources) == 9 and session.resource_templates.keys() == ["demo://documents/{id}"]
        document = session.read_resource("demo://documents/{id}", {"id": "doc-1"})
        assert document.text.startswith("# What the Model Context Protocol is")
        image = session.read_resource("demo://images/checkerboard.png")
        assert any(tag == "img" for tag, _ in tokens(html_of(image)).tags)
        assert session.complete("id", "doc-1", prompt="summarize") == ["doc-1"]
        summary = session.get_prompt("summarize", {"id": "doc-2"})
        assert summary.text == ["Summarize in one line:"] and "demo://documents/doc-2" in html_of(summary)
        form = session.prompt_form("summarize")
        assert isinstance(form, OfferingForm) and form.button.description == "Get prompt"


@given(st.text(max_size=40))
def test_a_value_is_percent_encoded_so_that_it_decodes_back(value: str) -> None:
    expanded = expand("test://t/{id}", {"id": value})
    tail = expanded.removeprefix("test://t/")
    assert unquote(tail) == value and all(c.isalnum() or c in "-._~%" for c in tail), expanded


def test_a_read_past_its_timeout_is_cancelled_and_the_session_stays_ready() -> None:
    with connect(Offering(contents={"test://x": text("x", "text/plain")})) as session:
        with pytest.raises(pj.McpSessionError) as late:
            session.read_resource("test://slow", timeout=0.5)
        assert late.value.code == TIMEOUT
        assert session.state == "ready" and session.read_resource("test://x").text == "x"


def test_a_form_shows_what_failed_in_words_and_code() -> None:
    template = types.ResourceTemplate(uriTemplate="test://t/{broken}", name="t")
    with connect(Offering(templates=[template])) as session:
        form = session.resource_form("test://t/{broken}")
        form.fields["broken"].value = "1"
        asked = form.ask("broken")
        assert asked is not None and asked.result(timeout=10) is None
        assert f"completions of broken: {PROTOCOL_ERROR}" in form.status.value and form.fields["broken"].options == ()
        submitted = form.submit()
        assert submitted is not None
        failed = submitted.result(timeout=10)
        assert isinstance(failed, pj.McpSessionError) and failed.code == PROTOCOL_ERROR and form.result is failed
        assert "no resource test://t/1" in failed.server_text
