"""The current catalog and the bindings made from it: read tools through purra-mcp's ``discover_mcp_tools``,
write tools (PurrA's ``confirm`` policy) through its ``discover_mcp_write_tools``.

``Bindings`` is the one owner of that state: it changes on the loop, one change at a time (bind, unbind,
refresh, the binding a call declares), and readers on any thread get a consistent snapshot. Each change
ends within one total deadline, the session's timeout. A change to the writes discovers the writes again
(their snapshot's digest is what each write's approval binding carries); the reads are left as they are.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import anyio
from traitlets import HasTraits, Int

from .._base.egress import CellText, bundle, cell_text
from .._base.errors import KEPT_APART, HostCodeError, McpSessionError
from .._base.markup import key_value_table
from .._base.visible import quoted, visible
from .._base.wire import (
    BINDING_INVALID,
    BINDING_MISSING,
    CATALOG_STALE,
    EVENT_BIND,
    NAME_CONFLICT,
    NOT_READ_ONLY,
    STALE,
)
from .._connection.connection import Connection, Deadline
from .catalog import EFFECTS, READ, Catalog, default_local_name, digest_of, reasons_note, write_hint
from .listing import build_catalog

if TYPE_CHECKING:
    from mcp import ClientSession
    from purra.contracts import ExecutionState
    from purra.ports import CancellationSignal, ScopeValidator, ToolRegistration
    from purra_mcp import McpToolBinding, McpToolCatalog, McpToolLimits, McpWriteToolBinding
    from typing_extensions import TypeIs

# A purra-mcp binding: a read tool, or a write under PurrA's confirm policy. (Names only a type checker imports.)
Binding: TypeAlias = "McpToolBinding | McpWriteToolBinding"
# A host's scope check, as ``make_binding`` takes it: sync or async, a denial message or ``None`` to allow.
HostScopeValidator: TypeAlias = (
    "Callable[[ExecutionState, Mapping[str, Any], CancellationSignal | None], str | Awaitable[str | None] | None]"
)

MAX_TIMEOUT_MS = 300_000
DEFAULT_REVISION = "1"


async def allow_any_scope(
    state: ExecutionState, arguments: Mapping[str, Any], signal: CancellationSignal | None = None
) -> None:
    """A scope validator that accepts every call: for a person who means to check no scope. Binding a write
    with it is logged. Async, as purra-mcp awaits a validator: a host can pass it to purra-mcp as it is."""
    return None


def effect_of(binding: Binding) -> str:
    """``read``, ``write`` or ``destructive``: the risk level of the binding's policy."""
    return str(binding.policy.risk_level.value)


def is_write(binding: Binding) -> TypeIs[McpWriteToolBinding]:
    """Whether ``binding`` is a write (purra-mcp gives a read binding only a read policy, a write never one)."""
    return effect_of(binding) != READ


class BindingEntry(dict[str, Any]):
    """purra-mcp's snapshot entry of one binding (a plain dict), shown as a small table."""

    def _rows(self) -> list[tuple[str, str]]:
        policy = self.get("policy") or {}
        rows = [
            ("tool", str(self.get("remoteName"))),
            ("local name", str(self.get("localName"))),
            ("title", str(policy.get("title", ""))),
            ("mode", str(getattr(policy.get("mode"), "value", policy.get("mode")))),
            ("risk", str(getattr(policy.get("riskLevel"), "value", policy.get("riskLevel")))),
            ("concurrency safe", "yes" if self.get("concurrencySafe") else "no"),
        ]
        identity = self.get("authorization")
        if identity:
            rows += [
                ("binding", f"{identity['bindingId']} (revision {identity['bindingRevision']})"),
                ("scope", f"{identity['scopeId']} (revision {identity['scopeRevision']})"),
            ]
        return rows

    def __repr__(self) -> CellText:
        return cell_text("BindingEntry " + ", ".join(f"{key}: {value}" for key, value in self._rows()))

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        return bundle(key_value_table(self._rows(), "purra-binding"), self.__repr__())


