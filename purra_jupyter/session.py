"""``McpSession``: the one object a user holds, and ``connect()``, which opens one.

A session composes the layers below it: a ``Connection`` (transport, monitor, requests, state, log,
stderr), its ``Bindings`` (the catalog as listed and the read bindings) and the call lifecycle
(``calls``, ``evaluate``), with the widgets on top. Each of its methods is a line or two over those;
none of them reaches back into it. The registry knows the open sessions by name.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from traitlets import Enum, HasTraits, Int, dlink

from . import runner
from .apps import APP_INFO_COLUMNS, VIEW_MAX_BYTES, app_info_row
from .batches import prepare
from .bindings import Bindings
from .calls import Call, CallPlan, check_approve, decide, needs_a_person, plan_call, refusal
from .catalog import Catalog, ToolVerdict, build_catalog, check_digest
from .config import ServerConfig
from .connection import Connection, Deadline, SessionLog
from .egress import CellText, bundle, cell_text, cut
from .errors import McpSessionError
from .markup import key_value_table
from .memory_transport import MemoryTransport
from .offerings import PROMPTS, RESOURCES, TEMPLATES, Offered, Offerings, PromptMessages, ResourceContents
from .replays import Replay
from .stdio_transport import StdioTransport
from .transcript import Transcript
from .transcript import load as load_transcript
from .transport import Transport
from .wire import (
    APPROVAL_POLICIES,
    CAPABILITY_MISSING,
    CLOSED,
    CONFIG_INVALID,
    CONNECTING,
    CONNECTION_CLOSED,
    DIGEST_MISMATCH,
    EVENT_CONNECT,
    EVENT_SETTING,
    HTTP,
    LOG_LEVELS,
    MEMORY,
    SESSION_EXISTS,
    SESSION_UNKNOWN,
    STATES,
    STDIO,
)

if TYPE_CHECKING:
    import pandas as pd
    from mcp import ClientSession
    from mcp.server.lowlevel import Server
    from purra_mcp import McpCatalogMonitor, McpToolLimits

    from .envelope import Envelope, RawResult
    from .ui.approval import PendingCall
    from .ui.apps import ViewedCall
    from .ui.forms import SchemaForm
    from .ui.offerings import OfferingForm
    from .ui.status import SessionStatus


class McpSession(HasTraits):
    """One monitored connection to one MCP server, with its catalog, bindings and calls. Open it with
    ``connect()``. ``state`` (observable) follows the connection's: ready, stale, closed or failed."""

    state = Enum(STATES, default_value=CONNECTING, help="ready | stale | closed | failed")
    bound_count = Int(0, help="how many tools are bound (changes with bind, unbind and refresh)")

    def __init__(self, connection: Connection, bindings: Bindings, *, approval: str) -> None:
        super().__init__()
        self.connection = connection
        self._approval = approval
        self._bindings = bindings
        self._offered = Offered(connection)
        dlink((connection, "state"), (self, "state"))
        dlink((bindings, "count"), (self, "bound_count"))
        self.observe(lambda change: registry.remove(self) if change["new"] == CLOSED else None, names="state")

    # --- what the connection knows ---------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def config(self) -> ServerConfig:
        return self.connection.config

    @property
    def transport(self) -> str:
        return self.connection.link.kind

    @property
    def limits(self) -> McpToolLimits:
        return self.connection.limits

    @property
    def monitor(self) -> McpCatalogMonitor:
        return self.connection.monitor

    @property
    def log(self) -> SessionLog:
        return self.connection.log

    @property
    def transcript(self) -> Transcript:
        """Every JSON-RPC message of this session, sent and received, as recorded (``transcript.save(path)`` writes
        it as JSON Lines); a session records only when connected with ``record=True``."""
        transcript = self.connection.transcript
        if transcript is None:
            raise McpSessionError(
                CONFIG_INVALID,
                f"Session '{self.name}' keeps no transcript: connect with record=True (%mcp_connect --record).",
            )
        return transcript

    @property
    def stderr(self) -> str:
        """The last lines the server wrote to its stderr (stdio servers; empty for HTTP), secrets scrubbed, as a cell
        shows them (``print(s.stderr)`` too): control characters escaped, addresses defanged (``https[:]//``)."""
        return cell_text(self.connection.link.stderr)

    @property
    def cause(self) -> str:
        """Why the session is ``closed`` or ``failed`` (empty while it is usable)."""
        return self.connection.cause

    @property
    def protocol_version(self) -> str | None:
        return self.connection.hello.protocol_version

    @property
    def server_info(self) -> dict[str, Any]:
        return dict(self.connection.hello.info)

    @property
    def capabilities(self) -> dict[str, Any]:
        return dict(self.connection.hello.capabilities)

    @property
    def instructions(self) -> str | None:
        """What the server's ``initialize`` says about using it (its own words, meant for a model), or ``None``.
        Raw exploration, outside the PurrA contract: a PurrA host passes none of it to a model."""
        return self.connection.hello.instructions

    def set_log_level(self, level: str) -> None:
        """Ask the server to send its log messages of ``level`` and above (``logging/setLevel``); they arrive as
        ``server_log`` rows of the session log. ``mcp_capability_missing`` if the server offers no logging."""
        if level not in LOG_LEVELS:
            raise McpSessionError(CONFIG_INVALID, f"level must be one of {', '.join(LOG_LEVELS)}.")
        if "logging" not in self.connection.hello.capabilities:
            raise McpSessionError(
                CAPABILITY_MISSING, f"Server '{self.name}' offers no logging (its capabilities have no 'logging')."
            )
        self.connection.request(lambda client: client.set_logging_level(cast(Any, level)))
        self.connection.log.add(EVENT_SETTING, f"server log level '{level}' asked for")

    def ping(self, *, timeout: float | None = None) -> float:
        """Ask the server for a ping; returns the round trip in milliseconds."""
        started = time.perf_counter()
        self.connection.request(_ping, timeout=timeout)
        return (time.perf_counter() - started) * 1000

    def reauthorize(self) -> None:
        """Start the authorization over (an OAuth session): its tokens are forgotten and the flow runs again
        now, in this cell, as on connect (a ping carries it)."""
        connection = self.connection
        if self.config.oauth is None:
            raise McpSessionError(CONFIG_INVALID, f"Session '{self.name}' was not connected with OAuth.")
        connection.check_usable()
        connection.log.add(EVENT_CONNECT, "reauthorizing: the tokens were forgotten")
        runner.run(connection.link.forget_authorization)
        connection.request(_ping, timeout=Deadline(self.config.timeout, "reauthorizing"))

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

    def set_timeout(self, seconds: float) -> None:
        """The default timeout (seconds) of each request and call from now on."""
        self.connection.set_timeout(seconds)

    def close(self, cause: str = "closed by user") -> None:
        """End the session and its server process. Idempotent; from a state observer (the loop thread) the
        close starts at once and ``state`` turns ``closed`` when the server is gone."""
        self.connection.close(cause)

    def __enter__(self) -> McpSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close("left the with block")

    # --- catalog and bindings --------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """Every tool the server listed, with verdicts; as of the last listing (see ``state``)."""
        return self._bindings.catalog

    @property
    def bindings(self) -> dict[str, Any] | None:
        """purra-mcp's snapshot of the read bindings (``schemaVersion, serverId, protocolVersion,
        revisionDigest, entries``); ``None`` until a read tool is bound."""
        return self._bindings.snapshot

    @property
    def write_bindings(self) -> dict[str, Any] | None:
        """purra-mcp's snapshot of the write bindings (``schemaVersion`` 2; each entry carries its
        ``authorization``: binding and scope ids and revisions, and the effect); ``None`` until a write is
        bound. Its ``revisionDigest`` is what every write's approval is bound to."""
        return self._bindings.write_snapshot

    @property
    def binding_state(self) -> Bindings:
        """The one owner of this session's catalog and bindings, which calls and batches are planned with (a batch
        spread over several sessions plans each row on its own session's: ``pj.evaluate``)."""
        return self._bindings

    def app_info(self) -> pd.DataFrame:
        """One row per tool with a view (MCP Apps): its ``ui://`` URI, who may call it, and what its resource
        declares (origins per CSP directive, permissions; the kit's refusals) or why it is unavailable. Each view is
        read (``resources/read``, raw, outside the PurrA contract); nothing is rendered or run."""
        import pandas as pd

        viewed = [tool for tool in self.catalog.tools if tool.app.uri is not None]
        reads = [self._read_view(str(tool.app.uri)) for tool in viewed]
        rows = [app_info_row(tool, _settled(read)) for tool, read in zip(viewed, reads, strict=True)]
        return pd.DataFrame(rows, columns=["tool", *APP_INFO_COLUMNS]).set_index("tool")

    def refresh(self) -> Catalog:
        """List the tools again (after ``tools/list_changed``); bindings that no longer hold are dropped.
        Ends within the session's timeout in all (every page and the re-binding)."""
        return self._bindings.refresh()

    def bind(
        self,
        tool: str,
        local_name: str | None = None,
        title: str | None = None,
        scope_validator: Callable[..., Any] | None = None,
        concurrency_safe: bool = False,
        *,
        effect: str = "read",
        scope_id: str | None = None,
        scope_revision: str | None = None,
        binding_id: str | None = None,
        binding_revision: str | None = None,
        assume_read_only: bool = False,
    ) -> dict[str, Any]:
        """Bind ``tool`` through purra-mcp with every current binding of its kind, within the session's
        timeout in all; returns the binding's snapshot entry.

        ``effect="read"`` (default): a PurrA read tool (``discover_mcp_tools``). A tool its server marks
        ``readOnlyHint: false`` or ``destructiveHint: true`` is refused (``mcp_not_read_only``) unless
        ``assume_read_only=True`` (logged). ``effect="write"`` or ``"destructive"``: a write under PurrA's
        confirm policy (``discover_mcp_write_tools``): every call needs its own approval, and the approval is
        bound to the identity ``binding_id`` (default ``SESSION/LOCAL_NAME``), ``binding_revision`` (default:
        the digest of the tool as listed), ``scope_id`` (default: the session's name) and ``scope_revision``
        (default ``"1"``), and to the write snapshot's digest.

        ``scope_validator(state, arguments, signal)`` (sync or async) returns a non-empty string to deny a
        call; if it raises, the call ends ``mcp_host_error``. A write needs one: ``pj.allow_any_scope``
        says, in a way the log keeps, that no scope is checked."""
        identity = {"binding_id": binding_id, "binding_revision": binding_revision,
                    "scope_id": scope_id, "scope_revision": scope_revision}  # fmt: skip
        return self._bindings.bind(
            tool,
            effect=effect,
            assume_read_only=assume_read_only,
            identity=identity,
            local_name=local_name,
            title=title,
            scope_validator=scope_validator,
            concurrency_safe=concurrency_safe,
        )

    def unbind(self, local_name: str) -> None:
        self._bindings.unbind(local_name)

    # --- what the server offers besides tools (raw exploration, outside the PurrA contract) -----------

    @property
    def resources(self) -> Offerings:
        """The server's resources (``resources/list``), listed on first use and again after the server said they
        changed (a listing held meanwhile says it is stale). ``mcp_capability_missing`` if it offers none."""
        return self._offered.listing(RESOURCES)

    @property
    def resource_templates(self) -> Offerings:
        """The server's resource templates (``resources/templates/list``), listed as ``resources`` are."""
        return self._offered.listing(TEMPLATES)

    @property
    def prompts(self) -> Offerings:
        """The server's prompts (``prompts/list``), listed as ``resources`` are."""
        return self._offered.listing(PROMPTS)

    def read_resource(
        self, uri: str, values: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> ResourceContents:
        """``resources/read`` of ``uri``; with ``values``, ``uri`` is a URI template (RFC 6570) filled with them,
        each percent-encoded. A server's refusal is ``mcp_protocol_error`` with its words."""
        return self._offered.read(uri, values, timeout=timeout)

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> PromptMessages:
        """``prompts/get`` of ``name`` with ``arguments`` (strings); shown as its messages."""
        return self._offered.prompt(name, arguments, timeout=timeout)

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
        ``template`` (give one), typed so far as ``value``; ``context``: the other arguments already chosen."""
        if (prompt is None) == (template is None):
            raise McpSessionError(CONFIG_INVALID, "complete() takes prompt= or template=, one of them.")
        reference = (PROMPTS, prompt) if prompt is not None else (TEMPLATES, cast(str, template))
        return self._offered.complete(reference, argument, value, context)

    def resource_form(self, template: str) -> OfferingForm:
        """A form with one field per variable of the resource template ``template`` (its URI template); "Read"
        shows the resource below it. Fields offer the server's completions when it has them."""
        from .ui.offerings import template_form

        return template_form(self._offered, self.resource_templates[template])

    def prompt_form(self, name: str) -> OfferingForm:
        """A form with one field per argument of the prompt ``name``; "Get prompt" shows its messages below it."""
        from .ui.offerings import prompt_form

        return prompt_form(self._offered, self.prompts[name])

    # --- calls -----------------------------------------------------------------------------------

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
        plan = plan_call(self.connection, self._bindings, tool, arguments, raw=raw, timeout=timeout, task=task,
                         check_arguments=check_arguments)  # fmt: skip
        return refusal(plan) or self._decide(plan, approve)

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
        also_on: Sequence[McpSession] = (),
    ) -> pd.DataFrame | PendingCall:
        """Call ``tool`` once per row of ``rows`` (a DataFrame, or a list of argument dicts) and return
        a DataFrame: the input columns, then ``ok, error_code, text, structured, elapsed_ms, message``,
        and ``passed, check_message`` when ``check(result)`` (returning a bool or a failure message)
        is given. ``.attrs["summary"]`` holds the counts per outcome and p50/p95 latency.

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
            self.connection, self._bindings, tool, rows, concurrency=concurrency, timeout=timeout, check=check, raw=raw,
            checkpoint=checkpoint, pool=pool,
        )  # fmt: skip
        return self._decide(batch, approve) if batch.waiting else batch.to_frame()

    def _checked_pool(self, others: Sequence[McpSession]) -> list[McpSession]:
        pool = list(others)
        for other in pool:
            if not isinstance(other, McpSession) or other is self:
                raise McpSessionError(CONFIG_INVALID, "also_on must hold other open sessions (McpSession objects).")
            if other.catalog.digest != self.catalog.digest:
                raise McpSessionError(
                    DIGEST_MISMATCH,
                    f"Session '{other.name}' lists other tools than '{self.name}' (catalog digest "
                    f"{other.catalog.digest[:12]}, not {self.catalog.digest[:12]}): a batch spreads over one server's.",
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
        job = Replay(self.connection, self._bindings, load_transcript(transcript), str(transcript), timeout=timeout)
        return self._decide(job, approve) if job.waiting else job.to_frame()

    def _decide(self, job: Any, approve: bool | None) -> Any:
        """What a call gives its caller: the call itself while it has a widget (waiting for a person, or showing
        its tool's view below its record), else its result."""
        call = self._call(job, approve, views=True)
        return call.result if type(call) is Call else call

    def _call(self, job: Any, approve: bool | None, *, views: bool) -> Call:
        """``job``'s call, waiting for a person (the approval widget) or settled as the code and the policy say. A
        call of a tool with a view (``views``, and views on) is a ``ViewedCall`` either way."""
        viewed = views and isinstance(job, CallPlan) and self.connection.views and job.tool.app.uri is not None
        person = needs_a_person(approve, self._approval, job.may_write)
        call: Call
        shown: ViewedCall | None = None
        if viewed:
            from .ui.apps import ViewedCall

            call = shown = ViewedCall(job, self._view_host())
        elif person:
            from .ui.approval import PendingCall  # the widgets load with the first widget (ipywidgets is slow)

            call = PendingCall(job)
        else:
            call = Call(job)
        if not person:
            decide(call, approve=approve, policy=self._approval)
            if shown is not None:
                shown.view.wait_read(self.connection.config.timeout)  # a call approved in code shows its view at once
        return call

    def _view_call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """A view's own ``tools/call``: planned as a person's call is (a bound tool on the PurrA path, any other raw),
        under the session's policy, and showing no view of its own. The call itself, so that the view's record
        holds its decision whoever made it."""
        raw = self._bindings.binding(tool) is None
        plan = plan_call(self.connection, self._bindings, tool, arguments, raw=raw, timeout=None)
        return refusal(plan) or self._call(plan, None, views=False)

    def _view_host(self) -> _ViewHost:
        return _ViewHost(self.connection, lambda: self.catalog, self._view_call, self._read_view)

    def _read_view(self, uri: str) -> Future[ResourceContents]:
        return self._offered.read_soon(uri, max_bytes=VIEW_READ_BYTES)

    def form(self, tool: str) -> SchemaForm:
        """An argument form for ``tool``, generated from its input schema; its "Review call" button
        produces the ``PendingCall`` (for a tool outside the profile: a raw form of its own schema, which can
        also send without checking)."""
        from .ui.forms import tool_form

        remote = self._bindings.remote_name(tool)
        task = self.catalog[remote].task_support == "required"  # (raw then: such a tool runs only as a task)
        review = lambda arguments, raw, checked: self.call(  # noqa: E731
            remote, arguments, raw=raw, task=raw and task, check_arguments=checked
        )
        return tool_form(self.catalog[remote], limits=self.limits, review=review)

    def status_widget(self) -> SessionStatus:
        """A live status widget: state, protocol, tool counts, bindings, last error."""
        from .ui.status import SessionStatus

        return SessionStatus(self.connection, self._bindings)

    # --- display ---------------------------------------------------------------------------------

    def __repr__(self) -> CellText:
        protocol = f", protocol {self.protocol_version}" if self.protocol_version else ""
        label = self.connection.hello.label
        return cell_text(f"<McpSession {self.name!r} {self.transport} {self.state}{protocol}, server {label}>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = [
            ("session", self.name),
            ("transport", f"{self.transport}: {self.config.target}"),
            ("state", self.state + (f" ({self.cause})" if self.cause else "")),
            ("protocol", self.protocol_version or ""),
            ("server", self.connection.hello.label),
            *([(INSTRUCTIONS_LABEL, shown_instructions(self.instructions))] if self.instructions else []),
        ]
        return bundle(key_value_table(rows, "purra-session"), self.__repr__())


async def _ping(client: ClientSession) -> object:
    return await client.send_ping()


CLOSED_KEPT = 64  # closed sessions whose name still says "closed" (not "unknown") until reused


class SessionRegistry:
    """The open sessions of this process, by name (and the names being connected); the names of the last
    ``CLOSED_KEPT`` closed ones, so using one says it was closed and why."""

    def __init__(self) -> None:
        self._sessions: dict[str, McpSession] = {}
        self._reserved: set[str] = set()
        self._closed: OrderedDict[str, str] = OrderedDict()  # name -> why it closed
        self._lock = threading.Lock()

    @contextmanager
    def reserving(self, name: str) -> Iterator[None]:
        """Hold ``name`` while a session of that name connects; ``mcp_session_exists`` if it is taken."""
        with self._lock:
            if name in self._sessions or name in self._reserved:
                raise McpSessionError(
                    SESSION_EXISTS,
                    f"A session named '{name}' is already open. Close it first "
                    f"(pj.sessions() lists them) or choose another name.",
                )
            self._reserved.add(name)
        try:
            yield
        finally:
            with self._lock:
                self._reserved.discard(name)

    def add(self, session: McpSession) -> None:
        with self._lock:
            self._sessions[session.name] = session
            self._closed.pop(session.name, None)

    def remove(self, session: McpSession) -> None:
        with self._lock:
            if self._sessions.get(session.name) is session:
                del self._sessions[session.name]
                self._closed[session.name] = session.cause
                while len(self._closed) > CLOSED_KEPT:
                    self._closed.popitem(last=False)

    def get(self, name: str) -> McpSession:
        with self._lock:
            session, cause = self._sessions.get(name), self._closed.get(name)
        if session is None and cause is not None:
            raise McpSessionError(
                CONNECTION_CLOSED,
                f"Session '{name}' is closed ({cause}). Open a new one with %mcp_connect or pj.connect().",
            )
        if session is None:
            near = difflib.get_close_matches(name, [open_one.name for open_one in self.list()], n=1)
            guess = f" Did you mean '{near[0]}'?" if near else ""
            raise McpSessionError(
                SESSION_UNKNOWN, f"No session named '{name}'.{guess} Open one with %mcp_connect or pj.connect()."
            )
        return session

    def find(self, name: str) -> McpSession | None:
        """The open session named ``name``, if there is one."""
        with self._lock:
            return self._sessions.get(name)

    def list(self) -> list[McpSession]:
        with self._lock:
            return sorted(self._sessions.values(), key=lambda s: s.name)

    def close_all(self, cause: str = "closed with all sessions") -> None:
        for session in self.list():
            session.close(cause)


registry = SessionRegistry()
runner.on_stop(lambda: registry.close_all("interpreter exit"))


VIEW_READ_BYTES = VIEW_MAX_BYTES + (64 << 10)  # a view's resources/read: its HTML and the JSON around it


def _settled(read: Future[ResourceContents]) -> ResourceContents | McpSessionError:
    """A read's contents, or the kit's error that ended it (each bounded by the session's timeout)."""
    try:
        return read.result()
    except McpSessionError as error:
        return error


@dataclass(frozen=True)
class _ViewHost:
    """What a tool's view reaches of its session (``ui.apps.ViewHost``): its tools, its calls, its ui:// reads, as
    the session hands them over."""

    connection: Connection
    catalog: Callable[[], Catalog]
    view_call: Callable[[str, Mapping[str, Any]], Any]
    view_read: Callable[[str], Future[ResourceContents]]

    def view_tools(self) -> Mapping[str, ToolVerdict]:
        return {tool.name: tool for tool in self.catalog().tools}


def connect(
    config: ServerConfig,
    *,
    approval: str = "prompt",
    limits: McpToolLimits | None = None,
    expect_digest: str | None = None,
    record: bool = False,
) -> McpSession:
    """Open a monitored session: start or reach the server, initialize, check the protocol, list the
    tools with their verdicts. All of it ends within ``config.timeout`` seconds in all (``mcp_timeout``
    says what was reached, e.g. a page of the listing), not counting the kit's imports on a first connect.

    ``approval`` is the policy for tool calls: ``prompt`` (default), ``auto`` (every call of this
    session is approved; logged) or ``deny``. ``limits`` (purra-mcp's ``McpToolLimits``) may be lower
    than PurrA's defaults; its ``timeout_ms`` defaults to the config's timeout. ``expect_digest`` pins
    the catalog: connecting fails with ``mcp_digest_mismatch`` if the server's tools changed. ``record`` keeps the
    session's ``transcript``: every JSON-RPC message sent and received, from ``initialize`` on.
    """
    if not isinstance(config, ServerConfig):
        raise McpSessionError(CONFIG_INVALID, "connect() takes a ServerConfig (see pj.ServerConfig, pj.load_servers).")
    check_approval(approval)
    if limits is not None:  # (not imported otherwise: a stdio server starts before the SDK is imported)
        from purra_mcp import McpToolLimits

        if not isinstance(limits, McpToolLimits):
            raise McpSessionError(CONFIG_INVALID, "limits must be a purra_mcp.McpToolLimits.")
    if expect_digest is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(expect_digest)):
        raise McpSessionError(CONFIG_INVALID, "expect_digest must be a 64-digit hex digest (Catalog.digest).")
    config = with_views_decided(config)
    if not isinstance(record, bool):
        raise McpSessionError(CONFIG_INVALID, "record must be True or False.")
    connection = Connection(config, transport_for(config), limits=limits, record=record)
    with registry.reserving(config.name):
        deadline = Deadline(config.timeout, "connecting")
        connection.open(deadline)
        if approval == "auto":
            connection.log.add(EVENT_CONNECT, AUTO_APPROVAL_NOTE)
        try:
            catalog = connection.request(lambda client: _first_catalog(connection, client), timeout=deadline)
            check_digest(catalog, expect_digest)
        except BaseException as exc:
            connection.close(f"connect failed: {exc}")
            raise
        session = McpSession(connection, Bindings(connection, catalog), approval=approval)
        registry.add(session)
    return session


