"""Tool calls, and the one lifecycle every call goes through whatever approves it.

plan (names resolved, arguments checked, nothing sent) -> approve -> send -> settle -> record. A call
approved in code, by a click on the approval widget or as a row of a batch is sent by ``send`` and
recorded by ``record``; a ``Call`` (one decision over a plan, or over a batch, which offers the same
face) settles in one place and always reaches ``done``, ``denied`` or ``void``. The PurrA path runs
purra-mcp's own registration handler, so the envelope is byte for byte what a host gets. Tool failures
never raise: they come back with an ``error_code``; so does a failure of the host's own code.
"""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from .._base import raw_schema, runner
from .._base.activity import Activity, ActivityLines
from .._base.changes import Observed
from .._base.config import check_timeout
from .._base.egress import CellText, cell_text
from .._base.errors import HostCodeError, McpSessionError
from .._base.raw_schema import Check, Misfit
from .._base.visible import visible
from .._base.wire import (
    APPROVAL_DENIED,
    CANCELED,
    CATALOG_STALE,
    CLOSED,
    CONFIG_INVALID,
    CONNECTION_CLOSED,
    DENIED,
    DONE,
    EVENT_APPROVAL,
    EVENT_CALL,
    EVENT_ERROR,
    EVENT_TASK,
    FAILED,
    HOST_ERROR,
    INTERRUPTED,
    INVALID_ARGUMENTS,
    KIT_ERROR,
    NOT_STARTED,
    PENDING,
    RESULT_INVALID,
    RESULT_TOO_LARGE,
    RESULT_UNSUPPORTED,
    RUNNING,
    STALE,
    TOOL_ERROR,
    UNKNOWN,
    VOID,
)
from .._connection.connection import CancelToken, Connection
from .._connection.purra_adapter import json_bytes, remote_contract, run_state
from .bindings import Bindings, WriteTerms, make_binding
from .catalog import READ, Catalog, ToolVerdict, reasons_note, write_hint
from .envelope import Envelope, RawResult

if TYPE_CHECKING:
    from mcp import ClientSession

    from .bindings import Binding

EMPTY_ENVELOPE = '{"text":[],"structured":null}'  # purra-mcp's envelope on every failure
SETTLED = (DONE, DENIED, VOID)  # the states a call ends in
Result = Envelope | RawResult
STOP_SECONDS = 10.0  # after an interrupt, how long the kernel waits for a write (or a batch's rows) in flight
MAY_HAVE_HAPPENED = "the kit stopped waiting after the call was sent (a timeout, an interrupt or Cancel)"
# The kit's note on a code purra-mcp's handler gives without words of its own.
UNCHECKED_WORDS = "NOT checked against the tool's schema: the server's own validation decides"
CANONICAL_WORDS = "PurrA's form of what was given, which purra-mcp sends"
RESULT_NOTES = {
    CANCELED: MAY_HAVE_HAPPENED,
    RESULT_UNSUPPORTED: "the server answered with a content block that is not text (an image, audio or a resource), "
    "which a PurrA envelope cannot carry; call it raw (raw=True, or %mcp_call --raw) to see every block",
}


