"""What a server offers besides tools: resources, resource templates and prompts, as raw MCP.

Raw exploration, outside the PurrA contract (as raw tool calls are): nothing here passes through purra-mcp, and
every view says so. The listings are paged within the connection's limits (pages, items, bytes, like the tool
listing); a read or a prompt is bounded like a raw tool result. Everything shown came from a server nobody here
trusts: the HTML escapes every string, shows images only as data URIs of four raster types, and shows HTML and SVG
as their source text, never as markup. What a display shows is bounded as every display of server data is
(``egress.Room``): a resource of megabytes shows its beginning, says how much, and names the attribute that holds it
all (``.text``, ``.blobs()``, ``.contents``).

A listing knows when the server said its list changed (``ServerNotices.list_changes``): it says it is stale, and the
session lists again the next time it is asked (the session itself stays ``ready``: its tools did not change).
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .._base import runner
from .._base.egress import (
    CellText,
    Room,
    block_lines,
    bundle,
    cell_text,
    cut_block,
    note_html,
    pre_shown,
    shown_note,
    table_shown,
    text_shown,
)
from .._base.errors import McpSessionError
from .._base.frames import kit_frame
from .._base.markup import WARN_COLOR, Html, join, tag
from .._base.visible import one_line, quoted, quoted_list
from .._base.wire import (
    CAPABILITY_MISSING,
    CATALOG_LIMIT,
    CONFIG_INVALID,
    EVENT_LIST,
    INVALID_ARGUMENTS,
    OFFERING_UNKNOWN,
    PAGINATION_INVALID,
    PROMPTS,
    RESOURCES,
    RESULT_INVALID,
    RESULT_TOO_LARGE,
)
from .._connection.connection import Connection, message_bytes
from .._connection.purra_adapter import cursor_refused, json_bytes
from .._purra.envelope import IMAGE_TYPES, block_html, image_data_uri, image_shown, json_block

if TYPE_CHECKING:
    import pandas as pd
    from mcp import ClientSession
    from purra_mcp import McpToolLimits

T = TypeVar("T")

OFFERINGS_LABEL = "raw MCP, outside the PurrA contract"
TEMPLATES = "resource templates"
SOURCE_NOTE = "source, shown as text (never rendered)"  # HTML and SVG
PREVIEW_ROWS = 50  # rows of a CSV shown; the text holds the rest
COMPLETION_VALUES = 100  # the most values of one completion the kit takes (MCP's own bound)
COMPLETION_CHARS = 200  # ... each cut to this many characters, on one line
CELL_CHARS = 2000  # the most of one listing cell shown (the item keeps all of it)
DESCRIPTION_CHARS = 500  # of a prompt's description in its plain text, on one line
WHOLE_TEXT = ".text"  # what holds a resource's text contents whole
WHOLE_BLOBS = ".blobs()"  # ... and its binary ones
_SOURCE_TYPES = ("text/html", "application/xhtml+xml", "image/svg+xml")


@dataclass(frozen=True)
class _Spec:
    """One kind of listing: the request and result, the field of its items, its key, and its table's columns."""

    capability: str
    changes: str  # the key of ``ServerNotices.list_changes`` that makes it stale
    field: str
    key: str  # the column that names an item
    columns: tuple[str, ...]
    magic: str  # how a person lists it again


_SPECS = {
    RESOURCES: _Spec(RESOURCES, RESOURCES, "resources", "uri",
                     ("uri", "name", "title", "mime_type", "size", "description", "annotations"), "s.resources"),
    TEMPLATES: _Spec(RESOURCES, RESOURCES, "resourceTemplates", "uri_template",
                     ("uri_template", "name", "title", "mime_type", "variables", "description", "annotations"),
                     "s.resource_templates"),
    PROMPTS: _Spec(PROMPTS, PROMPTS, "prompts", "name", ("name", "title", "description", "arguments", "required"),
                   "s.prompts"),
}  # fmt: skip