def with_views_decided(config: ServerConfig) -> ServerConfig:
    """``config`` with ``views`` True or False: left to the session (None), views are on where outputs reach a
    notebook frontend (a kernel: JupyterLab, Notebook 7), where the labextension draws them."""
    if config.views is not None:
        return config
    from .ui.records import in_kernel

    return config.with_views(in_kernel())


def check_approval(policy: str) -> None:
    if policy not in APPROVAL_POLICIES:
        raise McpSessionError(CONFIG_INVALID, f"approval must be one of {', '.join(APPROVAL_POLICIES)}.")


def transport_for(config: ServerConfig) -> Transport:
    """The transport a config names: a process on pipes, Streamable HTTP (its module imports the SDK: a first
    connect's import is not the server's time, so it comes before the connect's deadline) or a server in memory."""
    if config.transport == STDIO:
        return StdioTransport(config)
    if config.transport == MEMORY:
        return MemoryTransport(cast("Server[Any, Any]", config.server))
    from .http_transport import StreamableHttpTransport

    if config.oauth is not None and config.oauth.authorize is None:
        from .ui.authorization import ask

        return StreamableHttpTransport(config, ask)
    return StreamableHttpTransport(config)


async def _first_catalog(connection: Connection, client: Any) -> Catalog:
    catalog = await build_catalog(connection, client)
    connection.mark_current(catalog.revision)
    connection.check_usable()  # a connection that failed while listing (garbage on stdout) fails connect
    return catalog


