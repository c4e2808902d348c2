"""Forms for a resource template's variables and a prompt's arguments, with the server's completions.

One field per variable or argument (a combobox: a person may type anything, and picks from what the server offers
when it offers completions). Each edit asks the server for completions on the loop, never blocking the kernel; an
answer to an older edit is dropped. Without the server's ``completions`` capability the fields are plain text
boxes and nothing is asked. The button reads the resource or gets the prompt on the loop and shows it below the
form (raw MCP, outside the PurrA contract).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any

import ipywidgets as widgets
from IPython.display import display

from .._base.egress import bundle, cell_text, text_bundle
from .._base.errors import McpSessionError
from .._base.markup import ERROR_COLOR, join, pre, tag
from .._base.visible import one_line
from .._base.wire import INVALID_ARGUMENTS
from .._beside.offerings import OFFERINGS_LABEL, PROMPTS, TEMPLATES, Offered, template_variables
from .records import LiveOutput, bundle_of, widget_bundle

AGAIN = "run the cell again to fill in the form"
LABEL_WIDTH = "12em"
PLACEHOLDER_CHARS = 200

Submit = Callable[[dict[str, str]], "Future[Any]"]
Complete = Callable[[str, str, dict[str, str]], "Future[list[str]]"]


@dataclass(frozen=True)
class FieldSpec:
    """One field: the variable's or argument's name, the server's description of it, whether it is required."""

    name: str
    description: str = ""
    required: bool = True


def _settled(future: Future[Any], after: Callable[[Future[Any]], object]) -> Future[Any]:
    """A future that ends once ``after(future)`` ran (what a test, or a caller, waits on)."""
    done: Future[Any] = Future()

    def run(finished: Future[Any]) -> None:
        try:
            done.set_result(after(finished))
        except BaseException as error:
            done.set_exception(error)

    future.add_done_callback(run)
    return done