def require(connection: Connection, capability: str) -> None:
    """``mcp_capability_missing`` unless the server's capabilities offer ``capability``."""
    if capability not in connection.hello.capabilities:
        raise McpSessionError(
            CAPABILITY_MISSING,
            f"Server '{connection.name}' offers no {capability} (its capabilities have no '{capability}').",
        )


def template_variables(template: str) -> list[str] | None:
    """The variables of an RFC 6570 URI template, in order; ``None`` when it is not a valid template."""
    import uri_template

    if not uri_template.validate(template):
        return None
    return list(dict.fromkeys(str(name) for name in uri_template.URITemplate(template).variable_names))


def expand(template: str, values: Mapping[str, Any]) -> str:
    """The URI ``template`` names with ``values`` (RFC 6570: each value percent-encoded as its expression says).
    Every variable needs a value (a string or a number), and every value a variable: else
    ``mcp_invalid_arguments``."""
    import uri_template

    variables = template_variables(template)
    if variables is None:
        raise McpSessionError(INVALID_ARGUMENTS, f"{template!r} is not an RFC 6570 URI template.")
    missing = [name for name in variables if name not in values]
    unknown = [str(name) for name in values if name not in variables]
    if missing or unknown:
        said = "; ".join([*([f"no value for {quoted_list(missing)}"] if missing else []),
                          *([f"no variable {quoted_list(unknown)}"] if unknown else [])])  # fmt: skip
        raise McpSessionError(INVALID_ARGUMENTS, f"The template {template!r} has {quoted_list(variables)}: {said}.")
    texts = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise McpSessionError(INVALID_ARGUMENTS, f"The value of {name} must be a string or a number.")
        texts[str(name)] = str(value)
    return str(uri_template.URITemplate(template).expand(**texts))


# --- listings -------------------------------------------------------------------------------------


def _arguments_text(arguments: Any) -> str:
    """A prompt's arguments in one line, each name quoted: ``'city' (required), 'state'``."""
    if not isinstance(arguments, list):
        return ""
    return ", ".join(f"{quoted(str(item.get('name')))}{' (required)' if item.get('required') else ''}"
                     for item in arguments)  # fmt: skip


