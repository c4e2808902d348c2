"""MCP Apps (SEP-1865, stable 2026-01-26) as a tool listing and a view resource declare it: pure rules, no I/O.

A tool names its view with ``_meta.ui.resourceUri`` (or the deprecated flat ``_meta["ui/resourceUri"]``), a
``ui://`` resource of MIME type ``text/html;profile=mcp-app``; ``_meta.ui.visibility`` says who may call it
(``model``, ``app``; both when omitted). The resource declares the origins its view needs (``_meta.ui.csp``) and
the browser features it asks for (``_meta.ui.permissions``). Every value here comes from a server nobody trusts:
a domain the kit cannot put into a Content-Security-Policy as one plain origin is refused, with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

EXTENSION = "io.modelcontextprotocol/ui"  # the extension's identifier in the client's capabilities
VIEW_MIME = "text/html;profile=mcp-app"
LEGACY_URI_KEY = "ui/resourceUri"
UI_SCHEME = "ui://"
MODEL, APP = "model", "app"
# The origins a resource may declare, by the CSP directives they open (the spec's McpUiResourceCsp).
CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
# One origin, as a CSP host-source can hold it: a scheme the web serves, a host (a leading "*." for its
# subdomains), an optional port. Nothing else (no path, quote, space, semicolon or keyword) reaches a policy.
_ORIGIN = re.compile(
    r"(https|wss|http|ws)://(\*\.)?[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?"
)
MAX_DOMAINS = 32  # per directive: more is refused (a view is a small thing; a long policy hides what it opens)


@dataclass(frozen=True, slots=True)
class ToolApp:
    """What a tool's listing says of its view: the ``ui://`` URI (``None``: no view) and who may call it."""

    uri: str | None
    visibility: tuple[str, ...]
    problem: str = ""  # why a declared view is not taken (a URI that is not ui://, a visibility that is not a list)

    @property
    def app_only(self) -> bool:
        """Visible to the view, not to a model: a PurrA host would not offer it to one."""
        return MODEL not in self.visibility

    @property
    def callable_by_view(self) -> bool:
        return APP in self.visibility


def client_extensions(views: bool) -> dict[str, Any]:
    """The protocol extensions the client advertises in ``initialize``: MCP Apps' when tools' own views are on."""
    return {EXTENSION: {"mimeTypes": [VIEW_MIME]}} if views else {}


def tool_app(listing: Mapping[str, Any]) -> ToolApp:
    """The view a tool listing (``tools/list`` JSON) declares, with the spec's defaults."""
    meta = listing.get("_meta")
    meta = meta if isinstance(meta, Mapping) else {}
    ui = meta.get("ui")
    ui = ui if isinstance(ui, Mapping) else {}
    uri = ui.get("resourceUri", meta.get(LEGACY_URI_KEY))
    visibility = ui.get("visibility", [MODEL, APP])
    problems = []
    if not isinstance(visibility, list) or not all(isinstance(who, str) for who in visibility):
        problems.append("_meta.ui.visibility is not a list of names: taken as the default (model, app)")
        visibility = [MODEL, APP]
    if uri is not None and (not isinstance(uri, str) or not uri.startswith(UI_SCHEME)):
        problems.append(f"_meta.ui.resourceUri is not a {UI_SCHEME} URI: no view")
        uri = None
    return ToolApp(uri, tuple(who for who in visibility if who in (MODEL, APP)), "; ".join(problems))


@dataclass(frozen=True, slots=True)
class Domains:
    """The origins a view's resource declared, per CSP key (the valid ones), and the ones refused with why."""

    declared: Mapping[str, tuple[str, ...]]
    refused: tuple[str, ...] = ()
    permissions: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return any(self.declared.values()) or bool(self.permissions)

    def to_json(self) -> dict[str, Any]:
        return {key: list(values) for key, values in self.declared.items() if values}

    def lines(self) -> list[str]:
        """What a person reads before allowing them: one line per directive, the refused ones after."""
        lines = [f"{key}: {', '.join(values)}" for key, values in self.declared.items() if values]
        if self.permissions:
            lines.append(f"permissions: {', '.join(self.permissions)}")
        return lines + [f"refused: {why}" for why in self.refused]


NO_DOMAINS = Domains({key: () for key in CSP_KEYS})


def resource_domains(meta: Any) -> Domains:
    """The origins and permissions in a view resource's ``_meta`` (its ``ui.csp`` and ``ui.permissions``)."""
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    if not isinstance(ui, Mapping):
        return NO_DOMAINS
    csp = ui.get("csp")
    csp = csp if isinstance(csp, Mapping) else {}
    declared: dict[str, tuple[str, ...]] = {}
    refused: list[str] = []
    for key in CSP_KEYS:
        values = csp.get(key) or []
        if not isinstance(values, list):
            refused.append(f"{key} is not a list")
            values = []
        kept: list[str] = []
        for value in values[: MAX_DOMAINS + 1]:
            problem = origin_problem(value)
            if problem:
                refused.append(f"{key} {str(value)[:80]!r}: {problem}")
            elif len(kept) == MAX_DOMAINS:
                refused.append(f"{key}: more than {MAX_DOMAINS} origins, the rest not taken")
            else:
                kept.append(value)
        declared[key] = tuple(dict.fromkeys(kept))
    asked = ui.get("permissions")
    asked = asked if isinstance(asked, Mapping) else {}
    permissions = tuple(name for name in PERMISSIONS if name in asked)
    return Domains(declared, tuple(refused), permissions)


def origin_problem(value: Any) -> str:
    """Why ``value`` cannot be one origin of a policy, or ``""``."""
    if not isinstance(value, str):
        return "not a string"
    if not _ORIGIN.fullmatch(value):
        return "not a plain origin (scheme://host[:port], lower case, a leading *. for subdomains)"
    return ""
