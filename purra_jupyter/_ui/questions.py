"""A person answers what a server asks during a call (``sampling="prompt"``, ``elicitation="prompt"``).

A running cell cannot receive a widget's click (DESIGN §9), so the person is asked where they can answer: in the
cell that waits for the call (a call approved in code, ``approval="auto"``), with the kernel's own input box; else,
when the call runs after a click (the kernel is idle), in that call's approval widget, which shows a question's
widget under it while the call runs. With neither, nobody can answer: the server gets an error and the log says why.
What the server asks is its words, shown as text (an address included: never a link).
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
from .._base.egress import CellText, bundle, cell_text
from .._base.markup import ERROR_COLOR, OK_COLOR, WARN_COLOR, Html, join, key_value_table, pre, tag
from .._base.raw_schema import checker
from .._connection.questions import ELICITATION, SAMPLING, Answerer, Declined
from .asking import Asked, boxes
from .forms import SchemaForm
from .records import LiveOutput

PERSON_MODEL = "a person in the notebook"  # the model a person's reply names (CreateMessageResult.model)
TEXT_CHARS = 4_000  # of each message or field shown (the session log and transcript keep the question)
REPLY_PROMPT = "Your reply as the model (send it empty to decline): "
FORM_PROMPT = "Your answer as a JSON object (fields left out take their defaults; empty: decline; 'cancel': cancel): "
URL_PROMPT = "Type 'done' once you have finished at that address ('cancel' to cancel; empty: decline): "
# A call's request goes out before its cell starts waiting for it (and a fast server asks at once): how long a question
# looks for a waiting cell or a running call's widget before nobody can answer.
FIND_SECONDS = 2.0
FIND_TICK = 0.02
NOBODY = "nobody can answer: no cell waits for the call and no running call of this session shows its approval"


def prompt_answerer(kind: str, server: str) -> Answerer:
    """The person's way of answering ``kind`` (sampling or elicitation) for session ``server``."""

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        deadline = time.monotonic() + FIND_SECONDS
        while True:
            if runner.cell_waits():
                return await runner.in_waiting_cell(lambda: ask_in_cell(kind, server, params))
            box = boxes.of(server)
            if box is not None:
                return await ask_in_box(box, QuestionWidget(kind, server, params))
            if time.monotonic() >= deadline:
                raise LookupError(NOBODY)
            await asyncio.sleep(FIND_TICK)

    return Answerer(answer, person=True)


# --- what the server asks, as text ------------------------------------------------------------------------------