def _row(kind: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """One item of a listing as a table's row (the columns of its ``_Spec``)."""
    annotations = item.get("annotations")
    if kind == PROMPTS:
        arguments = item.get("arguments") or []
        required = [str(a.get("name")) for a in arguments if isinstance(a, dict) and a.get("required")]
        return {"name": item.get("name"), "title": item.get("title"), "description": item.get("description"),
                "arguments": _arguments_text(arguments), "required": quoted_list(required)}  # fmt: skip
    row = {
        "name": item.get("name"),
        "title": item.get("title"),
        "mime_type": item.get("mimeType"),
        "description": item.get("description"),
        "annotations": json.dumps(annotations, ensure_ascii=False) if annotations else None,
    }
    if kind == RESOURCES:
        return {"uri": item.get("uri"), **row, "size": item.get("size")}
    variables = template_variables(str(item.get("uriTemplate", "")))
    shown = "(not a valid URI template)" if variables is None else quoted_list(variables)
    return {"uri_template": item.get("uriTemplate"), **row, "variables": shown}


@dataclass(frozen=True)
class Offerings:
    """One listing of a server's resources, resource templates or prompts (``kind``), as the server sent each
    item (``items``), at one revision of its list; ``stale`` once the server said the list changed since."""

    kind: str
    server: str
    items: tuple[Mapping[str, Any], ...]
    revision: int
    current: Callable[[], int] = field(repr=False, compare=False)  # the list's revision now

    @property
    def stale(self) -> bool:
        return self.current() != self.revision

    def rows(self) -> list[dict[str, Any]]:
        return [_row(self.kind, item) for item in self.items]

    def keys(self) -> list[str]:
        """What names each item: a resource's URI, a template's URI template, a prompt's name."""
        return [str(row[_SPECS[self.kind].key]) for row in self.rows()]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self.items)

    def __getitem__(self, key: str) -> Mapping[str, Any]:
        """The item ``key`` names (see ``keys``); ``mcp_offering_unknown`` if the listing has none."""
        for name, item in zip(self.keys(), self.items, strict=True):
            if name == key:
                return item
        singular = {RESOURCES: "resource", TEMPLATES: "resource template", PROMPTS: "prompt"}[self.kind]
        raise McpSessionError(OFFERING_UNKNOWN, f"Server '{self.server}' lists no {singular} {key!r} "
                              f"({_SPECS[self.kind].magic} lists them).")  # fmt: skip

    def to_frame(self) -> pd.DataFrame:
        """The listing as a DataFrame, indexed by what names each item (``uri``, ``uri_template`` or ``name``)."""
        import pandas as pd

        spec = _SPECS[self.kind]
        return kit_frame(pd.DataFrame(self.rows(), columns=list(spec.columns)).set_index(spec.key))

    def _count(self) -> str:
        """``7 resources``, ``1 prompt``."""
        return f"{len(self)} {self.kind if len(self) != 1 else self.kind.removesuffix('s')}"

    def _stale_note(self) -> str:
        spec = _SPECS[self.kind]
        return f"stale: the server changed its {spec.changes} since this listing; {spec.magic} lists them again"

    def _whole(self) -> str:
        return f"{_SPECS[self.kind].magic}.to_frame()"

    def __repr__(self) -> CellText:
        head = f"{self._count()} of {self.server} — {OFFERINGS_LABEL}"
        lines = [head, *([f"  {self._stale_note()}"] if self.stale else [])]
        made = ("  " + " · ".join(one_line(str(value), 200) for value in row.values() if value not in (None, ""))
                for row in self.rows())  # fmt: skip
        shown = list(Room.text().parts(made))
        lines += shown
        if len(shown) < len(self):
            lines.append(f"  … ({shown_note(len(shown), len(self), self.kind, self._whole())})")
        return cell_text("\n".join(lines))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        columns = _SPECS[self.kind].columns
        rows = ([_shown(row.get(column)) for column in columns] for row in self.rows())
        stale = tag("p", self._stale_note(), style=f"color:{WARN_COLOR}") if self.stale else None
        head = tag("div", tag("b", self._count()), f" · {self.server} · {OFFERINGS_LABEL}")
        body = (table_shown(columns, rows, len(self), Room.html(), self._whole()) if self.items
                else tag("p", f"The server lists no {self.kind}."))  # fmt: skip
        html = tag("div", head, stale, body, class_="purra-offerings")
        return bundle(html, self.__repr__())


def _shown(value: Any) -> str:
    """A cell as a person reads it: on one line, invisible characters written as escapes, cut."""
    return "" if value is None else one_line(str(value), CELL_CHARS)


async def _list(client: ClientSession, kind: str, limits: McpToolLimits, server: str) -> list[dict[str, Any]]:
    """Page through a listing under the tool listing's bounds: at most ``max_pages`` pages, ``max_tools`` items
    and ``max_catalog_bytes`` bytes in all (``mcp_catalog_limit_exceeded``); a cursor purra-mcp would refuse
    (empty, too long, seen before) is ``mcp_pagination_invalid``."""
    from mcp import types

    request, result_type = {
        RESOURCES: (types.ListResourcesRequest, types.ListResourcesResult),
        TEMPLATES: (types.ListResourceTemplatesRequest, types.ListResourceTemplatesResult),
        PROMPTS: (types.ListPromptsRequest, types.ListPromptsResult),
    }[kind]
    spec = _SPECS[kind]
    items: list[dict[str, Any]] = []
    cursors: set[str] = set()
    cursor: str | None = None
    total = 0
    over = f"Server '{server}' lists more {kind} than this session's limits hold ({limits.max_pages} pages, " \
           f"{limits.max_tools} items, {limits.max_catalog_bytes} bytes)."  # fmt: skip
    for _ in range(limits.max_pages):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        result: Any = await client.send_request(types.ClientRequest(request(params=params)), result_type)
        page = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        total += _bytes(page, f"{kind} listing")
        found = page.get(spec.field, [])
        if total > limits.max_catalog_bytes or len(items) + len(found) > limits.max_tools:
            raise McpSessionError(CATALOG_LIMIT, over)
        items.extend(found)
        cursor = result.nextCursor
        if cursor is None:
            return items
        if cursor_refused(cursor, cursors):
            raise McpSessionError(PAGINATION_INVALID, f"Server '{server}' sent a {kind} cursor that is empty, "
                                  "too long or already followed.")  # fmt: skip
        cursors.add(cursor)
    raise McpSessionError(CATALOG_LIMIT, over)


