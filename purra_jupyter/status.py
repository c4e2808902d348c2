"""A live status line for a session: it redraws itself when the session's traits change, from
whichever thread changed them (a server notification arrives on the loop, not in a cell)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from .wire import EVENT_ERROR, READY

if TYPE_CHECKING:
    from .session import McpSession

_COLORS = {READY: "#1a7f37", "stale": "#9a6700"}


class SessionStatus(widgets.HTML):
    """Name, transport, protocol, state, tool counts, bindings and the last error of one session."""

    def __init__(self, session: McpSession) -> None:
        super().__init__()
        self.session = session
        session.observe(self._redraw, names=["state", "bound_count"])
        self._redraw()
        self.add_class("purra-status")

    def _redraw(self, change: Any = None) -> None:
        session = self.session
        catalog = session._catalog
        tools = f"{sum(t.callable for t in catalog.tools)} callable / {len(catalog)} tools" if catalog else "no catalog"
        bound = ", ".join(binding.local_name for binding in session._bindings.values()) or "none"
        errors = session.log.events(EVENT_ERROR)
        last_error = session.cause or (errors[-1].detail if errors else "none")
        color = _COLORS.get(session.state, "#cf222e")
        cells = [
            ("session", session.name),
            ("transport", f"{session.transport}: {session.config.target}"),
            ("protocol", session.protocol_version or ""),
            ("tools", tools),
            ("bound", bound),
            ("last error", last_error),
        ]
        body = " · ".join(f"{escape(label)}: {escape(value)}" for label, value in cells)
        state = f"<b style='color:{color}' class='purra-status-state'>{escape(session.state)}</b>"
        self.value = f"<div>{state} · {body}</div>"
