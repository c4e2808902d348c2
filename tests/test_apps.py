"""Tools' own views (MCP Apps) in the core: the catalog and ``app_info`` say which tools have one and what it
declares, the extension is advertised only when views are on, a viewed call reads its view (or says why it cannot),
and a view's requests are refused by the kit's rules. A low-level server of our own in memory; the published
example servers over stdio. The rendering and the view's own calls are tested in a browser (``test_views.py``).
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import threading
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from conftest import assert_safe, demo_in_memory
from mcp.server.lowlevel import Server

import purra_jupyter as pj
from purra_jupyter._base.app_rules import EXTENSION, VIEW_MIME
from purra_jupyter._base.errors import McpSessionError
from purra_jupyter._base.wire import APP_MIME, APP_REFUSED, APP_UNAVAILABLE, CONFIG_INVALID, EVENT_APP
from purra_jupyter._beside.views import NO_VIEWER, VIEW_LABEL, VIEW_MAX_BYTES, check_view_request
from purra_jupyter._ui.views import PENDING_MAX, ViewedCall

ROOT = Path(__file__).parent.parent
MODULES = ROOT / "tests" / "servers" / "node_modules" / "@modelcontextprotocol"
NOTES_VIEW = ROOT / "purra_jupyter" / "demo" / "notes_view.html"
SCRIPT = "<script>alert(1)</script>"
PAGE = f"<!DOCTYPE html><title>{SCRIPT}</title><p>a view</p>"
CSP = {"connectDomains": ["https://api.example", "https://a.example; script-src *"],
       "resourceDomains": ["https://cdn.example"], "frameDomains": ["javascript:alert(1)"]}  # fmt: skip
# Each tool's view, as its resource answers: (MIME type, text or blob, _meta); ``None``: the read fails.
VIEWS: dict[str, tuple[str, dict[str, str], dict[str, Any]] | None] = {
    "good": (VIEW_MIME, {"text": PAGE}, {"ui": {"csp": CSP, "permissions": {"camera": {}, "bogus": {}}}}),
    "blob": (VIEW_MIME, {"blob": base64.b64encode(PAGE.encode()).decode()}, {}),
    "plain-html": ("text/html", {"text": PAGE}, {}),
    "empty": (VIEW_MIME, {"text": "  \n"}, {}),
    "huge": (VIEW_MIME, {"text": "x" * (VIEW_MAX_BYTES + 1)}, {}),
    "not-base64": (VIEW_MIME, {"blob": "%%%"}, {}),
    "missing": None,
}


class AppServer(Server[Any, Any]):
    """One tool per view of ``VIEWS`` (``show_<name>``), tools of each visibility, and ``capabilities``, which
    answers what the client said it supports in its ``initialize``."""

    def __init__(self) -> None:
        super().__init__("apps-test")
        self.reads: collections.Counter[str] = collections.Counter()  # resources/read asked, per URI
        self.list_tools()(self._tools)
        self.call_tool()(self._call)
        self.list_resources()(self._resources)
        self.request_handlers[types.ReadResourceRequest] = self._read  # (its blob as given: base64 or not)

    async def _tools(self) -> list[types.Tool]:
        schema = {"type": "object", "properties": {}}
        views = [types.Tool(name=f"show_{name}", inputSchema=schema, _meta={"ui": {"resourceUri": f"ui://t/{name}"}})
                 for name in VIEWS]  # fmt: skip
        return [
            *views,
            types.Tool(name="legacy", inputSchema=schema, _meta={"ui/resourceUri": "ui://t/good"}),
            types.Tool(name="app_only", inputSchema=schema, _meta={"ui": {"visibility": ["app"]}}),
            types.Tool(name="model_only", inputSchema=schema, _meta={"ui": {"visibility": ["model"]}}),
            types.Tool(name="not_ui", inputSchema=schema, _meta={"ui": {"resourceUri": "https://evil.example/v"}}),
            types.Tool(name="capabilities", inputSchema=schema),
        ]

    async def _call(self, name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        if name == "capabilities":
            params = self.request_context.session.client_params
            assert params is not None
            said = params.capabilities.model_dump(mode="json", exclude_none=True)
            return [types.TextContent(type="text", text=json.dumps(said))]
        return [types.TextContent(type="text", text=f"{name}: {SCRIPT}")]

    async def _resources(self) -> list[types.Resource]:
        return []

    async def _read(self, request: types.ReadResourceRequest) -> types.ServerResult:
        uri = request.params.uri
        self.reads[str(uri)] += 1
        view = VIEWS.get(str(uri).removeprefix("ui://t/"))
        if view is None:
            raise ValueError(f"no resource {uri}")
        mime, content, meta = view
        item: types.TextResourceContents | types.BlobResourceContents
        if "blob" in content:
            item = types.BlobResourceContents(uri=uri, mimeType=mime, blob=content["blob"], _meta=meta)
        else:
            item = types.TextResourceContents(uri=uri, mimeType=mime, text=content["text"], _meta=meta)
        return types.ServerResult(types.ReadResourceResult(contents=[item]))


def connect(views: bool | None = True, name: str = "apps") -> pj.McpSession:
    return pj.connect(pj.ServerConfig(name, server=AppServer(), views=views), approval="auto")


def told_capabilities(session: pj.McpSession) -> dict[str, Any]:
    result = session.call("capabilities", {}, raw=True)
    return dict(json.loads(result.content[0]["text"]))


def test_the_extension_is_advertised_only_when_views_are_on() -> None:
    with connect(views=True) as on:
        assert told_capabilities(on)["extensions"] == {EXTENSION: {"mimeTypes": [VIEW_MIME]}}
        assert on.config.views
    with connect(views=False) as off, connect(views=None, name="default") as default:  # outside a kernel, None is off
        for session in (off, default):
            assert "extensions" not in told_capabilities(session)
            assert not session.config.views
    assert "views=True" in repr(pj.ServerConfig("apps", server=AppServer(), views=True))


def test_views_must_be_a_bool_or_none() -> None:
    with pytest.raises(McpSessionError) as raised:
        pj.ServerConfig("apps", server=AppServer(), views="yes")  # type: ignore[arg-type]
    assert raised.value.code == CONFIG_INVALID and "views must be True, False or None" in raised.value.message


def test_the_catalog_says_which_tools_have_a_view_and_which_are_app_only() -> None:
    with connect() as session:
        frame = session.catalog.to_frame()
    assert frame.loc["show_good", ["has_app", "app_only", "view"]].tolist() == [True, False, "ui://t/good"]
    assert frame.loc["legacy", "view"] == "ui://t/good"  # the deprecated flat key
    assert frame.loc["app_only", ["has_app", "app_only"]].tolist() == [False, True]
    assert frame.loc["model_only", ["has_app", "app_only"]].tolist() == [False, False]
    assert not frame.loc["not_ui", "has_app"]  # a view that is not ui:// is none


def test_app_info_reads_each_view_and_says_what_it_declares_or_why_it_is_unavailable() -> None:
    server = AppServer()
    with pj.connect(pj.ServerConfig("apps", server=server, views=True), approval="auto") as session:
        info = session.app_info()
    assert set(server.reads.values()) == {1}  # each view once: show_good's is legacy's too
    assert info.loc["legacy", "sha256"] == info.loc["show_good", "sha256"]
    assert sorted(info.index) == sorted([f"show_{name}" for name in VIEWS] + ["legacy"])
    good = info.loc["show_good"]
    assert good["bytes"] == len(PAGE.encode()) and good["sha256"] == hashlib.sha256(PAGE.encode()).hexdigest()
    assert good["connect_domains"] == "https://api.example" and good["resource_domains"] == "https://cdn.example"
    assert good["frame_domains"] == "" and good["permissions"] == "camera" and good["unavailable"] == ""
    assert "connectDomains 'https://a.example; script-src *': not a plain origin" in good["refused"]
    assert "frameDomains 'javascript:alert(1)': not a plain origin" in good["refused"]
    assert info.loc["show_blob", "sha256"] == good["sha256"]  # a blob of UTF-8 HTML is the same view
    unavailable = {
        "show_plain-html": "is not a view: its server answered text/html, not text/html;profile=mcp-app",
        "show_empty": "its HTML is empty",
        "show_huge": f"over the kit's {VIEW_MAX_BYTES}",
        "show_not-base64": "its blob is not base64 of UTF-8 HTML",
    }
    for tool, words in unavailable.items():
        said = info.loc[tool, "unavailable"]
        assert said.startswith(f"{APP_UNAVAILABLE}: ") and words in said, said
    assert info.loc["show_missing", "unavailable"].startswith("mcp_protocol_error: ")


def test_a_viewed_call_reads_its_view_with_the_calls_input_and_result() -> None:
    with connect() as session:
        call = session.call("show_good", {}, raw=True, approve=True)
        assert isinstance(call, ViewedCall) and call.state == "done"
        view = call.view.view
        assert view is not None and view.html == PAGE and view.tool_input == {}
        assert view.tool_result["content"] == [{"type": "text", "text": f"show_good: {SCRIPT}"}]
        bundle = call.view.bundle()
        assert bundle[APP_MIME]["html"] == PAGE and bundle[APP_MIME]["allowed"] is False
        assert bundle[APP_MIME]["declared"] == {"connectDomains": ["https://api.example"],
                                                "resourceDomains": ["https://cdn.example"]}  # fmt: skip
        assert NO_VIEWER in bundle["text/plain"] and VIEW_LABEL in bundle["text/plain"]
        assert_safe(bundle["text/html"], NO_VIEWER)
        assert SCRIPT not in bundle["text/html"] and "<iframe" not in bundle["text/html"]
        read = [entry.detail for entry in session.log.events(EVENT_APP)]
        assert any(line.startswith("read view of apps/show_good (ui://t/good") for line in read), read
        denied = session.call("show_good", {}, raw=True, approve=False)
        assert denied.view.view is None and denied.view.note == "not shown: the call was denied"


@pytest.mark.parametrize("tool", ["show_plain-html", "show_huge", "show_missing"])
def test_a_view_that_cannot_be_taken_is_said_and_the_call_stands(tool: str) -> None:
    with connect() as session:
        call = session.call(tool, {}, raw=True, approve=True)
        assert call.state == "done" and call.view.view is None
        code = "mcp_protocol_error" if tool == "show_missing" else APP_UNAVAILABLE
        assert call.view.note.startswith(f"not shown: {code}: "), call.view.note
        assert call.view.note in call.view.bundle()["text/plain"]
        assert session.log.events(EVENT_APP)[-1].detail.endswith(call.view.note)
        assert session.call("capabilities", {}, raw=True).ok  # the session goes on


def test_views_off_show_none() -> None:
    with connect(views=False) as session:
        call = session.call("show_good", {}, raw=True, approve=True)
        assert not isinstance(call, ViewedCall) and call.ok


@pytest.mark.parametrize(
    ("method", "params", "words"),
    [
        ("tools/call", {"name": "model_only"}, "'model_only' is not visible to views"),
        ("tools/call", {"name": "nowhere"}, "which its server does not list"),
        ("tools/call", {"name": "app_only", "arguments": [1]}, "arguments"),
        ("resources/read", {"uri": "file:///etc/passwd"}, "ui:// resources only"),
        ("ui/message", {}, "not supported"),
        ("sampling/createMessage", {}, "not supported"),
    ],
)
def test_a_views_request_outside_the_rules_is_refused(method: str, params: dict[str, Any], words: str) -> None:
    with connect() as session:
        tools = {tool.name: tool for tool in session.catalog.tools}
    with pytest.raises(McpSessionError) as raised:
        check_view_request(method, params, tools)
    assert raised.value.code == APP_REFUSED and words in raised.value.message, raised.value.message


def test_a_views_allowed_requests_pass() -> None:
    with connect() as session:
        tools = {tool.name: tool for tool in session.catalog.tools}
    check_view_request("tools/call", {"name": "app_only", "arguments": {}}, tools)
    check_view_request("tools/call", {"name": "show_good"}, tools)
    check_view_request("resources/read", {"uri": "ui://t/good"}, tools)


def test_the_demo_server_has_a_view_of_its_own() -> None:
    with pj.connect(demo_in_memory().with_views(True), approval="auto") as demo:
        assert demo.catalog.to_frame().loc["list_notes", ["has_app", "view"]].tolist() == [True, "ui://demo/notes.html"]
        info = demo.app_info()
        html = NOTES_VIEW.read_bytes()
        assert info.index.tolist() == ["list_notes"]
        assert info.loc["list_notes", "sha256"] == hashlib.sha256(html).hexdigest()
        assert info.loc["list_notes", "connect_domains"] == "" and info.loc["list_notes", "unavailable"] == ""
        call = demo.call("list_notes", {}, approve=True)  # the PurrA path: the view gets the envelope as a result
        assert call.view.view is not None and call.view.view.tool_result["isError"] is False


@pytest.mark.parametrize(
    ("package", "tool", "app_only"),
    [("server-basic-vanillajs", "get-time", False), ("server-system-monitor", "poll-system-stats", True)],
)
@pytest.mark.published  # a published MCP server from npm
def test_published_example_servers_views_over_stdio(package: str, tool: str, app_only: bool) -> None:
    config = pj.ServerConfig(package, command="node", args=[str(MODULES / package / "dist" / "index.js"), "--stdio"],
                             views=True)  # fmt: skip
    with pj.connect(config, approval="auto") as session:
        frame = session.catalog.to_frame()
        assert bool(frame.loc[tool, "app_only"]) is app_only
        info = session.app_info()
        assert (info["unavailable"] == "").all(), info["unavailable"].tolist()
        assert (info["bytes"] > 10_000).all()
        if not app_only:
            call = session.call(tool, {}, raw=True, approve=True)
            assert call.view.view is not None and call.view.view.size == info.loc[tool, "bytes"]


class FrontendEnd:
    """The labextension's end of a view's comm, as the kernel sees it: what the kernel sent back, waited on."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = threading.Condition()

    def send(self, data: dict[str, Any]) -> None:
        with self.arrived:
            self.sent.append(data)
            self.arrived.notify_all()

    def answer(self, request_id: int, seconds: float = 30.0) -> dict[str, Any]:
        """The answer to ``request_id`` (30 s: a guard against a hang, not a measure)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: any(m.get("id") == request_id for m in self.sent), seconds), self.sent
            return next(m for m in self.sent if m.get("id") == request_id)


def test_under_auto_a_views_read_is_answered_and_its_write_waits_for_a_person() -> None:
    """The view's requests reach the session as a person's calls do: ``auto`` approves its read (the answer is the
    result), a write (add_note, which its server hints writes) waits for its own approval, whose deny reaches the
    view as an error; a read of a resource that is not ui:// is refused; its log lines are app rows."""
    with pj.connect(demo_in_memory().with_views(True), approval="auto") as demo:
        call = demo.call("list_notes", {})
        assert isinstance(call, ViewedCall) and call.state == "done" and call.view.view is not None
        end = FrontendEnd()

        def ask(request_id: int, method: str, params: dict[str, Any]) -> None:
            call.view.receive(end, {"type": "request", "id": request_id, "method": method, "params": params})

        ask(1, "tools/call", {"name": "list_notes", "arguments": {}})
        assert end.answer(1)["result"]["isError"] is False
        ask(2, "tools/call", {"name": "add_note", "arguments": {"text": "from the view"}})
        [pending] = call.view.pending
        assert pending.state == "pending" and not any(m.get("id") == 2 for m in end.sent)
        pending.deny()
        assert end.answer(2)["error"]["message"].startswith("denied")
        assert not call.view.pending
        assert [(d["tool"], d["state"]) for d in call.view.decisions] == [
            ("list_notes", "approved"),
            ("add_note", "denied"),
        ]
        ask(3, "resources/read", {"uri": "demo://documents/doc-1"})
        assert end.answer(3)["error"]["message"].startswith(f"{APP_REFUSED}: ")
        ask(4, "resources/read", {"uri": "ui://demo/notes.html"})
        assert end.answer(4)["result"]["contents"][0]["mimeType"] == VIEW_MIME
        call.view.receive(end, {"type": "log", "params": {"level": "warning", "data": SCRIPT}})
        assert demo.log.events(EVENT_APP)[-1].detail == f"list_notes's view said (warning): {SCRIPT}"
        assert demo.call("list_notes", {}, approve=True).result.structured == {"notes": []}  # nothing was added