def _bytes(value: Any, what: str) -> int:
    try:
        return json_bytes(value)
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise McpSessionError(RESULT_INVALID, f"The server's {what} holds a value JSON cannot carry.") from None


def _bounded(connection: Connection, dumped: dict[str, Any], blocks: int, what: str) -> None:
    """``mcp_result_too_large`` beyond the limits of a raw tool result (bytes, blocks)."""
    limits = connection.limits
    most = limits.max_result_bytes
    if blocks > limits.max_content_blocks or _bytes(dumped, what) > most:
        raise McpSessionError(
            RESULT_TOO_LARGE,
            f"Server '{connection.name}' sent a {what} of over {limits.max_content_blocks} parts or "
            f"{most} bytes (the session's limits); nothing is shown.",
        )


# --- resource contents ------------------------------------------------------------------------------


def _media(mime: Any) -> str:
    """A MIME type without its parameters, lowercase (``Text/CSV; charset=utf-8`` -> ``text/csv``)."""
    return str(mime or "").split(";")[0].strip().lower()


def _blob(item: Mapping[str, Any]) -> bytes | None:
    data = item.get("blob")
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def blob_summary(data: bytes) -> str:
    """``N bytes, sha256 HEX``: what a binary content shows of itself."""
    return f"{len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}"


def _csv_html(text: str, room: Room, whole: str) -> Html | None:
    """A CSV as a table (its first row the header), at most its first ``PREVIEW_ROWS`` rows, as much as fits
    ``room``; ``None`` if it is no CSV. Only the rows shown are kept; the rest are counted."""
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            return None
        shown = list(itertools.islice(reader, PREVIEW_ROWS))
        total = len(shown) + sum(1 for _ in reader)
    except csv.Error:
        return None
    width = max(len(row) for row in [header, *shown])
    columns = [*header, *[""] * (width - len(header))]
    return table_shown(columns, shown, total, room, whole)


def _text_html(text: str, mime: str, room: Room) -> Html:
    """A text content by its type, as much as fits ``room``: JSON that fits it parsed and indented (one longer is
    shown as the server wrote it: its beginning is what fits, and it is never parsed whole to be shown)."""
    if (mime == "application/json" or mime.endswith("+json")) and len(text) <= room.left:
        try:
            return json_block("JSON", json.loads(text), room, WHOLE_TEXT)
        except ValueError:
            pass
    if mime == "text/csv":
        table = _csv_html(text, room, WHOLE_TEXT)
        if table is not None:
            return table
    if mime in _SOURCE_TYPES:
        return join([tag("small", SOURCE_NOTE), pre_shown(text, room, WHOLE_TEXT)])
    return pre_shown(text, room, WHOLE_TEXT)


def _blob_html(item: Mapping[str, Any], mime: str, room: Room) -> Html:
    data = _blob(item)
    if data is None:
        return tag("p", "the blob is not valid base64; nothing is shown")
    uri = image_data_uri({"mimeType": mime, "data": item["blob"]}) if mime in IMAGE_TYPES else None
    if uri is not None:
        return join([image_shown(uri, room, WHOLE_BLOBS), tag("small", blob_summary(data))])
    if mime in _SOURCE_TYPES:
        source = pre_shown(data.decode("utf-8", "replace"), room, WHOLE_BLOBS)
        return join([tag("small", f"{blob_summary(data)}; {SOURCE_NOTE}"), source])
    return tag("p", blob_summary(data))


