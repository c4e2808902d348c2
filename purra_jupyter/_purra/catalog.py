"""A server's tool catalog with a PurrA verdict per tool, as a person reads it: a table, a DataFrame, a diff, a
digest. The verdicts come from ``listing`` (purra-mcp's own rules), their reasons from ``reasons``.

The catalog's MIME payload is ``to_json()`` plus the kit's fixed words under ``labels`` (``catalog_labels()``),
which the labextension shows, so the words are typed once, here.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .._base.app_rules import ToolApp
from .._base.charts import Chart, refusal_reasons
from .._base.egress import CellText, Room, bundle, cell_text, cut, shown_note
from .._base.errors import KEPT_APART
from .._base.frames import kit_frame
from .._base.markup import ERROR_COLOR, OK_COLOR, Html, join, table, tag, td
from .._base.visible import name_warning, one_line, quoted, quoted_list, visible
from .._base.wire import CATALOG_MIME
from .._connection.purra_adapter import canonical_json

if TYPE_CHECKING:
    import pandas as pd

COMPATIBLE = "compatible"
UNSUPPORTED = "unsupported"
NONE = "none"
# The kit's words for a verdict and the catalog's summary, shared by the text, the HTML and the labextension.
CALLABLE = "callable"
NOT_CALLABLE = "not callable"
CALLABLE_UNDER = "callable under PurrA"
DROPPED = "Dropped bindings"
SHARED_BY = "Shared by"  # a reason several tools give, shown once: "Shared by 13 tools: a, b, c"
SHARED_BELOW = "shared, below"  # a tool's count of its reasons shown once with the shared ones
SHARED_FROM = 2  # a reason given by this many tools or more is shown once, naming them
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


def _with_warning(name: str, warning: str) -> str:
    return f"{name} (⚠ name {warning})" if warning else name


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
    app: ToolApp = field(repr=False, compare=False)  # the view its listing declares (MCP Apps) and who may call it
    bound_as: str | None = None  # the binding's local name
    bound_effect: str | None = None  # what it is bound as: read, write or destructive
    refusal: str | None = None  # the code purra-mcp refuses a binding with (its first failing check)
    look_alikes: tuple[str, ...] = ()  # the other tools of this server whose names are confusable with this one's

    @property
    def shown_name(self) -> str:
        """The name as a person is shown it: invisible and control characters escaped (``visible.visible``)."""
        return visible(self.name)

    @property
    def name_warning(self) -> str:
        """What a person must know of the name before trusting it (invisible characters, a look-alike); or ``""``."""
        return name_warning(self.name, self.look_alikes)

    @property
    def label(self) -> str:
        """The shown name with its warning, for one line of text (a log row, a plain-text view)."""
        return _with_warning(self.shown_name, self.name_warning)

    @property
    def quoted_label(self) -> str:
        """The name quoted (``visible.quoted``) with its warning: one item of a list of names."""
        return _with_warning(quoted(self.name), self.name_warning)

    @property
    def bindable_as(self) -> str:
        """``read`` or ``write`` (what the server's hints suggest) when purra-mcp would bind it, else ``—``."""
        if not self.callable:
            return NOT_BINDABLE
        return WRITE if write_hint(self.annotations) else READ

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


@dataclass(frozen=True, slots=True)
class SharedReason:
    """One reason several tools give (a TypeScript server's ``$schema`` on every tool), shown once with their
    names; each tool's own row, and the DataFrame, still hold it."""

    reason: str
    tools: tuple[ToolVerdict, ...]

    @property
    def heading(self) -> str:
        """``Shared by 13 tools``: the words before the names."""
        return f"{SHARED_BY} {len(self.tools)} tools"

    @property
    def names(self) -> tuple[str, ...]:
        """The tools' names as a person is shown them (``ToolVerdict.shown_name``)."""
        return tuple(tool.shown_name for tool in self.tools)


def shared_reasons(tools: Iterable[ToolVerdict]) -> tuple[SharedReason, ...]:
    """The reasons ``SHARED_FROM`` or more tools give, most shared first (then in the order they first appear),
    each with its tools in catalog order: the one grouping rule of the catalog's text, HTML and payload."""
    givers: dict[str, list[ToolVerdict]] = {}
    for tool in tools:
        for reason in dict.fromkeys(tool.reasons):
            givers.setdefault(reason, []).append(tool)
    shared = [SharedReason(reason, tuple(by)) for reason, by in givers.items() if len(by) >= SHARED_FROM]
    return tuple(sorted(shared, key=lambda group: -len(group.tools)))


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

    @functools.cached_property
    def _by_name(self) -> dict[str, ToolVerdict]:
        """The tools by name, made on first use (every call looks its tool up, some several times)."""
        return {tool.name: tool for tool in self.tools}

    @functools.cached_property
    def shared_reasons(self) -> tuple[SharedReason, ...]:
        """The reasons several tools give, each shown once (``shared_reasons``)."""
        return shared_reasons(self.tools)

    @functools.cached_property
    def _shared(self) -> frozenset[str]:
        return frozenset(group.reason for group in self.shared_reasons)

    def own_reasons(self, tool: ToolVerdict) -> tuple[str, ...]:
        """``tool``'s reasons that no other tool gives (the rest are shown once, with ``shared_reasons``)."""
        return tuple(reason for reason in tool.reasons if reason not in self._shared)

    def shared_note(self, tool: ToolVerdict) -> str | None:
        """What ``tool``'s row says of its reasons shown with the shared ones (``+ 2 shared, below``), if any."""
        shared = sum(reason in self._shared for reason in tool.reasons)
        return f"+ {shared} {SHARED_BELOW}" if shared else None

    @functools.cached_property
    def labels(self) -> dict[str, str]:
        """Each tool's ``label`` by name, made once: a log row of every call names its tool."""
        return {tool.name: tool.label for tool in self.tools}

    def __getitem__(self, name: str) -> ToolVerdict:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

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
        return kit_frame(frame.convert_dtypes().set_index("tool"))  # nullable dtypes: a missing hint is <NA>, not NaN

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
            # (each tool's "reasons" below still holds all of its reasons: this says which to show once)
            "sharedReasons": [
                {"reason": group.reason, "tools": [tool.name for tool in group.tools]} for group in self.shared_reasons
            ],
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
            lines.append(f"  {DROPPED.lower()}: {quoted_list(self.dropped)}")
        room = Room.text(CATALOG_TEXT_CHARS)
        tools = list(room.parts(self._tool_text(tool) for tool in self.tools))
        shared = list(room.parts(self._shared_text(group) for group in self.shared_reasons))
        lines += [*tools, *(f"  … ({note})" for note in self._left_out(len(tools), len(shared)))]
        return cell_text("\n".join([*lines, *shared]))

    def _tool_text(self, tool: ToolVerdict) -> str:
        """A tool's lines of the catalog's text: its name and verdict, then its own reasons, each on one line."""
        verdict = CALLABLE if tool.callable else NOT_CALLABLE
        bound = f" (bound as {tool.bound_label})" if tool.bound_as else ""
        said = [*map(shown_reason, self.own_reasons(tool)[:REASONS_SHOWN]), *self._more_reasons(tool)]
        return "\n".join([f"  {tool.label}: {verdict}{bound}", *(f"      {line}" for line in said)])

    def _more_reasons(self, tool: ToolVerdict) -> list[str]:
        """What a tool's row says below its reasons shown: how many more it has, and those shared, below."""
        more = len(self.own_reasons(tool)) - REASONS_SHOWN
        said = [f"+ {more} more: the tool's .reasons holds them all"] if more > 0 else []
        note = self.shared_note(tool)
        return [*said, note] if note else said

    @staticmethod
    def _shared_text(group: SharedReason) -> str:
        names = quoted_list(tool.name for tool in group.tools)
        return f"  {group.heading}: {names}\n      {shown_reason(group.reason)}"

    def _left_out(self, tools: int, shared: int) -> list[str]:
        """What a display of the catalog within its bound says it left out: tools, and shared reasons."""
        notes = [shown_note(tools, len(self.tools), "tools", WHOLE)] if tools < len(self.tools) else []
        if shared < len(self.shared_reasons):
            notes.append(shown_note(shared, len(self.shared_reasons), "shared reasons", WHOLE))
        return notes

    def _repr_html_table(self) -> Html:
        room = Room.html(CATALOG_HTML_CHARS)
        rows = list(room.parts(self._tool_html(tool) for tool in self.tools))
        groups = list(room.parts(self._shared_html(group) for group in self.shared_reasons))
        note = tag("p", self.note) if self.note else None
        dropped = tag("p", f"{DROPPED}: {quoted_list(self.dropped)}") if self.dropped else None
        summary = tag("p", tag("b", self.summary))
        left_out = join(tag("p", tag("small", note)) for note in self._left_out(len(rows), len(groups)))
        body = table(_HTML_COLUMNS, rows), left_out, join(groups)
        return tag("div", summary, note, dropped, *body, class_="purra-catalog")

    def _tool_html(self, tool: ToolVerdict) -> Html:
        badge = _badge(CALLABLE, OK_COLOR) if tool.callable else _badge(NOT_CALLABLE, ERROR_COLOR)
        return tag(
            "tr",
            td(name_html(tool)),
            td(one_line(tool.title or "", TITLE_CHARS)),
            td(visible(_shorten(tool.description)), wrapped=True),
            td(badge),
            td(tool.input_verdict),
            td(tool.output_verdict),
            td(tool.bindable_as),
            td(tool.bound_label),
            td(self._reasons_html(tool), wrapped=True, min_width=REASONS_MIN_WIDTH),
        )

    def _reasons_html(self, tool: ToolVerdict) -> Html:
        own = self.own_reasons(tool)[:REASONS_SHOWN]
        return join(
            [
                tag("ul", join(tag("li", shown_reason(reason)) for reason in own)) if own else None,
                join(tag("div", line, style="font-style:italic") for line in self._more_reasons(tool)),
            ]
        )

    @staticmethod
    def _shared_html(group: SharedReason) -> Html:
        names = join((tag("code", name, class_="purra-tool-name") for name in group.names), ", ")
        heading = tag("p", tag("b", f"{group.heading}:"), " ", names, class_="purra-shared-reason")
        # (outside the table: a long unbroken name or reason breaks inside rather than widen the output)
        return tag("div", heading, tag("ul", tag("li", shown_reason(group.reason))), style="overflow-wrap:anywhere")

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
    return {
        "callable": CALLABLE,
        "notCallable": NOT_CALLABLE,
        "callableUnder": CALLABLE_UNDER,
        "dropped": DROPPED,
        "sharedBy": SHARED_BY,
        "sharedBelow": SHARED_BELOW,
    }


_HTML_COLUMNS = ("tool", "title", "description", "verdict", "input", "output", "bindable as", "bound as", "reasons")


TITLE_CHARS = 120  # a server's title shown on one line
# The bound of the catalog's display (``egress.Room``): purra-mcp lists at most 256 tools, and a tool's row of a usual
# size (its name, title, description cut, a few reasons) is a kilobyte or two of HTML, so a whole catalog fits; a
# hostile one stops at the bound and says how many tools it shows. Each tool shows at most ``REASONS_SHOWN`` reasons.
CATALOG_HTML_CHARS = 600_000
CATALOG_TEXT_CHARS = 150_000
REASONS_SHOWN = 20
WHOLE = "s.catalog.to_frame()"  # what holds every tool and reason a display of the catalog leaves out
# Of one reason shown in the catalog's text and HTML. A reason quotes the server's schema (a property name of 60,000
# characters, in each of its reasons): the tool's ``reasons`` (and ``to_frame()``, the payload) hold each whole.
REASON_CHARS = 1_000


def shown_reason(reason: str) -> str:
    """A reason as the catalog shows it: on one line (the property names its path quotes ``visible``, their line
    breaks as escapes, so no reason passes for a row of the catalog), at most ``REASON_CHARS`` characters."""
    return cut(visible(reason), REASON_CHARS, "the tool's .reasons")


REASONS_MIN_WIDTH = "16em"  # the reasons column's least width: a reason's words (and paths) read whole


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


__all__ = [
    "COMPATIBLE",
    "NONE",
    "UNSUPPORTED",
    "Catalog",
    "SharedReason",
    "ToolVerdict",
    "default_local_name",
    "digest_of",
    "reasons_note",
    "write_hint",
]
