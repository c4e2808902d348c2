"""Argument forms generated from a tool's input schema.

The form covers the keywords of ``purra.output-schema/v1``. An optional field left empty is left
out of the arguments (never sent as ``null``, ``""`` or ``[]``), and the arguments are checked
against the tool's PurrA contract on every edit: the failing path shows next to its field and
"Review call" stays disabled until they fit. Tools outside the profile get a JSON editor checked
with ``jsonschema`` against their own schema, read as data (``raw_schema``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from IPython.display import display

from ..calls import argument_checker
from ..catalog import ToolVerdict
from ..markup import ERROR_COLOR, join, tag
from ..raw_schema import Check, Misfit
from .approval import PendingCall
from .records import LiveOutput, bundle_of, plain_bundle, widget_bundle

if TYPE_CHECKING:
    from purra_mcp import McpToolLimits

UNSET_LABEL = "(not set)"
LABEL_WIDTH = "12em"
AGAIN = "run the cell again to fill in the form"  # what brings back a dead form
_UNSET: Any = object()  # an optional field with no value: left out of the arguments


class FieldError(ValueError):
    """A field whose text cannot become a value (e.g. ``"abc"`` in a number field)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class Field:
    """One schema node: a widget, its value (or ``_UNSET``) and a place for its error."""

    widget: widgets.Widget  # what the form shows for the node, made by each kind of field
    remove_button: widgets.Button  # an array row's only: removes the row

    def __init__(self, schema: Mapping[str, Any], path: str, label: str, required: bool, form: SchemaForm) -> None:
        self.schema = schema
        self.path = path
        self.required = required
        self.form = form
        self.error = widgets.HTML("")
        form.fields[path] = form.fields.get(path, self)
        title = schema.get("title") or label
        marker = " *" if required else ""
        # one label width for every field, so that the inputs line up
        self.label = widgets.HTML(str(join([tag("b", str(title)), marker])), layout={"width": LABEL_WIDTH})
        description = schema.get("description")
        self.help = widgets.HTML(str(tag("small", str(description))) if description else "")

    def value(self) -> Any:
        raise NotImplementedError

    def box(self, editor: widgets.Widget) -> widgets.Widget:
        return widgets.VBox([widgets.HBox([self.label, editor, self.error]), self.help])

    def watch(self, widget: widgets.Widget) -> None:
        widget.observe(lambda _: self.form.changed(touched=self.path), names="value")


class TextField(Field):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        bounds = _span(self.schema, "minLength", "maxLength")
        self.input = widgets.Text(placeholder=f"{bounds} characters" if bounds else "")
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        if self.input.value:
            return self.input.value
        if self.required:
            raise FieldError(self.path, "required")
        return _UNSET


class NumberField(Field):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.integer = self.schema.get("type") == "integer"
        kind = "integer" if self.integer else "number"
        self.input = widgets.Text(placeholder=f"{kind} {_span(self.schema, 'minimum', 'maximum')}".rstrip())
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        text = self.input.value.strip()
        if not text:
            if self.required:
                raise FieldError(self.path, "required")
            return _UNSET
        try:
            if self.integer:
                return int(text)
            number = float(text)
        except ValueError:
            raise FieldError(self.path, "not an integer" if self.integer else "not a number") from None
        return int(number) if number.is_integer() and "." not in text else number


class BooleanField(Field):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        options = [("false", False), ("true", True)] if self.required else [(UNSET_LABEL, _UNSET), ("true", True),
                                                                             ("false", False)]  # fmt: skip
        self.input = widgets.Dropdown(options=options)
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        return self.input.value


class ChoiceField(Field):
    """``enum`` and ``const``: a dropdown of the allowed values (shown as JSON)."""

    def choices(self) -> list[Any]:
        return self.schema["enum"] if "enum" in self.schema else [self.schema["const"]]

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        values = self.choices()
        options = [(json.dumps(value, ensure_ascii=False), index) for index, value in enumerate(values)]
        if not self.required:
            options.insert(0, (UNSET_LABEL, -1))
        self.values = values
        self.input = widgets.Dropdown(options=options)
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        return _UNSET if self.input.value == -1 else self.values[self.input.value]


class NullField(ChoiceField):
    """``type: null``: its one value, which an optional field may leave out like any other."""

    def choices(self) -> list[Any]:
        return [None]