def content_html(item: Mapping[str, Any], room: Room) -> Html:
    """One resource content by its type, as much as fits ``room``: text as text, JSON folded, CSV as a table,
    PNG/JPEG/GIF/WebP as images, HTML and SVG as their source text, any other binary as its size and digest."""
    mime = _media(item.get("mimeType"))
    head = tag("small", " · ".join(_content_head(item)))
    body = _blob_html(item, mime, room) if "blob" in item else _text_html(str(item.get("text", "")), mime, room)
    return tag("div", head, body, class_="purra-resource-content")


def _content_head(item: Mapping[str, Any]) -> tuple[str, str]:
    """A content's URI and MIME type as its head shows them: the server's words, each on one line and cut."""
    return one_line(str(item.get("uri")), CELL_CHARS), one_line(_media(item.get("mimeType")) or "no MIME type", 200)


def content_text(item: Mapping[str, Any], room: Room) -> list[str]:
    """One resource content as lines of text: its URI and type, then its text (as much as fits ``room``) or its size
    and digest."""
    uri, mime = _content_head(item)
    head = f"{uri} ({mime})"
    if "blob" in item:
        data = _blob(item)
        return [f"  {head}: {blob_summary(data) if data is not None else 'a blob that is not valid base64'}"]
    return block_lines(head, text_shown(str(item.get("text", "")), room, WHOLE_TEXT))


def _lines(lines: list[str]) -> str:
    return "\n".join(lines)


@dataclass(frozen=True)
class ResourceContents:
    """What ``resources/read`` of ``uri`` answered: each content as the server sent it (``text`` or base64
    ``blob``, with its ``uri`` and ``mimeType``)."""

    server: str
    uri: str
    contents: tuple[Mapping[str, Any], ...]
    elapsed_ms: float = 0.0

    @property
    def text(self) -> str:
        """The text contents, one after another (binary ones left out)."""
        return "".join(str(item["text"]) for item in self.contents if "text" in item)

    def blobs(self) -> list[bytes]:
        """The binary contents, decoded (one that is not valid base64 left out)."""
        return [data for data in map(_blob, self.contents) if data is not None]

    def to_dict(self) -> dict[str, Any]:
        return {"contents": [dict(item) for item in self.contents]}

    def _left_out(self, shown: int) -> str:
        return shown_note(shown, len(self.contents), "contents", ".contents")

    def __repr__(self) -> CellText:
        head = f"Resource {self.server} {one_line(self.uri, CELL_CHARS)}: {len(self.contents)} contents " \
               f"({self.elapsed_ms:.0f} ms) — {OFFERINGS_LABEL}"  # fmt: skip
        shown = Room.text().fill(self.contents, content_text, _lines)
        more = [f"  … ({self._left_out(len(shown))})"] if len(shown) < len(self.contents) else []
        return cell_text("\n".join([head, *(line for lines in shown for line in lines), *more]))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        head = tag("div", tag("b", "resource"), f" · {self.server} · ", tag("code", self.uri),
                   f" · {self.elapsed_ms:.0f} ms · {OFFERINGS_LABEL}")  # fmt: skip
        shown = Room.html().fill(self.contents, content_html)
        body = shown or [tag("p", "The server sent no contents.")]
        more = note_html(self._left_out(len(shown))) if len(shown) < len(self.contents) else None
        return bundle(tag("div", head, join(body), more, class_="purra-resource"), self.__repr__())


