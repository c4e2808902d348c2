"""A server's tool catalog with a PurrA verdict per tool: pure data, listed within purra-mcp's limits.

The decision "could a PurrA host bind this tool?" is purra-mcp's own code (pinned 1.0.3): its
paged listing rules and its schema contract (through ``purra_adapter``). This module adds what a
person needs on top: reasons with a path and a hint, a digest, a DataFrame, a diff.

The catalog's MIME payload is ``to_json()`` plus the kit's fixed words under ``labels`` (``catalog_labels()``),
which the labextension shows, so the words are typed once, here.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import unquote

from . import purra_adapter
from .app_meta import ToolApp, tool_app
from .charts import Chart, refusal_reasons
from .connection import Connection
from .egress import CellText, bundle, cell_text
from .errors import KEPT_APART, McpSessionError
from .markup import ERROR_COLOR, OK_COLOR, Html, join, table, tag, td
from .names import look_alikes, name_warning, one_line, visible
from .purra_adapter import Shape, canonical_json
from .wire import BINDING_INVALID, CATALOG_MIME, CATALOG_STALE, DIGEST_MISMATCH, EVENT_LIST, EVENT_LIST_CHANGED

if TYPE_CHECKING:
    import pandas as pd
    from mcp import ClientSession, types
    from purra_mcp import McpToolLimits

COMPATIBLE = "compatible"
UNSUPPORTED = "unsupported"
NONE = "none"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
MAX_RELISTS = 3  # list_changed while listing: list again at most this often, then give up (stale)
_SERVER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # purra-mcp's rule for remote tool names
_SAFE_INTEGER = 2**53 - 1
# The kit's words for a verdict and the catalog's summary, shared by the text, the HTML and the labextension.
CALLABLE = "callable"
NOT_CALLABLE = "not callable"
CALLABLE_UNDER = "callable under PurrA"
DROPPED = "Dropped bindings"
FRAME_COLUMNS = [
    "name_warning",
    "title",
    "description",
    "input_verdict",
    "output_verdict",
    "callable",
    "bindable_as",
    "reasons",
    "refusal",
    "read_only_hint",
    "destructive_hint",
    "idempotent_hint",
    "open_world_hint",
    "task_support",
    "has_app",
    "app_only",
    "view",
    "bound_as",
    "schema_bytes",
]

# Hints for the keywords purra's profile refuses, phrased for the server's author.
_KEYWORD_HINTS = {
    "$ref": "inline the referenced schema",
    "$defs": "inline the definitions where they are used",
    "definitions": "inline the definitions where they are used",
    "$id": "drop it",
    "$comment": "drop it or move it into description",
    "default": "drop it and document the default in the description (an optional parameter is simply "
    "left out of required)",
    "format": "drop it and describe the expected format in the description",
    "pattern": "drop it, describe the pattern in the description and check it on the server",
    "examples": "drop it or move examples into the description",
    "exclusiveMinimum": "drop it and check the bound on the server",  # _bound_hint says more where it can
    "exclusiveMaximum": "drop it and check the bound on the server",
    "allOf": "merge the branches into one schema",
    "not": "drop it and check the value on the server",
    "if": "drop the conditional and check it on the server",
    "then": "drop the conditional and check it on the server",
    "else": "drop the conditional and check it on the server",
    "patternProperties": "list the properties explicitly",
    "propertyNames": "drop it and check names on the server",
    "dependentRequired": "drop it and check it on the server",
    "dependentSchemas": "drop it and check it on the server",
    "prefixItems": "use one items schema",
    "contains": "drop it and check it on the server",
    "multipleOf": "drop it and check it on the server",
    "readOnly": "drop it",
    "writeOnly": "drop it",
    "deprecated": "drop it or say so in the description",
    "nullable": 'use type [..., "null"] or anyOf with {"type": "null"}',
}


# What a binding declares a tool does: purra's ToolRiskLevel values (spelled here, so that importing the catalog
# does not import purra).
READ = "read"
WRITE = "write"
DESTRUCTIVE = "destructive"
EFFECTS = (READ, WRITE, DESTRUCTIVE)
NOT_BINDABLE = "—"


def write_hint(annotations: Mapping[str, Any]) -> str | None:
    """The hint by which a server says its tool is not read-only (``readOnlyHint: false`` or
    ``destructiveHint: true``), as written; ``None`` when it says nothing of the kind. Hints grant no
    authority: they only keep a person from declaring read what the server itself calls a write."""
    if annotations.get("readOnlyHint") is False:
        return "readOnlyHint: false"
    if annotations.get("destructiveHint") is True:
        return "destructiveHint: true"
    return None


def default_local_name(remote: str) -> str:
    """The remote name with every character outside ``[A-Za-z0-9_]`` replaced by ``_``; ``_``-prefixed
    if it starts with a digit (PurrA local names are Python-like identifiers)."""
    local = re.sub(r"[^A-Za-z0-9_]", "_", remote)
    return f"_{local}" if local[:1].isdigit() else local


@dataclass(frozen=True, slots=True)
class ToolVerdict:
    """One listed tool and whether a PurrA host could bind it as a read tool."""

    name: str
    title: str | None
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    annotations: Mapping[str, Any]
    task_support: str | None
    input_verdict: str
    output_verdict: str
    callable: bool
    reasons: tuple[str, ...]
    schema_bytes: int
    listing: Mapping[str, Any] = field(repr=False)
    bound_as: str | None = None  # the binding's local name
    bound_effect: str | None = None  # what it is bound as: read, write or destructive
    refusal: str | None = None  # the code purra-mcp refuses a binding with (its first failing check)
    look_alikes: tuple[str, ...] = ()  # the other tools of this server whose names are confusable with this one's

    @property
    def shown_name(self) -> str:
        """The name as a person is shown it: invisible and control characters escaped (``names.visible``)."""
        return visible(self.name)

    @property
    def name_warning(self) -> str:
        """What a person must know of the name before trusting it (invisible characters, a look-alike); or ``""``."""
        return name_warning(self.name, self.look_alikes)

    @property
    def label(self) -> str:
        """The shown name with its warning, for one line of text (a log row, a plain-text view)."""
        warning = self.name_warning
        return f"{self.shown_name} (⚠ name {warning})" if warning else self.shown_name

    @property
    def bindable_as(self) -> str:
        """``read`` or ``write`` (what the server's hints suggest) when purra-mcp would bind it, else ``—``."""
        if not self.callable:
            return NOT_BINDABLE
        return WRITE if write_hint(self.annotations) else READ

    @property
    def app(self) -> ToolApp:
        """The view its listing declares (MCP Apps) and who may call it."""
        return tool_app(self.listing)

    @property
    def bound_label(self) -> str:
        """``local_name (effect)``, e.g. ``commit_changes (write)``; empty when not bound."""
        return f"{self.bound_as} ({self.bound_effect})" if self.bound_as else ""

    def row(self) -> dict[str, Any]:
        hints = self.annotations
        app = self.app
        return {
            "tool": self.name,
            "name_warning": self.name_warning or None,
            "title": self.title,
            "description": self.description,
            "input_verdict": self.input_verdict,
            "output_verdict": self.output_verdict,
            "callable": self.callable,
            "bindable_as": self.bindable_as,
            "reasons": "; ".join(self.reasons),  # text a person reads; the tuple stays on the verdict
            "refusal": self.refusal,
            "read_only_hint": hints.get("readOnlyHint"),
            "destructive_hint": hints.get("destructiveHint"),
            "idempotent_hint": hints.get("idempotentHint"),
            "open_world_hint": hints.get("openWorldHint"),
            "task_support": self.task_support,
            "has_app": app.uri is not None,
            "app_only": app.app_only,
            "view": app.uri,
            "bound_as": self.bound_label or None,
            "schema_bytes": self.schema_bytes,
        }


@dataclass(frozen=True)
class Catalog:
    """Every tool a server listed, with verdicts; a snapshot at one catalog revision."""

    server: str
    protocol_version: str | None
    tools: tuple[ToolVerdict, ...]
    revision: int = field(repr=False)
    note: str = ""
    dropped: tuple[str, ...] = ()

    @functools.cached_property
    def digest(self) -> str:
        """``purra.json-identity/v1`` over the listing (see ``digest_of``), computed on first use."""
        return digest_of(self.tools)

    def __getitem__(self, name: str) -> ToolVerdict:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(tool.name == name for tool in self.tools)

    def __len__(self) -> int:
        return len(self.tools)

    def with_bindings(self, bound: Mapping[str, tuple[str, str]], dropped: Iterable[str] = ()) -> Catalog:
        """This catalog with ``bound_as`` and ``bound_effect`` from ``bound`` (remote name -> (local name,
        effect))."""
        tools = []
        for tool in self.tools:
            local, effect = bound.get(tool.name, (None, None))
            tools.append(replace(tool, bound_as=local, bound_effect=effect))
        return replace(self, tools=tuple(tools), dropped=tuple(dropped))

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        frame = pd.DataFrame([tool.row() for tool in self.tools], columns=["tool", *FRAME_COLUMNS])
        return frame.convert_dtypes().set_index("tool")  # nullable dtypes: a missing hint is <NA>, not NaN

    def diff(self, other: Catalog) -> pd.DataFrame:
        """What changed from this catalog to ``other``: one row per added, removed or changed tool."""
        import pandas as pd

        rows = []
        for name in sorted({tool.name for tool in self.tools} | {tool.name for tool in other.tools}):
            if name not in self:
                rows.append((name, "added", ""))
            elif name not in other:
                rows.append((name, "removed", ""))
            else:
                before, after = self[name].listing, other[name].listing
                changed = sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
                if changed:
                    rows.append((name, "changed", ", ".join(changed)))
        return pd.DataFrame(rows, columns=["tool", "change", "fields"]).set_index("tool")

    def to_json(self) -> dict[str, Any]:
        """The data behind the catalog MIME type (everything a renderer shows but its fixed labels; all of it
        server text)."""
        return {
            "server": self.server,
            "protocolVersion": self.protocol_version,
            "digest": self.digest,
            "note": self.note,
            "dropped": list(self.dropped),
            "tools": [
                {
                    **tool.row(),
                    "shown_name": tool.shown_name,
                    "reasons": list(tool.reasons),
                    # For a reader to open (the renderer folds them); bounded, as the whole listing was.
                    "input_schema": dict(tool.input_schema),
                    "output_schema": None if tool.output_schema is None else dict(tool.output_schema),
                }
                for tool in self.tools
            ],
        }

    @property
    def summary(self) -> str:
        """One line: the server, its tool counts and the digest's first digits."""
        usable = sum(tool.callable for tool in self.tools)
        return f"{self.server}: {len(self.tools)} tools, {usable} {CALLABLE_UNDER}, digest {self.digest[:12]}"

    def __repr__(self) -> CellText:
        lines = [f"Catalog {self.summary}"]
        if self.note:
            lines.append(f"  note: {self.note}")
        if self.dropped:
            lines.append(f"  {DROPPED.lower()}: {', '.join(self.dropped)}")
        for tool in self.tools:
            verdict = CALLABLE if tool.callable else NOT_CALLABLE
            bound = f" (bound as {tool.bound_label})" if tool.bound_as else ""
            lines.append(f"  {tool.label}: {verdict}{bound}")
            lines.extend(f"      {reason}" for reason in tool.reasons)
        return cell_text("\n".join(lines))

    def _repr_html_table(self) -> Html:
        rows = []
        for tool in self.tools:
            badge = _badge(CALLABLE, OK_COLOR) if tool.callable else _badge(NOT_CALLABLE, ERROR_COLOR)
            reasons = tag("ul", join(tag("li", reason) for reason in tool.reasons))
            rows.append(
                tag(
                    "tr",
                    td(name_html(tool)),
                    td(one_line(tool.title or "", TITLE_CHARS)),
                    td(visible(_shorten(tool.description)), wrapped=True),
                    td(badge),
                    td(tool.input_verdict),
                    td(tool.output_verdict),
                    td(tool.bindable_as),
                    td(tool.bound_label),
                    td(reasons, wrapped=True),
                )
            )
        note = tag("p", self.note) if self.note else None
        dropped = tag("p", f"{DROPPED}: {', '.join(self.dropped)}") if self.dropped else None
        summary = tag("p", tag("b", self.summary))
        return tag("div", summary, note, dropped, table(_HTML_COLUMNS, rows), class_="purra-catalog")

    def refusal_chart(self) -> Chart:
        """Why tools are not callable, as a picture: one bar per keyword a reason names (``$schema``, ``default``
        ...), by how many tools it stops; the title counts purra-mcp's refusal codes."""
        refused = [tool for tool in self.tools if not tool.callable]
        keywords = Counter(keyword for tool in refused for keyword in {reason_keyword(r) for r in tool.reasons})
        codes = Counter(tool.refusal or "refused" for tool in refused)
        title = f"{self.server}: {len(refused)} of {len(self.tools)} tools not callable under PurrA"
        if codes:
            title += " (" + ", ".join(f"{code} {count}" for code, count in codes.most_common()) + ")"
        alt = f"{title}; reasons: " + (", ".join(f"{k} {n}" for k, n in keywords.most_common()) or "none")
        return Chart(refusal_reasons(dict(keywords.most_common()), title), alt)

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        payload = {**self.to_json(), "labels": catalog_labels()}
        return bundle(self._repr_html_table(), self.__repr__(), **{CATALOG_MIME: payload})


def reason_keyword(reason: str) -> str:
    """What a reason is about: the last step of its JSON path (``inputSchema.properties.x.default`` -> ``default``;
    an array index dropped), or the whole path when it has one step (``name``)."""
    path = reason.split(": ", 1)[0]
    steps = [step for step in re.split(r"\.|\[\d+\]", path) if step]
    return steps[-1] if steps else path


def catalog_labels() -> dict[str, str]:
    """The fixed words a catalog payload carries for the labextension."""
    return {"callable": CALLABLE, "notCallable": NOT_CALLABLE, "callableUnder": CALLABLE_UNDER, "dropped": DROPPED}


_HTML_COLUMNS = ("tool", "title", "description", "verdict", "input", "output", "bindable as", "bound as", "reasons")


TITLE_CHARS = 120  # a server's title shown on one line


def name_html(tool: ToolVerdict, style: str | None = None) -> Html:
    """The tool's name as code (escaped, isolated from the text around it; ``style`` for the code element), then
    its warning, in the warning colour."""
    warning = tool.name_warning
    mark = None
    if warning:
        mark = join([" ", tag("b", f"⚠ {warning}", class_="purra-name-warning", style=f"color:{ERROR_COLOR}")])
    return join([tag("code", tool.shown_name, style=style, class_="purra-tool-name"), mark])


def reasons_note(tool: ToolVerdict) -> str:
    """What a message says of a tool's reasons, which quote the server's schema (property names, a ``$schema``
    address): how many, and where they are."""
    count = len(tool.reasons)
    return f"{count} reason{'s' if count != 1 else ''}, {KEPT_APART} (the catalog shows them too)"


def _shorten(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _badge(text: str, color: str) -> Html:
    return tag("span", text, style=f"color:{color};font-weight:bold")


# --- purra-mcp's own rules (through purra_adapter: the same code a PurrA host runs on the same listing) ---


def verdict_of(tool: types.Tool, limits: McpToolLimits) -> ToolVerdict:
    """The verdict purra-mcp would reach on binding ``tool``, with a reason per problem. The schema codes are
    purra-mcp's own; its name, description and task checks are inline in its discovery, so repeated here."""
    listing = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    description = tool.description or ""
    task_support = tool.execution.taskSupport if tool.execution is not None else None
    input_refusal = purra_adapter.schema_refusal(tool.inputSchema, limits)
    output_refusal = None if tool.outputSchema is None else purra_adapter.schema_refusal(tool.outputSchema, limits)
    input_ok, output_ok = input_refusal is None, output_refusal is None
    reasons: list[str] = []
    codes: list[str] = []  # in the order discover_mcp_tools checks
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
    )


def _safe_bytes(value: Any) -> int:
    try:
        return purra_adapter.json_bytes(value)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return 0


def schema_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """Every problem purra's profile finds in ``schema``, as ``"<path>: <what> — <hint>"``."""
    reasons: list[str] = []
    finders = (
        _size_reasons,
        _dialect_reasons,
        _root_reasons,
        _shape_reasons,
        _null_reasons,
        _profile_reasons,
        _inlined_reasons,
    )
    for finder in finders:
        try:
            reasons.extend(finder(schema, where, limits))
        except (TypeError, ValueError, OverflowError, RecursionError):
            continue
    # Deduplicate while keeping order: the same problem may be seen by two finders.
    unique = list(dict.fromkeys(reasons))
    return unique or [f"{where}: {FALLBACK_REASON} — simplify the schema"]


TASK_REQUIRED_REASON = (
    "execution.taskSupport: 'required' — PurrA calls a tool directly and waits for its result, never as a task: "
    "run it on the raw path, outside the PurrA contract, with s.call(tool, args, raw=True, task=True); "
    "or (the server's author) make tasks optional"
)
FALLBACK_REASON = "refused by purra's purra.output-schema/v1 profile"


def _body(schema: Any) -> Any:
    return {key: value for key, value in schema.items() if key != "$schema"} if isinstance(schema, dict) else schema


def _size_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    size = purra_adapter.json_bytes(schema)
    if size > limits.max_schema_bytes:
        return [f"{where}: {size} bytes, over the {limits.max_schema_bytes}-byte limit — simplify the schema"]
    return []


def _dialect_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] != DRAFT_2020_12:
        return [
            f"{where}.$schema: declares {str(schema['$schema'])[:80]!r}, PurrA reads only JSON Schema 2020-12 "
            f"— drop it (the rest is then read as 2020-12) or declare {DRAFT_2020_12}"
        ]
    return []