@dataclass(frozen=True, slots=True)
class CallPlan:
    """One call, resolved and checked, not yet sent. ``arguments`` is a private JSON copy; ``revision`` the
    catalog revision it was planned against and ``write`` the write binding's terms then (an approval covers
    those only). ``check_arguments=False`` (raw calls only) sends the arguments without checking them against
    the tool's schema, to probe the server's own validation: its approval and its log row say so."""

    connection: Connection
    bindings: Bindings
    remote: str
    arguments: dict[str, Any]
    raw: bool
    timeout: float
    revision: int
    write: WriteTerms | None = None
    binding: Binding | None = None  # the binding the call was planned with (``None``: unbound)
    task: bool = False  # a raw call run as a task (``tasks/get`` until it ends, then ``tasks/result``)
    check_arguments: bool = True
    # What the check found (``plan_call``): the arguments as they go out (on the PurrA path, the value PurrA's
    # contract makes of them, which purra-mcp's handler sends: ``-0.0`` as ``0``, ``5.0`` as ``5``), and the code and
    # sentence of why they cannot be sent, if they cannot.
    sent: Mapping[str, Any] | None = None
    problem: tuple[str, str] | None = None

    @property
    def wire_arguments(self) -> Mapping[str, Any]:
        """The arguments exactly as the call sends them (see ``sent``)."""
        return self.sent if self.sent is not None else self.arguments

    @property
    def effect(self) -> str:
        """What the call may do as declared: ``read`` (also for an unbound tool), ``write`` or ``destructive``."""
        return self.write.effect if self.write is not None else READ

    @property
    def write_hint(self) -> str | None:
        """The hint by which the server says its tool writes (``readOnlyHint: false`` ...), or ``None``."""
        return write_hint(self.tool.annotations)

    @property
    def may_write(self) -> bool:
        """Whether the call may change the server's data: declared a write, or hinted as one by the server. The
        ``auto`` policy approves neither: a person decides."""
        return self.effect != READ or self.write_hint is not None

    def still_covered(self) -> bool:
        """Whether the tool is still bound as it was when the call was planned: the same binding (or, for a call
        that declared a read binding, one made since), a write's terms unchanged."""
        bindings = self.bindings
        now = bindings.binding(self.remote)
        declared = self.binding is None and now is not None and bindings.effect(self.remote) == READ
        return (now is self.binding or declared) and bindings.write_terms(self.remote) == self.write

    @property
    def local(self) -> str:
        """The name the result carries: the binding's local name (or the one a call would bind)."""
        return self.remote if self.raw else self.bindings.local_name(self.remote)

    @property
    def tool(self) -> ToolVerdict:
        return self.bindings.catalog[self.remote]

    @property
    def label(self) -> str:
        """The tool's name as a person is shown it (invisible characters escaped, a look-alike marked)."""
        return self.bindings.label(self.remote)

    @property
    def quoted_label(self) -> str:
        """The ``label`` with the name quoted: one item of a list of names."""
        return self.bindings.quoted_label(self.remote)

    @property
    def declaration(self) -> str | None:
        """What approving this call also declares: binding an unbound tool as a read tool."""
        if self.raw or self.bindings.binding(self.remote) is not None:
            return None
        return f"bind {self.remote} as read tool {self.local}"

    def fail(
        self, code: str, message: str, elapsed_ms: float = 0.0, server_text: str = "", effect_state: str = NOT_STARTED
    ) -> Result:
        server = self.connection.name
        if self.raw:
            return RawResult(server, self.remote, error_code=code, elapsed_ms=elapsed_ms, message=message,
                             server_text=server_text)  # fmt: skip
        return Envelope(
            server, self.local, EMPTY_ENVELOPE, code, elapsed_ms, message, server_text=server_text,
            effect_state=effect_state, write=self.write is not None,
        )  # fmt: skip

    # --- what a decision needs (a batch offers the same; see ``Call``) -------------------------------

    question = "Approve this MCP call?"

    @property
    def summary(self) -> str:
        name = self.label if self.raw else self.local
        return f"{name}({json.dumps(self.wire_arguments, ensure_ascii=False)[:200]})"

    @property
    def shown_arguments(self) -> tuple[str, Any]:
        if not self.check_arguments:
            return f"arguments (sent exactly as shown, {UNCHECKED_WORDS}):", self.wire_arguments
        if self.sent is not None and _json(self.sent) != _json(self.arguments):
            return f"arguments (sent exactly as shown: {CANONICAL_WORDS}):", self.sent
        return "arguments (sent exactly as shown):", self.wire_arguments

    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]:
        return self.write.rows() if self.write is not None else ()

    def digest(self) -> str:
        return arguments_digest(self.wire_arguments)

    def approved(self, how: str, digest: str) -> None:
        declaration = f"; declares: {self.declaration}" if self.declaration else ""
        effect = f" ({self.effect})" if self.write else ""
        unchecked = "" if self.check_arguments else ", unchecked"
        self.connection.log.add(
            EVENT_APPROVAL, f"{how}: {self.label}{effect}, args {digest[:12]}{unchecked}{declaration}"
        )

    async def run(self, cancel: CancelToken | None = None, activity: Activity | None = None) -> Result:
        """Send the approved call on the loop and return its result, recorded. A timeout, a lost connection or
        ``cancel`` ends it with that code (the server is told to cancel it; a task, with ``tasks/cancel``); a
        failure of the host's own code (a scope validator) ends it with ``mcp_host_error``. Only a bug of the kit
        raises. What the server says meanwhile goes to ``activity``."""
        started = time.perf_counter()
        execute = partial(_execute, self, activity=activity or Activity())
        try:
            result = await self.connection.run(execute, self.timeout, cancel)
        except McpSessionError as error:  # (the connection's error seam made it)
            result = self.fail(error.code, error.message, ms_since(started), error.server_text)
        return record(self, result)

    def refused(self, how: str) -> Result:
        self.connection.log.add(EVENT_APPROVAL, f"denied {self.label} ({how}), args {self.digest()[:12]}")
        return record(self, self.fail(APPROVAL_DENIED, "the call was denied; nothing was sent"))

    def failure(self, code: str, message: str) -> Result:
        return record(self, self.fail(code, message))

    def watch(self, activity: Activity) -> AbstractContextManager[None]:
        """While the cell waits, the lines of what the server says of the call (its progress, its task, its log)."""
        return runner.while_waiting(ActivityLines(activity, sys.stdout.write).tick)

    def shown(self, result: Result) -> tuple[Any, ...]:
        return (result,)


