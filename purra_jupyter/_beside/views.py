"""A tool's own view (MCP Apps) as the kit records it: the HTML its server gave, the origins it declared and the
person allowed, the call's input and result, and what was decided on the view's own requests.

The view is read (``resources/read`` of the tool's ``ui://`` URI) after its call settled, outside PurrA's contract
like any raw read, and drawn by the labextension in a sandbox (an opaque-origin proxy frame around the view's own
frame, a Content-Security-Policy of the spec's defaults plus only the origins allowed). This module holds no I/O
and no widget: the ``ui`` layer reads, shows and bridges; here are the rules and the record.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .._base.app_rules import CSP_KEYS, VIEW_MIME, Domains, ToolApp, resource_domains
from .._base.egress import bundle, cell_text, text_bundle
from .._base.errors import McpSessionError
from .._base.markup import join, pre, tag
from .._base.visible import visible
from .._base.wire import APP_MIME, APP_REFUSED, APP_UNAVAILABLE
from .._purra.catalog import ToolVerdict
from .._purra.envelope import Envelope, RawResult
from .offerings import ResourceContents

VIEW_MAX_BYTES = 8 << 20  # the HTML of one view (published ones reach 4.3 MB: server-pdf's; a message of a stdio
# or HTTP transport holds 16 MiB with the default limits, and HTML's quotes are escaped in it)
PROTOCOL_VERSION = "2026-01-26"  # the MCP Apps version the extension speaks to a view
VIEW_LABEL = "the tool's own view (MCP Apps) — its server's HTML, sandboxed, outside the PurrA contract"
NO_VIEWER = (
    "this view renders in JupyterLab and Notebook 7 with purra-jupyter's extension; here, the call's result above is "
    "what it showed"
)
NO_LIVE_SESSION = "no live session: this view was replayed from the notebook file, its requests reach no server"
# What the view may ask of the host beside the ui/ methods the extension answers itself.
FORWARDED = ("tools/call", "resources/read")


@dataclass(frozen=True, slots=True)
class AppView:
    """One view of one call, as read: ``html`` and its ``sha256``, the ``domains`` its resource declared (valid
    ones, and the ones refused), the call's ``tool_input`` and ``tool_result`` (a ``CallToolResult`` as JSON)."""

    server: str
    tool: str
    uri: str
    html: str
    domains: Domains
    tool_input: Mapping[str, Any]
    tool_result: Mapping[str, Any]
    tool_listing: Mapping[str, Any] = field(repr=False)
    prefers_border: bool | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.html.encode("utf-8")).hexdigest()

    @property
    def size(self) -> int:
        return len(self.html.encode("utf-8"))

    def head(self) -> str:
        return f"view of {self.server}/{visible(self.tool)} ({self.uri}, sha256 {self.sha256[:12]}…, {self.size} bytes)"


def view_of(tool: ToolVerdict, server: str, contents: ResourceContents, arguments: Mapping[str, Any],
            result: Envelope | RawResult) -> AppView:  # fmt: skip
    """The view in ``contents`` (what ``resources/read`` of the tool's URI answered), for a call of ``tool`` with
    ``arguments`` that gave ``result``; ``mcp_app_unavailable`` when it is not one."""
    app = tool.app
    if app.uri is None:
        raise McpSessionError(APP_UNAVAILABLE, f"'{visible(tool.name)}' declares no view.")
    item = _view_content(contents, app)
    meta = item.get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    border = ui.get("prefersBorder") if isinstance(ui, Mapping) else None
    return AppView(
        server=server,
        tool=tool.name,
        uri=app.uri,
        html=_html_of(item, app.uri),
        domains=resource_domains(meta),
        tool_input=dict(arguments),
        tool_result=view_result(result),
        tool_listing=dict(tool.listing),
        prefers_border=border if isinstance(border, bool) else None,
    )


APP_INFO_COLUMNS = ["view", "app_only", "visibility", "bytes", "sha256", "connect_domains", "resource_domains",
                    "frame_domains", "base_uri_domains", "permissions", "refused", "unavailable"]  # fmt: skip


def app_info_row(tool: ToolVerdict, contents: ResourceContents | McpSessionError) -> dict[str, Any]:
    """What a tool's view declares, as its resource says it (the Inspector's ``--app-info``): its size and digest,
    its origins per directive, its permissions, what the kit refused; or why there is no view to take."""
    app = tool.app
    row: dict[str, Any] = {"tool": tool.name, "view": app.uri, "app_only": app.app_only,
                           "visibility": ", ".join(app.visibility), "unavailable": ""}  # fmt: skip
    try:
        if isinstance(contents, McpSessionError):
            raise contents
        item = _view_content(contents, app)
        html = _html_of(item, str(app.uri))
    except McpSessionError as error:
        return {**row, "unavailable": f"{error.code}: {error.message}"}
    domains = resource_domains(item.get("_meta"))
    for key, column in zip(CSP_KEYS, APP_INFO_COLUMNS[5:9], strict=True):
        row[column] = ", ".join(domains.declared.get(key, ()))
    data = html.encode("utf-8")
    return {**row, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "permissions": ", ".join(domains.permissions), "refused": "; ".join(domains.refused)}  # fmt: skip


def _view_content(contents: ResourceContents, app: ToolApp) -> Mapping[str, Any]:
    for item in contents.contents:
        mime = str(item.get("mimeType", "")).replace(" ", "").lower()
        if mime == VIEW_MIME:
            return item
    found = ", ".join(sorted({str(item.get("mimeType")) for item in contents.contents})) or "no contents"
    raise McpSessionError(APP_UNAVAILABLE, f"{app.uri} is not a view: its server answered {found}, not {VIEW_MIME}.")


