"""The approval widget: nothing is sent to a server until a person approved that exact call.

An approval covers one call (or one batch of calls, see ``evaluate``): server, tool, the digest of
the arguments and the catalog revision.
When the catalog turns stale or the session ends before the decision, the call turns ``void`` and
approving it sends nothing. A decision is final: a second click does nothing.
"""

from __future__ import annotations

import json
import threading
from html import escape
from typing import Any

import ipywidgets as widgets
from traitlets import Any as AnyTrait
from traitlets import Enum, HasTraits

from .calls import CallPlan, Result
from .wire import (
    CALL_STATES,
    CATALOG_STALE,
    CLOSED,
    CONNECTION_CLOSED,
    DENIED,
    DONE,
    EVENT_APPROVAL,
    FAILED,
    PENDING,
    RUNNING,
    STALE,
    VOID,
)

HINTS_LABEL = "server hints — grant no authority"


class PendingCall(HasTraits):
    """A call waiting for a decision; displays as the approval widget. ``result`` is set once decided.

    ``plan`` is a ``CallPlan`` or anything offering the same approval face (``evaluate``'s batch):
    ``session, remote, raw, declaration, question, summary, shown_arguments, detail_rows, digest(), start(how,
    done), refuse(how), voided(code, message), shown(result)``. ``extra`` widgets go below the buttons."""

    state = Enum(CALL_STATES, default_value=PENDING, help="pending | running | done | denied | void")
    result = AnyTrait(None, allow_none=True, help="the Envelope or RawResult (a DataFrame for a batch), once decided")

    def __init__(self, plan: CallPlan | Any, extra: tuple[widgets.Widget, ...] = ()) -> None:
        super().__init__()
        self.plan = plan
        self.revision = plan.session.monitor.revision
        self.arguments_digest = plan.digest()
        self._lock = threading.Lock()
        self.widget = ApprovalWidget(self, extra)
        plan.session.observe(self._session_changed, names="state")

    @property
    def session(self) -> Any:
        return self.plan.session

    def approve(self) -> None:
        """Approve this exact call (from code); the result arrives without blocking the kernel."""
        self._approve("approved with PendingCall.approve()")

    def deny(self) -> None:
        self._deny("denied with PendingCall.deny()")

    def _approve(self, how: str) -> None:
        with self._lock:
            if self.state != PENDING:
                return
            if self._void_reason() is None:
                self.state = RUNNING
        if self.state != RUNNING:
            self._void()
            return
        self.plan.start(how, self._finish)

    def _deny(self, how: str) -> None:
        with self._lock:
            if self.state != PENDING:
                return
            self.state = DENIED
        self._settle(self.plan.refuse(how))

    def _void_reason(self) -> tuple[str, str] | None:
        session = self.session
        if session.state in (CLOSED, FAILED):
            return CONNECTION_CLOSED, f"the session is {session.state}; nothing was sent"
        if session.state == STALE or session.monitor.revision != self.revision:
            return CATALOG_STALE, "the server's tools changed before the approval; nothing was sent"
        return None

    def _void(self) -> None:
        reason = self._void_reason() or (CATALOG_STALE, "the approval no longer holds; nothing was sent")
        with self._lock:
            if self.state not in (PENDING, RUNNING):
                return
            self.state = VOID
        self.session.log.add(
            EVENT_APPROVAL, f"void: {self.plan.remote}, args {self.arguments_digest[:12]}: {reason[1]}"
        )
        self._settle(self.plan.voided(*reason))

    def _session_changed(self, change: dict[str, Any]) -> None:
        if self.state == PENDING and change["new"] in (STALE, CLOSED, FAILED):
            self._void()

    def _finish(self, result: Result) -> None:
        self._settle(result)  # the result is shown before the state says done
        with self._lock:
            self.state = DONE

    def _settle(self, result: Result) -> None:
        self.session.unobserve(self._session_changed, names="state")
        self.result = result
        self.widget.show(*self.plan.shown(result))

    def __repr__(self) -> str:
        return f"<PendingCall {self.plan.session.name}/{self.plan.remote} {self.state}: {self.plan.summary}>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/plain"] = repr(self)
        return bundle


class ApprovalWidget(widgets.VBox):
    """What the person decides on: the server, the tool, what approving declares, the exact arguments."""

    def __init__(self, pending: PendingCall, extra: tuple[widgets.Widget, ...] = ()) -> None:
        plan = pending.plan
        session = plan.session
        tool = session.catalog[plan.remote]
        self.approve_button = widgets.Button(description="Approve", button_style="success", icon="check")
        self.deny_button = widgets.Button(description="Deny", button_style="danger", icon="times")
        self.approve_button.on_click(lambda _: pending._approve("approved by a click"))
        self.deny_button.on_click(lambda _: pending._deny("denied by a click"))
        self.status = widgets.HTML(_status_html(pending.state))
        self.output = widgets.Output()
        pending.observe(lambda change: setattr(self.status, "value", _status_html(change["new"])), names="state")
        super().__init__(
            [
                widgets.HTML(_details_html(pending, tool)),
                widgets.HBox([self.approve_button, self.deny_button, self.status]),
                *extra,
                self.output,
            ]
        )
        self.add_class("purra-approval")

    def show(self, *shown: Any) -> None:
        """Disable the buttons and show the result (from any thread: widget traits and Output only)."""
        self.approve_button.disabled = True
        self.deny_button.disabled = True
        for item in shown:
            self.output.append_display_data(item)


def _status_html(state: str) -> str:
    return f"<span class='purra-approval-state'>{escape(state)}</span>"


def _details_html(pending: PendingCall, tool: Any) -> str:
    plan = pending.plan
    session = plan.session
    path = "raw MCP call, outside the PurrA contract" if plan.raw else "PurrA read tool"
    verdict = "callable under PurrA" if tool.callable else "outside the PurrA profile: " + "; ".join(tool.reasons)
    hints = {key: value for key, value in tool.annotations.items()}
    rows = [
        ("server", f"{session.name} ({session.transport}: {session.config.target})"),
        ("tool", f"{tool.title or tool.name} ({plan.remote}) — {path}"),
        ("verdict", verdict),
    ]
    rows.extend(plan.detail_rows)
    if plan.declaration:
        rows.append(("declares", plan.declaration))
    rows.append((HINTS_LABEL, json.dumps(hints, ensure_ascii=False) if hints else "none"))
    rows.append(("arguments digest", pending.arguments_digest))
    body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows)
    label, shown = plan.shown_arguments
    arguments = escape(json.dumps(shown, indent=2, ensure_ascii=False))
    return (
        f"<div><b>{escape(plan.question)}</b></div><table>{body}</table>"
        f"<div>{escape(label)}</div><pre>{arguments}</pre>"
    )
