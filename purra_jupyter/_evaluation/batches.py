"""Batch evaluation: one tool over many inputs, read back as a table.

Every row is planned and checked first (rows whose arguments do not fit are refused and never
sent); one decision then covers the rows left, and each is sent through the call lifecycle
(``CallPlan.run``), at most ``concurrency`` at once (more than one only for a binding declared
concurrency-safe), while the waiting side shows progress. A kernel interrupt stops the batch:
finished rows keep their results, rows in flight are cancelled on the server, the others are not
sent. Tool failures are rows, never exceptions.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar, cast

import anyio

from .._base import runner
from .._base.activity import Activity
from .._base.changes import Observed
from .._base.charts import Chart, image_html, latency_and_outcomes
from .._base.egress import CellText, bundle, cell_text
from .._base.errors import McpSessionError
from .._base.frames import kit_frame
from .._base.junit import Case, suite
from .._base.markup import key_value_table, tag
from .._base.visible import one_line, visible
from .._base.wire import (
    APPROVAL_DENIED,
    CATALOG_STALE,
    CHECKS_FAILED,
    CONFIG_INVALID,
    EVENT_APPROVAL,
    HOST_ERROR,
    INTERRUPTED,
    NOT_CONCURRENCY_SAFE,
    STALE,
)
from .._connection.connection import CancelToken, Connection
from .._purra import calls
from .._purra.bindings import Bindings, WriteTerms
from .._purra.calls import CallPlan, Result
from .._purra.envelope import RawResult
from .checkpoint import Checkpoint, row_keys

if TYPE_CHECKING:
    import pandas as pd

RESULT_COLUMNS = ("ok", "error_code", "effect_state", "text", "structured", "elapsed_ms", "message")
# pandas' nullable types: a missing value is <NA> (an ok row's error_code, a row never sent's elapsed_ms)
_DTYPES = {"ok": bool, "error_code": "string", "effect_state": "string", "text": "string", "elapsed_ms": "Float64",
           "message": "string", "passed": bool, "check_message": "string"}  # fmt: skip
MAX_CONCURRENCY = 64
PREVIEW_ROWS = 5
Check = Callable[[Result], object]


class Settled(Protocol):
    """What rows keep of a row's result once it settles (the result itself, or what their table needs of it)."""

    @property
    def error_code(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def elapsed_ms(self) -> float: ...


KeptT = TypeVar("KeptT", bound=Settled)


class RowEnd(NamedTuple):
    """What a batch keeps of a row's result as it settles: its table's fields and the check's verdict, so a batch of
    100,000 rows holds the values its table shows, not 100,000 results waiting for the table."""

    ok: bool
    error_code: str | None
    effect_state: str | None
    text: str
    structured: Any
    elapsed_ms: float
    message: str
    passed: bool | None
    check_message: str | None


@dataclass(frozen=True)
class EvaluationSummary:
    """What a batch came to: counts per outcome (``ok`` or the error code) and latency percentiles of
    the calls that ran. Stored in the frame's ``attrs["summary"]``."""

    server: str
    tool: str
    rows: int
    counts: dict[str, int]
    p50_ms: float | None
    p95_ms: float | None
    wall_ms: float
    concurrency: int
    passed: int | None = None
    failed: int | None = None
    resumed: int = 0  # rows a checkpoint held already: counted, not sent again
    checkpoint: str | None = None
    sessions: int = 1  # the sessions (of one server) the rows were spread over
    latencies_ms: tuple[float, ...] = field(default=(), repr=False)  # of each row that ran to its end

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _lines(self) -> list[tuple[str, str]]:
        latency = "no call ran" if self.p50_ms is None else f"p50 {self.p50_ms:.1f} ms, p95 {self.p95_ms:.1f} ms"
        spread = f" on each of {self.sessions} sessions" if self.sessions > 1 else ""
        lines = [
            ("rows", f"{self.rows} (concurrency {self.concurrency}{spread}, {self.wall_ms:.0f} ms in all)"),
            ("outcomes", ", ".join(f"{code} {count}" for code, count in self.counts.items()) or "none"),
            ("latency", latency),
        ]
        if self.passed is not None:
            lines.append(("check", f"{self.passed} passed, {self.failed} failed"))
        if self.checkpoint is not None:
            lines.append(("checkpoint", resumed_words(self.checkpoint, self.resumed)))
        return lines

    def __repr__(self) -> CellText:
        body = "; ".join(f"{key}: {value}" for key, value in self._lines())
        return cell_text(f"<EvaluationSummary {self.server}/{visible(self.tool)}: {body}>")

    @functools.cached_property
    def chart(self) -> Chart:
        """The latency distribution and the outcome counts, as a picture (PNG)."""
        title = f"evaluation of {self.tool} on {self.server}: {self.rows} rows"
        alt = f"{title}; outcomes " + ", ".join(f"{code} {count}" for code, count in self.counts.items())
        return Chart(latency_and_outcomes(self.latencies_ms, self.counts, title, self.marks), alt)

    @property
    def marks(self) -> dict[str, float]:
        """The percentiles the chart marks: the summary's own."""
        if self.p50_ms is None or self.p95_ms is None:
            return {}
        return {"p50": self.p50_ms, "p95": self.p95_ms}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        title = f"evaluation of {self.tool} on {self.server}"
        table = key_value_table(self._lines(), "purra-evaluation-summary")
        picture = image_html(self.chart.data, self.chart.alt) if self.rows else None
        html = tag("div", tag("b", title), table, picture, class_="purra-evaluation", style="text-align:left")
        return bundle(html, self.__repr__())


def resumed_words(checkpoint: str, resumed: int) -> str:
    """What a checkpoint gave a batch, in the words its approval, its log and its summary use."""
    return f"{checkpoint}: {resumed} rows done before, not sent again"


class Rows(Observed, Generic[KeptT]):
    """Calls sent under one decision: their plans, and what is kept of their results as they settle. What an
    evaluation (``Batch``) and a replay share: each row is sent by ``CallPlan.run`` like any other call, at most
    ``concurrency`` at once, and ends in ``_settle``. A subclass offers the rest of the face of a ``CallPlan`` that
    ``calls.Call`` decides on, so one decision (and one approval widget) covers every row it will send, and calls
    ``_ready`` once its rows that need no sending are settled; it says what it keeps of each row's result
    (``_kept``) as the row ends."""

    kind = "evaluate"  # its word in the session log

    def __init__(
        self, connection: Connection, plans: list[CallPlan], results: list[Result | None], *, concurrency: int
    ) -> None:
        super().__init__()
        self.sent = 0  # rows of the approved batch sent so far (observed: ``Observed``)
        self.finished = 0  # rows of the approved batch settled so far (rows refused before approval never count)
        self.failed = 0  # of those, rows that ended with an error code
        self.connection = connection
        self.revision = connection.revision
        self.concurrency = concurrency
        self.plans = plans
        self.results: list[KeptT | None] = [None] * len(plans)
        self._row_digests: list[str | None] = [None] * len(plans)
        self._digest: tuple[list[int], str] | None = None  # (the rows it covers, the digest)
        self._ran = bytearray(len(plans))  # 1 for each row that was sent
        self.to_send: list[int] = []
        self.progress_total = 0
        self._started = time.perf_counter()
        for row, result in enumerate(results):  # (settled before any approval: refused, or their tool is gone)
            if result is not None:
                self._end(row, result)

    def _kept(self, row: int, result: Result) -> KeptT:
        """What is kept of row ``row``'s ``result`` once it ends."""
        raise NotImplementedError

    def _end(self, row: int, result: Result) -> None:
        self.results[row] = self._kept(row, result)

    def _ready(self) -> None:
        """What an approval covers: the rows not settled by now."""
        self.to_send = self.waiting
        self.progress_total = len(self.to_send)

    @property
    def label(self) -> str:
        raise NotImplementedError

    @property
    def progress_label(self) -> str:
        return self.label

    @property
    def timeout(self) -> None:
        """(Each row has its own: its plan's.)"""

    @property
    def waiting(self) -> list[int]:
        """Rows not settled yet."""
        return [row for row, result in enumerate(self.results) if result is None]

    @property
    def refused_rows(self) -> list[tuple[int, KeptT]]:
        """Rows settled before the approval, never sent (their arguments do not fit, their tool is gone)."""
        to_send = set(self.to_send)
        return [(row, result) for row, result in enumerate(self.results)
                if row not in to_send and not self._ran[row] and result is not None]  # fmt: skip

    def refused_details(self, name: Callable[[int], str]) -> list[tuple[str, str]]:
        """The first refused rows as an approval's detail lines: what the row is (``name(row)``), why it was refused."""
        shown = self.refused_rows[:PREVIEW_ROWS]
        return [(name(row), f"{result.error_code}: {result.message}") for row, result in shown]

    def digest(self) -> str:
        """What the approval covers: a digest of the rows' digests (see ``calls.digest_of_digests``), made once for the
        rows to send; the rows' digests are let go then (a checkpoint's keys were made of them before)."""
        if self._digest is None or self._digest[0] is not self.to_send:
            self._digest = (self.to_send, calls.digest_of_digests([self.row_digest(row) for row in self.to_send]))
            self._row_digests = []
        return self._digest[1]

    def row_digest(self, row: int) -> str:
        """PurrA's identity digest of what row ``row``'s approval covers (``_identity``), computed once."""
        digests = self._row_digests
        digest = digests[row] if digests else None
        if digest is None:
            digest = calls.arguments_digest(self._identity(row))
            if digests:
                digests[row] = digest
        return digest

    def _identity(self, row: int) -> Any:
        """What of row ``row`` its approval covers (the digest is over these)."""
        raise NotImplementedError

    def _shown(self, row: int) -> Any:
        """What of row ``row`` the approval shows: what its digest covers, unless a subclass shows it otherwise."""
        return self._identity(row)

    shown_what = "arguments of each call"  # what ``_shown`` shows, in the approval's words

    @property
    def shown_arguments(self) -> tuple[str, Any]:
        shown = [self._shown(row) for row in self.to_send[:PREVIEW_ROWS]]
        more = f" (first {len(shown)} of {len(self.to_send)})" if len(self.to_send) > len(shown) else ""
        return f"{self.shown_what}, sent exactly as shown{more}:", shown

    def refused(self, how: str) -> pd.DataFrame:
        """Every row denied, in one log row for the batch (not one per row: a denied batch of 100,000 rows would
        push the rest of the session out of its bounded log)."""
        self._log(f"denied ({how}): {len(self.waiting)} rows, args {self.digest()[:12]}")
        for row in self.waiting:
            self._settle(row, self.plans[row].fail(APPROVAL_DENIED, "the call was denied; nothing was sent"))
        return self.to_frame()

    def failure(self, code: str, message: str) -> pd.DataFrame:
        for row in self.waiting:
            self._settle(row, self.plans[row].failure(code, message))
        return self.to_frame()

    def shown(self, result: pd.DataFrame) -> tuple[Any, ...]:
        return result.attrs["summary"], result

    def to_frame(self) -> pd.DataFrame:
        raise NotImplementedError

    def _keep(self, row: int, result: Result) -> None:
        """A row that was sent has its result (a checkpoint keeps it)."""

    # --- running (on the loop) and waiting (in the kernel's thread) -----------------------------

    async def run(self, cancel: CancelToken, activity: Activity) -> pd.DataFrame:
        """Every row on the loop, at most ``concurrency`` at once on each session; ``cancel`` stops the batch: rows in
        flight are cancelled on the server, the others are not sent. ``concurrency`` workers per session take its rows
        in order (not a task per row: a batch of 100,000 rows holds a few tasks, not 100,000). A batch shows its rows'
        count, not what the server says of each (``activity`` is not shown): that is in the session log."""
        self._started = time.perf_counter()
        by_session: dict[int, list[int]] = {}  # the rows each session is given
        for row in self.to_send:
            by_session.setdefault(id(self.plans[row].connection), []).append(row)
        async with anyio.create_task_group() as group:
            for rows in by_session.values():
                taken = iter(rows)  # (shared by the session's workers: each takes the next row when it is free)
                for _ in range(min(self.concurrency, len(rows))):
                    group.start_soon(self._work, taken, cancel, activity)
        if cancel.code is not None:
            stopped = self._counts().get(cancel.code, 0)
            self._log(f"interrupted: {stopped} rows left without a result ({cancel.reason})")
        return self.to_frame()

    async def _work(self, rows: Iterator[int], cancel: CancelToken, activity: Activity) -> None:
        for row in rows:
            self._settle(row, await self._run_row(row, cancel, activity))

    async def _run_row(self, row: int, cancel: CancelToken, activity: Activity) -> Result:
        plan = self.plans[row]
        connection = plan.connection
        if cancel.code is not None:
            return plan.failure(cancel.code, f"{cancel.reason}; it was not sent")
        if connection.state == STALE or connection.revision != plan.revision:
            return plan.failure(CATALOG_STALE, "the tools changed during the batch; this row was not sent")
        self._ran[row] = 1
        self._change("sent", self.sent + 1)
        result = await plan.run(cancel, activity)
        if calls.never_sent(plan, result):  # (PurrA's check refused the row's arguments)
            self._ran[row] = 0
            self._change("sent", self.sent - 1)
        else:
            self._keep(row, result)
        return result

    def _settle(self, row: int, result: Result) -> None:
        """The one place a row of the decided rows ends."""
        self._end(row, result)
        if result.error_code is not None:
            self._change("failed", self.failed + 1)
        self._change("finished", self.finished + 1)

    @contextmanager
    def watch(self, activity: Activity) -> Iterator[None]:
        """A progress bar while the cell waits (refused rows are not progress), drawn by the cell's own thread (the
        ticks of ``runner.while_waiting``) from ``finished``, which changes on the loop; at the end it says how the
        rows ended. Text on stdout, in a notebook too: a widget bar would read "Error displaying widget" once the
        notebook is reopened without its kernel, and stderr is drawn as an error there."""
        from tqdm import tqdm

        with tqdm(total=len(self.to_send), desc=self.progress_label, unit="call", file=sys.stdout,
                  mininterval=0.5) as bar:  # fmt: skip
            try:
                with runner.while_waiting(lambda: bar.update(self.finished - bar.n)):
                    yield
            finally:
                bar.set_postfix_str(", ".join(f"{k} {v}" for k, v in runner.on_loop(self._counts).items()))

    def _counts(self) -> dict[str, int]:
        """How the rows settled so far ended (on the loop, which writes them)."""
        return dict(Counter(result.error_code or "ok" for result in self.results if result is not None))

    def _log(self, detail: str) -> None:
        self.connection.log.add(EVENT_APPROVAL, f"{self.kind} {self.label}: {detail}")

    def _latencies(self, results: Sequence[Settled]) -> pd.Series[float]:
        """The latency of each row that ran to its end (in the order of the rows)."""
        import pandas as pd

        ran = [
            result.elapsed_ms
            for row, result in enumerate(results)
            if self._ran[row] and result.error_code != INTERRUPTED
        ]
        return pd.Series(ran, dtype=float)


class Batch(Rows[RowEnd]):
    """The rows of one evaluation: one tool over many inputs, planned and checked, the face of its probe's plan."""

    question = "Approve this batch of MCP calls?"

    def __init__(
        self,
        connection: Connection,
        bindings: Bindings,
        tool: str,
        rows: Any,
        *,
        raw: bool,
        timeout: float | None,
        concurrency: int,
        check: Check | None,
        checkpoint: Checkpoint | None = None,
        pool: Sequence[tuple[Connection, Bindings]] = (),
    ) -> None:
        self.frame, arguments = input_rows(rows)
        self.raw = raw
        self.check = check
        probe = calls.plan_call(connection, bindings, tool, {}, raw=raw, timeout=timeout)  # tool and timeout, once
        self.remote = probe.remote
        self.local = probe.local
        self.tool = probe.tool
        self.declaration = probe.declaration
        self.probe = probe
        self.sessions = 1 + len(pool)
        if concurrency > 1 or pool:
            for each in (bindings, *(other for _, other in pool)):
                _check_concurrency_safe(each, self.remote, concurrency, self.sessions)
        places = [(connection, bindings), *pool]
        super().__init__(connection, *_plan_rows(probe, arguments, places), concurrency=concurrency)
        self.resumed = 0  # rows the checkpoint held: done before, not sent again
        self.checkpoint = checkpoint
        self.keys = self._resume(bindings.catalog.digest) if checkpoint is not None else []
        self._ready()

    def _identity(self, row: int) -> Any:
        """A row's arguments as given (the handler's check or ``check_rows`` settles how they go out)."""
        return self.plans[row].arguments

    def _shown(self, row: int) -> Any:
        return self.plans[row].wire_arguments

    def check_rows(self) -> None:
        """Before a person approves the batch, each row's arguments are checked once (a person must never approve what
        PurrA will refuse); the rows that do not fit are settled now. A batch decided in code leaves that check to
        purra-mcp's handler as each row runs (raw rows were checked when they were planned)."""
        if self.raw:
            return
        for row in self.waiting:
            self.plans[row] = plan = calls.checked(self.plans[row])
            refused = calls.refused_row(plan)
            if refused is not None:
                self._end(row, refused)
        self._ready()

    def _resume(self, catalog_digest: str) -> list[str]:
        """Each row's checkpoint key; rows the checkpoint holds are settled with their recorded results."""
        assert self.checkpoint is not None
        keys = row_keys(self.remote, self.raw, [self.row_digest(row) for row in range(len(self.plans))], catalog_digest)
        for row, key in enumerate(keys):
            done = self.checkpoint.done.get(key)
            if self.results[row] is None and done is not None:
                self._end(row, done)
                self._ran[row] = 1
                self.resumed += 1
        return keys

    # --- the face a decision needs ---------------------------------------------------------------

    @property
    def write(self) -> WriteTerms | None:
        return self.probe.write

    @property
    def effect(self) -> str:
        return self.probe.effect

    @property
    def label(self) -> str:
        return self.probe.label

    @property
    def may_write(self) -> bool:
        return self.probe.may_write

    @property
    def write_hint(self) -> str | None:
        return self.probe.write_hint

    def still_covered(self) -> bool:
        return self.probe.still_covered()

    @property
    def progress_label(self) -> str:
        refused = len(self.refused_rows)
        return f"{self.local} ({len(self.results)} rows, {refused} refused, not sent)" if refused else self.local

    @property
    def summary(self) -> str:
        return f"{self.local} over {len(self.to_send)} rows"

    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]:
        refused = self.refused_rows
        spread = f" on each of {self.sessions} sessions" if self.sessions > 1 else ""
        calls_line = f"{len(self.to_send)} calls, at most {self.concurrency} at once{spread}"
        if refused:
            calls_line += f"; {len(refused)} rows refused before approval, never sent:"
        labels = list(self.frame.index)
        rows = self.refused_details(lambda row: f"refused row {labels[row]}")
        resumed = [("checkpoint", self._resumed_words())] if self.checkpoint is not None else []
        return (("batch", calls_line), *resumed, *self.probe.detail_rows, *rows)

    def _resumed_words(self) -> str:
        assert self.checkpoint is not None
        skipped = self.checkpoint.skipped_words
        return resumed_words(str(self.checkpoint.path), self.resumed) + (f"; {skipped}" if skipped else "")

    def approved(self, how: str, digest: str) -> None:
        declaration = f"; declares: {self.declaration}" if self.declaration else ""
        resumed = f"; {self._resumed_words()}" if self.checkpoint is not None else ""
        self._log(f"{how}: {len(self.to_send)} rows, args {digest[:12]}{declaration}{resumed}")

    def _kept(self, row: int, result: Result) -> RowEnd:
        """The row's table fields and the check's verdict, made as it ends (the check runs on the loop, as rows end)."""
        return _row_end(result, self.check)

    def _settle(self, row: int, result: Result) -> None:
        super()._settle(row, result)
        self.plans[row] = self.probe  # (the row's copy of its arguments is let go: ``frame`` holds its input)

    def _keep(self, row: int, result: Result) -> None:
        """A row that ran, in the checkpoint (unless it was stopped: it runs again on a rerun)."""
        if self.checkpoint is None or result.error_code == INTERRUPTED:
            return
        try:
            self.checkpoint.append(self.keys[row], result)
        except OSError as error:
            self._log(f"checkpoint {self.checkpoint.path}: row {row} not written ({error.__class__.__name__})")

    # --- the table -------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The input columns, then one column per result field (and the check's verdict)."""
        import pandas as pd

        ends = [self._kept(row, self.plans[row].fail(INTERRUPTED, "not run")) if end is None else end
                for row, end in enumerate(self.results)]  # fmt: skip
        names = (*RESULT_COLUMNS, "passed", "check_message") if self.check is not None else RESULT_COLUMNS
        columns: dict[str, list[Any]] = {name: [getattr(end, name) for end in ends] for name in names}
        columns["elapsed_ms"] = [round(end.elapsed_ms, 1) if self._ran[row] else None for row, end in enumerate(ends)]
        inputs = self.frame.rename(columns=lambda c: f"arg:{c}" if c in columns else c)
        results_frame = pd.DataFrame(
            {k: pd.Series(v, dtype=cast(Any, _DTYPES.get(k, object))) for k, v in columns.items()}
        )
        out = pd.concat([inputs, results_frame.set_axis(self.frame.index)], axis=1)
        out.attrs["summary"] = self._summary(ends, columns)
        return kit_frame(out)

    def _summary(self, results: list[RowEnd], columns: dict[str, list[Any]]) -> EvaluationSummary:
        latencies = self._latencies(results)
        passed = columns.get("passed")
        p50, p95 = _percentiles(latencies)
        return EvaluationSummary(
            server=self.connection.name,
            tool=self.local,
            rows=len(results),
            counts=dict(Counter(result.error_code or "ok" for result in results)),
            p50_ms=p50,
            p95_ms=p95,
            wall_ms=calls.ms_since(self._started),
            concurrency=self.concurrency,
            passed=None if passed is None else sum(passed),
            failed=None if passed is None else len(passed) - sum(passed),
            resumed=self.resumed,
            checkpoint=None if self.checkpoint is None else str(self.checkpoint.path),
            sessions=self.sessions,
            latencies_ms=tuple(float(value) for value in latencies),
        )