@dataclass(frozen=True)
class _State:
    catalog: Catalog  # its tools carry ``bound_as`` and ``bound_effect``
    bindings: Mapping[str, Binding] = field(default_factory=dict)  # by remote name, reads and writes
    reads: McpToolCatalog | None = None  # purra-mcp's snapshot and registrations of the read bindings
    writes: McpToolCatalog | None = None  # ... and of the write bindings (schemaVersion 2)
    assumed: Mapping[str, str] = field(default_factory=dict)  # remote -> the write hint assume_read_only overrode

    def found(self, writing: bool) -> McpToolCatalog | None:
        return self.writes if writing else self.reads

    def entry(self, remote: str, writing: bool) -> BindingEntry:
        """The snapshot's entry of ``remote`` (bound, of the kind ``writing`` says)."""
        found = self.found(writing)
        assert found is not None
        entries = found.snapshot.to_mapping()["entries"]
        return BindingEntry(next(entry for entry in entries if entry["remoteName"] == remote))

    def of_kind(self, writing: bool) -> dict[str, Binding]:
        return {remote: binding for remote, binding in self.bindings.items() if is_write(binding) == writing}

    def with_found(self, writing: bool, found: McpToolCatalog | None) -> _State:
        return replace(self, writes=found) if writing else replace(self, reads=found)

    # Readers of one snapshot: a registration and a write's terms never mix two states.

    def registration(self, remote: str) -> ToolRegistration:
        known = self._registrations.get(remote)
        if known is not None:
            return known
        binding = self.bindings[remote]
        found = self.found(is_write(binding))
        assert found is not None
        return next(r for r in found.registrations if r.schema.name == binding.local_name)

    @functools.cached_property
    def _registrations(self) -> dict[str, ToolRegistration]:
        """The bound tools' registrations by remote name, found once per state: every call looks its tool's up."""
        kinds = {writing: {r.schema.name: r for r in found.registrations}
                 for writing, found in ((False, self.reads), (True, self.writes)) if found is not None}  # fmt: skip
        known = {}
        for remote, binding in self.bindings.items():
            registration = kinds.get(is_write(binding), {}).get(binding.local_name)
            if registration is not None:
                known[remote] = registration
        return known

    def write_terms(self, remote: str) -> WriteTerms | None:
        binding = self.bindings.get(remote)
        if binding is None or not is_write(binding) or self.writes is None:
            return None
        approval = self.registration(remote).approval_binding
        assert approval is not None  # purra-mcp registers every write with its approval binding
        return WriteTerms(dict(approval), binding.binding_revision)


@dataclass(frozen=True)
class WriteIdentity:
    """What a write binding's approvals are bound to (purra's approval binding, without the effect)."""

    binding_id: str
    binding_revision: str
    scope_id: str
    scope_revision: str


@dataclass(frozen=True)
class WriteTerms:
    """A write binding as an approval of its call covers it: purra's approval binding of the registration (the
    declared identity and effect, its ``bindingRevision`` the write snapshot's digest), and the binding revision
    as declared."""

    approval: Mapping[str, str]
    declared_revision: str

    @property
    def effect(self) -> str:
        return self.approval["effect"]

    def rows(self) -> tuple[tuple[str, str], ...]:
        approval = self.approval
        return (
            ("effect", self.effect),
            ("binding", f"{approval['bindingId']} (revision {self.declared_revision})"),
            ("write catalog digest", approval["bindingRevision"]),
            ("scope", f"{approval['scopeId']} (revision {approval['scopeRevision']})"),
        )


