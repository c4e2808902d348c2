"""Replaying a transcript's tool calls on a server: another one, or a later version of the one recorded.

Every ``tools/call`` the transcript holds is planned again as a raw call (outside the PurrA contract: what is compared
is the server's own answer) and sent under one decision for the whole replay, each still checked against the tool's
schema as the server lists it now. The table says, per call, whether the answer is the same as recorded (and where it
first differs), the tool's verdict then and now, and the latency then and now; its summary the catalog's digest then
and now and the tools added, removed or judged otherwise.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .._base.config import Scrubber
from .._base.egress import CellText, bundle, cell_text
from .._base.errors import McpSessionError
from .._base.frames import kit_frame
from .._base.markup import key_value_table, tag
from .._base.transcript import SavedTranscript, TranscriptMessage
from .._base.visible import one_line, quoted, visible
from .._base.wire import CONFIG_INVALID, EVENT_APPROVAL
from .._connection.connection import Connection
from .._connection.seam import recorded_refusal
from .._purra import calls
from .._purra.bindings import Bindings
from .._purra.calls import CallPlan, Result
from .._purra.catalog import CALLABLE, NOT_CALLABLE, READ, Catalog, ToolVerdict, digest_of
from .._purra.envelope import RawResult
from .._purra.listing import verdict_of
from .batches import Rows

if TYPE_CHECKING:
    import pandas as pd
    from purra_mcp import McpToolLimits

REPLAY_COLUMNS = ("tool", "arguments", "same", "difference", "then_ok", "now_ok", "now_error_code", "then_ms",
                  "now_ms", "verdict_then", "verdict_now")  # fmt: skip
NOT_LISTED = "not listed"
VALUE_CHARS = 80  # of a value a difference quotes


@dataclass(frozen=True)
class RecordedCall:
    """One ``tools/call`` of the transcript: its tool and arguments, what the server answered (``{"result": ...}``
    or ``{"error": ...}``; ``None``: no answer was recorded) and how long that took."""

    tool: str
    arguments: Mapping[str, Any]
    answer: Mapping[str, Any] | None
    elapsed_ms: float | None

    @property
    def ok(self) -> bool | None:
        if self.answer is None:
            return None
        result = self.answer.get("result")
        return isinstance(result, Mapping) and not result.get("isError", False)


def recorded_calls(saved: SavedTranscript) -> list[RecordedCall]:
    """Each ``tools/call`` of the transcript, in order. The transcript is untrusted input: a request whose tool name
    is not a string or whose arguments are not an object is no call, and is left out; an answer that is neither a
    result object nor an error object counts as no answer recorded."""
    found = []
    for exchange in saved.exchanges("tools/call"):
        params = exchange.params
        name, arguments = params.get("name"), params.get("arguments")
        arguments = {} if arguments is None else arguments  # (MCP's arguments are optional)
        if not isinstance(name, str) or not isinstance(arguments, Mapping):
            continue
        found.append(RecordedCall(name, arguments, _answer(exchange.response), exchange.elapsed_ms))
    return found


def _answer(response: TranscriptMessage | None) -> dict[str, Any] | None:
    """A recorded response's ``result`` or ``error`` member, when it is an object; else ``None`` (no answer)."""
    if response is None:
        return None
    message = response.message
    if "error" in message:
        return {"error": message["error"]} if isinstance(message["error"], Mapping) else None
    return {"result": message["result"]} if isinstance(message.get("result"), Mapping) else None


def recorded_protocol(saved: SavedTranscript) -> object:
    """The protocol version the recorded session's ``initialize`` answered with (``None``: none recorded)."""
    answered = [exchange.response for exchange in saved.exchanges("initialize") if exchange.response is not None]
    result = answered[-1].message.get("result") if answered else None
    return result.get("protocolVersion") if isinstance(result, Mapping) else None


def recorded_verdicts(
    saved: SavedTranscript, limits: McpToolLimits, scrub: Scrubber | None = None
) -> dict[str, ToolVerdict] | None:
    """The verdicts of the tools the transcript's last complete listing held (pages joined), as the kit judges a
    listing (under the protocol it negotiated: one a PurrA host refuses makes no tool callable); ``None`` when it
    holds none."""
    from mcp import types

    refused = recorded_refusal(recorded_protocol(saved), scrub or Scrubber(()))

    listing: list[Any] | None = None
    pages: list[Any] = []
    for exchange in saved.exchanges("tools/list"):
        result = (exchange.response.message.get("result") if exchange.response else None) or {}
        if not _is_page(result):  # (no listing: the recorded session refused it too)
            continue
        if "cursor" not in exchange.params:
            pages = []
        pages.extend(result.get("tools") or ())
        if not result.get("nextCursor"):
            listing = pages
    if listing is None:
        return None
    tools = []
    for entry in listing:
        try:
            tools.append(verdict_of(types.Tool.model_validate(entry), limits, refused))
        except ValueError:  # (a listing entry that is not a tool: the recorded session refused it too)
            continue
    return {tool.name: tool for tool in tools}