INSTRUCTIONS_LABEL = "the server's instructions (its own words, shown as text)"
INSTRUCTIONS_CHARS = 4_000  # of the server's instructions shown (s.instructions keeps them whole)


def shown_instructions(instructions: str) -> str:
    """The server's instructions as the kit shows them: at most ``INSTRUCTIONS_CHARS`` characters, the cut said."""
    return cut(instructions, INSTRUCTIONS_CHARS, "s.instructions")


AUTO_APPROVAL_NOTE = (
    "approval policy 'auto': every read call of this session is approved (a write, or a tool its server hints "
    "writes, still asks)"
)


# What a first connect imports that takes seconds (``import mcp`` alone does, here): warmed in a thread of its own
# when the extension loads, so that it is usually done before the first %mcp_connect.
WARM_MODULES = ("mcp", "mcp.client.session", "purra_mcp", "purra_jupyter.http_transport")
WARM_THREAD = "purra-jupyter-warm-up"


def warm_up(modules: tuple[str, ...] = WARM_MODULES) -> threading.Thread:
    """Import ``modules`` in a daemon thread; a connect meanwhile waits for the module it needs (Python's import
    lock) instead of importing it again. A failure is logged, and the connect imports as it would have."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception as exc:
                logging.getLogger("purra_jupyter").warning(
                    "warming up: importing %s failed (%s: %s); the first connect imports it", name,
                    exc.__class__.__name__, exc,
                )  # fmt: skip
                return

    thread = threading.Thread(target=run, name=WARM_THREAD, daemon=True)
    thread.start()
    return thread


def replay(
    transcript: str | Path, config: ServerConfig, *, approve: bool | None = None, timeout: float | None = None
) -> pd.DataFrame | PendingCall:
    """Connect to ``config``'s server and replay a saved transcript's tool calls on it (``McpSession.replay``): a
    server's later version, or another server, against what was recorded. The session closes once the replay
    settled: at once when decided in code (``approve``), else once a person decided and it ran."""
    check_approve(approve)
    work = lambda opened: opened[0].replay(transcript, approve=approve, timeout=timeout)  # noqa: E731
    outcome: pd.DataFrame | PendingCall = on_own_sessions([config], work, "replay")
    return outcome


def on_own_sessions(configs: Sequence[ServerConfig], work: Callable[[list[McpSession]], Any], what: str) -> Any:
    """``work`` on sessions opened for it alone (one per config, in order). They close once it settled: at once when it
    failed or was decided in code; when its call waits for a person (the call itself came back), once that call
    settles (decided, run, or void), whatever decided it."""
    opened: list[McpSession] = []
    try:
        for config in configs:
            opened.append(connect(config))
        outcome = work(opened)
    except BaseException:
        for session in opened:
            session.close(f"{what} failed")
        raise

    def close(_: object = None) -> None:
        for session in opened:
            session.close(f"{what} done")

    if isinstance(outcome, Call):
        outcome.when_settled(close)
    else:
        close()
    return outcome


def sessions() -> list[McpSession]:
    """The sessions that are open (ready, stale or failed but not closed), by name."""
    return registry.list()


__all__ = [
    "HTTP",
    "STDIO",
    "McpSession",
    "SessionRegistry",
    "connect",
    "on_own_sessions",
    "replay",
    "sessions",
    "warm_up",
    "with_views_decided",
]