def plan_call(
    connection: Connection,
    bindings: Bindings,
    name: str,
    arguments: Mapping[str, Any] | None,
    *,
    raw: bool,
    timeout: float | None,
    task: bool = False,
    check_arguments: bool = True,
) -> CallPlan:
    """Resolve ``name`` (local or remote) and copy ``arguments``; usage errors raise here. A raw call's arguments are
    checked here (against the tool's own schema: nothing else checks them before they go out); a PurrA call's by
    purra-mcp's handler as it runs, and before that only when a person will see them (``checked``)."""
    if not isinstance(check_arguments, bool):
        raise McpSessionError(CONFIG_INVALID, "check_arguments must be True or False.")
    if not check_arguments and not raw:
        raise McpSessionError(CONFIG_INVALID, "check_arguments=False is for raw calls only (raw=True): a PurrA call's "
                              "arguments are always checked against its contract.")  # fmt: skip
    remote = bindings.remote_name(name)
    if task:
        check_task(bindings.catalog, remote, raw=raw)
    copied = copied_arguments(arguments)
    if timeout is not None:
        check_timeout(timeout, "The call's timeout")
    seconds = float(timeout) if timeout is not None else connection.limits.timeout_ms / 1000
    write = bindings.write_terms(remote)
    binding = bindings.binding(remote)
    plan = CallPlan(connection, bindings, remote, copied, raw, seconds, connection.revision, write, binding, task,
                    check_arguments)  # fmt: skip
    if not raw:
        connection.check_purra_protocol()  # a session beside the contract: the raw path only
    if not raw and bindings.binding(remote) is None and remote in bindings.catalog:
        tool = bindings.catalog[remote]
        if not tool.callable:
            raise McpSessionError(
                tool.refusal or "mcp_schema_unsupported",
                f"'{visible(remote)}' cannot be called as a PurrA read tool: {reasons_note(tool)}. "
                "Explore it with raw=True.",
                server_text="\n".join(tool.reasons),
            )
        bindings.check_read_declaration(remote)  # calling it unbound declares it a read tool
    return checked(plan) if raw else plan


