"""A session's calls: each planned on the PurrA path or the raw one, and decided under the session's approval policy
(``Caller`` owns it) by code, the policy or a person; batches and replays as one call each; a tool's view and its
own calls.

``McpSession`` forwards its ``call``, ``evaluate``, ``replay``, ``form``, ``app_info`` and ``set_approval`` here, so
the docstrings below are the ones the API reference shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._base.errors import McpSessionError
from .._base.transcript import load as load_transcript
from .._base.wire import APPROVAL_POLICIES, CONFIG_INVALID, DIGEST_MISMATCH, EVENT_SETTING
from .._beside.offerings import Offered, ResourceContents
from .._beside.views import APP_INFO_COLUMNS, VIEW_MAX_BYTES, app_info_row
from .._connection.connection import Connection
from .._evaluation.batches import prepare
from .._evaluation.replays import Replay
from .._purra.bindings import Bindings
from .._purra.calls import Call, CallPlan, check_approve, checked, needs_a_person, plan_call, refusal
from .._purra.catalog import Catalog, ToolVerdict

if TYPE_CHECKING:
    import pandas as pd

    from .._purra.envelope import Envelope, RawResult
    from .._ui.approval import PendingCall
    from .._ui.forms import SchemaForm
    from .._ui.views import ViewedCall

AUTO_APPROVAL_NOTE = (
    "approval policy 'auto': every read call of this session is approved (a write, or a tool its server hints "
    "writes, still asks)"
)
VIEW_READ_BYTES = VIEW_MAX_BYTES + (64 << 10)  # a view's resources/read: its HTML and the JSON around it


def check_approval(policy: str) -> None:
    if policy not in APPROVAL_POLICIES:
        raise McpSessionError(CONFIG_INVALID, f"approval must be one of {', '.join(APPROVAL_POLICIES)}.")


@runtime_checkable
class PoolMember(Protocol):
    """What a batch spread over several sessions needs of each other session (an ``McpSession``)."""

    connection: Connection

    @property
    def name(self) -> str: ...

    @property
    def binding_state(self) -> Bindings: ...

    @property
    def catalog(self) -> Catalog: ...


class Caller:
    """The calls of one session, and the one owner of its approval policy."""

    def __init__(self, connection: Connection, bindings: Bindings, offered: Offered, *, approval: str) -> None:
        self.connection = connection
        self.bindings = bindings
        self.offered = offered
        self._approval = approval

    @property
    def approval(self) -> str:
        """The approval policy of this session's calls: ``prompt``, ``auto`` or ``deny``."""
        return self._approval

    def set_approval(self, policy: str) -> None:
        """Change the approval policy of the calls from now on (a call already waiting keeps its widget)."""
        check_approval(policy)
        self._approval = policy
        self.connection.log.add(
            EVENT_SETTING, AUTO_APPROVAL_NOTE if policy == "auto" else f"approval policy '{policy}'"
        )

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        approve: bool | None = None,
        raw: bool = False,
        timeout: float | None = None,
        task: bool = False,
        check_arguments: bool = True,
    ) -> Envelope | RawResult | PendingCall:
        """Call ``tool`` (a local or remote name) and return its result; tool failures never raise.

        PurrA path (default): arguments are checked against the binding's contract before anything is
        sent, an unbound tool is bound as a read tool first, and the result is purra-mcp's envelope.
        ``raw=True`` calls any listed tool and keeps every content block (outside the PurrA contract).
        ``approve=True`` approves this call in code (logged as such); otherwise the session's policy
        decides: ``prompt`` returns a ``PendingCall`` that displays as the approval widget and sends
        nothing until approved; ``deny`` refuses every call, ``approve=True`` included. ``timeout`` is in
        seconds (at most 300); when the kit stops waiting, the server is told to cancel the call.

        ``task=True`` (raw only, for a tool whose ``execution.taskSupport`` is optional or required) runs it as an
        MCP task: its status shows as it moves, Cancel cancels the task on the server, and the result is a raw
        result. A raw call asks the server for progress; progress, a task's status and the server's log lines
        show under the running call. ``check_arguments=False`` (with ``raw=True`` only) sends the arguments without
        checking them against the tool's schema, to probe the server's own validation; still behind approval,
        which says so."""
        check_approve(approve)
        plan = plan_call(self.connection, self.bindings, tool, arguments, raw=raw, timeout=timeout, task=task,
                         check_arguments=check_arguments)  # fmt: skip
        outcome: Envelope | RawResult | PendingCall = self._given(self._call(plan, approve, views=True))
        return outcome

    def evaluate(
        self,
        tool: str,
        rows: Any,
        *,
        approve: bool | None = None,
        concurrency: int = 1,
        timeout: float | None = None,
        check: Callable[[Any], object] | None = None,
        raw: bool = False,
        checkpoint: str | Path | None = None,
        also_on: Sequence[Any] = (),  # other McpSessions (checked: PoolMember)
    ) -> pd.DataFrame | PendingCall:
        """Call ``tool`` once per row of ``rows`` (a DataFrame, or a list of argument dicts) and return
        a DataFrame: the input columns, then ``ok, error_code, text, structured, elapsed_ms, message``,
        and ``passed, check_message`` when ``check(result)`` (returning a bool or a failure message)
        is given: ``check`` runs as each row ends, on the kit's background loop (keep it quick: a slow check slows
        the batch), and the table keeps each row's values, not its result. ``.attrs["summary"]`` holds the counts per
        outcome and p50/p95 latency.

        Missing cells (None, NaN) are left out of a row's arguments. Rows whose arguments do not fit
        are refused before anything is sent; one approval covers the rest (``prompt`` returns a
        ``PendingCall`` whose ``result`` becomes the DataFrame). ``concurrency`` > 1 (at most 64) needs
        a binding declared ``concurrency_safe``. A kernel interrupt stops the batch: finished rows keep
        their results, the others get ``mcp_interrupted``.

        ``checkpoint`` (a file path) keeps each row that ran as it settles; a rerun with the same path takes the rows
        done before from it (the same tool, arguments and catalog) and sends only the rest, saying how many it took
        (``summary.resumed``): a kernel interrupt, restart or crash loses at most the rows in flight.

        ``also_on``: other open sessions of the same server (the same catalog digest), the tool bound concurrency-safe
        on each: the rows are spread over them all in turn, at most ``concurrency`` at once on each, behind this one
        approval (``pj.evaluate`` opens them)."""
        check_approve(approve)
        pool = [(other.connection, other.binding_state) for other in self._checked_pool(also_on)]
        batch = prepare(
            self.connection, self.bindings, tool, rows, concurrency=concurrency, timeout=timeout, check=check, raw=raw,
            checkpoint=checkpoint, pool=pool,
        )  # fmt: skip
        if needs_a_person(approve, self._approval, batch.may_write):
            batch.check_rows()
        return self._given(self._call(batch, approve, views=True)) if batch.waiting else batch.to_frame()

    def _checked_pool(self, others: Sequence[Any]) -> list[PoolMember]:
        pool = list(others)
        for other in pool:
            if not isinstance(other, PoolMember) or other.connection is self.connection:
                raise McpSessionError(CONFIG_INVALID, "also_on must hold other open sessions (McpSession objects).")
            if other.catalog.digest != self.bindings.catalog.digest:
                raise McpSessionError(
                    DIGEST_MISMATCH,
                    f"Session '{other.name}' lists other tools than '{self.connection.name}' (catalog digest "
                    f"{other.catalog.digest[:12]}, not {self.bindings.catalog.digest[:12]}): "
                    "a batch spreads over one server's.",
                )
        return pool

    def replay(
        self, transcript: str | Path, *, approve: bool | None = None, timeout: float | None = None
    ) -> pd.DataFrame | PendingCall:
        """Send every ``tools/call`` a saved transcript holds (``Transcript.save``) to this session's server, as raw
        calls under one approval, and compare: a DataFrame with, per call, whether the answer is the same as recorded
        (and where it first differs), the tool's verdict then and now, the latency then and now;
        ``.attrs["summary"]`` has the catalog digest then and now and the tools whose verdict changed. A call whose
        tool is not listed now, or whose arguments do not fit its schema now, is not sent (its row says why)."""
        check_approve(approve)
        job = Replay(self.connection, self.bindings, load_transcript(transcript), str(transcript), timeout=timeout)
        return self._given(self._call(job, approve, views=True)) if job.waiting else job.to_frame()

    @staticmethod
    def _given(call: Call) -> Any:
        """What a call gives its caller: the call itself while it has a widget (waiting for a person, or showing
        its tool's view below its record), else its result."""
        return call.result if type(call) is Call else call

    def _call(self, job: Any, approve: bool | None, *, views: bool) -> Call:
        """``job``'s call, waiting for a person (the approval widget) or settled as the code and the policy say. A
        call of a tool with a view (``views``, and views on) is a ``ViewedCall`` either way."""
        job, person, refused = self._planned(job, approve)
        return refused if refused is not None else self._decided(job, approve, person, views=views)

    def _planned(self, job: Any, approve: bool | None) -> tuple[Any, bool, Call | None]:
        """``job`` as it will be decided, whether a person decides it, and its call if it is refused before any
        approval. A PurrA call's arguments are checked once: here when a person decides (who must never approve what
        PurrA will refuse), else by purra-mcp's handler as the call runs."""
        person = needs_a_person(approve, self._approval, job.may_write)
        if isinstance(job, CallPlan):
            job = checked(job) if person and not job.raw else job
            reason = refusal(job)
            if reason is not None:
                return job, person, self._refused(job, reason)
        return job, person, None

    def _decided(self, job: Any, approve: bool | None, person: bool, *, views: bool) -> Call:
        viewed = views and bool(self.connection.config.views) and isinstance(job, CallPlan)
        viewed = viewed and job.tool.app.uri is not None
        call: Call
        shown: ViewedCall | None = None
        if viewed:
            from .._ui.views import ViewedCall

            call = shown = ViewedCall(job, self._view_host())
        elif person:
            from .._ui.approval import PendingCall  # the widgets load with the first widget (ipywidgets is slow)

            call = PendingCall(job)
        else:
            call = Call(job)
        if person:
            call.waits_for_a_person()
        else:
            call.decide(approve=approve, policy=self._approval)
            if shown is not None:
                shown.view.wait_read(self.connection.config.timeout)  # a call approved in code shows its view at once
        return call

    def _refused(self, plan: CallPlan, reason: tuple[str, str]) -> Call:
        """A call refused before any approval, settled where every call settles."""
        call = Call(plan)
        call.refuse(*reason)
        return call

    def _view_call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """A view's own ``tools/call``: planned as a person's call is (a bound tool on the PurrA path, any other raw),
        under the session's policy, and showing no view of its own. The call itself, so that the view's record
        holds its decision whoever made it."""
        raw = self.bindings.binding(tool) is None
        plan = plan_call(self.connection, self.bindings, tool, arguments, raw=raw, timeout=None)
        plan, person, refused = self._planned(plan, None)
        return refused.result if refused is not None else self._decided(plan, None, person, views=False)

    def _view_host(self) -> _ViewHost:
        return _ViewHost(self.connection, lambda: self.bindings.catalog, self._view_call, self._read_view)

    def _read_view(self, uri: str) -> Future[ResourceContents]:
        return self.offered.read_soon(uri, max_bytes=VIEW_READ_BYTES)

    def form(self, tool: str) -> SchemaForm:
        """An argument form for ``tool``, generated from its input schema; its "Review call" button
        produces the ``PendingCall`` (for a tool outside the profile: a raw form of its own schema, which can
        also send without checking)."""
        from .._ui.forms import tool_form

        remote = self.bindings.remote_name(tool)
        task = self.bindings.catalog[remote].task_support == "required"  # (raw then: such a tool runs only as a task)
        review = lambda arguments, raw, checked: self.call(  # noqa: E731
            remote, arguments, raw=raw, task=raw and task, check_arguments=checked
        )
        return tool_form(self.bindings.catalog[remote], limits=self.connection.limits, review=review)

    def app_info(self) -> pd.DataFrame:
        """One row per tool with a view (MCP Apps): its ``ui://`` URI, who may call it, and what its resource
        declares (origins per CSP directive, permissions; the kit's refusals) or why it is unavailable. Each view is
        read once (``resources/read``, raw, outside the PurrA contract), however many tools share it; nothing is
        rendered or run."""
        import pandas as pd

        viewed = [(tool, str(tool.app.uri)) for tool in self.bindings.catalog.tools if tool.app.uri is not None]
        reads = {uri: self._read_view(uri) for uri in dict.fromkeys(uri for _, uri in viewed)}
        rows = [app_info_row(tool, _settled(reads[uri])) for tool, uri in viewed]
        return pd.DataFrame(rows, columns=["tool", *APP_INFO_COLUMNS]).set_index("tool")


def _settled(read: Future[ResourceContents]) -> ResourceContents | McpSessionError:
    """A read's contents, or the kit's error that ended it (each bounded by the session's timeout)."""
    try:
        return read.result()
    except McpSessionError as error:
        return error


@dataclass(frozen=True)
class _ViewHost:
    """What a tool's view reaches of its session (``_ui.views.ViewHost``): its tools, its calls, its ui:// reads, as
    the session hands them over."""

    connection: Connection
    catalog: Callable[[], Catalog]
    view_call: Callable[[str, Mapping[str, Any]], Any]
    view_read: Callable[[str], Future[ResourceContents]]

    def view_tools(self) -> Mapping[str, ToolVerdict]:
        return {tool.name: tool for tool in self.catalog().tools}


__all__ = ["AUTO_APPROVAL_NOTE", "Caller", "PoolMember", "check_approval"]
