"""A person answers what a server asks during a call (``sampling="prompt"``, ``elicitation="prompt"``).

A running cell cannot receive a widget's click (DESIGN §9), so the person is asked where they can answer, and only
there for the call the question belongs to (``Asking.calls``): in the cell that waits for that call (a call approved
in code, ``approval="auto"``), with the kernel's input box; else, when the call runs after a click (the kernel is
idle), in that call's approval widget, which shows a question's widget under it while the call runs. With neither,
nobody can answer: the server gets an error and the log says why. The heading names the server and the call.

What the server asks is its words, shown as text (an address included: never a link, its destination first). What
the person sends is what they see: every field of a form on its own line with its default, and before a form's
answer goes from the input box, exactly what will be sent; a question the server withdraws sends nothing after.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any

import ipywidgets as widgets
from IPython.core.error import StdinNotImplementedError

from .._base import runner
from .._base.consent import Field, defaults, shown_value
from .._base.egress import CellText, bundle, cell_text
from .._base.markup import ERROR_COLOR, OK_COLOR, WARN_COLOR, Html, join, key_value_table, pre, tag
from .._base.raw_schema import checker
from .._base.untrusted import json_within
from .._base.visible import quoted_list
from .._connection.questions import ELICITATION, SAMPLING, Answerer, Asking, Declined
from .asking import Asked, boxes
from .forms import SchemaForm
from .records import LiveOutput

PERSON_MODEL = "a person in the notebook"  # the model a person's reply names (CreateMessageResult.model)
TEXT_CHARS = 2_000  # of each message shown (the session log and transcript keep the question)
MESSAGES_SHOWN = 10  # of a sampling request's messages: the last ones (the latest turn is what is asked)
REPLY_PROMPT = "Your reply as the model (send it empty to decline): "
FORM_PROMPT = ("Your answer as a JSON object (fields left out take the defaults shown above; empty: decline; "
               "'cancel': cancel): ")  # fmt: skip
SEND_PROMPT = "Send exactly this? Type 'yes' to send it, anything else to answer again: "
URL_PROMPT = "Type 'done' once you have finished there ('cancel' to cancel; empty: decline): "
WITHDRAWN = "withdrawn by the server: nothing you typed was sent"
# A call's request goes out before its cell starts waiting for it (and a fast server asks at once): how long a question
# looks for the cell that waits for its call, or its call's widget, before nobody can answer.
FIND_SECONDS = 2.0
FIND_TICK = 0.02
NOBODY = "nobody can answer: no cell waits for its call and its call shows no approval widget"


def prompt_answerer(kind: str) -> Answerer:
    """The person's way of answering ``kind`` (sampling or elicitation): where the question's call is waited for."""

    async def answer(params: dict[str, Any], asking: Asking) -> dict[str, Any]:
        deadline = time.monotonic() + FIND_SECONDS
        while True:
            for call in asking.calls:
                if runner.cell_serves(call):
                    return await runner.in_waiting_cell(lambda: ask_in_cell(kind, asking, params), call)
                box = boxes.of(call)
                if box is not None:  # (its widget is built off the loop, which every session shares)
                    return await ask_in_box(box, await runner.off_loop(QuestionWidget, kind, asking, params))
            if time.monotonic() >= deadline:
                raise LookupError(NOBODY)
            await asyncio.sleep(FIND_TICK)

    return Answerer(answer, person=True)


# --- what the server asks, as text ------------------------------------------------------------------------------


def _words(value: Any) -> str:
    text = value if isinstance(value, str) else json_within(value, TEXT_CHARS + 1)
    return text if len(text) <= TEXT_CHARS else f"{text[:TEXT_CHARS]}… (cut at {TEXT_CHARS:,} characters)"


def _content_words(content: Any) -> str:
    """A message's content: its text, or what kind of block it is (an image is not drawn)."""
    blocks = content if isinstance(content, list) else [content]
    said = []
    for block in blocks[:MESSAGES_SHOWN]:
        if isinstance(block, Mapping) and block.get("type") == "text":
            said.append(_words(block.get("text", "")))
        elif isinstance(block, Mapping):
            said.append(f"[{_words(block.get('type', 'content'))} block]")
    return "\n".join(said)