def _root_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    body = _body(schema)
    if isinstance(body, dict) and "$ref" in body:  # the root a person has once its $ref is inlined as told
        body = _inlined(body, _refs_of(body), _budget(limits))
    if not isinstance(body, dict) or body.get("type") != "object":
        found = body.get("type") if isinstance(body, dict) else type(body).__name__
        return [f'{where}.type: the root type is {json.dumps(found)}, not "object" — wrap the values in an object']
    return []


def _shape_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """Depth, node count, size as purra counts it, and numbers outside ±(2^53−1)."""
    body = _body(schema)
    problem = purra_adapter.shape_problem(body, limits)
    if problem is None:
        return []
    profile = problem.profile
    if problem.shape is Shape.NUMBER:
        return [
            f"{path}: {value!r} is outside ±(2^53−1) or not finite — use a bound PurrA can represent, or drop it"
            for path, value in _bad_numbers(body, where)
        ]
    if problem.shape is Shape.RESOURCE:
        depth, nodes = _depth_and_nodes(body)
        found = []
        if depth > profile.schema_depth:
            found.append(f"{where}: nested {depth} levels deep, over {profile.schema_depth} — flatten the schema")
        if nodes > profile.schema_nodes:
            found.append(f"{where}: {nodes} schema nodes, over {profile.schema_nodes} — simplify the schema")
        return found
    if problem.shape is Shape.BYTES:
        return [
            f"{where}: larger than {profile.schema_bytes} bytes as PurrA counts it (numbers count 24 bytes) "
            "— simplify the schema"
        ]
    return [f"{where}: {problem.text} — use plain JSON values"]