class JsonField(Field):
    """A node with no type: any JSON value, typed as JSON text."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.input = widgets.Textarea(placeholder="JSON value", rows=2)
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        return _parse_json(self.input.value, self.path, self.required)


class ObjectField(Field):
    """A group of properties; an optional group is included only when ticked."""

    def __init__(self, *args: Any, root: bool = False) -> None:
        super().__init__(*args)
        required = set(self.schema.get("required") or ())
        properties = self.schema.get("properties") or {}
        self.children = {
            name: build_field(child, f"{self.path}.{name}", name, name in required, self.form)
            for name, child in properties.items()
        }
        body = widgets.VBox([child.widget for child in self.children.values()])
        self.include = None if (self.required or root) else widgets.Checkbox(description="include", value=False)
        if self.include is not None:
            self.watch(self.include)
        header = [self.label, *([self.include] if self.include else []), self.error]
        self.widget = body if root else widgets.VBox([widgets.HBox(header), self.help, _indent(body)])

    def value(self) -> Any:
        if self.include is not None and not self.include.value:
            return _UNSET
        values = {name: child.value() for name, child in self.children.items()}
        return {name: value for name, value in values.items() if value is not _UNSET}


class ArrayField(Field):
    """Rows of one item schema, with add and remove buttons."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.items = self.schema.get("items") or {}
        self.rows: list[Field] = []
        self.rows_box = widgets.VBox()
        self.add_button = widgets.Button(description="add", icon="plus")
        self.add_button.on_click(lambda _: self.add_row())
        self.include = None if self.required else widgets.Checkbox(description="include", value=False)
        if self.include is not None:
            self.watch(self.include)
        header = [self.label, *([self.include] if self.include else []), self.add_button, self.error]
        self.widget = widgets.VBox([widgets.HBox(header), self.help, _indent(self.rows_box)])

    def add_row(self) -> Field:
        row = build_field(self.items, f"{self.path}[{len(self.rows)}]", f"[{len(self.rows)}]", True, self.form)
        remove = widgets.Button(description="remove", icon="minus")
        remove.on_click(lambda _: self.remove_row(row))
        row.remove_button = remove
        self.rows.append(row)
        if self.include is not None:
            self.include.value = True
        self._redraw()
        return row

    def remove_row(self, row: Field) -> None:
        self.rows.remove(row)
        self._redraw()

    def _redraw(self) -> None:
        self.rows_box.children = [widgets.HBox([row.widget, row.remove_button]) for row in self.rows]
        self.form.reindex()
        self.form.changed()

    def value(self) -> Any:
        if self.include is not None and not self.include.value:
            return _UNSET
        return [row.value() for row in self.rows]


class UnionField(Field):
    """``anyOf`` / ``oneOf`` (and type lists): pick a branch, fill in that branch."""

    def __init__(self, *args: Any, branches: list[Mapping[str, Any]]) -> None:
        super().__init__(*args)
        self.branches = [build_field(branch, self.path, f"option {i + 1}", True, self.form)
                         for i, branch in enumerate(branches)]  # fmt: skip
        options = [(_branch_label(branch, i), i) for i, branch in enumerate(branches)]
        if not self.required:
            options.insert(0, (UNSET_LABEL, -1))
        self.selector = widgets.Dropdown(options=options)
        self.selector.observe(lambda _: self._show(), names="value")
        self.body = widgets.VBox()
        self.widget = widgets.VBox([widgets.HBox([self.label, self.selector, self.error]), self.help,
                                    _indent(self.body)])  # fmt: skip
        self._show()

    def _show(self) -> None:
        index = self.selector.value
        self.body.children = [] if index == -1 else [self.branches[index].widget]
        self.form.reindex()
        self.form.changed()

    def value(self) -> Any:
        index = self.selector.value
        return _UNSET if index == -1 else self.branches[index].value()


def build_field(schema: Mapping[str, Any], path: str, label: str, required: bool, form: SchemaForm) -> Field:
    """The widget for one schema node of the profile."""
    args = (schema, path, label, required, form)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            base = {key: value for key, value in schema.items() if key != keyword}
            return UnionField(*args, branches=[{**base, **branch} for branch in schema[keyword]])
    kind = schema.get("type")
    if isinstance(kind, list):
        if len(kind) == 1:
            return build_field({**schema, "type": kind[0]}, path, label, required, form)
        return UnionField(*args, branches=[{**schema, "type": one} for one in kind])
    if "enum" in schema or "const" in schema:
        return ChoiceField(*args)
    field_classes: dict[Hashable, type[Field]] = {  # by the schema's type, whatever the server wrote there
        "object": ObjectField,
        "array": ArrayField,
        "string": TextField,
        "number": NumberField,
        "integer": NumberField,
        "boolean": BooleanField,
        "null": NullField,
    }
    return field_classes.get(kind, JsonField)(*args)


