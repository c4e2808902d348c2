"""``McpSession``: the one object a user holds.

A session composes parts that each own one concern: its ``Connection`` (transport, monitor, requests, state, log,
stderr), its ``Bindings`` (the catalog as listed and the bindings), what the server offers beside tools
(``Offered``), its calls (``Caller``, the owner of the approval policy) and its requests about itself
(``Control``). Each public method is a line over one of them, or forwarded to it whole (``forward``): none of them
reaches back into the session. ``opening.connect`` opens one; the registry knows the open ones by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from traitlets import Enum, HasTraits, Int, dlink

from .._base import runner
from .._base.config import ServerConfig, file_uris, secret_names
from .._base.egress import CellText, bundle, cell_text, cut
from .._base.errors import McpSessionError
from .._base.markup import key_value_table
from .._base.transcript import Transcript
from .._base.wire import CLOSED, CONFIG_INVALID, CONNECTING, STATES
from .._beside.offerings import PROMPTS, RESOURCES, TEMPLATES, Offered, Offerings
from .._connection.connection import Connection, SessionLog
from .._purra.bindings import Bindings
from .._purra.catalog import Catalog
from .caller import Caller
from .control import Control
from .registry import SessionRegistry

if TYPE_CHECKING:
    from purra_mcp import McpCatalogMonitor, McpToolLimits

    from .._ui.offering_forms import OfferingForm
    from .._ui.status import SessionStatus

Params = ParamSpec("Params")
Result = TypeVar("Result")


class forward(Generic[Params, Result]):
    """A method of the session that is ``method`` of its part ``part`` (an attribute), as that part's bound method:
    the same signature and docstring, one owner of the code, and no frame of the session's on the call's way."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, Params], Result]) -> None:
        self.part = part
        self.method = method

    @overload
    def __get__(self, session: None, owner: type | None = None) -> Callable[Concatenate[Any, Params], Result]: ...

    @overload
    def __get__(self, session: object, owner: type | None = None) -> Callable[Params, Result]: ...

    def __get__(self, session: object | None, owner: type | None = None) -> Callable[..., Result]:
        if session is None:  # the class's attribute: the function itself (what the API reference documents)
            return self.method
        bound: Callable[Params, Result] = getattr(getattr(session, self.part), self.method.__name__)
        return bound


class McpSession(HasTraits):
    """One monitored connection to one MCP server, with its catalog, bindings and calls. Open it with
    ``connect()``. ``state`` (observable) follows the connection's: ready, stale, closed or failed."""

    state = Enum(STATES, default_value=CONNECTING, help="ready | stale | closed | failed")
    bound_count = Int(0, help="how many tools are bound (changes with bind, unbind and refresh)")

    def __init__(self, connection: Connection, bindings: Bindings, *, approval: str) -> None:
        super().__init__()
        self.connection = connection
        self._bindings = bindings
        self._offered = Offered(connection)
        self._caller = Caller(connection, bindings, self._offered, approval=approval)
        self._control = Control(connection)
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
    def protocol_refused(self) -> str | None:
        """Why a PurrA host refuses this session's protocol (an older era's: 2024-11-05, 2025-03-26), in one line; or
        ``None`` when it accepts it. A refused session opens beside the contract: its tools are not callable under
        PurrA (binding one raises ``mcp_protocol_unsupported``) and are explored on the raw path."""
        return self.connection.protocol_refused

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

    set_log_level = forward("_control", Control.set_log_level)
    ping = forward("_control", Control.ping)
    reauthorize = forward("_control", Control.reauthorize)

    @property
    def approval(self) -> str:
        """The approval policy of this session's calls: ``prompt``, ``auto`` or ``deny``."""
        return self._caller.approval

    set_approval = forward("_caller", Caller.set_approval)

    def set_timeout(self, seconds: float) -> None:
        """The default timeout (seconds) of each request and call from now on."""
        self.connection.set_timeout(seconds)

    def set_roots(self, roots: Sequence[str | Path]) -> None:
        """The folders the server may work in from now on (paths or ``file://`` URIs); the server is told that they
        changed. The session must have connected with roots (``ServerConfig(..., roots=[...])``)."""
        self.connection.set_roots(file_uris(roots, f"Session '{self.name}': roots"))

    @property
    def roots(self) -> tuple[str, ...] | None:
        """The ``file://`` URIs the server is given when it asks (``None``: the session declared no roots)."""
        return self.connection.questions.answers.roots

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

    app_info = forward("_caller", Caller.app_info)

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

    read_resource = forward("_offered", Offered.read_resource)
    get_prompt = forward("_offered", Offered.get_prompt)
    complete = forward("_offered", Offered.complete)

    def resource_form(self, template: str) -> OfferingForm:
        """A form with one field per variable of the resource template ``template`` (its URI template); "Read"
        shows the resource below it. Fields offer the server's completions when it has them."""
        from .._ui.offering_forms import template_form

        return template_form(self._offered, self.resource_templates[template])

    def prompt_form(self, name: str) -> OfferingForm:
        """A form with one field per argument of the prompt ``name``; "Get prompt" shows its messages below it."""
        from .._ui.offering_forms import prompt_form

        return prompt_form(self._offered, self.prompts[name])

    # --- calls (``Caller`` owns them) -------------------------------------------------------------

    call = forward("_caller", Caller.call)
    evaluate = forward("_caller", Caller.evaluate)
    replay = forward("_caller", Caller.replay)
    form = forward("_caller", Caller.form)

    def status_widget(self) -> SessionStatus:
        """A live status widget: state, protocol, tool counts, bindings, last error."""
        from .._ui.status import SessionStatus

        return SessionStatus(self.connection, self._bindings)

    # --- display ---------------------------------------------------------------------------------

    def __repr__(self) -> CellText:
        protocol = f", protocol {self.connection.protocol_label}" if self.protocol_version else ""
        label = self.connection.hello.label
        return cell_text(f"<McpSession {self.name!r} {self.transport} {self.state}{protocol}, server {label}>")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        rows = [
            ("session", self.name),
            ("transport", f"{self.transport}: {self.config.target}"),
            ("state", self.state + (f" ({self.cause})" if self.cause else "")),
            ("protocol", self.connection.protocol_label),
            ("server", self.connection.hello.label),
            ("the server's questions", self.connection.questions.answering()),
            (SECRETS_LABEL, str(secret_names(self.config))),
            *([(INSTRUCTIONS_LABEL, shown_instructions(self.instructions))] if self.instructions else []),
        ]
        return bundle(key_value_table(rows, "purra-session"), self.__repr__())


registry: SessionRegistry[McpSession] = SessionRegistry()
runner.on_stop(lambda: registry.close_all("interpreter exit"))


def sessions() -> list[McpSession]:
    """The sessions that are open (ready, stale or failed but not closed), by name."""
    return registry.list()


INSTRUCTIONS_LABEL = "the server's instructions (its own words, shown as text)"
SECRETS_LABEL = "your secrets in what the server sends"  # which of the config's values are scrubbed, by name
INSTRUCTIONS_CHARS = 4_000  # of the server's instructions shown (s.instructions keeps them whole)


def shown_instructions(instructions: str) -> str:
    """The server's instructions as the kit shows them: at most ``INSTRUCTIONS_CHARS`` characters, the cut said."""
    return cut(instructions, INSTRUCTIONS_CHARS, "s.instructions")


__all__ = ["INSTRUCTIONS_LABEL", "SECRETS_LABEL", "McpSession", "forward", "registry", "sessions", "shown_instructions"]
