"""The current catalog and the read bindings made from it, through purra-mcp's ``discover_mcp_tools``.

``Bindings`` is the one owner of that state: it changes on the loop, one change at a time (bind, unbind,
refresh, the binding a call declares), and readers on any thread get a consistent snapshot. Each change
ends within one total deadline, the session's timeout.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
from traitlets import HasTraits, Int

from .catalog import Catalog, build_catalog, default_local_name
from .connection import Connection, Deadline
from .errors import HostCodeError, McpSessionError
from .markup import key_value_table
from .wire import BINDING_INVALID, BINDING_MISSING, CATALOG_STALE, EVENT_BIND, STALE

if TYPE_CHECKING:
    from mcp import ClientSession
    from purra_mcp import McpToolBinding, McpToolCatalog, McpToolLimits

MAX_TIMEOUT_MS = 300_000


class BindingEntry(dict):
    """purra-mcp's snapshot entry of one binding (a plain dict), shown as a small table."""

    def _rows(self) -> list[tuple[str, str]]:
        policy = self.get("policy") or {}
        return [
            ("tool", str(self.get("remoteName"))),
            ("local name", str(self.get("localName"))),
            ("title", str(policy.get("title", ""))),
            ("mode", str(getattr(policy.get("mode"), "value", policy.get("mode")))),
            ("risk", str(getattr(policy.get("riskLevel"), "value", policy.get("riskLevel")))),
            ("concurrency safe", "yes" if self.get("concurrencySafe") else "no"),
        ]

    def __repr__(self) -> str:
        return "BindingEntry " + ", ".join(f"{key}: {value}" for key, value in self._rows())

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": key_value_table(self._rows(), "purra-binding")}


@dataclass(frozen=True)
class _State:
    catalog: Catalog  # its tools carry ``bound_as``
    bindings: Mapping[str, McpToolBinding] = field(default_factory=dict)  # by remote name
    found: McpToolCatalog | None = None  # purra-mcp's snapshot and registrations for ``bindings``


def make_binding(
    remote: str,
    *,
    local_name: str | None = None,
    title: str | None = None,
    scope_validator: Callable[..., Any] | None = None,
    concurrency_safe: bool = False,
) -> McpToolBinding:
    """A purra-mcp read binding. ``scope_validator(state, arguments, signal)`` may be sync or async; if it
    raises, the call settles with ``mcp_host_error`` (the host's code failed, not the server)."""
    from purra.contracts import ToolPolicy
    from purra_mcp import McpAdapterError, McpToolBinding

    validator = _guarded_validator(scope_validator) if callable(scope_validator) else scope_validator
    try:
        return McpToolBinding(
            local_name or default_local_name(remote),
            ToolPolicy(mode="read", title=title or remote, risk_level="read"),
            validator,
            concurrency_safe,
        )
    except (McpAdapterError, ValueError, TypeError):
        raise McpSessionError(
            BINDING_INVALID,
            f"Cannot bind '{remote}' as {local_name or default_local_name(remote)!r}: local names are "
            "1 to 64 letters, digits or '_' not starting with a digit, the title non-empty, and the "
            "scope validator callable.",
        ) from None


def _guarded_validator(validator: Callable[..., Any]) -> Callable[..., Any]:
    async def validate(state: Any, arguments: Any, signal: Any = None) -> Any:
        try:
            decision = validator(state, arguments, signal)
            return await decision if inspect.isawaitable(decision) else decision
        except Exception as error:
            raise HostCodeError(
                f"the scope validator raised {error.__class__.__name__}: {error}; nothing was sent"
            ) from error

    return validate


def call_limits(limits: McpToolLimits) -> McpToolLimits:
    """``limits`` with purra-mcp's longest request time: each call is bounded by the kit's per-call timeout
    instead (default: the session's ``timeout_ms``), which may be longer or shorter."""
    return _with_longest_timeout(limits)


@functools.lru_cache(maxsize=64)
def _with_longest_timeout(limits: McpToolLimits) -> McpToolLimits:
    return replace(limits, timeout_ms=MAX_TIMEOUT_MS)