def _percentiles(latencies: pd.Series[float]) -> tuple[float | None, float | None]:
    if not len(latencies):
        return None, None
    return float(latencies.quantile(0.5)), float(latencies.quantile(0.95))


def merged(summaries: Sequence[EvaluationSummary], *, wall_ms: float) -> EvaluationSummary:
    """One summary of an evaluation run in parts (shards, in order): counts and checks added up, the latencies of
    every part together (so p50 and p95 are the whole run's), the sessions of all parts."""
    import pandas as pd

    first = summaries[0]
    counts: Counter[str] = Counter()
    for summary in summaries:
        counts.update(summary.counts)
    latencies = tuple(value for summary in summaries for value in summary.latencies_ms)
    p50, p95 = _percentiles(pd.Series(latencies, dtype=float))
    checked = first.passed is not None
    return EvaluationSummary(
        server=first.server, tool=first.tool, rows=sum(s.rows for s in summaries), counts=dict(counts), p50_ms=p50,
        p95_ms=p95, wall_ms=wall_ms, concurrency=first.concurrency,
        passed=sum(s.passed or 0 for s in summaries) if checked else None,
        failed=sum(s.failed or 0 for s in summaries) if checked else None,
        resumed=sum(s.resumed for s in summaries), sessions=sum(s.sessions for s in summaries), latencies_ms=latencies,
    )  # fmt: skip