def copied_arguments(arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """A private copy of ``arguments``, which must be plain JSON (``mcp_invalid_arguments`` if not)."""
    try:
        copied: dict[str, Any] = json.loads(json.dumps(dict(arguments or {}), allow_nan=False))
    except (TypeError, ValueError) as error:
        raise McpSessionError(INVALID_ARGUMENTS, f"The arguments are not plain JSON: {error}.") from None
    return copied


def with_arguments(plan: CallPlan, arguments: Mapping[str, Any] | None) -> CallPlan:
    """``plan`` (one of many calls of the same tool: a batch's rows) for other ``arguments``, planned as ``plan_call``
    plans them: copied, and checked if raw."""
    other = replace(plan, arguments=copied_arguments(arguments), sent=None, problem=None)
    return checked(other) if other.raw else other


def checked(plan: CallPlan) -> CallPlan:
    """``plan`` with what one check of its arguments found (``sent``, ``problem``): before a person approves a PurrA
    call (who must never approve what PurrA will refuse), and for every raw call."""
    if not plan.check_arguments or plan.remote not in plan.bindings.catalog:
        return plan
    return replace(plan, **_checked(plan))


def refusal(plan: CallPlan) -> tuple[str, str] | None:
    """Why a call settles before any approval (closed or stale session, bad arguments): its code and message;
    ``None`` when it may be decided."""
    connection = plan.connection
    if connection.state in (CLOSED, FAILED):
        return CONNECTION_CLOSED, f"the session is {connection.state}; nothing was sent"
    if connection.state == STALE:
        return CATALOG_STALE, "the tools changed since they were listed; call refresh()"
    if plan.problem is not None:
        code, sentence = plan.problem
        return code, f"{sentence}; nothing was sent"
    return None


def refused_row(plan: CallPlan) -> Result | None:
    """A batch row's result when it settles before the batch's approval (see ``refusal``), recorded."""
    reason = refusal(plan)
    return None if reason is None else plan.failure(*reason)


# --- recording and executing: the one way a call goes out (``CallPlan.run``) and comes back ----------------


def record(plan: CallPlan, result: Result) -> Result:
    """The call's row in the session log."""
    path = "raw" if plan.raw else "purra"
    ms = "" if math.isclose(result.elapsed_ms, 0.0) else f" {result.elapsed_ms:.0f} ms"
    name = plan.label if plan.raw else result.tool
    plan.connection.log.add(EVENT_CALL, f"{name} ({path}){ms}: {result.error_code or 'ok'}")
    return result


async def _execute(plan: CallPlan, client: ClientSession, activity: Activity) -> Result:
    """Bind if the approval declared it, then call: purra-mcp's handler, or a raw ``tools/call``; the server's
    log lines meanwhile go to ``activity``."""
    with plan.connection.notices.listening(activity.said):
        if plan.raw:
            return await _call_raw(plan, client, activity)
        return await _call_purra(plan, client)


async def _call_purra(plan: CallPlan, client: ClientSession) -> Result:
    """purra-mcp's registration handler, which sends ``tools/call`` as a PurrA host does: without a progress
    token (purra-mcp 1.0.3 offers the host no way to ask for progress), so a PurrA call shows the server's log
    lines, not its progress."""
    bindings = plan.bindings
    if bindings.binding(plan.remote) is None:
        try:
            await bindings.add(client, plan.remote, make_binding(plan.remote))
        except Exception as error:
            raise bindings.explained(plan.remote, plan.connection.errors.translate(error)) from None
    registration = bindings.registration(plan.remote)
    started = time.perf_counter()
    try:
        result = await registration.handler(run_state(), plan.arguments)
    except HostCodeError as error:  # the scope validator, which runs before anything is sent
        return plan.fail(HOST_ERROR, str(error), ms_since(started))
    except Exception as error:  # purra-mcp's handler catches every server failure: this is the host's
        message = f"purra-mcp's handler raised {error.__class__.__name__}: {error}"
        return plan.fail(HOST_ERROR, message, ms_since(started), effect_state=UNKNOWN if plan.write else NOT_STARTED)
    if result.error_code == INVALID_ARGUMENTS:  # refused before anything was sent, as the kit's own check refuses
        return plan.fail(INVALID_ARGUMENTS, refused_by_purra(plan))
    effect_state = str(result.effect_state.value)
    message = RESULT_NOTES.get(result.error_code or "", "")
    server_text = plan.connection.requests.server_text() if result.error_code else ""
    return Envelope(
        plan.connection.name, plan.local, result.content, result.error_code, ms_since(started), message,
        server_text=server_text, effect_state=effect_state, write=plan.write is not None,
    )  # fmt: skip


async def _call_raw(plan: CallPlan, client: ClientSession, activity: Activity) -> Result:
    """A raw ``tools/call`` asking for progress (or run as a task), every content block of its result kept."""
    from mcp import types
    from mcp.shared.exceptions import McpError

    started = time.perf_counter()
    try:
        if plan.task:
            result, note = await _run_task(plan, client, activity)
        else:
            params = types.CallToolRequestParams(name=plan.remote, arguments=plan.arguments)
            request = types.ClientRequest(types.CallToolRequest(params=params))
            result = await client.send_request(request, types.CallToolResult, progress_callback=activity.progressed)
            note = TASK_REQUIRED_NOTE if plan.tool.task_support == REQUIRED else ""
    except (McpError, ValueError, TypeError) as error:
        if isinstance(error, McpError) and error.error.code == types.CONNECTION_CLOSED:
            raise
        failure = plan.connection.errors.answer_failure(error, plan.connection.requests.server_text())
        return plan.fail(failure.code, failure.message, ms_since(started), failure.server_text)
    except TaskEnded as ended:
        return plan.fail(TOOL_ERROR, str(ended), ms_since(started))
    return _raw_result(plan, result, ms_since(started), note)


def _raw_result(plan: CallPlan, result: Any, elapsed: float, note: str) -> Result:
    """A ``CallToolResult`` as a ``RawResult``, within the session's limits."""
    limits = plan.connection.limits
    if not _plain_json(result.model_dump(by_alias=True, exclude_none=True)):
        message = "the result holds a number JSON cannot carry (NaN or Infinity); nothing is shown"
        return plan.fail(RESULT_INVALID, message, elapsed)
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    if len(result.content) > limits.max_content_blocks or json_bytes(dumped) > limits.max_result_bytes:
        message = f"over {limits.max_content_blocks} blocks or {limits.max_result_bytes} bytes; nothing is shown"
        return plan.fail(RESULT_TOO_LARGE, message, elapsed)
    return RawResult(
        plan.connection.name,
        plan.remote,
        content=dumped.get("content", []),
        structured_content=result.structuredContent,
        is_error=bool(result.isError),
        error_code=TOOL_ERROR if result.isError else None,
        elapsed_ms=elapsed,
        message=note,
    )


# --- tasks (raw path): tools/call with a task, tasks/get until it ends, tasks/result ---------------------------

OPTIONAL, REQUIRED = "optional", "required"  # a tool's execution.taskSupport that lets it run as a task
TASK_TTL_MS = 300_000  # how long the server keeps a task of ours (its result included) after it was created
POLL_SECONDS = (0.1, 0.5, 5.0)  # the fewest, default and most seconds between two tasks/get (the server hints)
TASK_CANCEL_SECONDS = 5.0  # what a tasks/cancel may take once the kit stopped waiting for the task
STILL_RUNNING = ("working",)  # what tasks/get may say while a task runs; input_required goes on to tasks/result
TASK_REQUIRED_NOTE = "this tool runs only as a task: call it with task=True (raw=True), or %mcp_call --raw --task"


class TaskEnded(Exception):
    """A task the server ended without a result (cancelled on its side)."""


def check_task(catalog: Catalog, remote: str, *, raw: bool) -> None:
    """Whether ``remote`` may run as a task: on the raw path (PurrA calls tools directly), and a tool whose
    ``execution.taskSupport`` is optional or required."""
    if not raw:
        raise McpSessionError(
            CONFIG_INVALID, "task=True runs a raw call as a task: PurrA calls tools directly. Add raw=True."
        )
    support = catalog[remote].task_support if remote in catalog else None
    if support not in (OPTIONAL, REQUIRED):
        said = f"'{support}'" if support else "not given"
        raise McpSessionError(
            CONFIG_INVALID,
            f"'{visible(remote)}' does not run as a task (its execution.taskSupport is {said}); call it without "
            "task=True.",
        )


async def _run_task(plan: CallPlan, client: ClientSession, activity: Activity) -> tuple[Any, str]:
    """Create the task, follow its status into ``activity`` until it ends, and fetch its result. When the kit
    stops waiting (a timeout, Cancel, an interrupt) the task is cancelled on the server (``tasks/cancel``)."""
    from mcp import types

    params = types.CallToolRequestParams(
        name=plan.remote, arguments=plan.arguments, task=types.TaskMetadata(ttl=TASK_TTL_MS)
    )
    created = await client.send_request(
        types.ClientRequest(types.CallToolRequest(params=params)), types.CreateTaskResult
    )
    task: Any = created.task
    log = plan.connection.log
    log.add(EVENT_TASK, f"{plan.label}: task {task.taskId} created ({task.status})")
    try:
        activity.task_moved(task.taskId, task.status, task.statusMessage)
        while task.status in STILL_RUNNING:
            await anyio.sleep(_poll_seconds(task.pollInterval))
            request = types.GetTaskRequest(params=types.GetTaskRequestParams(taskId=task.taskId))
            task = await client.send_request(types.ClientRequest(request), types.GetTaskResult)
            activity.task_moved(task.taskId, task.status, task.statusMessage)
        log.add(EVENT_TASK, f"{plan.label}: task {task.taskId} {task.status}")
        if task.status == "cancelled":
            raise TaskEnded(f"the server cancelled task {task.taskId} before it gave a result")
        payload = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(taskId=task.taskId))
        result = await client.send_request(types.ClientRequest(payload), types.CallToolResult)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(TASK_CANCEL_SECONDS) as waited:
            await _cancel_task(plan, client, task.taskId, activity)
        if waited.cancelled_caught:
            log.add(EVENT_TASK, f"{plan.label}: task {task.taskId}: tasks/cancel not answered within "
                    f"{TASK_CANCEL_SECONDS:g} s; a late answer is discarded")  # fmt: skip
        raise
    return result, f"ran as task {task.taskId} ({task.status})"


