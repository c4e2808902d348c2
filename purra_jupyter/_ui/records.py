"""Saved records: the outputs a live object leaves in the notebook file.

A widget lives as long as its kernel; a notebook keeps outputs. So each live object of ours (an approval,
a form's reviewed call, a status line) is shown under a display id, and once it has something final to
say, that output is rewritten to a static bundle (plain text, escaped HTML, and our MIME type for the
extension) that needs neither a kernel nor widget state to be read.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython import get_ipython
from IPython.display import display, update_display

from .._base.egress import TEXT_HTML, TEXT_PLAIN, bundle, cell_text, text_bundle
from .._base.frames import frame_html, is_kit_frame
from .._base.markup import join, pre, tag, trusted
from .._base.wire import (
    CANCELED,
    DENIED,
    DONE,
    ENVELOPE_MIME,
    INTERRUPTED,
    PENDING,
    RAW_RESULT_MIME,
    RUNNING,
    TIMEOUT,
    VOID,
    WIDGET_MIME,
    WIDGET_VIEW_MIME,
)
from .._purra.catalog import READ
from .._purra.envelope import Envelope, RawResult

if TYPE_CHECKING:
    import ipywidgets as widgets  # (not at run time: %load_ext imports this module, ipywidgets is slow)

    from .._purra.calls import Call

SETTLED = (DONE, DENIED, VOID)
DIGEST_SHOWN = 12  # hex digits of a digest shown; the full one is in the title and the data
TICK_SECONDS = 0.25  # how often a live line (elapsed time) is redrawn
_OUR_MIMES = (ENVELOPE_MIME, RAW_RESULT_MIME)
# How a call ended that a person stopped, or that ran out of time, in words (its code is in the result).
_ENDED_WORDS = {INTERRUPTED: "cancelled", CANCELED: "cancelled", TIMEOUT: "timed out"}


def current_cell() -> tuple[str | None, str | None]:
    """The cell that runs now (its id, as JupyterLab, Notebook 7 and nbclient send it) and this run of it (the
    request's message id); ``None`` for either outside a kernel or from a frontend that does not say."""
    kernel = getattr(get_ipython(), "kernel", None)
    try:
        parent = kernel.get_parent() if kernel is not None else {}
    except Exception:  # (a kernel without a parent message: nothing runs)
        return None, None
    cell = (parent.get("metadata") or {}).get("cellId")
    run = (parent.get("header") or {}).get("msg_id")
    return (cell if isinstance(cell, str) else None), (run if isinstance(run, str) else None)


def in_kernel() -> bool:
    """Whether outputs go to a notebook frontend (a kernel), where a display can be rewritten."""
    return getattr(get_ipython(), "kernel", None) is not None


class LiveOutput:
    """One display id: every output shown under it is rewritten by ``update`` (from any thread; the
    frontend finds the outputs by id). Before ``show``, or in a terminal (which would print each update
    anew), there is nothing to rewrite."""

    def __init__(self) -> None:
        self.display_id = uuid.uuid4().hex
        self.shown = False

    def show(self, bundle: dict[str, Any]) -> None:
        display(bundle, raw=True, display_id=self.display_id)
        self.shown = in_kernel()

    def update(self, bundle: dict[str, Any]) -> None:
        """Rewrite the outputs. Run in an empty context: a task on the loop carries a copy of the context
        of the cell that started it, and with it that cell's message as the kernel's parent; without it the
        kernel uses the message it handles now, which is what a notebook runner (nbclient) listens to."""
        if self.shown:
            contextvars.Context().run(update_display, bundle, raw=True, display_id=self.display_id)


async def redraw_while(running: Callable[[], bool], draw: Callable[[], None]) -> None:
    """``draw()`` every ``TICK_SECONDS`` while ``running()``, then once more (on the loop, no thread of its
    own; every draw on one thread, so the last one shows how it ended)."""
    while running():
        draw()
        await asyncio.sleep(TICK_SECONDS)
    draw()


def widget_labels(again: str) -> dict[str, str]:
    """The lines the extension shows under a widget's static view, by why its live widget is not there;
    ``again`` says what brings it back (e.g. "run the cell again to decide")."""
    return {
        "restarted": f"the kernel restarted: {again}",
        "gone": f"this widget's kernel is gone: {again}",
        "noKernel": f"no kernel: {again}",
    }


def widget_bundle(
    widget: widgets.Widget, static: dict[str, str], *, buttons: Sequence[str], again: str
) -> dict[str, Any]:
    """The bundle of every widget output of ours: ipywidgets' own (the live widget, for any frontend), ``static``
    (escaped HTML and plain text, for readers without widgets), and our MIME type with the widget's model id and
    that static view, which the extension shows whenever the kernel holding the model is gone, ``buttons``
    drawn disabled with ``widget_labels(again)`` saying why."""
    live = dict(widget._repr_mimebundle_() or {})
    bundle: dict[str, Any] = {**live, **static}
    view = live.get(WIDGET_VIEW_MIME)
    if isinstance(view, dict) and view.get("model_id"):
        bundle[WIDGET_MIME] = {
            "model_id": view["model_id"],
            "html": static[TEXT_HTML],
            "text": static[TEXT_PLAIN],
            "buttons": list(buttons),
            "labels": widget_labels(again),
        }
    return bundle


def bundle_of(item: object) -> dict[str, Any]:
    """A MIME bundle for one of the things a record holds (our results, a summary, a DataFrame)."""
    if hasattr(item, "_repr_mimebundle_"):
        return dict(item._repr_mimebundle_())
    if is_kit_frame(item):  # (its text as it is: ``frames``)
        return bundle(frame_html(item), cell_text(repr(item)))
    if hasattr(item, "_repr_html_"):  # (a DataFrame: pandas escapes its cells)
        return bundle(trusted(item._repr_html_()), cell_text(repr(item)))
    return text_bundle(repr(item))


def combined(bundles: list[dict[str, Any]]) -> dict[str, Any]:
    """One bundle from several, in order: their HTML (or escaped text) and plain text joined; the first
    of each other MIME type kept."""
    out: dict[str, Any] = {}
    for each in bundles:
        for mime, data in each.items():
            if mime not in (TEXT_HTML, TEXT_PLAIN):
                out.setdefault(mime, data)
    # each bundle's HTML is a renderer's finished markup (ours, or pandas' table): taken as it is; each plain text
    # was made by ``egress.cell_text``
    html = join(trusted(b[TEXT_HTML]) if b.get(TEXT_HTML) else pre(b.get(TEXT_PLAIN, "")) for b in bundles)
    text = cell_text("\n".join(b[TEXT_PLAIN] for b in bundles if b.get(TEXT_PLAIN)))
    return {**out, **bundle(html, text)}


def state_word(call: Call) -> str:
    """What a person reads for a call's state: pending, running, approved, cancelled, timed out, failed, denied or
    void."""
    if call.state == DONE:
        result = call.result
        if isinstance(result, Envelope | RawResult) and not result.ok:  # a batch's rows say theirs
            return _ENDED_WORDS.get(result.error_code or "", "failed")
        return "approved"
    return {PENDING: "pending", RUNNING: "approved, running"}.get(call.state, call.state)


def short_digest(digest: str) -> str:
    return digest[:DIGEST_SHOWN] + "…"


def decision_data(call: Call) -> dict[str, Any]:
    """The record's decision as the MIME payloads carry it: the arguments sent go with their digest, so a reader
    of the notebook sees what was sent (the renderer folds them), as the HTML fallback shows them."""
    decision = call.decision
    label, shown = call.job.shown_arguments
    return {
        "state": state_word(call),
        "how": decision.how if decision else "",
        "at": decision.at.isoformat(timespec="seconds") if decision else "",
        "server": call.connection.name,
        "tool": call.job.label,  # as a person is shown it: invisible characters escaped, a look-alike marked
        "effect": call.job.effect,
        "argumentsDigest": call.arguments_digest,
        "argumentsLabel": label,
        "arguments": shown,
        "activityLabel": ACTIVITY_LABEL,
        "activity": call.activity.view.summary(),  # the server's words: drawn as text
    }


def _decision_head(call: Call, data: dict[str, Any]) -> dict[str, str]:
    """The record's first line, e.g. ``approved (approved by a click) at 2026-12-01 15:40:02 · demo/add_note
    (write) · arguments digest 1a2b…``, and its HTML with the arguments folded below."""
    at = data["at"].replace("T", " ")[:19]
    effect = f" ({data['effect']})" if data["effect"] != READ else ""
    digest = short_digest(call.arguments_digest)
    arguments = json.dumps(data["arguments"], indent=2, ensure_ascii=False)
    html = tag(
        "div",
        tag("b", data["state"]),
        f" ({data['how']}) at {at} · {data['server']}/",
        tag("code", data["tool"]),
        f"{effect} · arguments digest ",
        tag("code", digest, title=call.arguments_digest),
        tag("details", tag("summary", data["argumentsLabel"]), pre(arguments)),
        class_="purra-decision",
        style="text-align:left",
    )
    tool = f"{data['server']}/{data['tool']}{effect}"
    return bundle(html, cell_text(f"{data['state']} ({data['how']}) at {at} · {tool} · arguments digest {digest}"))


def record_bundle(call: Call) -> dict[str, Any]:
    """The static record of a settled call: its decision, what the server said while it ran (if it did), then
    the full bundle of what it showed."""
    data = decision_data(call)
    bundles = [bundle_of(item) for item in call.job.shown(call.result)]
    for each in bundles:
        for mime in _OUR_MIMES:
            if mime in each:
                each[mime] = {**each[mime], "decision": data}
    said = data["activity"]
    activity = [text_bundle("\n".join([ACTIVITY_LABEL + ":", *(f"  {line}" for line in said)]))] if said else []
    return combined([_decision_head(call, data), *activity, *bundles])


ACTIVITY_LABEL = "what the server said while the call ran (its words, shown as text)"