def _bad_numbers(value: object, path: str) -> list[tuple[str, float]]:
    found: list[tuple[str, float]] = []
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return found
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or (number.is_integer() and abs(number) > _SAFE_INTEGER):
            found.append((path, value))
    elif isinstance(value, dict):
        for key, child in value.items():
            found.extend(_bad_numbers(child, f"{path}.{key}"))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_bad_numbers(child, f"{path}[{index}]"))
    return found


def _depth_and_nodes(value: Any) -> tuple[int, int]:
    """Depth and node count the way purra's snapshot counts them (keys are nodes one level down)."""
    deepest, nodes = 0, 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        nodes += 1
        deepest = max(deepest, level)
        if isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, level + 1))
                stack.append((child, level + 1))
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return deepest, nodes


def _null_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """purra refuses a null keyword value (other than const) where it walks: properties, branches, items; and,
    once the definitions are inlined as told, inside them too."""
    keywords = purra_adapter.schema_keywords()  # keywords outside it get their own reason
    return [
        f"{node.path}.{key}: null — drop it or give it a value of its type"
        for node in _walk(_body(schema), where)
        if isinstance(node.value, dict)
        for key, value in node.value.items()
        if value is None and key != "const" and key in keywords
    ]


# --- where purra's profile looks, and the definitions a person inlines as the hints tell -------------------------
#
# Each hint starts with one of a few actions on the keyword (or subschema) at the reason's path, so that a person,
# or a test, can follow it word for word:
#   "drop it ..."                     remove it (and, with "and use K: V", set K to V beside it)
#   "use V ..."                       put the JSON value V in its place (``{}``, ``true``)
#   "use K: V ..."                    replace the keyword with K, of value V, on the same schema
#   "inline #/… here ..."             put the referenced schema's keywords in place of the ``$ref``
#   "drop it once every $ref ..."     (``$defs``, ``definitions``) last, once the definitions are fixed and inlined
# Any other words (merge the branches, list the properties) ask for a person's judgement.

