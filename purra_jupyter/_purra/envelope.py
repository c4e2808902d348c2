"""Call results and their MIME bundles: PurrA envelopes and raw MCP results.

Everything in a result came from a server nobody here trusts: the HTML fallbacks escape every
string, show images only as data URIs of four raster types, and never make a URL clickable. What they show is
bounded (``egress.Room``, as every display of server data): a cut says how much it shows and which attribute holds it
all; in plain text a block of several lines stands behind ``| `` under its label, so it cannot pass for the kit's lines.

Each MIME payload carries, beside the result, the kit's fixed words under ``labels`` (``envelope_labels()``,
``raw_result_labels()``): the labextension shows those, so the words are typed once, here. They are UI text
only: never part of the result itself (``to_dict()``, ``text``, ``structured``), which is what a model or an
evaluation row gets.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.egress import (
    CellText,
    Room,
    block_lines,
    bundle,
    cell_text,
    cut_block,
    note_html,
    pre_shown,
    table_shown,
    text_shown,
)
from .._base.errors import McpSessionError
from .._base.frames import kit_frame
from .._base.markup import ERROR_COLOR, OK_COLOR, Html, join, pre, tag
from .._base.visible import visible
from .._base.wire import COMMITTED, ENVELOPE_MIME, NOT_STARTED, NOT_TABULAR, RAW_RESULT_MIME, UNKNOWN

if TYPE_CHECKING:
    import pandas as pd

ENVELOPE_KIND = "PurrA envelope"
RAW_LABEL = "raw MCP result, outside the PurrA contract"
SERVER_WORDS = "what the server said: outside the envelope, never passed to a model"
IMAGE_ALT = "image from the server"
# What purra's effect state means, appended to the state where a person reads it; the other states need no note.
EFFECT_NOTES = {
    COMMITTED: " (the server answered the write)",
    UNKNOWN: " — the write may have happened: the kit cannot know; check the server",
}
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_PREVIEW_ROWS = 50


def records_in(value: Any) -> list[dict[str, Any]] | None:
    """The list of records in ``value`` (a list of objects, or an object holding exactly one such list)."""
    if isinstance(value, dict):
        lists = [item for item in value.values() if _is_records(item)]
        return lists[0] if len(lists) == 1 else None
    return value if _is_records(value) else None


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _status(error_code: str | None) -> str:
    return "ok" if error_code is None else error_code


def _header_html(kind: str, server: str, tool: str, error_code: str | None, elapsed_ms: float) -> Html:
    color = OK_COLOR if error_code is None else ERROR_COLOR
    status = tag("span", _status(error_code), style=f"color:{color};font-weight:bold")
    return tag(
        "div", tag("b", kind), " · ", status, f" · {server} · ", tag("code", visible(tool)), f" · {elapsed_ms:.0f} ms"
    )


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


FOLD_LINES = 12  # structured JSON longer than this is folded (a <details> the reader opens)


def _json_block(label: str, value: Any, room: Room, whole: str) -> Html:
    """Structured content as indented JSON text, as much as fits ``room``; folded beyond ``FOLD_LINES`` lines (the
    note on a cut below the fold, where it is seen folded)."""
    text = _json_text(value)
    lines = text.count("\n") + 1
    part, note = cut_block(text, room, whole)
    shown = pre(part) if lines <= FOLD_LINES else tag("details", tag("summary", f"{label} ({lines} lines of JSON)"),
                                                       pre(part))  # fmt: skip
    return join([shown, note_html(note) if note else None])


def table_columns(value: Any) -> list[str] | None:
    """The columns of the table of ``value``'s records in the server's order (each key where it first appears);
    the payload carries them, since a saved notebook's JSON has its keys sorted."""
    records = records_in(value)
    return None if records is None else [str(key) for key in dict.fromkeys(k for record in records for k in record)]


def _table_html(records: list[dict[str, Any]], room: Room, whole: str) -> Html:
    """The first ``_PREVIEW_ROWS`` records as a table, as much as fits ``room``."""
    columns = table_columns(records) or []
    rows = ([_cell(record.get(column)) for column in columns] for record in records[:_PREVIEW_ROWS])
    return table_shown(columns, rows, len(records), room, whole)


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _frame(value: Any, what: str) -> pd.DataFrame:
    import pandas as pd

    records = records_in(value)
    if records is None and isinstance(value, dict):
        records = [value]  # one object: one row
    if records is None:
        raise McpSessionError(
            NOT_TABULAR, f"The structured content of {what} is neither an object nor a list of records."
        )
    return kit_frame(pd.DataFrame.from_records(records))


