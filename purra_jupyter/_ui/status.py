"""A live status line for a session: it redraws itself when the connection or its bindings change, from
whichever thread changed them (a server notification arrives on the loop, not in a cell).

Shown in a cell, it is a widget output under a display id, rewritten at each change: the saved notebook holds the
last state, readable without a kernel, and the extension says under it when its kernel is gone (it once stayed a
green "ready" after the kernel shut down). Placed in a layout, it is an ``HTML`` widget."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from .._base.egress import bundle, cell_text
from .._base.markup import EMPTY, ERROR_COLOR, OK_COLOR, WARN_COLOR, join, tag
from .._base.wire import CLOSED, EVENT_ERROR, FAILED, READY, STALE
from .._connection.connection import Connection
from .._purra.bindings import Bindings
from .records import LiveOutput, widget_bundle

_COLORS = {READY: OK_COLOR, STALE: WARN_COLOR}
AGAIN = "this is its last state; run the cell again to follow the session"


class SessionStatus(widgets.HTML):
    """Name, transport, protocol, state, tool counts, bindings and the last error of one session."""

    def __init__(self, connection: Connection, bindings: Bindings) -> None:
        super().__init__()
        self.connection = connection
        self.bindings = bindings
        self.text = cell_text("")
        self.html = EMPTY
        self._output = LiveOutput()
        connection.observe(self._redraw, names="state")
        bindings.observe(self._redraw, names="count")
        self._redraw()
        self.add_class("purra-status")

    def _redraw(self, change: object = None) -> None:
        connection, catalog = self.connection, self.bindings.catalog
        tools = f"{len(catalog)} tools, {sum(t.callable for t in catalog.tools)} callable"
        bound = ", ".join(tool.bound_label for tool in catalog.tools if tool.bound_as) or "none"
        errors = connection.log.events(EVENT_ERROR)
        last_error = ("last error", errors[-1].detail if errors else "none")
        ended = {CLOSED: ("ended", connection.cause), FAILED: ("last error", connection.cause)}.get(connection.state)
        color = _COLORS.get(connection.state, ERROR_COLOR)
        cells = [
            ("session", connection.name),
            ("transport", f"{connection.link.kind}: {connection.config.target}"),
            ("protocol", connection.protocol_label),
            ("tools", tools),
            ("bound", bound),
            ended or last_error,  # a close asked for is no error
        ]
        body = join((f"{label}: {value}" for label, value in cells), " · ")
        state = tag("b", connection.state, style=f"color:{color}", class_="purra-status-state")
        self.text = cell_text(f"{connection.state} · " + " · ".join(f"{label}: {value}" for label, value in cells))
        self.html = tag("div", state, " · ", body, class_="purra-status", style="text-align:left")
        self.value = str(self.html)
        self._output.update(self._bundle())

    def _bundle(self) -> dict[str, Any]:
        """The status as a widget output: live while its kernel holds it; once the kernel is gone, the extension
        shows the last state with a line that says it is no longer followed."""
        return widget_bundle(self, bundle(self.html, self.text), buttons=[], again=AGAIN)

    def _ipython_display_(self) -> None:
        self._output.show(self._bundle())