_DEFINITIONS = ("$defs", "definitions")


@dataclass(frozen=True, slots=True)
class _Node:
    """A schema node where purra's profile walks (or would, once the definitions are inlined): its path as the
    reasons spell it, its JSON pointer from the schema's root, its value, and what it is to its parent: ``root``,
    ``property``, ``items``, ``branch`` or ``definition``."""

    path: str
    pointer: tuple[str, ...]
    value: Any
    role: str = "root"


def _walk(value: Any, path: str, pointer: tuple[str, ...] = (), role: str = "root") -> Iterable[_Node]:
    """Every node purra's profile walks from ``value`` (properties, items, anyOf, oneOf), and every definition
    (``$defs``, ``definitions``) at any of them with what it walks in turn."""
    yield _Node(path, pointer, value, role)
    if not isinstance(value, dict):
        return
    children: list[tuple[str, tuple[str, ...], Any, str]] = []
    properties = value.get("properties")
    if isinstance(properties, dict):
        children.extend(
            (f"{path}.properties.{k}", ("properties", str(k)), v, "property") for k, v in properties.items()
        )
    if "items" in value:
        children.append((f"{path}.items", ("items",), value["items"], "items"))
    for keyword in ("anyOf", "oneOf"):
        if isinstance(value.get(keyword), list):
            branches = enumerate(value[keyword])
            children.extend((f"{path}.{keyword}[{i}]", (keyword, str(i)), v, "branch") for i, v in branches)
    for keyword in _DEFINITIONS:
        if isinstance(value.get(keyword), dict):
            children.extend(
                (f"{path}.{keyword}.{k}", (keyword, str(k)), v, "definition") for k, v in value[keyword].items()
            )
    for child_path, tokens, child, child_role in children:
        yield from _walk(child, child_path, (*pointer, *tokens), child_role)