def _more(items: list[Any]) -> str:
    return f" and {len(items) - MESSAGES_SHOWN:,} more" if len(items) > MESSAGES_SHOWN else ""


def _sampling_rows(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    if params.get("systemPrompt"):
        rows.append(("system prompt", _words(params["systemPrompt"])))
    messages = [message for message in params.get("messages") or [] if isinstance(message, Mapping)]
    if len(messages) > MESSAGES_SHOWN:
        rows.append(("messages", f"the last {MESSAGES_SHOWN} of {len(messages):,} (the transcript keeps them all)"))
    for message in messages[-MESSAGES_SHOWN:]:
        rows.append((f"message ({_words(message.get('role', '?'))})", _content_words(message.get("content"))))
    for key in ("modelPreferences", "maxTokens", "temperature", "stopSequences", "includeContext"):
        if key in params:
            rows.append((key, _words(params[key])))
    if params.get("tools"):
        names = [str(tool.get("name", "?")) for tool in params["tools"] if isinstance(tool, Mapping)]
        rows.append(("tools the model may use", quoted_list(names[:MESSAGES_SHOWN]) + _more(names)))
    return rows


def question_rows(kind: str, params: Mapping[str, Any], asking: Asking) -> list[tuple[str, str]]:
    """What the server asks, as (label, words) rows: an address's destination first, uncut; a form's every field."""
    if kind == SAMPLING:
        return _sampling_rows(params)
    place = asking.destination
    if place is not None:
        return [
            ("goes to", place.origin()),
            ("rest of the address", place.rest or "(nothing)"),
            ("message", _words(params.get("message", ""))),
            ("", "the address is shown as text: open it yourself if you trust where it goes"),
        ]
    fields = [("field", field.line()) for field in asking.fields] or [("fields", "none")]
    return [("message", _words(params.get("message", ""))), *fields]


def _head(kind: str, asking: Asking) -> str:
    who = f"'{asking.server}', during {asking.call},"
    if kind == SAMPLING:
        return f"{who} asks for a message from your model (sampling): reply as the model, or decline"
    if asking.destination is not None:
        return f"{who} asks you to visit an address (elicitation): accept once done, decline or cancel"
    return f"{who} asks for your input (elicitation): accept, decline or cancel"


def question_html(kind: str, asking: Asking, params: Mapping[str, Any], line: str = "") -> Html:
    """The question as escaped HTML, with ``line`` (how it ended) under it."""
    rows = question_rows(kind, params, asking)
    return join([tag("b", _head(kind, asking)), key_value_table(rows, "purra-question-details"),
                 pre(line) if line else None])  # fmt: skip


def question_bundle(kind: str, asking: Asking, params: Mapping[str, Any], line: str = "") -> dict[str, str]:
    """The question as escaped HTML and cell text (the waiting cell's output), with ``line`` under it."""
    rows = question_rows(kind, params, asking)
    said = [f"{label}: {value}" if label else value for label, value in rows]
    text = "\n".join([_head(kind, asking), *said, *([line] if line else [])])
    return bundle(question_html(kind, asking, params, line), cell_text(text))


# --- in the cell that waits: the kernel's input box -------------------------------------------------------------


class Withdrawn(Exception):
    """The question ended before anyone answered it: its call stopped running, or its server withdrew it."""


def ask_in_cell(kind: str, asking: Asking, params: dict[str, Any]) -> dict[str, Any]:
    """Show the question in the waiting cell and take the answer from the kernel's input box."""
    output = LiveOutput()
    output.show(question_bundle(kind, asking, params))
    ended = "not answered"
    try:
        answer = _from_input_box(kind, asking, params)
        ended = f"answered: {answer.get('action', 'a reply')}"
        return answer
    except Declined:
        ended = "declined"
        raise
    except Withdrawn:
        ended = WITHDRAWN
        raise
    except StdinNotImplementedError:
        ended = "not answered: this frontend has no input box"
        raise LookupError("nobody can answer: the waiting cell's frontend has no input box") from None
    finally:
        output.update(question_bundle(kind, asking, params, ended))


def _typed(prompt: str, asking: Asking) -> str:
    """What the person typed; ``Withdrawn`` when the server withdrew its question meanwhile (nothing goes)."""
    typed = input(prompt)
    if asking.withdrawn.is_set():
        raise Withdrawn(WITHDRAWN)
    return typed


def _from_input_box(kind: str, asking: Asking, params: dict[str, Any]) -> dict[str, Any]:
    if kind == SAMPLING:
        reply = _typed(REPLY_PROMPT, asking)
        if not reply.strip():
            raise Declined("the person declined")
        return sampling_reply(reply)
    if asking.destination is not None:
        word = _typed(URL_PROMPT, asking).strip().lower()
        return {"action": "accept" if word == "done" else "cancel" if word == "cancel" else "decline"}
    schema = params.get("requestedSchema") or {}
    while True:
        typed = _typed(FORM_PROMPT, asking).strip()
        if not typed or typed.lower() == "cancel":
            return {"action": "cancel" if typed else "decline"}
        problem, content = form_answer(typed, schema, asking.fields)
        if problem is not None:
            print(not_sent(problem))
            continue
        print(will_send(content))
        if _typed(SEND_PROMPT, asking).strip().lower() in ("yes", "y"):
            return {"action": "accept", "content": content}


def not_sent(problem: str) -> CellText:
    """What the waiting cell prints of a form's answer that does not fit (the problem may quote the schema)."""
    return cell_text(f"Not sent: {problem}. Try again.")


def will_send(content: Mapping[str, Any]) -> CellText:
    """What the waiting cell prints before a form's answer goes: exactly what will be sent."""
    return cell_text(f"Will send: {shown_value(content)}")


def form_answer(typed: str, schema: Mapping[str, Any], fields: tuple[Field, ...]) -> tuple[str | None, dict[str, Any]]:
    """The typed JSON object with the defaults shown for the fields left out, or what is wrong with it."""
    try:
        content = json.loads(typed)
    except ValueError:
        return "that is not JSON", {}
    if not isinstance(content, dict):
        return "the answer must be a JSON object", {}
    unknown = set(content) - {field.name for field in fields}
    if unknown:
        return f"the form has no field {', '.join(shown_value(name) for name in sorted(unknown))}", {}
    content = {**defaults(fields), **content}
    misfit = checker(schema)(content)
    return (None if misfit is None else f"{misfit.path}: {misfit.problem}"), content


def sampling_reply(text: str) -> dict[str, Any]:
    """A person's reply as the ``CreateMessageResult`` a model would send."""
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": PERSON_MODEL,
        "stopReason": "endTurn",
    }