class SchemaForm(widgets.VBox):
    """A form for one input schema; ``arguments()`` is the checked value or ``None``."""

    def __init__(
        self,
        schema: Mapping[str, Any],
        check: Check,
        *,
        editor: bool = False,
    ) -> None:
        """``check(arguments)`` returns a ``Misfit`` (where and why) or ``None``; ``editor`` means a JSON editor."""
        super().__init__()
        self.schema = schema
        self.check = check
        self.fields: dict[str, Field] = {}
        self.touched: set[str] = set()  # paths of the fields a person edited
        self.problem_path: str | None = None  # where the arguments fail, if they do
        self._building = True
        self.problem = widgets.HTML("")
        self.review_button = widgets.Button(description="Review call", button_style="primary", disabled=True)
        if editor:
            start = json.dumps(required_template(schema), indent=2, ensure_ascii=False)
            self.editor: widgets.Textarea | None = widgets.Textarea(value=start, rows=8, layout={"width": "100%"})
            self.editor.observe(lambda _: self.changed(), names="value")
            self.root: Field | None = None
            body: widgets.Widget = self.editor
        else:
            self.editor = None
            self.root = ObjectField(schema, "$", "arguments", True, self, root=True)
            body = self.root.widget
        self._building = False
        self.children = [body, self.problem, self.review_button]
        self.add_class("purra-form")
        self.changed()

    def reindex(self) -> None:
        """Rebuild the path index after rows or branches changed (errors show next to live fields)."""
        if self._building or self.root is None:
            return
        self.fields = {}
        _index(self.root, self.fields)

    def arguments(self) -> dict[str, Any] | None:
        """The arguments as they stand, if they fit the contract; else ``None`` (the reason is shown)."""
        value: dict[str, Any]  # an object once the check passed (a tool's input schema is one)
        try:
            if self.editor is not None:
                value = _parse_json(self.editor.value, "$", True)
            else:
                assert self.root is not None  # a form without an editor has its fields
                value = self.root.value()
        except FieldError as error:
            self._show_problem(Misfit(error.path, str(error)))
            return None
        found = self.check(value)
        self._show_problem(found)
        return value if found is None else None

    def changed(self, touched: str | None = None) -> None:
        """Check the arguments again; ``touched`` is the path of the field a person just edited."""
        if touched is not None:
            self.touched.add(touched)
        if self._building:
            return
        self.review_button.disabled = self.arguments() is None

    def _show_problem(self, misfit: Misfit | None) -> None:
        """One place for the problem: in words next to its field once a person edited it (the path and the
        problem as a hint on hover), else as a quiet line saying what Review waits for."""
        self.problem_path = misfit.path if misfit is not None else None
        for each in self.fields.values():
            each.error.value = ""
        self.problem.value = ""
        if misfit is None:
            return
        path = misfit.path
        field = _nearest(self.fields, path)
        words = in_words(misfit, field.schema if field is not None else {})
        hint = f"{path}: {misfit.problem}"
        if field is not None and self._was_touched(field.path):
            field.error.value = str(tag("span", words, style=f"color:{ERROR_COLOR}", title=hint))
        else:
            self.problem.value = str(tag("small", f"Review call waits for {path}: {words}", title=hint))

    def _was_touched(self, path: str) -> bool:
        """Whether a person edited the field at ``path`` or one inside it (a new row is not edited yet)."""
        return any(t == path or t.startswith((path + ".", path + "[")) for t in self.touched)


class ToolForm(SchemaForm):
    """A tool's form, shown with one output below it for the call it reviewed: the approval widget while
    pending, then that call's record (see ``records``), so the saved notebook keeps the reviewed call."""

    def __init__(
        self, tool: ToolVerdict, *, limits: McpToolLimits, review: Callable[[dict[str, Any], bool], object]
    ) -> None:
        self.raw = not tool.callable
        self.tool = tool
        self.pending: object = None  # what the last review gave: a PendingCall, or a result
        self.reviewed = LiveOutput()
        self._review = review
        super().__init__(tool.input_schema, argument_checker(tool.input_schema, raw=self.raw, limits=limits),
                         editor=self.raw)  # fmt: skip
        self.review_button.on_click(lambda _: self.review())

    def review(self) -> object:
        """Propose the call the form holds (what "Review call" does); a call this form proposed before and
        nobody decided is denied, so that only the new one can be approved."""
        arguments = self.arguments()
        if arguments is None:
            return None
        previous, self.pending = self.pending, self._review(arguments, self.raw)
        if isinstance(previous, PendingCall):
            previous.unfollow(self.reviewed)
            previous.deny("replaced by a new review in the form")
        if isinstance(self.pending, PendingCall):
            self.pending.follow(self.reviewed)
        else:
            self.reviewed.update(bundle_of(self.pending))
        return self.pending

    def bundle(self) -> dict[str, Any]:
        """The form's output: the live form, and a static line for readers without its kernel."""
        path = "a raw call (JSON editor)" if self.raw else f"a PurrA {self.tool.bound_effect or 'read'} call"
        static = plain_bundle(f"argument form for {self.tool.name}: {path}; it needs a running kernel")
        return widget_bundle(self, static, buttons=[self.review_button.description], again=AGAIN)

    def _ipython_display_(self) -> None:
        display(self.bundle(), raw=True)
        self.reviewed.show(plain_bundle("no call reviewed yet"))