async def _cancel_task(plan: CallPlan, client: ClientSession, task_id: str, activity: Activity) -> None:
    from mcp import types

    log = plan.connection.log
    request = types.CancelTaskRequest(params=types.CancelTaskRequestParams(taskId=task_id))
    try:
        answer = await client.send_request(types.ClientRequest(request), types.CancelTaskResult)
    except Exception as error:
        log.add(EVENT_TASK, f"{plan.label}: task {task_id} could not be cancelled: {error.__class__.__name__}")
        return
    activity.task_moved(answer.taskId, answer.status, answer.statusMessage)
    log.add(EVENT_TASK, f"{plan.label}: task {task_id} cancelled on the server ({answer.status})")


def _poll_seconds(hint_ms: Any) -> float:
    """The server's ``pollInterval`` (milliseconds), within ``POLL_SECONDS``."""
    fewest, default, most = POLL_SECONDS
    if not isinstance(hint_ms, int | float) or isinstance(hint_ms, bool) or not math.isfinite(hint_ms):
        return default
    return min(max(hint_ms / 1000, fewest), most)


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON a notebook can carry: the SDK accepts NaN and Infinity on the wire."""
    try:
        json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        return False
    return True


def ms_since(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` reading)."""
    return (time.perf_counter() - started) * 1000


# --- the decision: one state machine for a plan or a batch ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """How a call was decided and when: what its saved record says."""

    how: str
    timestamp: float = field(default_factory=time.time)

    @property
    def at(self) -> datetime:
        """When, in local time (made when shown: most calls' decisions are never shown)."""
        return datetime.fromtimestamp(self.timestamp).astimezone()