async def read(
    connection: Connection, client: ClientSession, uri: str, max_bytes: int | None = None
) -> ResourceContents:
    """``resources/read`` of ``uri``, bounded by what one message may hold (or by ``max_bytes``: a tool's view), not
    by purra-mcp's limits of a tool's result, which are the PurrA path's: a resource is read beside it."""
    from mcp import types
    from pydantic import ValidationError

    try:
        params = types.ReadResourceRequestParams(uri=uri)  # type: ignore[arg-type]  # (pydantic reads the str)
    except ValidationError:
        raise McpSessionError(INVALID_ARGUMENTS, f"{uri!r} is not a URI.") from None
    started = time.perf_counter()
    result = await client.send_request(types.ClientRequest(types.ReadResourceRequest(params=params)),
                                       types.ReadResourceResult)  # fmt: skip
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    most = message_bytes(connection.limits) if max_bytes is None else max_bytes
    if _bytes(dumped, "resource") > most:
        raise McpSessionError(
            RESULT_TOO_LARGE,
            f"Server '{connection.name}' sent a resource of over {most} bytes (the most one message may hold with "
            "the session's limits); nothing is shown.",
        )
    elapsed = (time.perf_counter() - started) * 1000
    return ResourceContents(connection.name, uri, tuple(dumped.get("contents", [])), elapsed)


# --- prompts --------------------------------------------------------------------------------------------


def message_html(message: Mapping[str, Any], room: Room) -> Html:
    """One prompt message: its role, then its content (an embedded resource as a read shows it), as much as fits
    ``room``."""
    block = message.get("content") or {}
    if isinstance(block, dict) and block.get("type") == "resource" and isinstance(block.get("resource"), dict):
        body = content_html(block["resource"], room)
    else:
        text_block = dict(block) if isinstance(block, dict) else {"type": "text", "text": str(block)}
        body = block_html(text_block, room, ".text" if text_block.get("type") == "text" else ".messages")
    return tag("div", tag("b", str(message.get("role"))), body, class_="purra-prompt-message")


def _message_text(message: Mapping[str, Any], room: Room) -> list[str]:
    block = message.get("content") or {}
    kind = block.get("type") if isinstance(block, dict) else None
    role = one_line(str(message.get("role")), CELL_CHARS)
    if kind == "text":
        return block_lines(role, text_shown(str(block.get("text", "")), room, ".text"))
    if kind == "resource" and isinstance(block.get("resource"), dict):
        return [f"  {role}: (an embedded resource)", *(f"  {line}" for line in content_text(block["resource"], room))]
    return [f"  {role}: ({one_line(str(kind), CELL_CHARS)} content)"]


@dataclass(frozen=True)
class PromptMessages:
    """What ``prompts/get`` of ``name`` answered: its description and messages, as the server sent them."""

    server: str
    name: str
    arguments: Mapping[str, str]
    description: str | None
    messages: tuple[Mapping[str, Any], ...]
    elapsed_ms: float = 0.0

    @property
    def text(self) -> list[str]:
        """The text of each text content, in order."""
        blocks = (message.get("content") or {} for message in self.messages)
        return [str(block["text"]) for block in blocks if isinstance(block, dict) and block.get("type") == "text"]

    def to_dict(self) -> dict[str, Any]:
        said = {"description": self.description} if self.description is not None else {}
        return {**said, "messages": [dict(message) for message in self.messages]}

    def _left_out(self, shown: int) -> str:
        return shown_note(shown, len(self.messages), "messages", ".messages")

    def __repr__(self) -> CellText:
        head = f"Prompt {self.server}/{one_line(self.name, CELL_CHARS)}: {len(self.messages)} messages — " \
               f"{OFFERINGS_LABEL}"  # fmt: skip
        room = Room.text()
        described = [f"  {text_shown(one_line(self.description, DESCRIPTION_CHARS), room, '.description')}"] \
            if self.description else []  # fmt: skip
        shown = room.fill(self.messages, _message_text, _lines)
        more = [f"  … ({self._left_out(len(shown))})"] if len(shown) < len(self.messages) else []
        return cell_text("\n".join([head, *described, *(line for lines in shown for line in lines), *more]))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        head = tag("div", tag("b", "prompt"), f" · {self.server} · ", tag("code", self.name),
                   f" · {self.elapsed_ms:.0f} ms · {OFFERINGS_LABEL}")  # fmt: skip
        room = Room.html()
        described = _described(self.description, room) if self.description else None
        shown = room.fill(self.messages, message_html)
        more = note_html(self._left_out(len(shown))) if len(shown) < len(self.messages) else None
        return bundle(tag("div", head, described, join(shown), more, class_="purra-prompt"), self.__repr__())