def make_binding(
    remote: str,
    *,
    effect: str = READ,
    local_name: str | None = None,
    title: str | None = None,
    scope_validator: HostScopeValidator | None = None,
    concurrency_safe: bool = False,
    identity: WriteIdentity | None = None,
) -> Binding:
    """A purra-mcp binding: a read tool, or (``effect`` write or destructive, with ``identity``) a write under
    PurrA's confirm policy. ``scope_validator(state, arguments, signal)`` may be sync or async and returns a
    non-empty string to deny; if it raises, the call settles with ``mcp_host_error`` (the host's code failed,
    not the server). A write needs one (``allow_any_scope`` when no scope is to be checked)."""
    from purra.contracts import ToolExecutionMode, ToolPolicy, ToolRiskLevel
    from purra_mcp import McpAdapterError, McpToolBinding, McpWriteToolBinding

    local = local_name or default_local_name(remote)
    if effect not in EFFECTS:
        raise McpSessionError(BINDING_INVALID, f"effect must be one of {', '.join(EFFECTS)}, not {effect!r}.")
    if effect != READ and not callable(scope_validator):
        raise McpSessionError(
            BINDING_INVALID,
            f"Binding '{remote}' as a {effect} tool needs a scope_validator: a function (state, arguments, signal) "
            "returning a denial message or None. Pass pj.allow_any_scope to check no scope (logged).",
        )
    if effect != READ and concurrency_safe:
        raise McpSessionError(BINDING_INVALID, f"A {effect} tool is never concurrency-safe: bind '{remote}' without.")
    validator = _guarded_validator(scope_validator) if callable(scope_validator) else scope_validator
    try:
        mode = ToolExecutionMode.READ if effect == READ else ToolExecutionMode.CONFIRM
        policy = ToolPolicy(mode=mode, title=title or remote, risk_level=ToolRiskLevel(effect))
        if effect == READ:
            return McpToolBinding(local, policy, validator, concurrency_safe)
        assert identity is not None and validator is not None
        return McpWriteToolBinding(
            local,
            policy,
            validator,
            identity.binding_id,
            identity.binding_revision,
            identity.scope_id,
            identity.scope_revision,
            effect,
        )
    except (McpAdapterError, ValueError, TypeError):
        raise McpSessionError(
            BINDING_INVALID,
            f"Cannot bind '{remote}' as {local!r}: local names are 1 to 64 letters, digits or '_' not starting "
            "with a digit, the title non-empty, the scope validator callable, and a write's binding and scope "
            "ids and revisions non-empty text of at most 1024 characters without spaces around them.",
        ) from None


def _guarded_validator(validator: HostScopeValidator) -> ScopeValidator:
    """``validator`` as purra-mcp awaits one: async, and any exception it raises the host's failure."""

    async def validate(
        state: ExecutionState, arguments: Mapping[str, Any], signal: CancellationSignal | None = None
    ) -> str | None:
        try:
            decision = validator(state, arguments, signal)
            return await decision if inspect.isawaitable(decision) else decision
        except Exception as error:
            raise HostCodeError(
                f"the scope validator raised {error.__class__.__name__}: {error}; nothing was sent"
            ) from error

    validate.__wrapped__ = validator  # type: ignore[attr-defined]  # what the person gave, for same_declaration
    return validate


def same_declaration(one: Binding, other: Binding) -> bool:
    """Whether two bindings declare the same thing (each scope validator compared as the function the person gave,
    not its guard): binding it again, as a rerun of a notebook does, then changes nothing."""

    def declared(binding: Binding) -> dict[str, Any]:
        fields = {item.name: getattr(binding, item.name) for item in dataclasses.fields(binding)}
        validator = fields.get("scope_validator")
        fields["scope_validator"] = getattr(validator, "__wrapped__", validator)
        return fields

    return type(one) is type(other) and declared(one) == declared(other)


def call_limits(limits: McpToolLimits) -> McpToolLimits:
    """``limits`` with purra-mcp's longest request time: each call is bounded by the kit's per-call timeout
    instead (default: the session's ``timeout_ms``), which may be longer or shorter."""
    return _with_longest_timeout(limits)


