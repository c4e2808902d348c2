"""The approval widget: nothing is sent to a server until a person approved that exact call.

An approval covers one call (or one batch of calls, see ``evaluate``): server, tool, the digest of
the arguments and the catalog revision. ``PendingCall`` is the call lifecycle's ``Call`` with this
widget on top: a click approves or denies through the same state machine as code does, so a clicked
call settles exactly like one approved in code (``done``, ``denied`` or ``void``, never stuck), and its
output is rewritten to the call's record (``records``), which the saved notebook keeps.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import ipywidgets as widgets

from .._base import runner
from .._base.activity import Activity
from .._base.egress import bundle, cell_text
from .._base.markup import EMPTY, ERROR_COLOR, WARN_COLOR, Html, join, key_value_table, pre, tag
from .._base.visible import one_line, visible
from .._base.wire import PENDING, RUNNING
from .._evaluation.batches import Rows
from .._evaluation.replays import Replay
from .._purra.calls import UNCHECKED_WORDS, Call, CallPlan, Job
from .._purra.catalog import CALLABLE_UNDER, DESTRUCTIVE, WRITE, name_html
from .asking import boxes
from .records import (
    SETTLED,
    LiveOutput,
    current_cell,
    record_bundle,
    redraw_while,
    short_digest,
    state_word,
    widget_bundle,
)

HINTS_LABEL = "server hints — grant no authority"
SERVER_TITLE_LABEL = "the server's title"
SERVER_DESCRIPTION_LABEL = "the server's description"
AGAIN = "run the cell again to decide"  # what brings back a dead approval's buttons


class PendingCall(Call):
    """A call waiting for a decision; displays as the approval widget, and its output becomes the call's
    static record (decision and result) once it settled. ``result`` is set once decided."""

    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.widget = ApprovalWidget(self)
        self._outputs = [LiveOutput()]  # its own, and a form's when it reviewed this call
        self.observe(self._settled, names="state")

    def follow(self, output: LiveOutput) -> None:
        """Also keep ``output`` (shown elsewhere) showing this call: now, and its record once settled."""
        self._outputs.append(output)
        output.update(self._repr_mimebundle_())

    def unfollow(self, output: LiveOutput) -> None:
        self._outputs.remove(output)

    def _ipython_display_(self) -> None:
        undecided.shown_in_this_cell(self)
        self._outputs[0].show(self._repr_mimebundle_())

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, Any]:
        if self.state in SETTLED:
            return record_bundle(self)
        static = bundle(
            join([_details_html(self), pre(f"{state_word(self)}: decide in a running kernel")]),
            cell_text(f"{state_word(self)}: approval of {self.connection.name}/{self.job.summary}"),
        )
        return widget_bundle(self.widget, static, buttons=self.widget.button_names, again=AGAIN)

    def _settled(self, change: dict[str, Any]) -> None:
        """Settled: every output shows the record (a plain output), and the widget is closed, its handlers gone."""
        if change["new"] in SETTLED:
            record = record_bundle(self)
            for output in list(self._outputs):
                output.update(record)
            self.widget.release()


class UndecidedCalls:
    """The approvals a cell shows that nobody decided yet, by cell: when the cell runs again, they are denied (the
    person's new run replaces them), so none stays subscribed to its session, widgets and all, until it ends."""

    def __init__(self) -> None:
        self._by_cell: dict[str, tuple[str | None, list[weakref.ref[PendingCall]]]] = {}
        self._lock = threading.Lock()

    def shown_in_this_cell(self, call: PendingCall) -> None:
        cell, run = current_cell()
        if cell is None:
            return
        with self._lock:
            last_run, calls = self._by_cell.get(cell, (run, []))
            earlier = calls if last_run != run else []
            self._by_cell[cell] = (run, [ref for ref in calls if last_run == run] + [weakref.ref(call)])
        for ref in earlier:
            stale = ref()
            if stale is not None and stale.state == PENDING:
                stale.deny(RERUN_WORDS)


undecided = UndecidedCalls()
RERUN_WORDS = "its cell ran again before anyone decided"


class ApprovalWidget(widgets.VBox):
    """What the person decides on: the server, the tool, what approving declares, the exact arguments."""

    def __init__(self, call: Call) -> None:
        _hold_widget_channel()
        job = call.job
        self.approve_button = widgets.Button(description="Approve", button_style="success", icon="check")
        self.deny_button = widgets.Button(description="Deny", button_style="danger", icon="times")
        batch = isinstance(job, Rows)
        self.cancel_button = widgets.Button(
            description="Stop" if batch else "Cancel",
            icon="stop",
            disabled=True,
            tooltip="stop waiting; the server is told to cancel what is in flight",
        )
        self.approve_button.on_click(lambda _: call.approve("approved by a click"))
        self.deny_button.on_click(lambda _: call.deny("denied by a click"))
        self.cancel_button.on_click(lambda _: call.cancel("stopped by a click" if batch else "cancelled by a click"))
        self.status = widgets.HTML(str(_status_html(call)))
        self.activity = ActivityView(call.activity)
        self._started = 0.0
        self._unlinks: list[Callable[[], None]] = []  # what ``release`` undoes: the batch's links to its widgets
        progress = []
        if isinstance(job, Rows):  # a bar and counts that follow the rows of the approved batch (refused rows: no)
            bar = widgets.IntProgress(min=0, max=max(job.progress_total, 1), value=job.finished)
            self.counts = widgets.HTML(str(_counts_html(job)))

            def count(_: object) -> None:
                bar.value = job.finished
                self.counts.value = str(_counts_html(job))

            names = ["sent", "finished", "failed"]
            job.observe(count, names=names)
            self._unlinks.append(lambda: job.unobserve(count, names=names))
            progress.append(widgets.HBox([bar, self.counts]))
        else:
            progress.append(self.activity)
        call.observe(self._changed, names="state")
        self._call = call
        self.questions = widgets.VBox([])  # what the server asks while the call runs (see ``_ui.questions``)
        super().__init__(
            [
                widgets.HTML(str(_details_html(call))),
                widgets.HBox([self.approve_button, self.deny_button, self.cancel_button, self.status]),
                *progress,
                self.questions,
            ]
        )
        self.add_class("purra-approval")

    def release(self) -> None:
        """Close this widget and every widget in it, and drop what ties them to the call and its batch (the call's
        record, a plain output, took its place). One widget of the kit's stays open for the kernel's life
        (``_CHANNEL_HOLDER``): JupyterLab 4.6 gives widgets' comms a kernel subshell, which it deletes when the last of
        them closes, and a widget opened meanwhile loses its first messages ("Unknown subshell_id"), so the next
        approval would never show."""
        self._call.unobserve(self._changed, names="state")
        boxes.discard(self.questions)
        for unlink in self._unlinks:
            unlink()
        for widget in reversed(list(_tree(self))):
            widget.close()

    @property
    def button_names(self) -> list[str]:
        """What the buttons say, for the static view (drawn there disabled)."""
        return [button.description for button in (self.approve_button, self.deny_button, self.cancel_button)]

    def _changed(self, change: dict[str, Any]) -> None:
        """Follow the call's state (from any thread: widget traits only); once decided, no more Approve or
        Deny; while running, Cancel (Stop for a batch) and the time it has run."""
        self.status.value = str(_status_html(self._call))
        self.approve_button.disabled = self.deny_button.disabled = True
        self.cancel_button.disabled = change["new"] != RUNNING
        if change["new"] != RUNNING:
            boxes.discard(self.questions)  # (a question still shown there ends unanswered)
        else:  # its server's questions meanwhile are shown under it
            boxes.add(self._call.token, self.questions)
            self._started = time.monotonic()
            runner.submit(redraw_while, lambda: self._call.state == RUNNING, self._draw_status)

    def _draw_status(self) -> None:
        """The state's word; while running, with the time it has run (and its timeout)."""
        running = ""
        if self._call.state == RUNNING:
            timeout = self._call.job.timeout
            limit = f" (timeout {timeout:g} s)" if timeout is not None else ""
            running = f" {time.monotonic() - self._started:.1f} s{limit}"
        self.status.value = str(_status_html(self._call, running))
        self.activity.draw()


class ActivityView(widgets.VBox):
    """What the server says of the running call: a bar once its progress has a total, the task's status, the
    progress' words and its last log lines, as text. Drawn with the status line (``TICK_SECONDS``), and only when
    something changed: a flood of messages costs no more redraws than a quiet server."""

    def __init__(self, activity: Activity) -> None:
        self._activity = activity
        self._drawn = activity.view
        self.bar = widgets.FloatProgress(min=0.0, max=1.0, layout={"display": "none"})
        self.words = widgets.HTML("")
        super().__init__([self.bar, self.words])
        self.add_class("purra-activity")

    def draw(self) -> None:
        view = self._activity.view
        if view is self._drawn:
            return
        self._drawn = view
        fraction = view.progress.fraction if view.progress is not None else None
        if fraction is not None:
            self.bar.value = fraction
            self.bar.layout.display = None
        self.words.value = str(pre("\n".join(view.summary()))) if not view.empty else ""


_CHANNEL_HOLDER: list[widgets.Widget] = []


def _hold_widget_channel() -> None:
    """Open the one widget that keeps widgets' comm channel open for the kernel's life (see ``release``)."""
    if not _CHANNEL_HOLDER:
        _CHANNEL_HOLDER.append(widgets.Widget())


def _tree(widget: widgets.Widget) -> Iterator[widgets.Widget]:
    """``widget`` and every widget it holds in its state (its children, and its layout and style, which are widgets
    of their own), then theirs."""
    yield widget
    for name in widget.keys:
        value = getattr(widget, name, None)
        for held in value if isinstance(value, list | tuple) else (value,):
            if isinstance(held, widgets.Widget):
                yield from _tree(held)


def _status_html(call: Call, running: str = "") -> Html:
    elapsed = tag("span", running, class_="purra-approval-elapsed") if running else None
    return join([tag("span", state_word(call), class_="purra-approval-state"), elapsed])


def _counts_html(job: Rows[Any]) -> Html:
    counts = f"sent {job.sent} · done {job.finished} · failed {job.failed} of {job.progress_total}"
    return tag("span", counts, class_="purra-approval-counts")


_HINT_WORDS = (
    ("readOnlyHint", "read-only"),
    ("destructiveHint", "destructive"),
    ("idempotentHint", "idempotent"),
    ("openWorldHint", "open-world"),
)
RAW_BANNER = "raw MCP call — outside the PurrA contract: no envelope, no PurrA checks on the result"
UNCHECKED_BANNER = f"arguments {UNCHECKED_WORDS}"  # a call sent with check_arguments=False


def hint_words(annotations: Mapping[str, Any]) -> list[str]:
    """A tool's behaviour hints as words ("read-only", "not destructive"); the server's claims, nothing more."""
    words = []
    for key, word in _HINT_WORDS:
        if isinstance(annotations.get(key), bool):
            words.append(word if annotations[key] else f"not {word}")
    return words


HINTED_WRITE_BANNER = "ITS SERVER SAYS IT WRITES ({}) — approving may let this call change data on the server"
EFFECT_BANNERS = {
    WRITE: "WRITE — approving lets this call change data on the server",
    DESTRUCTIVE: "DESTRUCTIVE — approving lets this call delete or overwrite data on the server",
}


def _banner(css_class: str, text: str, border: str, color: str = "inherit") -> Html:
    """A bold line in a coloured frame (the text keeps the page's colour unless ``color`` says otherwise: the
    warning colour reads too faintly as text)."""
    style = f"margin:4px 0;padding:2px 8px;font-weight:bold;color:{color};border:2px solid {border}"
    return tag("div", text, class_=css_class, style=style)


TITLE_CHARS = 120  # the server's title, on one line
DESCRIPTION_CHARS = 400  # the server's description, on one line: a few lines high at most


def _name_html(call: Call) -> Html:
    """What will run, first: the tool's real name, large, invisible characters shown as escapes and a look-alike
    marked (a replay's tools, each with its count of calls); the server it runs on."""
    job = call.job
    connection = call.connection
    style = "font-size:1.15em;font-weight:bold"
    replay = isinstance(job, Replay)
    name = tag("span", job.tools_line, style=style) if isinstance(job, Replay) else name_html(job.tool, style=style)
    return tag(
        "div",
        tag("small", "tools" if replay else "tool"),
        " ",
        name,
        " ",
        tag("small", "on server"),
        " ",
        tag("code", connection.name),
        class_="purra-approval-tool",
        style="text-align:left;margin:4px 0",
    )


def _details_html(call: Call) -> Html:
    job = call.job
    connection = call.connection
    path = "raw MCP call" if job.raw else f"PurrA {job.effect} tool" + (" (confirm policy)" if job.write else "")
    rows = [
        ("server", f"{connection.name} ({connection.link.kind}: {connection.config.target})"),
        ("call", path),
    ]
    tool = None if isinstance(job, Replay) else job.tool  # (a replay's tools are many: each call shows its own)
    if tool is not None:
        verdict = CALLABLE_UNDER if tool.callable else "outside the PurrA profile: " + "; ".join(tool.reasons)
        if tool.title:
            rows.append((SERVER_TITLE_LABEL, one_line(tool.title, TITLE_CHARS)))
        if tool.description:
            rows.append((SERVER_DESCRIPTION_LABEL, one_line(tool.description, DESCRIPTION_CHARS)))
        rows.append(("verdict", visible(verdict)))
    rows.extend(job.detail_rows)
    if job.declaration:
        rows.append(("declares", job.declaration))
    badge = "display:inline-block;padding:0 6px;margin-right:4px;border:1px solid currentcolor;border-radius:8px"
    words = hint_words(tool.annotations) if tool is not None else []
    hints = join(tag("span", word, class_="purra-hint", style=badge) for word in words)
    facts = tag(
        "div",
        tag("small", f"{HINTS_LABEL}:"),
        " ",
        hints or "none",
        " · ",
        tag("small", "arguments digest"),
        " ",
        tag("code", short_digest(call.arguments_digest), class_="purra-digest", title=call.arguments_digest),
        style="text-align:left;margin:4px 0",
    )
    banner = _banner("purra-raw-banner", RAW_BANNER, WARN_COLOR) if job.raw else EMPTY
    if isinstance(job, CallPlan) and not job.check_arguments:
        banner += _banner("purra-unchecked-banner", UNCHECKED_BANNER, WARN_COLOR)
    if job.write is not None:
        css = f"purra-effect-banner purra-effect-{job.effect}"
        if job.effect == DESTRUCTIVE:
            banner += _banner(css, EFFECT_BANNERS[job.effect], ERROR_COLOR, ERROR_COLOR)
        else:
            banner += _banner(css, EFFECT_BANNERS[job.effect], WARN_COLOR)
    elif job.write_hint is not None:  # not declared a write, and its server says it is one: a person decides
        banner += _banner("purra-effect-banner purra-hinted-write", HINTED_WRITE_BANNER.format(job.write_hint),
                          WARN_COLOR)  # fmt: skip
    label, shown = job.shown_arguments
    arguments = pre(json.dumps(shown, indent=2, ensure_ascii=False))
    table = key_value_table(rows, "purra-approval-details")
    question = tag("div", tag("b", job.question), style="text-align:left")
    return join([question, _name_html(call), banner, table, facts, tag("div", label), arguments])