@dataclass(frozen=True)
class _Refs:
    """The schema's local ``$ref`` values: what each points at, and which ones are recursive."""

    body: Any
    targets: Mapping[tuple[str, ...], tuple[str, ...] | None]  # the $ref's schema -> the pointer it names
    recursive: frozenset[tuple[str, ...]]


_MISSING = object()


def _refs_of(body: Any) -> _Refs:
    """Every ``$ref`` where purra's profile walks or a definition is, with its target and whether it recurses."""
    targets = {
        node.pointer: _pointer(node.value["$ref"])
        for node in _walk(body, "")
        if isinstance(node.value, dict) and isinstance(node.value.get("$ref"), str)
    }
    return _Refs(body, targets, _recursive(body, targets))


def _pointer(ref: str) -> tuple[str, ...] | None:
    """The tokens of a local JSON pointer reference (``#``, ``#/$defs/A``); ``None`` for any other reference."""
    if ref == "#":
        return ()
    if not ref.startswith("#/"):
        return None
    return tuple(unquote(token).replace("~1", "/").replace("~0", "~") for token in ref[2:].split("/"))


def _resolve(body: Any, pointer: tuple[str, ...]) -> Any:
    node = body
    for token in pointer:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


_EXPANSIONS = 20_000  # how far the kit follows the inlining before it judges recursion by cycles alone


