"""A tool's own view below its call, and the bridge that puts the view's requests under the kit's rules.

``ViewedCall`` is the approval widget of a call of a tool with a view; below it, a ``ViewOutput`` (a display id of its
own) shows where the view will be, then the view once the call is done and its ``ui://`` resource was read. The
labextension draws it sandboxed and opens a comm (target ``purra.app``) to the kernel for the view's requests:
``tools/call`` goes through ``McpSession.call`` as a person's call does (bindings, policy, the approval widget,
which the view's output then shows), ``resources/read`` only of ``ui://`` resources, log lines to the session log;
the person's choice of the view's declared origins comes the same way. Everything decided is written into the
view's output, which the saved notebook keeps.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from concurrent import futures
from concurrent.futures import Future
from typing import Any, Protocol

from .._base.errors import McpSessionError
from .._base.visible import one_line
from .._base.wire import APP_REFUSED, DONE, EVENT_APP
from .._beside.offerings import ResourceContents
from .._beside.views import AppView, check_view_request, placeholder_bundle, view_bundle, view_of, view_result
from .._connection.connection import Connection
from .._purra.calls import Call, CallPlan, Job
from .._purra.catalog import ToolVerdict
from .._purra.envelope import Envelope, RawResult
from .approval import PendingCall
from .records import SETTLED, LiveOutput, decision_data, in_kernel

COMM_TARGET = "purra.app"
WAITING = "shown here once the call is done"
READING = "reading its view"
LOG_CHARS = 500  # of one log line a view sends
JSONRPC_REFUSED = -32000  # the spec's implementation-defined error of a host that declines a request
# How many of one view's calls may wait for a person at once (the labextension holds the same bound,
# labextension/src/mcpapps/protocol.ts: PENDING_MAX): a person decides a few at a time; more are refused at once.
PENDING_MAX = 3
_live: dict[str, ViewOutput] = {}  # the views of this kernel, by the id their output carries
_registered = False


class ViewHost(Protocol):
    """What a view's requests reach: the session of its server (``McpSession`` offers this)."""

    @property
    def connection(self) -> Connection: ...

    def view_tools(self) -> Mapping[str, ToolVerdict]: ...

    def view_call(self, tool: str, arguments: Mapping[str, Any]) -> Any: ...

    def view_read(self, uri: str) -> Future[ResourceContents]: ...


class ViewedCall(PendingCall):
    """A call of a tool with a view: the approval widget (then the call's record), and below it the view."""

    def __init__(self, job: Job, host: ViewHost) -> None:
        super().__init__(job)
        assert isinstance(job, CallPlan)  # (a batch shows no view)
        self.view = ViewOutput(host, job)
        self.observe(lambda change: self.view.call_settled(self) if change["new"] in SETTLED else None, names="state")

    def _ipython_display_(self) -> None:
        super()._ipython_display_()
        self.view.show()