class Job(Protocol):
    """What a ``Call`` decides on, runs and shows: a ``CallPlan``, or rows of them (``batches.Rows``: a batch or a
    replay)."""

    question: str

    @property
    def connection(self) -> Connection: ...
    @property
    def revision(self) -> int: ...
    @property
    def write(self) -> WriteTerms | None: ...
    @property
    def effect(self) -> str: ...
    @property
    def may_write(self) -> bool: ...
    @property
    def write_hint(self) -> str | None: ...
    @property
    def raw(self) -> bool: ...
    @property
    def tool(self) -> ToolVerdict: ...
    @property
    def label(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def declaration(self) -> str | None: ...
    @property
    def shown_arguments(self) -> tuple[str, Any]: ...
    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def timeout(self) -> float | None:
        """One call's timeout, in seconds (``None`` for a batch: each row has its own)."""
        ...

    def still_covered(self) -> bool: ...
    def digest(self) -> str: ...
    def approved(self, how: str, digest: str) -> None: ...
    async def run(self, cancel: CancelToken, activity: Activity) -> Any: ...
    def refused(self, how: str) -> Any: ...
    def failure(self, code: str, message: str) -> Any: ...
    def shown(self, result: Any) -> tuple[Any, ...]: ...
    def watch(self, activity: Activity) -> AbstractContextManager[None]:
        """What the cell shows while it waits for the job (a call's activity, a batch's progress bar)."""
        ...


class Call(Observed):
    """One decision over a ``Job``: ``pending`` until approved, denied or voided (the catalog turned stale or the
    session ended first); an approved job runs on the loop (``running``) and the call ends ``done``. A decision
    is final, and the call always settles, in ``_settle``, with a result.

    Its ``state`` (one of ``CALL_STATES``) and ``result`` (the Envelope or RawResult, a DataFrame for a batch) change
    on the loop thread only, whichever thread decides (code, a click): so their observers (widgets, displays) run
    there too, one after another. A call waiting for a person (``waits_for_a_person``) also follows its session, and
    is voided when the session ends or its catalog turns stale first."""

    state: str
    """``pending``, ``running``, ``done``, ``denied`` or ``void``."""
    result: Any
    """The Envelope or RawResult (a DataFrame for a batch), once decided; ``None`` before."""

    def __init__(self, job: Job) -> None:
        super().__init__()
        self.job = job
        self.state = PENDING
        self.result = None
        self.arguments_digest = job.digest()
        self._cancel = CancelToken(call=job.label)  # (the server's questions meanwhile belong to this call)
        self.activity = Activity(job.connection.scrub)  # what the server says of the call while it runs
        self._future: Future[None] | None = None
        self.decision: Decision | None = None  # set when decided (a void says why instead)
        self._following = False

    def waits_for_a_person(self) -> None:
        """Follow the session while a person decides (a call decided in code is decided at once, on the loop)."""
        self._following = True
        self.job.connection.observe(self._connection_changed, names="state")

    @property
    def connection(self) -> Connection:
        return self.job.connection

    @property
    def token(self) -> CancelToken:
        """What stops this call's requests, and names the call: a question of its server meanwhile is asked where
        this token is served (the cell that waits for the call, or its widget)."""
        return self._cancel

    def approve(self, how: str = "approved with PendingCall.approve()") -> None:
        """Approve this exact call; it runs on the loop, so the kernel is not held."""
        future = runner.on_loop(self._approve, how)
        if future is not None:
            self._future = future

    def decide(self, *, approve: bool | None, policy: str) -> Any:
        """Settle a call nothing has decided yet as the code (``approve``) and the session's ``policy`` say, and return
        its result: ``deny`` refuses every call, ``approve=True`` included; ``auto`` approves the rest. An approval
        and its run reach the loop in one hop (every call approved in code pays one, not two)."""
        check_approve(approve)
        if policy == "deny":
            self.deny("the session's deny policy" + (", which approve=True does not override" if approve else ""))
        elif approve is False:
            self.deny("denied in code")
        else:
            how = "approved in code" if approve else "approved by the session's auto policy"
            with self.job.watch(self.activity):  # (shown before the call starts, so an interrupt finds the wait)
                self._future = runner.submit(self._approve_and_run, how)
                return self.wait()
        return self.result

    def deny(self, how: str = "denied with PendingCall.deny()") -> None:
        runner.on_loop(self._deny, how)

    def cancel(self, how: str = "cancelled with PendingCall.cancel()") -> None:
        """Stop this call: a pending one is denied; a running one stops waiting (its requests are cancelled on
        the server) and ends with ``mcp_interrupted`` (a batch keeps its finished rows and sends no more)."""
        if self.state == PENDING:
            self.deny(f"{how} before a decision")
        elif self.state == RUNNING:
            self.connection.log.add(EVENT_APPROVAL, f"{how}: {self.job.label}, args {self.arguments_digest[:12]}")
            self._cancel.cancel(INTERRUPTED, f"the call was {how}")

    def wait(self) -> Any:
        """Wait in this thread until an approved call settles, and return its result. A kernel interrupt stops
        the call as Cancel does and returns what it settled with (the same for a read, a write and a batch: see
        docs/faults.md); only a call that has not settled ``STOP_SECONDS`` later raises ``mcp_interrupted``."""
        future = self._future
        if future is None:
            return self.result
        try:
            runner.wait(future, on_interrupt=self._cancel.interrupt, serving=(self._cancel, self.connection.requests))
        except McpSessionError as error:
            if error.code != INTERRUPTED:
                raise
            if not futures.wait([future], timeout=STOP_SECONDS).done:
                message = f"Interrupted; the call had not settled {STOP_SECONDS:g} s later: a write may have happened."
                raise McpSessionError(INTERRUPTED, message) from None
        return self.result

    def when_settled(self, callback: Callable[[Call], None]) -> None:
        """``callback(call)`` once the call settled (``done``, ``denied`` or ``void``): now if it has (on this thread),
        else on the loop as it settles."""
        runner.on_loop(self._when_settled, callback)

    def _when_settled(self, callback: Callable[[Call], None]) -> None:
        if self.state in SETTLED:
            callback(self)
            return

        def settled(change: dict[str, Any]) -> None:
            if change["new"] in SETTLED:
                self.unobserve(settled, names="state")
                callback(self)

        self.observe(settled, names="state")

    def refuse(self, code: str, message: str) -> None:
        """Settle a call that cannot be sent before anyone decides (see ``refusal``), on the loop as every call."""
        runner.on_loop(self._refuse, code, message)

    def _refuse(self, code: str, message: str) -> None:
        if self._decide(f"refused before approval: {message}"):
            self._settle(VOID, self.job.failure(code, message))

    def _approve(self, how: str) -> Future[None] | None:
        return runner.submit(self._run) if self._runs(how) else None

    async def _approve_and_run(self, how: str) -> None:
        if self._runs(how):
            await self._run()

    def _runs(self, how: str) -> bool:
        """Approve on the loop: whether the call runs now (an earlier decision, or a void, ends it here)."""
        if not self._decide(how):
            return False
        void = self._void_reason()
        if void is not None:
            self._void(*void)
            return False
        self.job.approved(how, self.arguments_digest)  # (the digest is computed once per call)
        self._set("state", RUNNING)
        return True

    async def _run(self) -> None:
        try:
            result = await self.job.run(self._cancel, self.activity)
        except Exception as error:  # a bug of the kit: the call settles all the same, and the error is raised
            kind = runner.leaf_exception(error).__class__.__name__
            self._settle(DONE, self.job.failure(KIT_ERROR, f"a bug in purra-jupyter ({kind}); its traceback is "
                                                 "raised where the call is waited for, and logged"))  # fmt: skip
            logging.getLogger("purra_jupyter").exception("a call of %s failed", self.connection.name)
            raise
        except BaseException:  # the loop cancels this task (interpreter exit)
            self._settle(DONE, self.job.failure(INTERRUPTED, "the call was cancelled when the loop stopped"))
            raise
        self._settle(DONE, result)

    def _deny(self, how: str) -> None:
        if self._decide(how):
            self._settle(DENIED, self.job.refused(how))

    def _decide(self, how: str) -> bool:
        """The first decision wins (on the loop thread, so two cannot race)."""
        if self.decision is not None:
            return False
        self.decision = Decision(how)
        return True

    def _void_reason(self) -> tuple[str, str] | None:
        connection = self.connection
        if connection.state in (CLOSED, FAILED):
            return CONNECTION_CLOSED, f"the session is {connection.state}; nothing was sent"
        if connection.state == STALE or connection.revision != self.job.revision:
            return CATALOG_STALE, "the server's tools changed before the approval; nothing was sent"
        if not self.job.still_covered():
            return CATALOG_STALE, "the tool's binding changed since the call was planned; nothing was sent"
        return None

    def _void(self, code: str, message: str) -> None:
        self.connection.log.add(EVENT_APPROVAL, f"void: {self.job.label}, args {self.arguments_digest[:12]}: {message}")
        self.decision = Decision(f"void: {message}")
        self._settle(VOID, self.job.failure(code, message))

    def _connection_changed(self, change: dict[str, Any]) -> None:
        if change["new"] in (STALE, CLOSED, FAILED) and self._decide("voided"):
            self._void(*(self._void_reason() or (CATALOG_STALE, "the approval no longer holds; nothing was sent")))

    def _settle(self, state: str, result: Any) -> None:
        """The one place a call ends: its result first (a display shows it before the state says so)."""
        if self._following:
            self.connection.unobserve(self._connection_changed, names="state")
        self._set("result", result)
        self._set("state", state)

    def _set(self, name: str, value: Any) -> None:
        """Change ``state`` or ``result``; an observer that raises is logged, never allowed to leave the call
        unsettled."""
        try:
            self._change(name, value)
        except Exception as exc:
            self.connection.log.add(EVENT_ERROR, f"an observer of a call raised {exc.__class__.__name__}: {exc}")

    def __repr__(self) -> CellText:
        return cell_text(
            f"<{type(self).__name__} {self.connection.name}/{self.job.label} {self.state}: {self.job.summary}>"
        )


def needs_a_person(approve: bool | None, policy: str, may_write: bool) -> bool:
    """Whether a call waits for a person (the approval widget): no decision in code, and the ``prompt`` policy,
    or a call that may write (``auto`` covers calls of tools that neither are bound as writes nor hinted as
    writes by their server, on any path; ``deny`` refuses without asking)."""
    return approve is None and (policy == "prompt" or (policy == "auto" and may_write))


def check_approve(approve: object) -> None:
    if approve is not None and not isinstance(approve, bool):
        raise McpSessionError(CONFIG_INVALID, "approve must be True, False or None.")


# --- argument checks ------------------------------------------------------------------------------------


IDENTITY_BYTES = 1 << 20  # PurrA's limit on what one identity digest covers (purra's StructuredOutputLimits)
DIGESTS_PER_NODE = 4_096  # digests one node of a batch's digest covers: 4,096 x 67 bytes, well under that limit


def arguments_digest(arguments: Any) -> str:
    """PurrA's identity digest of plain JSON ``arguments`` (through their canonical text when they break its depth
    or node limits), which an approval covers; arguments over its 1 MiB limit are refused (``mcp_invalid_arguments``)
    before anything is sent, since no approval could name them."""
    from purra.structured import json_identity_digest

    try:
        return str(json_identity_digest(arguments))
    except (TypeError, ValueError):
        pass
    try:
        return str(json_identity_digest({"json": json.dumps(arguments, sort_keys=True)}))
    except (TypeError, ValueError):
        limit = f"PurrA's {IDENTITY_BYTES >> 20} MiB identity limit"
        message = f"The arguments are over {limit}: no approval can name them. Nothing was sent."
        raise McpSessionError(INVALID_ARGUMENTS, message) from None


def digest_of_digests(digests: Sequence[str]) -> str:
    """PurrA's identity digest over many digests (a batch's rows), as a tree whose nodes each cover at most
    ``DIGESTS_PER_NODE``: no count of rows reaches PurrA's 1 MiB limit, and each row's digest is computed once."""
    level = list(digests)
    while len(level) > DIGESTS_PER_NODE:
        level = [arguments_digest(level[i : i + DIGESTS_PER_NODE]) for i in range(0, len(level), DIGESTS_PER_NODE)]
    return arguments_digest(level)


def _checked(plan: CallPlan) -> dict[str, Any]:
    """``sent`` and ``problem`` of ``plan`` (see ``CallPlan``): one check of its arguments, by ``argument_checker``'s
    rules, whose value on the PurrA path is what purra-mcp's handler will send."""
    schema, limits = plan.tool.input_schema, plan.connection.limits
    if not plan.raw:
        from purra.json_values import thaw_json_mapping
        from purra.structured import StructuredOutputError
        from purra_mcp import McpAdapterError

        try:
            return {"sent": thaw_json_mapping(remote_contract(schema, limits).validate_value(plan.arguments))}
        except (StructuredOutputError, McpAdapterError):
            pass  # (the check below says why, in the schema's own words, or raises purra-mcp's refusal)
    misfit = argument_checker(schema, raw=plan.raw, limits=limits)(plan.arguments)
    if misfit is None:
        return {}
    if misfit.code == INVALID_ARGUMENTS:
        return {"problem": (misfit.code, f"the arguments do not fit at {misfit.path}: {misfit.problem}")}
    return {"problem": (misfit.code, misfit.problem)}


def never_sent(plan: CallPlan, result: Result) -> bool:
    """Whether purra-mcp's handler refused the call's arguments, so that nothing reached the server."""
    return not plan.raw and result.error_code == INVALID_ARGUMENTS


def refused_by_purra(plan: CallPlan) -> str:
    """Why purra-mcp's handler refused a call's arguments: a call decided in code has that one check, and its words
    (in the schema's, where they say it) are found only when it refuses."""
    problem = _checked(plan).get("problem")
    words = problem[1] if problem else "they do not fit the tool's contract"
    return f"PurrA's check refused the arguments (purra-mcp's handler, before sending): {words}; nothing was sent"


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def argument_checker(schema: Mapping[str, Any], *, raw: bool, limits: Any) -> Check:
    """A check of arguments returning a ``Misfit`` or ``None``: PurrA's contract for the PurrA path (built by
    purra-mcp from the listed schema, as the binding's is), the tool's own JSON Schema (its declared draft, read
    as data: see ``raw_schema``) for the raw path. Both are built once per distinct schema."""
    if raw:
        return raw_schema.checker(schema)
    from purra.structured import StructuredOutputError

    contract = remote_contract(schema, limits)

    def check(arguments: Any) -> Misfit | None:
        try:
            contract.validate_value(arguments)
        except StructuredOutputError as error:  # only then the schema's own words (a call that fits pays nothing)
            return _contract_misfit(error.details, raw_schema.checker(schema)(arguments))
        return None

    return check


def _contract_misfit(details: Mapping[str, Any], schema_says: Misfit | None) -> Misfit:
    """PurrA's refusal (its path and keyword decide), in the words the tool's own schema gives that place or the
    object holding it (``'x' is not of type 'number'``, as on the raw path); PurrA's keyword when that schema says
    nothing there (the contract is stricter)."""
    path, keyword = str(details.get("path", "$")), str(details.get("keyword", "schema"))
    if schema_says is not None and schema_says.code == INVALID_ARGUMENTS:
        where = schema_says.path  # the same place, or the object holding it (a required property is missing)
        if path == where or path.startswith((f"{where}.", f"{where}[")):
            return Misfit(path, schema_says.problem, keyword=keyword)
    return Misfit(path, f"a value PurrA's contract refuses (its '{keyword}' rule)", keyword=keyword)


__all__ = [
    "SETTLED",
    "Call",
    "CallPlan",
    "Decision",
    "Result",
    "argument_checker",
    "arguments_digest",
    "check_approve",
    "checked",
    "copied_arguments",
    "digest_of_digests",
    "needs_a_person",
    "never_sent",
    "plan_call",
    "refusal",
    "refused_row",
    "with_arguments",
]