def _recursive(body: Any, targets: Mapping[tuple[str, ...], tuple[str, ...] | None]) -> frozenset[tuple[str, ...]]:
    """The ``$ref``s a person inlining from the root cannot inline: each points at a schema already being copied
    (it would be copied into itself without end). Those in definitions the root never reaches, on a cycle."""
    own: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # a schema -> the $refs in it, outside its definitions
    for ref in targets:
        for end in range(len(ref) + 1):
            if not set(ref[end:]) & set(_DEFINITIONS):
                own.setdefault(ref[:end], []).append(ref)
    recursive: set[tuple[str, ...]] = set()
    reached: set[tuple[str, ...]] = set()
    steps = [0]

    def expand(schema: tuple[str, ...], copying: tuple[tuple[str, ...], ...]) -> None:
        for ref in own.get(schema, []):
            steps[0] += 1
            if steps[0] > _EXPANSIONS:
                raise _TooBig
            reached.add(ref)
            target = targets[ref]
            if target is None or _resolve(body, target) is _MISSING:
                continue
            if any(copied[: len(target)] == target for copied in copying):
                recursive.add(ref)
            else:
                expand(target, (*copying, target))

    try:
        expand((), ((),))
    except _TooBig:
        return _on_cycles(targets)
    unreached = {ref: target for ref, target in targets.items() if ref not in reached}
    return frozenset(recursive | _on_cycles(unreached) if unreached else recursive)


def _on_cycles(targets: Mapping[tuple[str, ...], tuple[str, ...] | None]) -> frozenset[tuple[str, ...]]:
    """The ``$ref``s that inlining never ends for: each one's target holds a ``$ref`` that leads back to it."""
    within: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # a pointer -> the $refs at or under it
    for ref in targets:
        for end in range(len(ref) + 1):
            within.setdefault(ref[:end], []).append(ref)
    following = {ref: within.get(target, []) if target is not None else [] for ref, target in targets.items()}
    recursive = set()
    for start in targets:
        seen: set[tuple[str, ...]] = set()
        stack = list(following[start])
        while stack:
            ref = stack.pop()
            if ref == start:
                recursive.add(start)
                break
            if ref not in seen:
                seen.add(ref)
                stack.extend(following[ref])
    return frozenset(recursive)


def _ref_reason(path: str, node: _Node, refs: _Refs) -> str:
    ref = node.value["$ref"]
    shown = json.dumps(ref[:80])
    target = refs.targets.get(node.pointer)
    outside = f'{path}.$ref: "$ref" is outside the profile'
    if target is None:
        return f"{outside} — copy the schema {shown} names into this one in place of the $ref (it is elsewhere)"
    if _resolve(refs.body, target) is _MISSING:
        return f"{outside} — drop it: {shown} points at nothing in this schema"
    if node.pointer in refs.recursive:
        return (
            f"{outside}, and {shown} cannot be inlined: it leads back to itself (a recursive schema, which PurrA "
            "cannot represent) — drop it (any value is then accepted here: check it on the server) or write the "
            "recursion out to a bounded depth"
        )
    return f"{outside} — inline {shown} here (its keywords in place of the $ref)"


