"""Batch evaluation: one tool over many inputs, read back as a table.

Every row is planned and checked first (rows whose arguments do not fit are refused and never
sent); one approval then covers the rows left. They run on the loop, at most ``concurrency`` at once
(more than one only for a binding declared concurrency-safe), while the waiting side shows progress.
A kernel interrupt stops the batch: finished rows keep their results, the others get
``mcp_interrupted``. Tool failures are rows, never exceptions.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from html import escape
from typing import TYPE_CHECKING, Any

import anyio

from . import calls, runner
from .calls import CallPlan, Result
from .envelope import RawResult
from .errors import McpSessionError
from .wire import (
    CATALOG_STALE,
    CONFIG_INVALID,
    EVENT_APPROVAL,
    INTERRUPTED,
    NOT_CONCURRENCY_SAFE,
    STALE,
    TRANSPORT_ERROR,
)

if TYPE_CHECKING:
    import pandas as pd

    from .approval import PendingCall
    from .session import McpSession

RESULT_COLUMNS = ("ok", "error_code", "text", "structured", "elapsed_ms", "message")
_DTYPES = {"ok": bool, "elapsed_ms": float, "passed": bool}
MAX_CONCURRENCY = 64
PREVIEW_ROWS = 5
Check = Callable[[Result], object]


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def _lines(self) -> list[tuple[str, str]]:
        latency = "no call ran" if self.p50_ms is None else f"p50 {self.p50_ms:.1f} ms, p95 {self.p95_ms:.1f} ms"
        lines = [
            ("rows", f"{self.rows} (concurrency {self.concurrency}, {self.wall_ms:.0f} ms in all)"),
            ("outcomes", ", ".join(f"{code} {count}" for code, count in self.counts.items()) or "none"),
            ("latency", latency),
        ]
        if self.passed is not None:
            lines.append(("check", f"{self.passed} passed, {self.failed} failed"))
        return lines

    def __repr__(self) -> str:
        body = "; ".join(f"{key}: {value}" for key, value in self._lines())
        return f"<EvaluationSummary {self.server}/{self.tool}: {body}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = "".join(
            f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in self._lines()
        )
        title = f"evaluation of {self.tool} on {self.server}"
        return {
            "text/plain": repr(self),
            "text/html": f"<div class='purra-evaluation'><b>{escape(title)}</b><table>{rows}</table></div>",
        }


class Batch:
    """The rows of one evaluation: their plans, and their results as they settle (from any thread).

    It offers the approval face of a ``CallPlan`` (see ``approval.PendingCall``), so one widget and
    one decision cover every row it will send."""

    question = "Approve this batch of MCP calls?"

    def __init__(
        self,
        session: McpSession,
        tool: str,
        rows: Any,
        *,
        raw: bool,
        timeout: float | None,
        concurrency: int,
        check: Check | None,
    ) -> None:
        self.frame, arguments = input_rows(rows)
        self.session = session
        self.raw = raw
        self.concurrency = concurrency
        self.check = check
        self.revision = session.monitor.revision
        probe = calls.plan_call(session, tool, {}, raw=raw, timeout=timeout)  # the tool and timeout, checked once
        self.remote = probe.remote
        self.local = probe.local
        self.declaration = probe.declaration
        if concurrency > 1:
            _check_concurrency_safe(session, self.remote, concurrency)
        self.plans, self.results = _plan_rows(probe, arguments)
        self.to_send = self.waiting  # what an approval covers
        self._ran: set[int] = set()
        self._lock = threading.Lock()
        self._stopped = False
        self._settled: queue.Queue[int | None] = queue.Queue()
        self._started = time.perf_counter()

    # --- the approval face -----------------------------------------------------------------

    @property
    def waiting(self) -> list[int]:
        """Rows not settled yet."""
        return [row for row, result in enumerate(self.results) if result is None]

    @property
    def summary(self) -> str:
        return f"{self.local} over {len(self.to_send)} rows"

    @property
    def shown_arguments(self) -> tuple[str, Any]:
        shown = [self.plans[row].arguments for row in self.to_send[:PREVIEW_ROWS]]
        more = f" (first {len(shown)} of {len(self.to_send)})" if len(self.to_send) > len(shown) else ""
        return f"arguments of each call, sent exactly as shown{more}:", shown

    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]:
        refused = len(self.results) - len(self.to_send)
        calls_line = f"{len(self.to_send)} calls, at most {self.concurrency} at once"
        if refused:
            calls_line += f"; {refused} rows refused before approval (see their error_code)"
        return (("batch", calls_line),)

    def digest(self) -> str:
        return calls.arguments_digest([self.plans[row].arguments for row in self.to_send])

    def start(self, how: str, done: Callable[[pd.DataFrame], None]) -> None:
        """Run on the loop without blocking the kernel; a thread waits, drives ``progress`` and calls ``done``."""
        future = self._submit(how)
        bar = self.progress_bar
        threading.Thread(
            target=lambda: done(self._collect(future, _WidgetProgress(bar))), name="purra-jupyter-batch", daemon=True
        ).start()

    def refuse(self, how: str) -> pd.DataFrame:
        self._log(f"denied ({how})")
        for row in self.waiting:
            self.results[row] = calls.denied(self.plans[row], how)
        return self.to_frame()

    def voided(self, code: str, message: str) -> pd.DataFrame:
        for row in self.waiting:
            self.results[row] = calls.logged(self.plans[row], self.plans[row].fail(code, message))
        return self.to_frame()

    def shown(self, result: pd.DataFrame) -> tuple[Any, ...]:
        return result.attrs["summary"], result

    # --- running ---------------------------------------------------------------------------

    def run(self, how: str) -> pd.DataFrame:
        """Run and wait in this thread (the kernel's): a progress bar, and an interrupt stops the batch."""
        from tqdm.auto import tqdm

        future = self._submit(how)
        with tqdm(
            total=len(self.results), desc=self.local, unit="call", initial=len(self.results) - len(self.waiting)
        ) as bar:
            return self._collect(future, bar)

    def _submit(self, how: str) -> Any:
        waiting = self.to_send
        self._log(
            f"{how}: {len(waiting)} rows, args {self.digest()[:12]}"
            + (f"; declares: {self.declaration}" if self.declaration else "")
        )
        self._started = time.perf_counter()
        return runner.submit(self._run_rows, waiting)

    async def _run_rows(self, rows: list[int]) -> None:
        limiter = anyio.CapacityLimiter(self.concurrency)
        try:
            async with anyio.create_task_group() as group:
                for row in rows:
                    group.start_soon(self._run_row, row, limiter)
        finally:
            self._settled.put(None)  # also when cancelled: the waiting side must wake

    async def _run_row(self, row: int, limiter: anyio.CapacityLimiter) -> None:
        plan = self.plans[row]
        async with limiter:
            session = self.session
            if session.state == STALE or session.monitor.revision != self.revision:
                result = plan.fail(CATALOG_STALE, "the tools changed during the batch; this row was not sent")
            else:
                self._ran.add(row)
                started = time.perf_counter()
                try:
                    result = await session._bounded(lambda client: calls.execute(plan, client), plan.timeout)
                except Exception as exc:
                    error = session.translate_error(exc)
                    code = error.code if isinstance(error, McpSessionError) else TRANSPORT_ERROR
                    result = plan.fail(code, str(getattr(error, "message", error)), _ms_since(started))
        self._settle(row, result)

    def _settle(self, row: int, result: Result) -> None:
        with self._lock:
            if self._stopped:
                return
            self.results[row] = calls.logged(self.plans[row], result)
        self._settled.put(row)

    def _collect(self, future: Any, progress: Any) -> pd.DataFrame:
        """Wait for every row (updating ``progress``); on an interrupt, stop and mark the rest."""
        try:
            while self._settled.get() is not None:
                progress.update(1)
        except KeyboardInterrupt:
            future.cancel()
            self._stop()
        frame = self.to_frame()
        progress.set_postfix_str(", ".join(f"{k} {v}" for k, v in frame.attrs["summary"].counts.items()))
        return frame

    def _stop(self) -> None:
        """An interrupt: rows still running are abandoned (their results discarded), the rest never sent."""
        with self._lock:
            self._stopped = True
            left = self.waiting
            for row in left:
                what = "its result is discarded" if row in self._ran else "it was not sent"
                plan = self.plans[row]
                self.results[row] = calls.logged(plan, plan.fail(INTERRUPTED, f"the batch was interrupted; {what}"))
        self._log(f"interrupted: {len(left)} rows left without a result")

    def _log(self, detail: str) -> None:
        self.session.log.add(EVENT_APPROVAL, f"evaluate {self.remote}: {detail}")

    @functools.cached_property
    def progress_bar(self) -> Any:
        """The progress bar of the approval widget (made only when a widget shows the batch)."""
        import ipywidgets as widgets

        total = len(self.results)
        return widgets.IntProgress(value=total - len(self.to_send), min=0, max=max(total, 1))

    # --- the table -------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """The input columns, then one column per result field (and the check's verdict)."""
        import pandas as pd

        results = [result or self.plans[row].fail(INTERRUPTED, "not run") for row, result in enumerate(self.results)]
        columns: dict[str, list[Any]] = {name: [] for name in RESULT_COLUMNS}
        for result in results:
            for name, value in zip(RESULT_COLUMNS, _result_fields(result), strict=True):
                columns[name].append(value)
        if self.check is not None:
            verdicts = [_checked(self.check, result) for result in results]
            columns["passed"] = [passed for passed, _ in verdicts]
            columns["check_message"] = [message for _, message in verdicts]
        inputs = self.frame.rename(columns=lambda c: f"arg:{c}" if c in columns else c)
        # object columns keep None as None (an ok row's error_code), not NaN
        results_frame = pd.DataFrame({k: pd.Series(v, dtype=_DTYPES.get(k, object)) for k, v in columns.items()})
        out = pd.concat([inputs, results_frame.set_axis(self.frame.index)], axis=1)
        out.attrs["summary"] = self._summary(results, columns)
        return out

    def _summary(self, results: list[Result], columns: dict[str, list[Any]]) -> EvaluationSummary:
        import pandas as pd

        latencies = pd.Series(
            [results[row].elapsed_ms for row in sorted(self._ran) if results[row].error_code != INTERRUPTED],
            dtype=float,
        )
        passed = columns.get("passed")
        return EvaluationSummary(
            server=self.session.name,
            tool=self.local,
            rows=len(results),
            counts=dict(Counter(result.error_code or "ok" for result in results)),
            p50_ms=float(latencies.quantile(0.5)) if len(latencies) else None,
            p95_ms=float(latencies.quantile(0.95)) if len(latencies) else None,
            wall_ms=_ms_since(self._started),
            concurrency=self.concurrency,
            passed=None if passed is None else sum(passed),
            failed=None if passed is None else len(passed) - sum(passed),
        )


def evaluate(
    session: McpSession,
    tool: str,
    rows: Any,
    *,
    approve: bool | None = None,
    concurrency: int = 1,
    timeout: float | None = None,
    check: Check | None = None,
    raw: bool = False,
) -> pd.DataFrame | PendingCall:
    """Call ``tool`` once per row; see ``McpSession.evaluate``."""
    if approve is not None and not isinstance(approve, bool):
        raise McpSessionError(CONFIG_INVALID, "approve must be True, False or None.")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise McpSessionError(CONFIG_INVALID, f"concurrency must be an integer from 1 to {MAX_CONCURRENCY}.")
    if check is not None and not callable(check):
        raise McpSessionError(
            CONFIG_INVALID, "check must be a callable taking a result and returning bool or a message."
        )
    batch = Batch(session, tool, rows, raw=raw, timeout=timeout, concurrency=concurrency, check=check)
    if not batch.waiting:
        return batch.to_frame()
    if approve is True:
        return batch.run("approved in code")
    if approve is False:
        return batch.refuse("denied in code")
    if session.approval == "deny":
        return batch.refuse("the session's deny policy")
    if session.approval == "auto":
        return batch.run("approved by the session's auto policy")
    from .approval import PendingCall

    return PendingCall(batch, (batch.progress_bar,))


def input_rows(rows: Any) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """The input table and each row's arguments. A DataFrame's missing cells (None, NaN, NA) are left
    out of the arguments, never sent as null; a list of argument dicts is sent as given."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        records = rows.to_dict(orient="records")
        return rows, [{k: v for k, v in record.items() if not _missing(v)} for record in records]
    if isinstance(rows, Mapping) or isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise McpSessionError(CONFIG_INVALID, "rows must be a DataFrame or a list of argument dicts.")
    arguments = [dict(row) if isinstance(row, Mapping) else None for row in rows]
    if None in arguments:
        raise McpSessionError(CONFIG_INVALID, "rows must be a DataFrame or a list of argument dicts.")
    return pd.DataFrame(arguments, index=pd.RangeIndex(len(arguments))), arguments


def _missing(value: Any) -> bool:
    import pandas as pd

    return pd.api.types.is_scalar(value) and bool(pd.isna(value))


def _plan_rows(probe: CallPlan, rows: list[dict[str, Any]]) -> tuple[list[CallPlan], list[Result | None]]:
    """A plan per row; rows that cannot be sent (arguments, a closed or stale session) are settled now."""
    plans: list[CallPlan] = []
    results: list[Result | None] = []
    for arguments in rows:
        try:
            plan = calls.plan_call(probe.session, probe.remote, arguments, raw=probe.raw, timeout=probe.timeout)
        except McpSessionError as error:  # arguments that are not plain JSON
            plans.append(probe)
            results.append(calls.logged(probe, probe.fail(error.code, f"{error.message} Nothing was sent.")))
            continue
        plans.append(plan)
        results.append(calls.refusal(plan))
    return plans, results


def _check_concurrency_safe(session: McpSession, remote: str, concurrency: int) -> None:
    binding = session._bindings.get(remote)
    if binding is None or not binding.concurrency_safe:
        raise McpSessionError(
            NOT_CONCURRENCY_SAFE,
            f"'{remote}' is not bound as concurrency-safe, so its calls run one at a time; nothing was sent. "
            f"Bind it with concurrency_safe=True (%mcp_bind ... --concurrency-safe) to run {concurrency} at once.",
        )


def _result_fields(result: Result) -> tuple[Any, ...]:
    if isinstance(result, RawResult):
        text = [block.get("text", "") for block in result.content if block.get("type") == "text"]
        structured = result.structured_content
    else:
        text, structured = result.text, result.structured
    return result.ok, result.error_code, text, structured, result.elapsed_ms, result.message


def _checked(check: Check, result: Result) -> tuple[bool, str]:
    """``check(result)``: ``True`` passes; ``False`` or a message fails (an empty message passes)."""
    try:
        verdict = check(result)
    except Exception as error:  # the check is the user's code: its failure is this row's verdict
        return False, f"check raised {error.__class__.__name__}: {error}"
    if isinstance(verdict, bool):
        return verdict, "" if verdict else "check returned False"
    if isinstance(verdict, str):
        return not verdict, verdict
    return False, f"check returned {type(verdict).__name__}, not bool or a message"


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class _WidgetProgress:
    """The ``tqdm`` calls ``_collect`` makes, on an ipywidgets bar (safe from any thread)."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def update(self, n: int) -> None:
        self.bar.value += n

    def set_postfix_str(self, text: str) -> None:
        self.bar.description = ""
        self.bar.bar_style = "success"
        self.bar.tooltip = text