def prepare(
    connection: Connection,
    bindings: Bindings,
    tool: str,
    rows: Any,
    *,
    concurrency: int = 1,
    timeout: float | None = None,
    check: Check | None = None,
    raw: bool = False,
    checkpoint: str | Path | None = None,
    pool: Sequence[tuple[Connection, Bindings]] = (),
) -> Batch:
    """The batch for ``tool`` over ``rows``, checked and planned, nothing sent; see ``McpSession.evaluate``."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise McpSessionError(CONFIG_INVALID, f"concurrency must be an integer from 1 to {MAX_CONCURRENCY}.")
    if check is not None and not callable(check):
        raise McpSessionError(
            CONFIG_INVALID, "check must be a callable taking a result and returning bool or a message."
        )
    kept = Checkpoint(checkpoint) if checkpoint is not None else None
    return Batch(connection, bindings, tool, rows, raw=raw, timeout=timeout, concurrency=concurrency, check=check,
                 checkpoint=kept, pool=pool)  # fmt: skip


FAILED_SHOWN = 3  # rows a failed assert_checks names in its one line


def assert_checks(frame: Any, *, junit: str | Path | None = None) -> EvaluationSummary:
    """Turn an evaluation into a pass or a fail, for a headless run (``jupyter execute``, nbclient, papermill): each
    row passes when its check passed (``check=``) or, without a check, when it is ok. If a row did not pass,
    ``mcp_checks_failed`` is raised, which fails the cell and so the run. ``junit`` writes a JUnit XML report of the
    rows (one test case each) either way. Returns the evaluation's summary."""
    import pandas as pd

    summary = frame.attrs.get("summary") if isinstance(frame, pd.DataFrame) else None
    if not isinstance(summary, EvaluationSummary):
        raise McpSessionError(
            CONFIG_INVALID,
            "assert_checks takes the DataFrame an evaluation returned; a batch still waiting for its approval has "
            "none yet (approve it in code, approve=True, for a headless run).",
        )
    passed = frame["passed"] if "passed" in frame.columns else frame["ok"]
    cases, failed = [], []
    for label, row in frame.iterrows():
        reason = None if bool(passed[label]) else _failure_reason(row)
        arguments = {k: v for k, v in row.items() if k not in _RESULT_AND_CHECK and not _missing(v)}
        name = f"row {label}: {json.dumps(arguments, ensure_ascii=False, default=str)[:200]}"
        text = "" if _missing(row["text"]) else str(row["text"])
        suite_name = f"{summary.server}.{summary.tool}"
        cases.append(Case(suite_name, name, failure=reason, kind=CHECKS_FAILED, detail=(text,) if reason else (),
                          output=() if reason else (text,)))  # fmt: skip
        if reason is not None:
            failed.append(f"row {label}: {reason}")
    if junit is not None:
        Path(junit).write_text(suite(f"evaluation of {summary.tool} on {summary.server}", cases), encoding="utf-8")
    if failed:
        more = len(failed) - FAILED_SHOWN
        shown = "; ".join(failed[:FAILED_SHOWN]) + (f"; and {more} more" if more > 0 else "")
        raise McpSessionError(
            CHECKS_FAILED, f"{len(failed)} of {len(frame)} rows of {summary.tool} on {summary.server} failed: {shown}."
        )
    return summary