def _profile_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    body = _body(schema)
    if not isinstance(body, dict):
        return []
    nodes = list(_walk(body, where))
    refs = _refs_of(body)
    at: dict[str, _Node] = {}
    for node in nodes:
        at.setdefault(node.path, node)
    found = []
    for scope in (node for node in nodes if node.role in ("root", "definition")):
        for violation in purra_adapter.profile_violations(scope.value):
            path = scope.path + violation.path[1:]
            found.extend(_violation_reasons(path, violation, at.get(path), where, refs))
    return found


def _violation_reasons(
    path: str, violation: purra_adapter.ProfileViolation, node: _Node | None, where: str, refs: _Refs
) -> list[str]:
    value = node.value if node is not None else None
    found = []
    for keyword in violation.keywords:
        if keyword == "$ref" and node is not None:
            found.append(_ref_reason(path, node, refs))
            continue
        found.append(f"{path}.{keyword}: {json.dumps(keyword)} is outside the profile — {_hint(keyword, value, where)}")
    if violation.keywords:
        return found
    if violation.problem == "must be boolean" and violation.path.endswith(".additionalProperties"):
        return [
            f"{path}: a schema for extra properties is outside the profile, which takes true or false — use true "
            "(extra properties of any shape: check them on the server) or false (no extra properties)"
        ]
    if violation.problem == "schema must be an object" and node is not None:
        return [f"{path}: {_subschema_hint(node)}"]
    return [f"{path}: {violation.problem} — fix the keyword's value"]


def _subschema_hint(node: _Node) -> str:
    """What to write for a subschema that is not an object: a boolean (``true``, ``false``) or worse."""
    if node.value is True:
        return "a boolean schema is outside the profile — use {} (it accepts any value, as true does)"
    if node.value is not False:
        return f"{json.dumps(node.value)[:40]} is not a schema — use a schema object in its place ({{}} for any value)"
    if node.role == "items":
        return "false (no items) is outside the profile — drop it and use maxItems: 0 (the array must be empty)"
    if node.role == "property":
        return (
            "false (the property must be absent) is outside the profile — drop it (with additionalProperties: "
            "false the object still refuses the property; otherwise check on the server that it is absent)"
        )
    if node.role == "branch":
        return "false (matches nothing) is outside the profile — drop it (a branch no value takes)"
    return (
        "false (no value) is outside the profile — drop what refers to it, or check on the server that no value comes"
    )


def _hint(keyword: str, node: Any, where: str) -> str:
    """The hint for ``keyword`` on the schema ``node``: most are fixed words, some depend on the node or on which
    schema it is in."""
    if keyword == "default" and where == "outputSchema":
        return "drop it (an output schema describes the values a tool returns: a default means nothing there)"
    if keyword in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(node, dict):
        return _bound_hint(keyword, node)
    if keyword in _DEFINITIONS:
        return "drop it once every $ref into it is inlined"
    return _KEYWORD_HINTS.get(keyword, "drop it; the profile's keywords are listed in purra.schema")


def _bound_hint(keyword: str, node: Mapping[str, Any]) -> str:
    """``exclusiveMinimum: n`` on an integer is ``minimum: n+1`` (the smallest integer above n); on a number, the
    profile has no exclusive bound, so the hint says what ``minimum`` would change. Likewise for the maximum."""
    lower = keyword == "exclusiveMinimum"
    plain = "minimum" if lower else "maximum"
    value, other = node.get(keyword), node.get(plain)
    if value is False:
        return "drop it (false changes nothing)"
    if value is True:  # draft-04: a flag that makes minimum/maximum exclusive
        value, other = other, None
    if not _is_bound(value):
        return "drop it and check the bound on the server"
    if _integer_typed(node):
        bound = math.floor(value) + 1 if lower else math.ceil(value) - 1
        if _is_bound(other):
            bound = max(bound, math.ceil(other)) if lower else min(bound, math.floor(other))
        return f"use {plain}: {bound} (the same bound, for an integer)"
    shown = json.dumps(value)
    return (
        f"drop it and check the bound on the server ({plain}: {shown} would accept {shown} itself), or use "
        f"{plain}: {shown} if {shown} may be accepted"
    )