def _is_page(result: Any) -> bool:
    """A ``tools/list`` result as the MCP SDK reads one: an object, its tools a list, its cursor a string."""
    return (isinstance(result, Mapping) and isinstance(result.get("tools", []), list)
            and isinstance(result.get("nextCursor", ""), str | None))  # fmt: skip


@dataclass(frozen=True)
class ReplaySummary:
    """What a replay came to: how many answers are the same, the catalog's digest then and now, and the tools whose
    verdict changed (or that came or went)."""

    server: str
    source: str
    calls: int
    counts: dict[str, int]  # same, different, unknown (no answer recorded), not sent
    digest_then: str | None
    digest_now: str
    verdicts: list[str] = field(default_factory=list)  # "tool: callable → not callable", "tool: added" ...

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _lines(self) -> list[tuple[str, str]]:
        digest = "unchanged" if self.digest_then == self.digest_now else f"{self.digest_then} → {self.digest_now}"
        return [
            ("calls", f"{self.calls} from {self.source}"),
            ("answers", ", ".join(f"{word} {count}" for word, count in self.counts.items())),
            ("catalog digest", digest if self.digest_then else f"not recorded; now {self.digest_now}"),
            ("verdicts", "; ".join(self.verdicts) or "unchanged"),
        ]

    def __repr__(self) -> CellText:
        return cell_text(f"<ReplaySummary {self.server}: " + "; ".join(f"{k}: {v}" for k, v in self._lines()) + ">")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        table = key_value_table(self._lines(), "purra-replay-summary")
        html = tag("div", tag("b", f"replay on {self.server}"), table, class_="purra-replay", style="text-align:left")
        return bundle(html, self.__repr__())


class Replay(Rows[Result]):
    """The recorded calls of a transcript, planned on a session: one decision covers them all."""

    question = "Approve this replay of recorded MCP calls?"
    shown_what = "each call"
    kind = "replay"
    raw = True
    write = None
    declaration = None

    def __init__(
        self, connection: Connection, bindings: Bindings, saved: SavedTranscript, source: str, *, timeout: float | None
    ) -> None:
        self.recorded = recorded_calls(saved)
        if not self.recorded:
            raise McpSessionError(CONFIG_INVALID, f"{source} holds no tools/call to replay.")
        self.source = source
        self.catalog: Catalog = bindings.catalog
        self.then = recorded_verdicts(saved, connection.limits, connection.scrub)
        self.digest_then = digest_of(self.then.values()) if self.then is not None else None
        plans, results = [], []
        for call in self.recorded:
            plan, refused = _planned(connection, bindings, call, timeout)
            plans.append(plan)
            results.append(refused)
        super().__init__(connection, plans, results, concurrency=1)
        self._ready()

    def _kept(self, row: int, result: Result) -> Result:
        """The result whole: its answer is compared with the recorded one (a replay is a transcript's calls, few)."""
        return result

    # --- the face a decision needs ---------------------------------------------------------------

    @property
    def effect(self) -> str:
        return READ

    @property
    def label(self) -> str:
        return f"replay of {len(self.recorded)} recorded calls"

    @property
    def tools_line(self) -> str:
        """The tools it will call, each with how many calls (what the approval shows in place of one tool)."""
        counts = Counter(self.plans[row].quoted_label for row in self.to_send)
        return ", ".join(f"{name} ×{count}" for name, count in counts.items()) or "no call to send"

    @property
    def tool(self) -> ToolVerdict:
        return self.plans[self.to_send[0] if self.to_send else 0].tool

    @property
    def may_write(self) -> bool:
        return any(self.plans[row].may_write for row in self.to_send)

    @property
    def write_hint(self) -> str | None:
        hints = [f"{self.plans[row].label}: {self.plans[row].write_hint}" for row in self.to_send
                 if self.plans[row].write_hint is not None]  # fmt: skip
        return "; ".join(dict.fromkeys(hints)) or None

    def still_covered(self) -> bool:
        return all(self.plans[row].still_covered() for row in self.to_send)

    @property
    def summary(self) -> str:
        return f"{self.label}: {self.tools_line}"

    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]:
        refused = self.refused_rows
        line = f"{len(self.to_send)} of {len(self.recorded)} recorded calls from {self.source}, one at a time"
        if refused:
            line += f"; {len(refused)} not sent (refused now, before approval):"
        rows = self.refused_details(lambda row: f"call {row + 1} ({self.recorded[row].tool})")
        return (("replay", line), *rows)

    def _identity(self, row: int) -> Any:
        plan = self.plans[row]
        return {"tool": plan.remote, "arguments": plan.arguments}

    def approved(self, how: str, digest: str) -> None:
        self.connection.log.add(EVENT_APPROVAL, f"{how}: {self.summary}, args {digest[:12]}")

    # --- the table -------------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        rows = [self._row(row, call) for row, call in enumerate(self.recorded)]
        frame = pd.DataFrame(rows, columns=list(REPLAY_COLUMNS))
        frame.attrs["summary"] = self._summary(rows)
        return kit_frame(frame)

    def _row(self, row: int, call: RecordedCall) -> dict[str, Any]:
        result = self.results[row]
        sent = bool(self._ran[row])
        same, difference = _compared(call.answer, result) if sent and result is not None else (None, "not sent")
        if not sent and result is not None:
            difference = f"not sent: {result.error_code}: {result.message}"
        return {
            "tool": call.tool,
            "arguments": dict(call.arguments),
            "same": same,
            "difference": difference,
            "then_ok": call.ok,
            "now_ok": result.ok if result is not None and sent else None,
            "now_error_code": None if result is None else result.error_code,
            "then_ms": call.elapsed_ms,
            "now_ms": round(result.elapsed_ms, 1) if result is not None and sent else None,
            "verdict_then": _verdict(self.then.get(call.tool) if self.then is not None else None, self.then),
            "verdict_now": _verdict(_by_name(self.catalog).get(call.tool), {}),
        }

    def _summary(self, rows: Sequence[Mapping[str, Any]]) -> ReplaySummary:
        words = Counter(_answer_word(row) for row in rows)
        return ReplaySummary(self.connection.name, self.source, len(rows), dict(words), self.digest_then,
                             self.catalog.digest, self._verdict_changes())  # fmt: skip

    def _verdict_changes(self) -> list[str]:
        if self.then is None:
            return []
        now = _by_name(self.catalog)
        changes = [f"{quoted(name)}: removed" for name in sorted(set(self.then) - set(now))]
        changes += [f"{quoted(name)}: added" for name in sorted(set(now) - set(self.then))]
        for name in sorted(set(now) & set(self.then)):
            before, after = _verdict(self.then[name], self.then), _verdict(now[name], {})
            if before != after:
                changes.append(f"{quoted(name)}: {before} → {after}")
        return changes