_RESULT_AND_CHECK = frozenset({*RESULT_COLUMNS, "passed", "check_message"})


def _failure_reason(row: Any) -> str:
    """Why a row did not pass: its check's message, else its error code and the kit's words."""
    message = row.get("check_message")
    if isinstance(message, str) and message:
        return one_line(message, 200)
    if isinstance(row["error_code"], str):
        return f"{row['error_code']}: {one_line(str(row['message']), 200)}"
    return "the check did not pass"


def input_rows(rows: Any) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The input table and each row's arguments, copied whole: what a person reviews is what is sent and what
    the result table shows, whatever happens to ``rows`` (or the lists inside its cells) afterwards. A
    DataFrame's missing cells (None, NaN, NA) are left out of the arguments, never sent as null; a list of
    argument dicts is sent as given."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        frame = _deep_copy(rows)
        records = frame.to_dict(orient="records")
        return frame, [{str(k): v for k, v in record.items() if not _missing(v)} for record in records]
    if isinstance(rows, Mapping) or isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise McpSessionError(CONFIG_INVALID, "rows must be a DataFrame or a list of argument dicts.")
    given = list(rows)
    if not all(isinstance(row, Mapping) for row in given):
        raise McpSessionError(CONFIG_INVALID, "rows must be a DataFrame or a list of argument dicts.")
    arguments: list[dict[str, Any]] = [_copied(dict(row)) for row in given]
    # nullable dtypes: an integer argument some rows leave out stays an integer column, with <NA> there
    frame = pd.DataFrame(arguments, index=pd.RangeIndex(len(arguments)))  # (the arguments are the batch's own)
    return frame.convert_dtypes(), arguments