def _words(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= TEXT_CHARS else f"{text[:TEXT_CHARS]}… (cut at {TEXT_CHARS:,} characters)"


def _content_words(content: Any) -> str:
    """A message's content: its text, or what kind of block it is (an image is not drawn)."""
    blocks = content if isinstance(content, list) else [content]
    said = []
    for block in blocks:
        if isinstance(block, Mapping) and block.get("type") == "text":
            said.append(_words(block.get("text", "")))
        elif isinstance(block, Mapping):
            said.append(f"[{_words(block.get('type', 'content'))} block]")
    return "\n".join(said)


def question_rows(kind: str, params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the server asks, as (label, the server's words) rows."""
    rows: list[tuple[str, str]] = []
    if kind == SAMPLING:
        if params.get("systemPrompt"):
            rows.append(("system prompt", _words(params["systemPrompt"])))
        for message in params.get("messages") or []:
            if isinstance(message, Mapping):
                rows.append((f"message ({_words(message.get('role', '?'))})", _content_words(message.get("content"))))
        for key in ("modelPreferences", "maxTokens", "temperature", "stopSequences", "includeContext"):
            if key in params:
                rows.append((key, _words(params[key])))
        if params.get("tools"):
            names = [str(tool.get("name", "?")) for tool in params["tools"] if isinstance(tool, Mapping)]
            rows.append(("tools the model may use", _words(", ".join(names))))
    else:
        rows.append(("message", _words(params.get("message", ""))))
        if params.get("mode") == "url":
            rows.append(("address (the server's; open it yourself if you trust it)", _words(params.get("url", ""))))
        else:
            rows.append(("requested fields", _words(params.get("requestedSchema", {}))))
    return rows


def _head(kind: str, server: str, params: Mapping[str, Any]) -> str:
    if kind == SAMPLING:
        return f"'{server}' asks for a message from your model (sampling): reply as the model, or decline"
    if params.get("mode") == "url":
        return f"'{server}' asks you to visit an address (elicitation): accept once done, decline or cancel"
    return f"'{server}' asks for your input (elicitation): accept, decline or cancel"


def question_html(kind: str, server: str, params: Mapping[str, Any], line: str = "") -> Html:
    """The question as escaped HTML, with ``line`` (how it ended) under it."""
    rows = question_rows(kind, params)
    head = _head(kind, server, params)
    return join([tag("b", head), key_value_table(rows, "purra-question-details"), pre(line) if line else None])


def question_bundle(kind: str, server: str, params: Mapping[str, Any], line: str = "") -> dict[str, str]:
    """The question as escaped HTML and cell text (the waiting cell's output), with ``line`` under it."""
    rows = question_rows(kind, params)
    text = "\n".join(
        [_head(kind, server, params), *(f"{label}: {value}" for label, value in rows), *([line] if line else [])]
    )
    return bundle(question_html(kind, server, params, line), cell_text(text))


# --- in the cell that waits: the kernel's input box -------------------------------------------------------------


def ask_in_cell(kind: str, server: str, params: dict[str, Any]) -> dict[str, Any]:
    """Show the question in the waiting cell and take the answer from the kernel's input box."""
    output = LiveOutput()
    output.show(question_bundle(kind, server, params))
    try:
        answer = _from_input_box(kind, params)
    except Declined:
        output.update(question_bundle(kind, server, params, "declined"))
        raise
    except StdinNotImplementedError:
        output.update(question_bundle(kind, server, params, "not answered: this frontend has no input box"))
        raise LookupError("nobody can answer: the waiting cell's frontend has no input box") from None
    output.update(question_bundle(kind, server, params, f"answered: {answer.get('action', 'a reply')}"))
    return answer


def _from_input_box(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    if kind == SAMPLING:
        reply = input(REPLY_PROMPT)
        if not reply.strip():
            raise Declined("the person declined")
        return sampling_reply(reply)
    if params.get("mode") == "url":
        word = input(URL_PROMPT).strip().lower()
        return {"action": "accept" if word == "done" else "cancel" if word == "cancel" else "decline"}
    schema = params.get("requestedSchema") or {}
    while True:
        typed = input(FORM_PROMPT).strip()
        if not typed or typed.lower() == "cancel":
            return {"action": "cancel" if typed else "decline"}
        problem, content = _form_answer(typed, schema)
        if problem is None:
            return {"action": "accept", "content": content}
        print(not_sent(problem))


def not_sent(problem: str) -> CellText:
    """What the waiting cell prints of a form's answer that does not fit (the problem may quote the schema)."""
    return cell_text(f"Not sent: {problem}. Try again.")


def form_problem(typed: str, schema: Mapping[str, Any]) -> str | None:
    """What is wrong with a form's answer as typed in the input box (``None``: it fits, with its defaults)."""
    return _form_answer(typed, schema)[0]


def _form_answer(typed: str, schema: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The typed JSON object with the schema's defaults for the fields left out, or what is wrong with it."""
    try:
        content = json.loads(typed)
    except ValueError:
        return "that is not JSON", {}
    if not isinstance(content, dict):
        return "the answer must be a JSON object", {}
    for name, field in (schema.get("properties") or {}).items():
        if isinstance(field, Mapping) and "default" in field:
            content.setdefault(name, field["default"])
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


class Withdrawn(Exception):
    """The call under which a question was shown stopped running before anyone answered it."""


class QuestionWidget(Asked):
    """The question, the way to answer it (a reply box, the kit's form of the requested fields, or nothing for an
    address) and its buttons; ``answer`` is set by the first click."""

    def __init__(self, kind: str, server: str, params: dict[str, Any]) -> None:
        self.kind, self.server, self.params = kind, server, params
        self.answer: Future[dict[str, Any]] = Future()
        self.reply: widgets.Textarea | None = None
        self.form: SchemaForm | None = None
        self.details = widgets.HTML(str(question_html(kind, server, params)))
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
        if self.params.get("mode") == "url":
            return [self._button("Done", "primary", lambda: {"action": "accept"}), *refusals]
        schema = self.params.get("requestedSchema") or {}
        self.form = SchemaForm(schema, checker(schema))  # its own button (Accept) sends, once the fields fit
        self.form.review_button.description = "Accept"
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
        """The first click that gives an answer settles it (from the kernel's thread)."""
        if self.answer.done():
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
        self.details.value = str(question_html(self.kind, self.server, self.params, line))
        self.children = [self.details, widgets.HTML(str(tag("span", line, style=f"color:{color}")))]


class _NotYet(Exception):
    """Accept was clicked on a form whose fields do not fit yet (the form says why)."""


async def ask_in_box(box: widgets.Box, question: QuestionWidget) -> dict[str, Any]:
    """Show ``question`` in ``box`` (a running call's) and wait for its answer; it shows how it ended."""
    box.children = (*box.children, question)
    line, color = "withdrawn (the server stopped waiting, or the session ended)", WARN_COLOR
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
    "QuestionWidget",
    "ask_in_box",
    "ask_in_cell",
    "form_problem",
    "not_sent",
    "prompt_answerer",
    "question_bundle",
    "question_html",
    "sampling_reply",
]