@functools.lru_cache(maxsize=64)
def _with_longest_timeout(limits: McpToolLimits) -> McpToolLimits:
    return replace(limits, timeout_ms=MAX_TIMEOUT_MS)


# --- the pure checks of a binding: functions of what they are given; ``Bindings`` passes its state in ---------


def default_identity(catalog: Catalog, server: str, remote: str, local: str) -> WriteIdentity:
    """The identity a write binding gets when none is given: binding id ``SESSION/LOCAL_NAME``, binding
    revision the digest of the tool as listed (a new definition, a new revision), scope id the session's
    name, scope revision ``1``."""
    revision = digest_of([catalog[remote]]) if remote in catalog else DEFAULT_REVISION
    return WriteIdentity(f"{server}/{local}", revision, server, DEFAULT_REVISION)


def _read_declaration_note(catalog: Catalog, server: str, remote: str, *, assume_read_only: bool) -> str:
    """The note declaring ``remote`` a read tool is logged with; ``mcp_not_read_only`` when its server says it
    is not, unless ``assume_read_only``."""
    hint = write_hint(catalog[remote].annotations) if remote in catalog else None
    if hint is None:
        return ""
    if assume_read_only:
        return f" although its server marks it {hint} (assume_read_only=True)"
    raise McpSessionError(
        NOT_READ_ONLY,
        f"'{remote}' cannot be declared a PurrA read tool: its server marks it {hint}. Bind it as a write: "
        f"s.bind({remote!r}, effect='write' or 'destructive', scope_validator=...) (%mcp_bind {server} {remote} "
        f"--write); or, if you know it only reads, s.bind({remote!r}, assume_read_only=True) (logged).",
    )


def _check_free(bindings: Mapping[str, Binding], remote: str, local: str) -> None:
    """One binding per tool, one tool per local name (reads and writes share the names a host registers)."""
    for bound, binding in bindings.items():
        if bound == remote:
            raise McpSessionError(
                BINDING_INVALID,
                f"'{remote}' is already bound as {effect_of(binding)} tool '{binding.local_name}'; unbind it first",
            )
        if binding.local_name == local:
            raise McpSessionError(
                NAME_CONFLICT, f"The local name '{local}' is already the binding of '{bound}'; choose another."
            )


def _no_longer_holds(remote: str, binding: Binding, catalog: Catalog, assumed: str | None) -> str:
    """Why ``binding`` cannot stay in ``catalog`` (``""`` when it can): the tool is gone or unsupported, or a
    read binding's tool is now hinted as a write (other than the hint ``assumed``, which a person declared
    it read despite)."""
    if remote not in catalog:
        return "the server no longer lists it"
    tool = catalog[remote]
    if not tool.callable:
        return "; ".join(tool.reasons)
    hint = write_hint(tool.annotations)
    if not is_write(binding) and hint is not None and hint != assumed:
        return f"its server now marks it {hint}; bind it as a write to call it under PurrA"
    return ""