def _copied(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except Exception as error:
        what = error.__class__.__name__
        raise McpSessionError(CONFIG_INVALID, f"rows must hold values a batch can copy ({what}).") from None


def _deep_copy(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its own data, down to the objects in its cells (pandas' deep copy shares those)."""
    import pandas as pd

    copied = frame.copy(deep=True)
    for position in range(copied.shape[1]):
        if pd.api.types.is_object_dtype(copied.dtypes.iloc[position]):  # cells of Python objects (lists, dicts)
            copied.iloc[:, position] = copied.iloc[:, position].map(_copied)
    return copied


def _missing(value: Any) -> bool:
    import pandas as pd

    return pd.api.types.is_scalar(value) and bool(pd.isna(value))


def _plan_rows(
    probe: CallPlan, rows: list[dict[str, Any]], places: Sequence[tuple[Connection, Bindings]]
) -> tuple[list[CallPlan], list[Result | None]]:
    """A plan per row, on the sessions of ``places`` in turn; rows that cannot be sent (arguments, a closed or stale
    session) are settled now."""
    plans: list[CallPlan] = []
    results: list[Result | None] = []
    templates = [  # (the tool is resolved and its binding looked up once per session, not once per row)
        calls.plan_call(connection, bindings, probe.remote, {}, raw=probe.raw, timeout=probe.timeout)
        if connection is not probe.connection
        else probe
        for connection, bindings in places
    ]
    for row, arguments in enumerate(rows):
        try:
            plan = calls.with_arguments(templates[row % len(templates)], arguments)
        except McpSessionError as error:  # arguments that are not plain JSON
            plans.append(probe)
            results.append(probe.failure(error.code, f"{error.message} Nothing was sent."))
            continue
        plans.append(plan)
        results.append(calls.refused_row(plan))
    return plans, results


def _check_concurrency_safe(bindings: Bindings, remote: str, concurrency: int, sessions: int) -> None:
    binding = bindings.binding(remote)
    if binding is None or not binding.concurrency_safe:
        at_once = f"{concurrency} at once" + (f" on each of {sessions} sessions" if sessions > 1 else "")
        raise McpSessionError(
            NOT_CONCURRENCY_SAFE,
            f"'{remote}' is not bound as concurrency-safe, so its calls run one at a time; nothing was sent. "
            f"Bind it with concurrency_safe=True (%mcp_bind ... --concurrency-safe) to run {at_once}.",
        )


def _row_end(result: Result, check: Check | None) -> RowEnd:
    """A row's result columns and ``check``'s verdict: its text blocks joined by newlines, its time (shown to 0.1 ms,
    only if it was sent), its effect only where a person would read one (a write, or a state other than not_started:
    as the envelope shows it)."""
    effect = None
    if isinstance(result, RawResult):
        text = [block.get("text", "") for block in result.content if block.get("type") == "text"]
        structured = result.structured_content
    else:
        envelope = result.to_dict()  # (parsed once: an Envelope keeps its JSON text)
        text, structured = envelope["text"], envelope["structured"]
        effect = result.effect_state if result.shows_effect else None
    passed, check_message = _checked(check, result) if check is not None else (None, None)
    return RowEnd(result.ok, result.error_code, effect, "\n".join(text), structured, result.elapsed_ms, result.message,
                  passed, check_message)  # fmt: skip


def _checked(check: Check, result: Result) -> tuple[bool, str]:
    """``check(result)``: ``True`` passes; ``False`` or a message fails (an empty message passes)."""
    try:
        verdict = check(result)
    except Exception as error:  # the check is the user's code: its failure is this row's verdict
        return False, f"{HOST_ERROR}: the check raised {error.__class__.__name__}: {error}"
    if isinstance(verdict, bool):
        return verdict, "" if verdict else "check returned False"
    if isinstance(verdict, str):
        return not verdict, verdict
    return False, f"check returned {type(verdict).__name__}, not bool or a message"