class ViewOutput:
    """The view of one call, owned here: what it shows (a note, then the view), the person's choice of its
    origins, the decisions on its own calls and the approvals still open; rewritten on every change."""

    def __init__(self, host: ViewHost, plan: CallPlan) -> None:
        self.id = uuid.uuid4().hex
        self.host = host
        self.plan = plan
        self.output = LiveOutput()
        self.view: AppView | None = None
        self.note = WAITING
        self.allowed = False
        self.decisions: list[dict[str, Any]] = []
        self.pending: list[PendingCall] = []
        self.reading: Future[ResourceContents] | None = None
        self._taken = threading.Event()  # set once the read view (or why there is none) is what it shows

    @property
    def log(self) -> Callable[[str, str], Any]:
        return self.host.connection.log.add

    def bundle(self) -> dict[str, Any]:
        if self.view is None:
            return placeholder_bundle(self.host.connection.name, self.plan.remote, self.note)
        pending = [call._repr_mimebundle_() for call in self.pending]
        return view_bundle(self.view, view_id=self.id, allowed=self.allowed, decisions=self.decisions, pending=pending)

    def show(self) -> None:
        self.output.show(self.bundle())
        if self.output.shown:
            _live[self.id] = self
            _register_target()

    def redraw(self) -> None:
        self.output.update(self.bundle())

    def call_settled(self, call: Call) -> None:
        """Read the view once its call is done (a denied or void call has none to show)."""
        if call.state != DONE:
            self.note = f"not shown: the call was {call.state}"
            self.redraw()
            return
        self.note = READING
        self.redraw()
        try:
            self.reading = self.host.view_read(self.plan.tool.app.uri or "")
        except McpSessionError as error:  # (a server that offers no resources: refused before any request)
            self._unavailable(error)
            return
        self.reading.add_done_callback(lambda future: self._read(future, call))

    def wait_read(self, seconds: float) -> None:
        """Until the view was read and taken (or ``seconds`` passed): a call approved in code shows its view at
        once."""
        if self.reading is not None:
            self._taken.wait(seconds)

    def _read(self, future: Future[ResourceContents], call: Call) -> None:
        result = call.result
        assert isinstance(result, Envelope | RawResult)
        try:
            self.view = view_of(self.plan.tool, self.host.connection.name, future.result(), self.plan.arguments, result)
        except McpSessionError as error:
            self._unavailable(error)
            return
        except futures.CancelledError:
            self.note = "not shown: reading it was cancelled"
        else:
            asked = "; ".join(self.view.domains.lines()) or "no origins"
            self.log(EVENT_APP, f"read {self.view.head()}; it asks for {asked}")
        self._taken.set()
        self.redraw()

    def _unavailable(self, error: McpSessionError) -> None:
        """No view to show, and why: said where the view would be and in the session log."""
        self.note = f"not shown: {error.code}: {error.message}"
        self.log(EVENT_APP, f"{self.plan.label}: {self.note}")
        self._taken.set()
        self.redraw()

    # --- the bridge: what the extension sends for the view ------------------------------------------

    def attach(self, comm: Any) -> None:
        comm.on_msg(lambda message: self.receive(comm, message["content"]["data"]))

    def receive(self, comm: Any, data: Mapping[str, Any]) -> None:
        kind = data.get("type")
        if kind == "request":
            self._request(lambda answer: comm.send({"type": "response", "id": data.get("id"), **answer}),
                          str(data.get("method")), data.get("params"))  # fmt: skip
        elif kind == "log":
            given = data.get("params")
            params: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
            said = one_line(str(params.get("data", "")), LOG_CHARS)
            self.log(EVENT_APP, f"{self.plan.label}'s view said ({params.get('level', 'info')}): {said}")
        elif kind == "domains":
            self.allowed = data.get("allow") is True
            assert self.view is not None
            lines = "; ".join(self.view.domains.lines())
            self.log(EVENT_APP, f"{self.plan.label}'s view: {'allowed' if self.allowed else 'refused'} {lines}")
            self.redraw()

    def _request(self, answer: Callable[[dict[str, Any]], None], method: str, params: Any) -> None:
        """Answer one request of the view: refused with the kit's words, or sent on as the rules say."""
        try:
            check_view_request(method, params, self.host.view_tools())
            if method == "resources/read":
                self.host.view_read(params["uri"]).add_done_callback(lambda future: answer(_read_answer(future)))
                return
            if len(self.pending) >= PENDING_MAX:
                raise McpSessionError(APP_REFUSED, f"{PENDING_MAX} calls of this view wait for approval already; "
                                      "it may ask again once they are decided.")  # fmt: skip
            outcome = self.host.view_call(params["name"], params.get("arguments") or {})
        except McpSessionError as error:
            self.log(EVENT_APP, f"{self.plan.label}'s view asked {method}: {error.code}")
            answer(_error(error))
            return
        if isinstance(outcome, Call) and outcome.state not in SETTLED:
            assert isinstance(outcome, PendingCall)
            self.pending.append(outcome)
            outcome.observe(lambda change: self._view_call_settled(outcome, answer), names="state")
            self.redraw()
        else:
            self._answer_call(outcome, answer)

    def _view_call_settled(self, call: PendingCall, answer: Callable[[dict[str, Any]], None]) -> None:
        if call.state not in SETTLED or call not in self.pending:
            return
        self.pending.remove(call)
        self._answer_call(call, answer)

    def _answer_call(self, outcome: Any, answer: Callable[[dict[str, Any]], None]) -> None:
        """The view's call as decided: its result (a ``CallToolResult``), or an error when it was denied or void."""
        if isinstance(outcome, Call):
            self.decisions.append({"method": "tools/call", **decision_data(outcome)})
            self.redraw()
            if outcome.state != DONE:
                how = outcome.decision.how if outcome.decision else outcome.state
                answer({"error": {"code": JSONRPC_REFUSED, "message": f"{outcome.state}: {how}"}})
                return
            outcome = outcome.result
        answer({"result": view_result(outcome)})


def _read_answer(future: Future[ResourceContents]) -> dict[str, Any]:
    try:
        return {"result": future.result().to_dict()}
    except McpSessionError as error:
        return _error(error)


def _error(error: McpSessionError) -> dict[str, Any]:
    code = -32601 if error.code == APP_REFUSED and "not supported" in error.message else JSONRPC_REFUSED
    return {"error": {"code": code, "message": f"{error.code}: {error.message}"}}


def _opened(comm: Any, message: Mapping[str, Any]) -> None:
    """The extension opened a comm for the view ``viewId``: attached while this kernel holds it, else told so."""
    data = message.get("content", {}).get("data", {})
    view = _live.get(str(data.get("viewId")))
    if view is None:
        comm.send({"type": "gone"})
        comm.close()
        return
    view.attach(comm)


def _register_target() -> None:
    global _registered
    if _registered or not in_kernel():
        return
    from comm import get_comm_manager

    get_comm_manager().register_target(COMM_TARGET, _opened)
    _registered = True