def test_a_view_has_at_most_pending_max_calls_waiting_and_more_are_refused_at_once() -> None:
    """150 writes asked by one view: PENDING_MAX wait for a person, every other one is answered ``mcp_app_refused`` at
    once (nothing redrawn, nothing recorded); once one is decided, the view may ask again."""
    with pj.connect(demo_in_memory().with_views(True), approval="auto") as demo:
        call = demo.call("list_notes", {})
        assert isinstance(call, ViewedCall)
        end = FrontendEnd()
        redraws: list[int] = []
        output = call.view.output
        shown = output.update
        output.update = lambda bundle: (redraws.append(1), shown(bundle))[1]  # type: ignore[method-assign]
        for request_id in range(1, 151):
            params = {"name": "add_note", "arguments": {"text": f"note {request_id}"}}
            call.view.receive(end, {"type": "request", "id": request_id, "method": "tools/call", "params": params})
        assert len(call.view.pending) == PENDING_MAX
        refused = [end.answer(request_id) for request_id in range(PENDING_MAX + 1, 151)]
        assert {answer["error"]["message"] for answer in refused} == {
            f"{APP_REFUSED}: {PENDING_MAX} calls of this view wait for approval already; it may ask again once they "
            "are decided."
        }
        assert len(redraws) == PENDING_MAX and call.view.decisions == []
        call.view.pending[0].deny()
        assert end.answer(1)["error"]["message"].startswith("denied")
        call.view.receive(end, {"type": "request", "id": 151, "method": "tools/call",
                                "params": {"name": "add_note", "arguments": {"text": "again"}}})  # fmt: skip
        assert len(call.view.pending) == PENDING_MAX
        for pending in list(call.view.pending):
            pending.deny()
        assert demo.call("list_notes", {}, approve=True).result.structured == {"notes": []}


class NoResourcesServer(AppServer):
    """A tool that declares a view, from a server that offers no resources at all."""

    def __init__(self) -> None:
        super().__init__()
        del self.request_handlers[types.ListResourcesRequest], self.request_handlers[types.ReadResourceRequest]


def test_a_view_whose_server_offers_no_resources_is_said_not_shown() -> None:
    """The read is refused before any request (``mcp_capability_missing``): said where the view would be and in the
    log, not left "reading its view"."""
    config = pj.ServerConfig("bare", server=NoResourcesServer(), views=True)
    with pj.connect(config, approval="auto") as session:
        call = session.call("show_good", {}, raw=True, approve=True)
        assert isinstance(call, ViewedCall) and call.state == "done" and call.view.view is None
        assert call.view.note.startswith("not shown: mcp_capability_missing: "), call.view.note
        assert session.log.events(EVENT_APP)[-1].detail.endswith(call.view.note)