@dataclass(frozen=True, slots=True)
class Envelope:
    """A call through a PurrA binding: exactly the JSON purra-mcp's handler returned, plus context.

    ``message`` is the kit's own note on a failure it found; ``server_text`` the server's own error text
    (a result flagged ``isError``, a JSON-RPC error), shown beside the envelope and never part of it: purra-mcp
    keeps remote text away from a model, a person still needs to read it. ``effect_state`` is purra's word
    on what the call did: ``committed`` (a write the server answered), ``not_started`` (nothing was sent,
    or a read) or ``unknown`` (a write sent and then failed or cancelled: it may have happened). ``write`` says the
    call was a write: only then (or when it is not ``not_started``) is the effect shown, since on a read
    ``not_started`` would read as "did not run"."""

    server: str
    tool: str
    json: str
    error_code: str | None = None
    elapsed_ms: float = 0.0
    message: str = ""
    server_text: str = ""
    effect_state: str = NOT_STARTED
    write: bool = False

    @property
    def ok(self) -> bool:
        return self.error_code is None

    @property
    def text(self) -> list[str]:
        return list(json.loads(self.json)["text"])  # (read when asked: a batch's rows keep only their text)

    @property
    def structured(self) -> Any:
        return json.loads(self.json)["structured"]

    def to_dict(self) -> dict[str, Any]:
        """The envelope ``{"text": [...], "structured": ...}`` a PurrA host gets, as a fresh dict."""
        fresh: dict[str, Any] = json.loads(self.json)
        return fresh

    @property
    def shows_effect(self) -> bool:
        return self.write or self.effect_state != NOT_STARTED

    def to_frame(self) -> pd.DataFrame:
        return _frame(self.structured, f"{self.tool}'s result")

    def __repr__(self) -> CellText:
        head = f"Envelope {self.server}/{visible(self.tool)}: {_status(self.error_code)} ({self.elapsed_ms:.0f} ms)"
        effect = f"  effect: {self.effect_state}{EFFECT_NOTES.get(self.effect_state, '')}"
        lines = [head, *([effect] if self.shows_effect else [])]
        lines += [*(f"  {line}" for line in [self.message] if line), *_server_text_lines(self)]
        room = Room.text()
        for block in self.text:
            lines += block_lines("text", text_shown(block, room, ".text"))
        if self.structured is not None:
            said = json.dumps(self.structured, ensure_ascii=False)
            lines += block_lines("structured", text_shown(said, room, ".structured"))
        return cell_text("\n".join(lines))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        room = Room.html()
        body = [pre_shown(block, room, ".text") for block in self.text]
        records = records_in(self.structured)
        if records is not None:
            body.append(_table_html(records, room, ".structured"))
        if self.structured is not None:
            body.append(_json_block("structured", self.structured, room, ".structured"))
        effect = self.effect_state if self.shows_effect else None
        payload = {
            "envelope": self.to_dict(),
            "effectState": effect,
            "columns": table_columns(self.structured),
            "labels": envelope_labels(),
        }
        shown = [_effect_html(self)] if self.shows_effect else []
        return _bundle(self, ENVELOPE_MIME, ENVELOPE_KIND, "purra-envelope", [*shown, *body], payload)


@dataclass(frozen=True, slots=True)
class RawResult:
    """A raw ``tools/call`` result, every content block kept: for exploring tools outside the profile.

    ``server_text`` is the server's own words when it answered with a JSON-RPC error (code and message,
    bounded); ``message`` is the kit's note."""

    server: str
    tool: str
    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: Any = None
    is_error: bool = False
    error_code: str | None = None
    elapsed_ms: float = 0.0
    message: str = ""
    server_text: str = ""

    @property
    def ok(self) -> bool:
        return self.error_code is None

    @property
    def effect_state(self) -> None:
        """``None``: a raw call is outside PurrA's contract, which is what reports effects."""
        return None

    def to_frame(self) -> pd.DataFrame:
        return _frame(self.structured_content, f"{self.tool}'s raw result")

    def to_dict(self) -> dict[str, Any]:
        return {"content": self.content, "structuredContent": self.structured_content, "isError": self.is_error}

    def __repr__(self) -> CellText:
        head = (
            f"RawResult {self.server}/{visible(self.tool)}: {_status(self.error_code)} ({self.elapsed_ms:.0f} ms) — "
            f"{RAW_LABEL}"
        )
        lines = [head, *(f"  {line}" for line in [self.message] if line), *_server_text_lines(self)]
        room = Room.text()
        for block in self.content:
            lines += block_lines(visible(str(block.get("type"))), text_shown(_block_text(block), room, ".content"))
        if self.structured_content is not None:
            said = json.dumps(self.structured_content, ensure_ascii=False)
            lines += block_lines("structuredContent", text_shown(said, room, ".structured_content"))
        return cell_text("\n".join(lines))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        room = Room.html()
        body = [_block_html(block, room, ".content") for block in self.content]
        if self.structured_content is not None:
            body.append(_json_block("structuredContent", self.structured_content, room, ".structured_content"))
        payload = {
            "result": self.to_dict(),
            "columns": table_columns(self.structured_content),
            "labels": raw_result_labels(),
        }
        return _bundle(self, RAW_RESULT_MIME, RAW_LABEL, "purra-raw-result", body, payload)