def _failed(error: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(error)
    return future


class OfferingForm(widgets.VBox):
    """A form of ``fields`` whose button (``button``) sends ``submit(values)`` and shows what it answers below."""

    def __init__(
        self, title: str, fields: list[FieldSpec], *, submit: Submit, complete: Complete | None, button: str
    ) -> None:
        super().__init__()
        self.title = title
        self.specs = {spec.name: spec for spec in fields}
        self.fields = {spec.name: self._box(spec) for spec in fields}
        self.button = widgets.Button(description=button, button_style="primary")
        self.status = widgets.HTML("")
        self.shown = LiveOutput()
        self.result: object = None  # what the last submit answered (or the McpSessionError it failed with)
        self._submit = submit
        self._complete = complete
        self._asked: dict[str, int] = {}  # per field, the number of the latest completion asked
        for name, box in self.fields.items():
            box.observe(partial(self._typed, name), names="value")
        self.button.on_click(lambda _: self.submit())
        heading = widgets.HTML(str(tag("div", tag("b", title), f" · {OFFERINGS_LABEL}")))
        self.children = [heading, *self.fields.values(), self.status, self.button]
        self.add_class("purra-offering-form")
        self._update_button()

    @staticmethod
    def _box(spec: FieldSpec) -> widgets.Combobox:
        label = f"{one_line(spec.name, PLACEHOLDER_CHARS)}{' *' if spec.required else ''}"
        return widgets.Combobox(
            description=label,
            placeholder=one_line(spec.description, PLACEHOLDER_CHARS),
            ensure_option=False,
            style={"description_width": LABEL_WIDTH},
            layout={"width": "100%"},
        )

    @property
    def completes(self) -> bool:
        return self._complete is not None

    def values(self) -> dict[str, str]:
        """The fields' values; an optional field left empty is left out."""
        return {name: box.value for name, box in self.fields.items() if box.value or self.specs[name].required}

    def missing(self) -> list[str]:
        return [name for name, box in self.fields.items() if self.specs[name].required and not box.value]

    def _update_button(self) -> None:
        missing = self.missing()
        self.button.disabled = bool(missing)
        self.button.tooltip = f"waits for {', '.join(missing)}" if missing else ""

    def _typed(self, name: str, change: Mapping[str, Any]) -> None:
        self._update_button()
        self.ask(name)

    def ask(self, name: str) -> Future[Any] | None:
        """Ask the server for completions of ``name`` as typed (the other fields as context); its answer becomes
        the field's options, unless a later edit asked again. ``None`` without completions."""
        if self._complete is None:
            return None
        number = self._asked[name] = self._asked.get(name, 0) + 1
        context = {key: value for key, value in self.values().items() if key != name and value}
        try:
            future = self._complete(name, self.fields[name].value, context)
        except McpSessionError as error:
            future = _failed(error)
        return _settled(future, partial(self._offer, name, number))

    def _offer(self, name: str, number: int, future: Future[list[str]]) -> None:
        if self._asked.get(name) != number or future.cancelled():
            return
        error = future.exception()
        if error is not None:
            code = error.code if isinstance(error, McpSessionError) else error.__class__.__name__
            self.status.value = str(tag("small", f"completions of {name}: {code}", style=f"color:{ERROR_COLOR}"))
            return
        self.fields[name].options = tuple(future.result())

    def submit(self) -> Future[Any] | None:
        """Send what the form holds (what the button does); ``None`` while a required field is empty."""
        if self.missing():
            return None
        self.status.value = str(tag("small", "asking the server…"))
        try:
            future = self._submit(self.values())
        except McpSessionError as error:
            future = _failed(error)
        return _settled(future, self._show)

    def _show(self, future: Future[Any]) -> object:
        self.status.value = ""
        error = None if future.cancelled() else future.exception()
        if isinstance(error, McpSessionError):
            self.result = error
            words = join([tag("span", f"{error.code}: {error.message}", style=f"color:{ERROR_COLOR}"),
                          pre(error.server_text) if error.server_text else None])  # fmt: skip
            self.shown.update(bundle(words, cell_text(str(error))))
            return error
        if error is not None:
            raise error
        self.result = future.result()
        self.shown.update(bundle_of(self.result))
        return self.result

    def bundle(self) -> dict[str, Any]:
        """The form's output: the live form, and a static line for readers without its kernel."""
        static = text_bundle(f"form for {self.title}: it needs a running kernel")
        return widget_bundle(self, static, buttons=[self.button.description], again=AGAIN)

    def _ipython_display_(self) -> None:
        display(self.bundle(), raw=True)
        self.shown.show(text_bundle("nothing asked yet"))


def template_form(offered: Offered, template: Mapping[str, Any]) -> OfferingForm:
    """A form for a listed resource template: one field per variable; "Read" reads the URI they fill in."""
    uri = str(template.get("uriTemplate", ""))
    variables = template_variables(uri)
    if variables is None:
        raise McpSessionError(INVALID_ARGUMENTS, f"{uri!r} is not an RFC 6570 URI template.")
    complete = partial(offered.complete_soon, (TEMPLATES, uri)) if offered.completes else None
    return OfferingForm(f"resource template {uri}", [FieldSpec(name) for name in variables],
                        submit=partial(offered.read_soon, uri), complete=complete, button="Read")  # fmt: skip


def prompt_form(offered: Offered, prompt: Mapping[str, Any]) -> OfferingForm:
    """A form for a listed prompt: one field per argument (required ones marked); "Get prompt" gets it."""
    name = str(prompt.get("name", ""))
    arguments = [item for item in prompt.get("arguments") or [] if isinstance(item, dict)]
    fields = [FieldSpec(str(item.get("name")), str(item.get("description") or ""), bool(item.get("required")))
              for item in arguments]  # fmt: skip
    complete = partial(offered.complete_soon, (PROMPTS, name)) if offered.completes else None
    return OfferingForm(f"prompt {name}", fields, submit=partial(offered.prompt_soon, name), complete=complete,
                        button="Get prompt")  # fmt: skip


__all__ = ["FieldSpec", "OfferingForm", "prompt_form", "template_form"]