def tool_form(
    tool: ToolVerdict, *, limits: McpToolLimits, review: Callable[[dict[str, Any], bool], object]
) -> ToolForm:
    """A form for ``tool``'s arguments; "Review call" shows what ``review(arguments, raw)`` returns (the
    approval widget, or the result when the session's policy decided) below it. A tool outside the profile
    gets a JSON editor and a raw call."""
    return ToolForm(tool, limits=limits, review=review)


def _parse_json(text: str, path: str, required: bool) -> Any:
    if not text.strip():
        if required:
            raise FieldError(path, "required")
        return _UNSET
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise FieldError(path, f"not JSON: {error.msg} at line {error.lineno}, column {error.colno}") from None


def _index(field: Field, into: dict[str, Field]) -> None:
    into.setdefault(field.path, field)
    if isinstance(field, ObjectField):
        for child in field.children.values():
            _index(child, into)
    elif isinstance(field, ArrayField):
        for row in field.rows:
            _index(row, into)
    elif isinstance(field, UnionField) and field.selector.value != -1:
        _index(field.branches[field.selector.value], into)


_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "maximum": lambda s: f"at most {s.get('maximum')}",
    "minimum": lambda s: f"at least {s.get('minimum')}",
    "exclusiveMaximum": lambda s: f"less than {s.get('exclusiveMaximum')}",
    "exclusiveMinimum": lambda s: f"more than {s.get('exclusiveMinimum')}",
    "maxLength": lambda s: f"at most {s.get('maxLength')} characters",
    "minLength": lambda s: f"at least {s.get('minLength')} characters",
    "maxItems": lambda s: f"at most {s.get('maxItems')} items",
    "minItems": lambda s: f"at least {s.get('minItems')} items",
    "pattern": lambda s: f"must match {s.get('pattern')}",
    "enum": lambda s: "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in s.get("enum", [])),
    "const": lambda s: f"must be {json.dumps(s.get('const'), ensure_ascii=False)}",
    "type": lambda s: f"must be {'an' if str(s.get('type', '')).startswith(('a', 'i', 'o')) else 'a'} {s.get('type')}",
    "required": lambda s: "required",
    "uniqueItems": lambda s: "items must differ",
    "additionalProperties": lambda s: "a field the tool does not take",
}


_EMPTY = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}, "null": None}


def required_template(schema: Mapping[str, Any]) -> dict[str, Any]:
    """What a JSON editor starts with: the schema's required keys, each with an empty value of its type."""
    listed = schema.get("properties")
    properties: Mapping[str, Any] = listed if isinstance(listed, dict) else {}
    required = [key for key in schema.get("required") or [] if isinstance(key, str)]
    template: dict[str, Any] = {}
    for key in required:
        kind = (properties.get(key) or {}).get("type") if isinstance(properties.get(key), dict) else None
        template[key] = _EMPTY.get(kind if isinstance(kind, str) else "string", "")
    return template


def in_words(misfit: Misfit, schema: Mapping[str, Any]) -> str:
    """A contract's refusal by a rule (``maximum``) in words for the field's schema (``"at most 10"``); else the
    problem as it is said."""
    words = _WORDS.get(misfit.keyword)
    return words(schema) if words is not None else misfit.problem


def _nearest(fields: dict[str, Field], path: str) -> Field | None:
    while path:
        if path in fields:
            return fields[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ("$" if path != "$" else "")
    return None


def _indent(widget: widgets.Widget) -> widgets.Widget:
    widget.layout.margin = "0 0 0 1.5em"
    return widget


def _span(schema: Mapping[str, Any], low: str, high: str) -> str:
    """The schema's bounds in words: "from 1 to 10", "at least 1", "at most 10", or ""."""
    if low in schema and high in schema:
        return f"from {schema[low]} to {schema[high]}"
    return f"at least {schema[low]}" if low in schema else f"at most {schema[high]}" if high in schema else ""


def _branch_label(branch: Mapping[str, Any], index: int) -> str:
    label = branch.get("title") or branch.get("type") or f"option {index + 1}"
    return str(label) if not isinstance(label, list) else "/".join(map(str, label))