def _described(description: str, room: Room) -> Html:
    part, note = cut_block(description, room, ".description")
    return tag("p", part, note_html(note) if note else None)


def _prompt_arguments(arguments: Mapping[str, Any] | None) -> dict[str, str]:
    if arguments is None:
        return {}
    if not isinstance(arguments, Mapping) or not all(isinstance(v, str) for v in arguments.values()):
        raise McpSessionError(INVALID_ARGUMENTS, "A prompt's arguments are a mapping of names to strings.")
    return {str(key): value for key, value in arguments.items()}


async def get_prompt(
    connection: Connection, client: ClientSession, name: str, arguments: Mapping[str, str]
) -> PromptMessages:
    """``prompts/get`` of ``name`` with ``arguments``, bounded like a raw tool result. The object is always sent,
    ``{}`` when there are none: some servers refuse a request without it (-32602), none one with it."""
    from mcp import types

    started = time.perf_counter()
    params = types.GetPromptRequestParams(name=name, arguments=dict(arguments))
    result = await client.send_request(types.ClientRequest(types.GetPromptRequest(params=params)),
                                       types.GetPromptResult)  # fmt: skip
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    _bounded(connection, dumped, len(result.messages), "prompt")
    elapsed = (time.perf_counter() - started) * 1000
    messages = tuple(dumped.get("messages", []))
    return PromptMessages(connection.name, name, dict(arguments), result.description, messages, elapsed)


# --- completions -------------------------------------------------------------------------------------------


async def complete(
    client: ClientSession,
    reference: tuple[str, str],
    argument: str,
    value: str,
    context: Mapping[str, str] | None,
) -> list[str]:
    """``completion/complete`` for ``argument`` typed so far as ``value``: the values the server offers, at most
    ``COMPLETION_VALUES``, each on one line and cut. ``reference`` is ``(PROMPTS, name)`` or ``(TEMPLATES, uri)``."""
    from mcp import types

    kind, name = reference
    ref: types.PromptReference | types.ResourceTemplateReference = (
        types.PromptReference(type="ref/prompt", name=name)
        if kind == PROMPTS
        else types.ResourceTemplateReference(type="ref/resource", uri=name)
    )
    result = await client.complete(
        ref, {"name": argument, "value": value}, context_arguments=dict(context or {}) or None
    )
    return [one_line(str(each), COMPLETION_CHARS) for each in result.completion.values[:COMPLETION_VALUES]]


# --- a session's offerings ------------------------------------------------------------------------------------