class Bindings(HasTraits):
    """The catalog as last listed and the read bindings, for one connection."""

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
        """purra-mcp's snapshot of the read bindings; ``None`` until a tool is bound."""
        found = self._state.found
        return found.snapshot.to_mapping() if found is not None else None

    def binding(self, remote: str) -> McpToolBinding | None:
        return self._state.bindings.get(remote)

    def local_name(self, remote: str) -> str:
        """The binding's local name, or the one binding ``remote`` would give it."""
        binding = self.binding(remote)
        return binding.local_name if binding is not None else default_local_name(remote)

    def local_names(self) -> list[str]:
        return [binding.local_name for binding in self._state.bindings.values()]

    def remote_name(self, name: str) -> str:
        """The remote name of a local or remote ``name``; ``mcp_binding_missing`` if there is none."""
        state = self._state
        for remote, binding in state.bindings.items():
            if binding.local_name == name:
                return remote
        if name in state.bindings or name in state.catalog:
            return name
        listed = ", ".join(tool.name for tool in state.catalog.tools[:12]) or "none"
        raise McpSessionError(
            BINDING_MISSING, f"'{self.connection.name}' has no tool or binding '{name}'; it lists: {listed}."
        )

    def registration(self, remote: str) -> Any:
        """purra-mcp's registration (schema, policy, handler) of the bound tool ``remote``."""
        state = self._state
        local = state.bindings[remote].local_name
        assert state.found is not None
        return next(r for r in state.found.registrations if r.schema.name == local)

    # --- changing (each one request on the loop, within the session's timeout) ----------------

    def bind(self, remote: str, **options: Any) -> dict[str, Any]:
        """Bind ``remote`` as a read tool through purra-mcp with every current binding; returns its entry.
        ``options`` are ``make_binding``'s."""
        self._check_current()
        if remote in self._state.bindings:
            raise McpSessionError(
                BINDING_INVALID,
                f"'{remote}' is already bound as '{self._state.bindings[remote].local_name}'; unbind it first.",
            )
        binding = make_binding(remote, **options)
        try:
            return self.connection.request(
                lambda client: self.add(client, remote, binding), timeout=self._deadline(f"binding '{remote}'")
            )
        except McpSessionError as error:
            raise self.explained(remote, error) from error

    async def add(self, client: ClientSession, remote: str, binding: McpToolBinding) -> dict[str, Any]:
        """Add ``binding`` through purra-mcp with every current binding (on the loop); returns its entry."""
        async with self._lock():
            bindings = {**self._state.bindings, remote: binding}
            found = await self._discover(client, bindings)
            self._install(replace(self._state, bindings=bindings, found=found))
        self.connection.log.add(EVENT_BIND, f"bound {remote} as read tool {binding.local_name}")
        entries = found.snapshot.to_mapping()["entries"]
        return BindingEntry(next(entry for entry in entries if entry["remoteName"] == remote))

    def unbind(self, name: str) -> None:
        """Remove the binding with local (or remote) name ``name``."""
        remote = next((r for r, b in self._state.bindings.items() if name in (b.local_name, r)), None)
        if remote is None:
            raise McpSessionError(BINDING_MISSING, f"No tool is bound as '{name}' on '{self.connection.name}'.")
        self.connection.check_usable()
        self.connection.request(lambda client: self._remove(client, remote), timeout=self._deadline("unbinding"))
        self.connection.log.add(EVENT_BIND, f"unbound {remote} ({name})")

    async def _remove(self, client: ClientSession, remote: str) -> None:
        async with self._lock():
            bindings = {r: b for r, b in self._state.bindings.items() if r != remote}
            # A stale catalog cannot be discovered again; what is left is re-bound by the next refresh.
            current = bindings and self.connection.state != STALE
            found = await self._discover(client, bindings) if current else None
            self._install(replace(self._state, bindings=bindings, found=found))

    def refresh(self) -> Catalog:
        """List again (after ``tools/list_changed``); keep the bindings that still hold, drop the others."""
        self.connection.check_usable()
        return self.connection.request(self._refresh, timeout=self._deadline("refreshing the catalog"))

    async def _refresh(self, client: ClientSession) -> Catalog:
        async with self._lock():
            catalog = await build_catalog(self.connection, client)
            before = self._state.bindings
            keep = {r: b for r, b in before.items() if r in catalog and catalog[r].callable}
            dropped = sorted(set(before) - set(keep))
            found = await self._discover(client, keep) if keep else None
            self._install(_State(catalog, keep, found), dropped)
            self.connection.mark_current(catalog.revision)
        for remote in dropped:
            why = "; ".join(catalog[remote].reasons) if remote in catalog else "the server no longer lists it"
            self.connection.log.add(EVENT_BIND, f"dropped the binding of {remote}: {why}")
        return self.catalog

    async def _discover(self, client: ClientSession, bindings: Mapping[str, McpToolBinding]) -> McpToolCatalog:
        from purra_mcp import discover_mcp_tools

        connection = self.connection
        return await discover_mcp_tools(
            client, connection.name, dict(bindings), monitor=connection.monitor, limits=call_limits(connection.limits)
        )

    def _lock(self) -> anyio.Lock:
        if self._changing is None:
            self._changing = anyio.Lock()
        return self._changing

    def _install(self, state: _State, dropped: Iterable[str] = ()) -> None:
        names = {remote: binding.local_name for remote, binding in state.bindings.items()}
        self._state = replace(state, catalog=state.catalog.with_bindings(names, dropped))
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
        if error.code == BINDING_MISSING:
            listed = ", ".join(tool.name for tool in catalog.tools[:12]) or "none"
            return McpSessionError(error.code, f"'{name}' lists no tool '{remote}'; it lists: {listed}.")
        if error.code == "mcp_tools_unavailable":
            return McpSessionError(error.code, f"Cannot bind '{remote}': {catalog.note or error.message}")
        if remote in catalog and catalog[remote].reasons:
            reasons = "; ".join(catalog[remote].reasons)
            return McpSessionError(error.code, f"Cannot bind '{remote}' as a PurrA read tool: {reasons}")
        return error


__all__ = ["Bindings", "call_limits", "make_binding"]
