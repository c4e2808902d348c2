"""A live status line for a session: it redraws itself when the connection or its bindings change, from
whichever thread changed them (a server notification arrives on the loop, not in a cell)."""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets

from ..bindings import Bindings
from ..connection import Connection
from ..wire import EVENT_ERROR, READY, STALE

_COLORS = {READY: "#1a7f37", STALE: "#9a6700"}


class SessionStatus(widgets.HTML):
    """Name, transport, protocol, state, tool counts, bindings and the last error of one session."""

    def __init__(self, connection: Connection, bindings: Bindings) -> None:
        super().__init__()
        self.connection = connection
        self.bindings = bindings
        connection.observe(self._redraw, names="state")
        bindings.observe(self._redraw, names="count")
        self._redraw()
        self.add_class("purra-status")

    def _redraw(self, change: Any = None) -> None:
        connection, catalog = self.connection, self.bindings.catalog
        tools = f"{sum(t.callable for t in catalog.tools)} callable / {len(catalog)} tools"
        bound = ", ".join(self.bindings.local_names()) or "none"
        errors = connection.log.events(EVENT_ERROR)
        last_error = connection.cause or (errors[-1].detail if errors else "none")
        color = _COLORS.get(connection.state, "#cf222e")
        cells = [
            ("session", connection.name),
            ("transport", f"{connection.transport}: {connection.config.target}"),
            ("protocol", connection.protocol_version or ""),
            ("tools", tools),
            ("bound", bound),
            ("last error", last_error),
        ]
        body = " · ".join(f"{escape(label)}: {escape(value)}" for label, value in cells)
        state = f"<b style='color:{color}' class='purra-status-state'>{escape(connection.state)}</b>"
        self.value = f"<div>{state} · {body}</div>"