def _html_of(item: Mapping[str, Any], uri: str) -> str:
    if isinstance(item.get("text"), str):
        html: str = item["text"]
    else:
        try:
            html = base64.b64decode(str(item.get("blob", "")), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise McpSessionError(APP_UNAVAILABLE, f"{uri}: its blob is not base64 of UTF-8 HTML.") from None
    size = len(html.encode("utf-8"))
    if size > VIEW_MAX_BYTES:
        raise McpSessionError(APP_UNAVAILABLE, f"{uri}: {size} bytes of HTML, over the kit's {VIEW_MAX_BYTES}.")
    if not html.strip():
        raise McpSessionError(APP_UNAVAILABLE, f"{uri}: its HTML is empty.")
    return html


def view_result(result: Envelope | RawResult) -> dict[str, Any]:
    """What the view is told the call gave, as MCP's ``CallToolResult``: a raw result as the server sent it; a
    PurrA envelope as a PurrA host holds it (its text blocks and its structured value); a failure the kit found as
    an error result in the kit's words."""
    if isinstance(result, RawResult) and result.content:
        return result.to_dict()
    if isinstance(result, Envelope) and result.ok:
        blocks = [{"type": "text", "text": text} for text in result.text]
        shaped: dict[str, Any] = {"content": blocks, "isError": False}
        if isinstance(result.structured, dict):
            shaped["structuredContent"] = result.structured
        return shaped
    words = result.message or result.error_code or "failed"
    return {"content": [{"type": "text", "text": f"{result.error_code}: {words}"}], "isError": True}


def check_view_request(method: str, params: Any, tools: Mapping[str, ToolVerdict]) -> None:
    """``mcp_app_refused`` unless the kit forwards this request of a view: ``tools/call`` of a listed tool whose
    visibility includes ``app``, ``resources/read`` of a ``ui://`` resource (of the view's own server, the only
    one it reaches)."""
    if method not in FORWARDED:
        raise McpSessionError(APP_REFUSED, f"A view's {method!r} is not supported by purra-jupyter.")
    params = params if isinstance(params, Mapping) else {}
    if method == "resources/read":
        uri = params.get("uri")
        if not isinstance(uri, str) or not uri.startswith("ui://"):
            raise McpSessionError(APP_REFUSED, "A view may read its own server's ui:// resources only.")
        return
    name = params.get("name")
    if not isinstance(name, str) or name not in tools:
        raise McpSessionError(APP_REFUSED, f"A view called {visible(str(name))!r}, which its server does not list.")
    if not tools[name].app.callable_by_view:
        raise McpSessionError(APP_REFUSED, f"'{visible(name)}' is not visible to views (its visibility lacks 'app').")
    if not isinstance(params.get("arguments", {}), Mapping):
        raise McpSessionError(APP_REFUSED, "A view's tools/call arguments must be an object.")


# --- the record ---------------------------------------------------------------------------------------------


def app_labels() -> dict[str, str]:
    """The kit's fixed words a view payload carries for the labextension."""
    return {"view": VIEW_LABEL, "noLiveSession": NO_LIVE_SESSION}


@cache
def host_version() -> str:
    """The kit's version, which the view is told as its host's (``hostInfo``)."""
    try:
        return version("purra-jupyter")
    except PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "0+unknown"


def view_bundle(view: AppView, *, view_id: str, allowed: bool, decisions: Sequence[Mapping[str, Any]],
                pending: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:  # fmt: skip
    """The view's output: our MIME type (everything the extension draws and replays), and for every other reader
    escaped HTML and plain text that say a view exists and what it would open."""
    domains = view.domains
    payload = {
        "viewId": view_id,
        "server": view.server,
        "tool": view.tool,
        "uri": view.uri,
        "html": view.html,
        "sha256": view.sha256,
        "bytes": view.size,
        "declared": domains.to_json(),
        "permissions": list(domains.permissions),
        "refused": list(domains.refused),
        "allowed": allowed and domains.any,  # the origins and permissions the person allowed (all, or none)
        "prefersBorder": view.prefers_border,
        "toolInput": dict(view.tool_input),
        "toolResult": dict(view.tool_result),
        "toolInfo": dict(view.tool_listing),
        "protocolVersion": PROTOCOL_VERSION,
        "hostVersion": host_version(),
        "decisions": [dict(decision) for decision in decisions],
        "pending": [dict(bundle) for bundle in pending],
        "labels": app_labels(),
    }
    lines = [f"{view.head()} — {VIEW_LABEL}", NO_VIEWER]
    asks = domains.lines()
    if asks:
        lines.append(("allowed" if allowed else "asked for, not allowed") + ": " + "; ".join(asks))
    lines += [decision_line(decision) for decision in decisions]
    html = tag("div", tag("b", view.head()), tag("p", VIEW_LABEL), tag("p", NO_VIEWER),
               join(pre(line) for line in lines[2:]), class_="purra-app")  # fmt: skip
    return bundle(html, cell_text("\n".join(lines)), **{APP_MIME: payload})


def decision_line(decision: Mapping[str, Any]) -> str:
    """One of the view's own requests as decided, e.g. ``the view called add_note: approved (approved by a click)``."""
    how = f" ({decision['how']})" if decision.get("how") else ""
    return f"the view called {decision.get('tool')}: {decision.get('state')}{how}"


def placeholder_bundle(server: str, tool: str, note: str) -> dict[str, str]:
    """Where the view will be, and why it is not there (yet): plain text, escaped for HTML readers."""
    return text_bundle(f"view of {server}/{visible(tool)}: {note}")