def _is_bound(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (abs(value) <= _SAFE_INTEGER)
    )


def _integer_typed(node: Mapping[str, Any]) -> bool:
    """Whether the schema takes only integers (``"integer"``, or a type list of ``"integer"`` and ``"null"``)."""
    declared = node.get("type")
    kinds = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    return "integer" in kinds and all(kind in ("integer", "null") for kind in kinds)


# --- the schema as a person has it once every $ref is inlined as told ------------------------------------------


class _TooBig(Exception):
    """Inlining the definitions gives more nodes than purra could ever take."""


def _inlined(body: Any, refs: _Refs, budget: int) -> Any:
    """``body`` with each local ``$ref`` replaced by its target's keywords (a recursive or dangling one dropped, as
    its hint says) and the definitions dropped; ``_TooBig`` past ``budget`` nodes."""
    left = [budget]

    def copy(value: Any, pointer: tuple[str, ...]) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise _TooBig
        if isinstance(value, list):
            return [copy(child, (*pointer, str(i))) for i, child in enumerate(value)]
        if not isinstance(value, dict):
            return value
        result: dict[str, Any] = {}
        target = refs.targets.get(pointer) if isinstance(value.get("$ref"), str) else None
        if target is not None and pointer not in refs.recursive and _resolve(refs.body, target) is not _MISSING:
            referenced = copy(_resolve(refs.body, target), target)
            result.update(referenced if isinstance(referenced, dict) else {})
        for key, child in value.items():
            if key not in _DEFINITIONS and not (key == "$ref" and isinstance(child, str)):
                result[key] = copy(child, (*pointer, key))
        return result

    return copy(body, ())


def _budget(limits: McpToolLimits) -> int:
    """How many nodes an inlined schema may grow to before the kit stops inlining: past purra's node limit, so
    one that far over is refused for its size whatever else is fixed."""
    return 2 * purra_adapter.node_limit(limits) + 1


def _inlined_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """What inlining the definitions as told makes too big or too deep for purra, though the schema with its
    ``$ref``s is not: a definition used in many places is copied to each."""
    body = _body(schema)
    if not isinstance(body, dict):
        return []
    refs = _refs_of(body)
    if (
        not refs.targets
        or purra_adapter.shape_problem(body, limits) is not None
        or _size_reasons(schema, where, limits)
    ):
        return []
    inlined = f"{where} (its definitions inlined)"
    try:
        whole = _inlined(body, refs, _budget(limits))
    except _TooBig:
        limit = purra_adapter.node_limit(limits)
        return [f"{inlined}: over {limit} schema nodes — simplify the schema, or keep the definitions few and small"]
    return _size_reasons(whole, inlined, limits) + _shape_reasons(whole, inlined, limits)


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


def digest_of(tools: Iterable[ToolVerdict]) -> str:
    """``purra.json-identity/v1`` over the listing: one digest per tool, then over the name map, so a
    catalog of any size within the limits has one (a tool with numbers purra cannot represent is
    digested through its canonical JSON text)."""
    from purra.structured import json_identity_digest

    per_tool = {}
    for tool in tools:
        try:
            per_tool[tool.name] = json_identity_digest(dict(tool.listing))
        except (ValueError, TypeError):
            text = canonical_json(tool.listing)
            per_tool[tool.name] = json_identity_digest({"json": text})
    return json_identity_digest({"tools": per_tool})


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
    note = "" if listed is not None else "The server does not advertise the tools capability: it has no tools."
    verdicts = sorted((verdict_of(tool, connection.limits) for tool in listed or ()), key=lambda t: t.name)
    alikes = look_alikes(verdict.name for verdict in verdicts)
    tools = tuple(replace(verdict, look_alikes=alikes.get(verdict.name, ())) for verdict in verdicts)
    callable_count = sum(t.callable for t in tools)
    connection.log.add(EVENT_LIST, f"{len(tools)} tools, {callable_count} callable (revision {revision})")
    return Catalog(connection.name, connection.hello.protocol_version, tools, revision, note)


def check_digest(catalog: Catalog, expected: str | None) -> None:
    if expected is not None and expected.lower() != catalog.digest:
        raise McpSessionError(
            DIGEST_MISMATCH,
            f"The catalog of '{catalog.server}' changed: expected digest {expected}, got {catalog.digest}.",
        )


__all__ = [
    "COMPATIBLE",
    "NONE",
    "UNSUPPORTED",
    "Catalog",
    "ToolVerdict",
    "build_catalog",
    "check_digest",
    "default_local_name",
    "digest_of",
    "reasons_note",
    "schema_reasons",
    "verdict_of",
    "write_hint",
]