class Offered:
    """A session's view of what its server offers besides tools: each listing made on first use and made again
    once the server said it changed; reads, prompts and completions on the connection's requests (deadlines,
    cancellation, a kernel interrupt), each ``..._soon`` form on the loop without blocking the kernel."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._listed: dict[str, Offerings] = {}

    @property
    def completes(self) -> bool:
        """Whether the server offers completions (``completion/complete``)."""
        return "completions" in self.connection.hello.capabilities

    def listing(self, kind: str) -> Offerings:
        """The listing of ``kind`` (``RESOURCES``, ``TEMPLATES``, ``PROMPTS``): the last one unless it is stale;
        ``mcp_capability_missing`` when the server offers none."""
        listed = self._listed.get(kind)
        if listed is None or listed.stale:
            listed = self.connection.request(lambda client: self._list(client, kind))
            self._listed[kind] = listed
        return listed

    async def _list(self, client: ClientSession, kind: str) -> Offerings:
        connection = self.connection
        spec = _SPECS[kind]
        require(connection, spec.capability)
        revision = connection.notices.list_changes[spec.changes]
        items = await _list(client, kind, connection.limits, connection.name)
        connection.log.add(EVENT_LIST, f"{len(items)} {kind} (raw, revision {revision})")
        return Offerings(
            kind, connection.name, tuple(items), revision, lambda: connection.notices.list_changes[spec.changes]
        )

    def read_resource(
        self, uri: str, values: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> ResourceContents:
        """``resources/read`` of ``uri``; with ``values``, ``uri`` is a URI template (RFC 6570) filled with them,
        each percent-encoded. A server's refusal is ``mcp_protocol_error`` with its words."""
        return self.connection.request(self._reader(uri, values), timeout=timeout)

    def read_soon(
        self, uri: str, values: Mapping[str, Any] | None = None, *, max_bytes: int | None = None
    ) -> Future[ResourceContents]:
        return self._soon(self._reader(uri, values, max_bytes))

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> PromptMessages:
        """``prompts/get`` of ``name`` with ``arguments`` (strings); shown as its messages."""
        return self.connection.request(self._prompter(name, arguments), timeout=timeout)

    def prompt_soon(self, name: str, arguments: Mapping[str, str] | None = None) -> Future[PromptMessages]:
        return self._soon(self._prompter(name, arguments))

    def complete(
        self,
        argument: str,
        value: str = "",
        *,
        prompt: str | None = None,
        template: str | None = None,
        context: Mapping[str, str] | None = None,
    ) -> list[str]:
        """The values the server offers (``completion/complete``) for ``argument`` of a ``prompt`` or a resource
        ``template`` (give one), typed so far as ``value``; ``context``: the other arguments already chosen.
        ``mcp_capability_missing`` if the server offers no completions."""
        if (prompt is None) == (template is None):
            raise McpSessionError(CONFIG_INVALID, "complete() takes prompt= or template=, one of them.")
        reference = (PROMPTS, prompt) if prompt is not None else (TEMPLATES, cast(str, template))
        return self.connection.request(self._completer(reference, argument, value, context))

    def complete_soon(self, reference: tuple[str, str], argument: str, value: str = "",
                      context: Mapping[str, str] | None = None) -> Future[list[str]]:  # fmt: skip
        return self._soon(self._completer(reference, argument, value, context))

    def _soon(self, func: Callable[[ClientSession], Awaitable[T]]) -> Future[T]:
        return runner.submit(self.connection.run, func)

    def _reader(
        self, uri: str, values: Mapping[str, Any] | None, max_bytes: int | None = None
    ) -> Callable[[ClientSession], Awaitable[ResourceContents]]:
        require(self.connection, RESOURCES)
        target = uri if values is None else expand(uri, values)
        return lambda client: read(self.connection, client, target, max_bytes)

    def _prompter(
        self, name: str, arguments: Mapping[str, str] | None
    ) -> Callable[[ClientSession], Awaitable[PromptMessages]]:
        require(self.connection, PROMPTS)
        checked = _prompt_arguments(arguments)
        return lambda client: get_prompt(self.connection, client, name, checked)

    def _completer(self, reference: tuple[str, str], argument: str, value: str,
                   context: Mapping[str, str] | None) -> Callable[[ClientSession], Awaitable[list[str]]]:  # fmt: skip
        require(self.connection, "completions")
        if reference[0] not in (PROMPTS, TEMPLATES):
            raise McpSessionError(INVALID_ARGUMENTS, "A completion is of a prompt or a resource template.")
        return lambda client: complete(client, reference, argument, value, context)


__all__ = [
    "OFFERINGS_LABEL",
    "PROMPTS",
    "RESOURCES",
    "SOURCE_NOTE",
    "TEMPLATES",
    "Offered",
    "Offerings",
    "PromptMessages",
    "ResourceContents",
    "blob_summary",
    "content_html",
    "expand",
    "require",
    "template_variables",
]