# --- under a running call's approval: a widget ------------------------------------------------------------------


class AnswerForm(SchemaForm):
    """The kit's form of a question's fields (their defaults filled in, on screen); under it, exactly what Accept
    sends."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.sends = widgets.HTML("")
        super().__init__(schema, checker(schema))
        self.review_button.description = "Accept"
        self.children = [*self.children[:-1], self.sends, self.children[-1]]

    def changed(self, touched: str | None = None) -> None:
        super().changed(touched)
        content = None if self.review_button.disabled else self.arguments()
        said = "" if content is None else str(tag("small", f"Accept sends: {shown_value(content)}"))
        self.sends.value = said


class QuestionWidget(Asked):
    """The question, the way to answer it (a reply box, the kit's form of the requested fields, or nothing for an
    address) and its buttons; ``answer`` is set by the first click."""

    def __init__(self, kind: str, asking: Asking, params: dict[str, Any]) -> None:
        self.kind, self.asking, self.params = kind, asking, params
        self.answer: Future[dict[str, Any]] = Future()
        self.reply: widgets.Textarea | None = None
        self.form: AnswerForm | None = None
        self.details = widgets.HTML(str(question_html(kind, asking, params)))
        buttons = self._buttons()
        body: list[widgets.Widget] = [self.details]
        if self.reply is not None:
            body.append(self.reply)
        if self.form is not None:
            body.append(self.form)
        super().__init__([*body, widgets.HBox(buttons)])
        self.add_class("purra-question")

    def _buttons(self) -> list[widgets.Button]:
        if self.kind == SAMPLING:
            self.reply = widgets.Textarea(placeholder="the model's reply", layout={"width": "100%"})
            send = self._button("Send reply", "primary", lambda: sampling_reply(self._reply_text()))
            return [send, self._button("Decline", "danger", self._declined)]
        refusals = [
            self._button("Decline", "danger", lambda: {"action": "decline"}),
            self._button("Cancel", "", lambda: {"action": "cancel"}),
        ]
        if self.asking.destination is not None:
            return [self._button("Done", "primary", lambda: {"action": "accept"}), *refusals]
        self.form = AnswerForm(self.params.get("requestedSchema") or {})  # its own button (Accept) sends, once it fits
        self.form.review_button.on_click(lambda _: self._settle(self._accepted))
        return refusals

    def _button(self, label: str, style: str, answer: Callable[[], dict[str, Any]]) -> widgets.Button:
        button = widgets.Button(description=label, button_style=style)
        button.on_click(lambda _: self._settle(answer))
        return button

    def _reply_text(self) -> str:
        assert self.reply is not None
        return str(self.reply.value)

    def _declined(self) -> dict[str, Any]:
        raise Declined("the person declined")

    def _accepted(self) -> dict[str, Any]:
        assert self.form is not None
        content = self.form.arguments()
        if content is None:
            raise _NotYet
        return {"action": "accept", "content": content}

    def _settle(self, answer: Callable[[], dict[str, Any]]) -> None:
        """The first click that gives an answer settles it (from the kernel's thread); none once withdrawn."""
        if self.answer.done() or self.asking.withdrawn.is_set():
            return
        try:
            self.answer.set_result(answer())
        except _NotYet:
            return
        except Declined as declined:
            self.answer.set_exception(declined)

    def withdraw(self) -> None:
        if not self.answer.done():
            self.answer.set_exception(Withdrawn("its call stopped running before anyone answered"))

    def ended(self, line: str, color: str) -> None:
        """Show how the question ended, without its controls."""
        self.details.value = str(question_html(self.kind, self.asking, self.params, line))
        self.children = [self.details, widgets.HTML(str(tag("span", line, style=f"color:{color}")))]


class _NotYet(Exception):
    """Accept was clicked on a form whose fields do not fit yet (the form says why)."""


async def ask_in_box(box: widgets.Box, question: QuestionWidget) -> dict[str, Any]:
    """Show ``question`` in ``box`` (a running call's) and wait for its answer; it shows how it ended."""
    box.children = (*box.children, question)
    line, color = "withdrawn by the server before anyone answered (or the session ended)", WARN_COLOR
    try:
        answer = await asyncio.wrap_future(question.answer)
        line, color = f"answered: {answer.get('action', 'a reply')}", OK_COLOR
        return answer
    except Declined:
        line, color = "declined", ERROR_COLOR
        raise
    except Withdrawn as withdrawn:
        line = f"not answered: {withdrawn}"
        raise
    finally:
        question.ended(line, color)


__all__ = [
    "ELICITATION",
    "NOBODY",
    "PERSON_MODEL",
    "AnswerForm",
    "QuestionWidget",
    "ask_in_box",
    "ask_in_cell",
    "form_answer",
    "not_sent",
    "prompt_answerer",
    "question_bundle",
    "question_html",
    "sampling_reply",
    "will_send",
]