def _answer_word(row: Mapping[str, Any]) -> str:
    if row["same"] is not None:
        return "same" if row["same"] else "different"
    return "not sent" if str(row["difference"]).startswith("not sent") else "unknown"


def _planned(
    connection: Connection, bindings: Bindings, call: RecordedCall, timeout: float | None
) -> tuple[CallPlan, Result | None]:
    """The call's raw plan, and its result if it is settled before any approval (its tool is gone, its arguments
    do not fit the tool's schema now)."""
    try:
        plan = calls.plan_call(connection, bindings, call.tool, call.arguments, raw=True, timeout=timeout)
    except McpSessionError as error:
        seconds = connection.limits.timeout_ms / 1000
        plan = CallPlan(connection, bindings, call.tool, dict(call.arguments), True, seconds, connection.revision)
        return plan, plan.fail(error.code, f"{visible(call.tool)} is not listed now; nothing was sent")
    return plan, calls.refused_row(plan)


def _by_name(catalog: Catalog) -> dict[str, ToolVerdict]:
    return {tool.name: tool for tool in catalog.tools}


def _verdict(tool: ToolVerdict | None, listed: Mapping[str, ToolVerdict] | None) -> str | None:
    if listed is None:
        return None  # no listing was recorded
    if tool is None:
        return NOT_LISTED
    return CALLABLE if tool.callable else NOT_CALLABLE


def _compared(answer: Mapping[str, Any] | None, result: Result) -> tuple[bool | None, str]:
    """Whether the answer now is the recorded one, and where it first differs."""
    if answer is None:
        return None, "no answer was recorded"
    assert isinstance(result, RawResult)
    then: Any = answer.get("result")
    now: Any = {"content": result.content, "structuredContent": result.structured_content, "isError": result.is_error}
    if "error" in answer:
        then = {"error": answer["error"]}
        now = {"error": result.server_text} if result.error_code is not None and not result.content else now
        same = "error" in now and str(answer["error"].get("message", "")) in str(now["error"])
        return same, "" if same else _first_difference(then, now)
    if not isinstance(then, Mapping):
        return False, "the recorded answer is not a tools/call result"
    then = {"content": then.get("content", []), "structuredContent": then.get("structuredContent"),
            "isError": bool(then.get("isError", False))}  # fmt: skip
    difference = _first_difference(then, now)
    return not difference, difference


def _first_difference(then: Any, now: Any, path: str = "") -> str:
    """The first place ``now`` differs from ``then``, as ``path: then → now`` (values cut), or ``""``."""
    if isinstance(then, Mapping) and isinstance(now, Mapping):
        for key in [*then, *(k for k in now if k not in then)]:
            found = _first_difference(then.get(key), now.get(key), f"{path}.{key}" if path else str(key))
            if found:
                return found
        return ""
    if isinstance(then, list) and isinstance(now, list):
        for index in range(max(len(then), len(now))):
            left = then[index] if index < len(then) else None
            right = now[index] if index < len(now) else None
            found = _first_difference(left, right, f"{path}[{index}]")
            if found:
                return found
        return ""
    if then == now:
        return ""
    return f"{path or 'answer'}: {_value(then)} → {_value(now)}"


def _value(value: Any) -> str:
    return one_line(json.dumps(value, ensure_ascii=False), VALUE_CHARS) if value is not None else "nothing"


__all__ = [
    "REPLAY_COLUMNS",
    "RecordedCall",
    "Replay",
    "ReplaySummary",
    "recorded_calls",
    "recorded_protocol",
    "recorded_verdicts",
]