def envelope_labels() -> dict[str, Any]:
    """The fixed words an envelope payload carries for the labextension (a fresh dict each time)."""
    return {"kind": ENVELOPE_KIND, "serverWords": SERVER_WORDS, "effectNotes": dict(EFFECT_NOTES)}


def raw_result_labels() -> dict[str, str]:
    """The fixed words a raw-result payload carries for the labextension."""
    return {"raw": RAW_LABEL, "serverWords": SERVER_WORDS, "imageAlt": IMAGE_ALT}


def _effect_html(envelope: Envelope) -> Html:
    """The effect state; ``unknown`` as a warning a person cannot miss."""
    state = envelope.effect_state
    note = EFFECT_NOTES.get(state, "")
    if state == UNKNOWN:
        style = f"font-weight:bold;border:2px solid {ERROR_COLOR};padding:2px 8px;margin:4px 0"
        return tag("div", f"effect: {state}{note}", class_="purra-effect purra-effect-unknown", style=style)
    return tag("div", tag("small", f"effect: {state}{note}"), class_="purra-effect")


def _server_text_lines(result: Envelope | RawResult) -> list[str]:
    return block_lines(SERVER_WORDS, result.server_text) if result.server_text else []


def _bundle(
    result: Envelope | RawResult, mime: str, label: str, css_class: str, body: list[Html], payload: dict[str, Any]
) -> dict[str, Any]:
    """The MIME bundle of a call result: our MIME type for the extension, escaped HTML, plain text. The kit's
    note and the server's own error text come first, outside ``payload`` (the result itself and its labels)."""
    parts = [_header_html(label, result.server, result.tool, result.error_code, result.elapsed_ms)]
    if result.message:
        parts.append(tag("p", result.message))
    if result.server_text:
        parts.append(tag("div", tag("small", SERVER_WORDS), pre(result.server_text)))
    data = {
        "server": result.server,
        "tool": result.tool,
        "errorCode": result.error_code,
        "elapsedMs": round(result.elapsed_ms, 3),
        "message": result.message,
        "serverText": result.server_text,
        **payload,
    }
    html = tag("div", join(parts + body), class_=css_class)
    return bundle(html, result.__repr__(), **{mime: data})


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        return f"{block.get('mimeType')} ({len(str(block.get('data', '')))} base64 chars)"
    if kind == "resource_link":
        return f"{block.get('name')} <{block.get('uri')}>"
    if kind == "resource":
        resource = block.get("resource") or {}
        return f"{resource.get('uri')}: {resource.get('text', '(binary)')}"
    return json.dumps(block, ensure_ascii=False)


def image_data_uri(block: dict[str, Any]) -> str | None:
    """A data URI for a PNG, JPEG, GIF or WebP block whose data is really base64; else ``None``."""
    mime = block.get("mimeType")
    data = block.get("data")
    if mime not in IMAGE_TYPES or not isinstance(data, str):
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return f"data:{mime};base64,{data}"


def image_tag(uri: str) -> Html:
    """An ``<img>`` of a data URI ``image_data_uri`` made (never any other address)."""
    # tiny images (icons, test patterns) scaled up to a size a person can see, their pixels kept sharp
    return tag("img", alt=IMAGE_ALT, style="min-width:64px;max-width:100%;image-rendering:pixelated", src=uri)


def _block_html(block: dict[str, Any], room: Room, whole: str) -> Html:
    if block.get("type") == "image":
        uri = image_data_uri(block)
        if uri is not None:
            return image_shown(uri, room, whole)
    return tag("div", tag("small", str(block.get("type"))), pre_shown(_block_text(block), room, whole))


def image_shown(uri: str, room: Room, whole: str) -> Html:
    """An image of a data URI ``image_data_uri`` made when it fits ``room``; else its size, and where it is whole."""
    image = image_tag(uri)
    if room.fits(image):
        return image
    return note_html(f"an image of {len(uri):,} characters of base64, more than this output shows; {whole} holds it")


def block_html(block: dict[str, Any], room: Room, whole: str) -> Html:
    """One content block as a raw result shows it (text as text, the four raster image types as images), as much as
    fits ``room``; ``whole``: the attribute that holds it whole."""
    return _block_html(block, room, whole)


def json_block(label: str, value: Any, room: Room, whole: str) -> Html:
    """JSON as a raw result's structured content shows it: indented text, folded beyond ``FOLD_LINES`` lines, as
    much as fits ``room``."""
    return _json_block(label, value, room, whole)