class Bindings(HasTraits):
    """The catalog as last listed and the read and write bindings, for one connection."""

    count = Int(0, help="how many tools are bound (changes with bind, unbind and refresh)")

    def __init__(self, connection: Connection, catalog: Catalog) -> None:
        super().__init__()
        self.connection = connection
        self._state = _State(catalog)
        self._changing: anyio.Lock | None = None  # made on the loop, where every change runs

    # --- reading (any thread) ------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog:
        """Every tool the server listed, with verdicts and ``bound_as``; as of the last listing."""
        return self._state.catalog

    @property
    def snapshot(self) -> dict[str, Any] | None:
        """purra-mcp's snapshot of the read bindings; ``None`` until a read tool is bound."""
        return _mapping(self._state.reads)

    @property
    def write_snapshot(self) -> dict[str, Any] | None:
        """purra-mcp's snapshot of the write bindings (``schemaVersion`` 2); ``None`` until a write is bound."""
        return _mapping(self._state.writes)

    def binding(self, remote: str) -> Binding | None:
        return self._state.bindings.get(remote)

    def label(self, remote: str) -> str:
        """``remote`` as a person is shown it: its catalog label (``ToolVerdict.label``), or its visible name."""
        label = self._state.catalog.labels.get(remote)
        return label if label is not None else visible(remote)

    def quoted_label(self, remote: str) -> str:
        """``remote`` as one item of a list of names: its catalog ``quoted_label``, or its name quoted."""
        catalog = self._state.catalog
        return catalog[remote].quoted_label if remote in catalog else quoted(remote)

    def effect(self, remote: str) -> str | None:
        """What ``remote`` is bound as (read, write, destructive); ``None`` when unbound."""
        binding = self.binding(remote)
        return effect_of(binding) if binding is not None else None

    def local_name(self, remote: str) -> str:
        """The binding's local name, or the one binding ``remote`` would give it."""
        binding = self.binding(remote)
        return binding.local_name if binding is not None else default_local_name(remote)

    def remote_name(self, name: str) -> str:
        """The remote name of a local or remote ``name``; ``mcp_binding_missing`` if there is none."""
        state = self._state
        for remote, binding in state.bindings.items():
            if binding.local_name == name:
                return remote
        if name in state.bindings or name in state.catalog:
            return name
        raise McpSessionError(
            BINDING_MISSING,
            f"'{self.connection.name}' has no tool or binding '{visible(name)}'; the tools it lists are {KEPT_APART}.",
            server_text=_listed(state.catalog, name),
        )

    def registration(self, remote: str) -> ToolRegistration:
        """purra-mcp's registration (schema, policy, handler, approval binding) of the bound tool ``remote``."""
        return self._state.registration(remote)

    def write_terms(self, remote: str) -> WriteTerms | None:
        """What an approval of a call of the bound write ``remote`` covers beyond the call itself (``None`` for
        reads and unbound tools): the approval binding a PurrA host checks before it runs."""
        return self._state.write_terms(remote)

    def check_read_declaration(self, remote: str, *, assume_read_only: bool = False) -> str:
        """Refuse (``mcp_not_read_only``) declaring ``remote`` a read tool when its server says it is not;
        with ``assume_read_only`` the declaration stands, and the note returned is logged with it."""
        return _read_declaration_note(self.catalog, self.connection.name, remote, assume_read_only=assume_read_only)

    def _admitted(self, remote: str) -> bool:
        """Whether purra-mcp's own checks (schema, name, description, tasks) let ``remote`` be bound: only then
        do its server's hints matter, since no declaration makes a refused tool bindable."""
        catalog = self.catalog
        return remote not in catalog or catalog[remote].callable

    # --- changing (each one request on the loop, within the session's timeout) ----------------

    def bind(
        self,
        remote: str,
        *,
        effect: str = READ,
        assume_read_only: bool = False,
        identity: Mapping[str, str | None] | None = None,
        **options: Any,
    ) -> BindingEntry:
        """Bind ``remote`` through purra-mcp with every current binding of its kind; returns its entry.
        ``identity`` holds a write's ``binding_id, binding_revision, scope_id, scope_revision`` (each left out
        or ``None`` takes ``default_identity``'s); ``options`` are ``make_binding``'s."""
        self._check_current()
        self.connection.check_purra_protocol()
        local = options.get("local_name") or default_local_name(remote)
        note = ""
        if effect == READ and self._admitted(remote):  # a refused tool: purra-mcp's refusal comes first, below
            note = self.check_read_declaration(remote, assume_read_only=assume_read_only)
        elif options.get("scope_validator") is allow_any_scope:
            note = " with pj.allow_any_scope: no scope is checked"
        assumed = write_hint(self.catalog[remote].annotations) if effect == READ and note else None
        written = None
        if effect != READ:
            given = {key: value for key, value in (identity or {}).items() if value is not None}
            written = replace(default_identity(self.catalog, self.connection.name, remote, local), **given)
        binding = make_binding(remote, effect=effect, identity=written, **options)
        existing = self._state.bindings.get(remote)
        if existing is not None and same_declaration(existing, binding):
            self.connection.log.add(EVENT_BIND, f"{self.label(remote)} is already bound so; kept as it was")
            return self._state.entry(remote, is_write(binding))
        _check_free(self._state.bindings, remote, local)
        try:
            return self.connection.request(
                lambda client: self.add(client, remote, binding, note, assumed=assumed),
                timeout=self._deadline(f"binding '{remote}'"),
            )
        except McpSessionError as error:
            raise self.explained(remote, error) from None

    async def add(
        self, client: ClientSession, remote: str, binding: Binding, note: str = "", *, assumed: str | None = None
    ) -> BindingEntry:
        """Add ``binding`` through purra-mcp with every current binding of its kind (on the loop); returns its
        entry. ``note`` is logged with it; ``assumed`` is the write hint a read declaration overrode."""
        async with self._lock():
            overrides = {**self._state.assumed, remote: assumed} if assumed else self._state.assumed
            state = replace(self._state, bindings={**self._state.bindings, remote: binding}, assumed=overrides)
            state = await self._discovered(client, state, [is_write(binding)])
            self._install(state)
        self.connection.log.add(
            EVENT_BIND, f"bound {self.label(remote)} as {effect_of(binding)} tool {binding.local_name}{note}"
        )
        return state.entry(remote, is_write(binding))

    def unbind(self, name: str) -> None:
        """Remove the binding with local (or remote) name ``name``."""
        remote = next((r for r, b in self._state.bindings.items() if name in (b.local_name, r)), None)
        if remote is None:
            raise McpSessionError(BINDING_MISSING, f"No tool is bound as '{name}' on '{self.connection.name}'.")
        self.connection.check_usable()
        effect = self.effect(remote)
        self.connection.request(lambda client: self._remove(client, remote), timeout=self._deadline("unbinding"))
        self.connection.log.add(EVENT_BIND, f"unbound {self.label(remote)} ({visible(name)}, {effect})")

    async def _remove(self, client: ClientSession, remote: str) -> None:
        async with self._lock():
            writing = is_write(self._state.bindings[remote])
            bindings = {r: b for r, b in self._state.bindings.items() if r != remote}
            assumed = {r: hint for r, hint in self._state.assumed.items() if r != remote}
            state = replace(self._state, bindings=bindings, assumed=assumed)
            if self.connection.state == STALE:  # a stale catalog cannot be discovered: the next refresh re-binds
                state = state.with_found(writing, None)
            else:
                state = await self._discovered(client, state, [writing])
            self._install(state)

    def refresh(self) -> Catalog:
        """List again (after ``tools/list_changed``); keep the bindings that still hold, drop the others."""
        self.connection.check_usable()
        return self.connection.request(self._refresh, timeout=self._deadline("refreshing the catalog"))

    async def _refresh(self, client: ClientSession) -> Catalog:
        async with self._lock():
            catalog = await build_catalog(self.connection, client)
            before, overridden = self._state.bindings, self._state.assumed
            why = {remote: _no_longer_holds(remote, b, catalog, overridden.get(remote)) for remote, b in before.items()}
            keep = {remote: binding for remote, binding in before.items() if not why[remote]}
            assumed = {remote: hint for remote, hint in overridden.items() if remote in keep}
            dropped = sorted(set(before) - set(keep))
            state = await self._discovered(client, _State(catalog, keep, assumed=assumed), [False, True])
            self._install(state, dropped)
            self.connection.mark_current(catalog.revision)
        for remote in dropped:
            kind = effect_of(before[remote])
            self.connection.log.add(
                EVENT_BIND,
                f"dropped the binding of {self.label(remote)} (a {kind} tool, {before[remote].local_name}): "
                f"{why[remote]}",
            )
        return self.catalog

    async def _discovered(self, client: ClientSession, state: _State, kinds: Iterable[bool]) -> _State:
        """``state`` with purra-mcp's catalogs of the given kinds (``False`` reads, ``True`` writes) found anew."""
        for writing in kinds:
            bindings = state.of_kind(writing)
            state = state.with_found(writing, await self._discover(client, bindings, writing) if bindings else None)
        return state

    async def _discover(self, client: ClientSession, bindings: Mapping[str, Binding], writing: bool) -> McpToolCatalog:
        from purra_mcp import discover_mcp_tools, discover_mcp_write_tools

        connection = self.connection
        limits = call_limits(connection.limits)
        if writing:
            writes = {remote: binding for remote, binding in bindings.items() if is_write(binding)}
            return await discover_mcp_write_tools(
                client, connection.name, writes, monitor=connection.monitor, limits=limits
            )
        reads = {remote: binding for remote, binding in bindings.items() if not is_write(binding)}
        return await discover_mcp_tools(client, connection.name, reads, monitor=connection.monitor, limits=limits)

    def _lock(self) -> anyio.Lock:
        if self._changing is None:
            self._changing = anyio.Lock()
        return self._changing

    def _install(self, state: _State, dropped: Iterable[str] = ()) -> None:
        bound = {remote: (binding.local_name, effect_of(binding)) for remote, binding in state.bindings.items()}
        self._state = replace(state, catalog=state.catalog.with_bindings(bound, dropped))
        self.count = len(state.bindings)

    def _deadline(self, doing: str) -> Deadline:
        return Deadline(self.connection.config.timeout, doing)

    def _check_current(self) -> None:
        connection = self.connection
        connection.check_usable()
        if connection.state == STALE:
            raise McpSessionError(
                CATALOG_STALE,
                f"The tools of '{connection.name}' changed since they were listed. Call refresh() first "
                f"(or %mcp_catalog {connection.name} --refresh).",
            )

    def explained(self, remote: str, error: McpSessionError) -> McpSessionError:
        """purra-mcp's code, with the tool's reasons (or a plain sentence) as the message."""
        catalog = self.catalog
        name = self.connection.name
        shown = visible(remote)
        if error.code == BINDING_MISSING:
            return McpSessionError(
                error.code, f"'{name}' lists no tool '{shown}'; the tools it lists are {KEPT_APART}.",
                server_text=_listed(catalog, remote),
            )  # fmt: skip
        if error.code == "mcp_tools_unavailable":
            return McpSessionError(error.code, f"Cannot bind '{shown}': {catalog.note or error.message}")
        if remote in catalog and catalog[remote].reasons:
            tool = catalog[remote]
            return McpSessionError(
                error.code, f"Cannot bind '{shown}' as a PurrA tool: {reasons_note(tool)}.",
                server_text="\n".join(tool.reasons),
            )  # fmt: skip
        return error


def _listed(catalog: Catalog, asked: str) -> str:
    """The tools of ``catalog`` by name as a person is shown them, those nearest ``asked`` first (for a message's
    ``server_text``: the names are the server's, kept apart from the kit's words)."""
    near = difflib.get_close_matches(asked, [tool.name for tool in catalog.tools], n=3, cutoff=0.6)
    guess = f"did you mean: {', '.join(catalog[name].quoted_label for name in near)}\n" if near else ""
    return f"{guess}tools it lists: {', '.join(tool.quoted_label for tool in catalog.tools) or 'none'}"


def _mapping(found: McpToolCatalog | None) -> dict[str, Any] | None:
    if found is None:
        return None
    mapping: dict[str, Any] = found.snapshot.to_mapping()  # a JSON object; purra-mcp leaves it unannotated
    return mapping


__all__ = ["Bindings", "WriteIdentity", "WriteTerms", "allow_any_scope", "call_limits", "make_binding"]
