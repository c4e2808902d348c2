"""Argument forms generated from a tool's input schema.

One builder serves both paths. An optional field left empty is left out of the arguments (never sent as
``null``, ``""`` or ``[]``), and the arguments are checked on every edit: against the tool's PurrA contract on the
PurrA path, against the tool's own JSON Schema (its declared draft, read as data: ``raw_schema``) on the raw path;
the failing path shows next to its field and "Review call" stays disabled until they fit.

Raw schemas get what real servers write: local ``$ref`` (``#/$defs/...``, ``#/definitions/...``) read in the schema
itself, never fetched, a recursive one followed ``REF_DEPTH`` times along a path; ``anyOf``/``oneOf`` as a choice;
nullable nodes (a type list with ``null``, an ``anyOf`` branch ``{"type": "null"}``, OpenAPI's ``nullable``) as a
value or an explicit null; enums and ``const`` as dropdowns; a ``default`` prefilled and marked, and sent because
it is shown (what is sent is exactly what the form shows, and the approval shows that). Only a node a form cannot
hold (``not``, ``if``, ``patternProperties``, an open map, a reference past the depth) is a JSON field, with a note.
A raw form can also send without checking, to probe the server's own validation (still behind approval).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from IPython.display import display

from .._base.egress import text_bundle
from .._base.markup import ERROR_COLOR, WARN_COLOR, join, tag
from .._base.raw_schema import Check, Misfit, local_target
from .._purra.calls import argument_checker
from .._purra.catalog import ToolVerdict
from .approval import PendingCall
from .records import LiveOutput, bundle_of, widget_bundle

if TYPE_CHECKING:
    from purra_mcp import McpToolLimits

Review = Callable[[dict[str, Any], bool, bool], object]  # (arguments, raw, check_arguments) -> what Review shows

UNSET_LABEL = "(not set)"
LABEL_WIDTH = "12em"
AGAIN = "run the cell again to fill in the form"  # what brings back a dead form
UNCHECKED_LABEL = "send without checking (probe the server's validation)"
REF_DEPTH = 3  # how many times one $ref is followed along a path before the rest is a JSON field
MAX_FIELDS = 400  # fields one form builds (a server's references can fan out): past it, a node is a JSON field
_UNSET: Any = object()  # an optional field with no value: left out of the arguments
# Keywords a form cannot hold: a node that has one is a JSON field (checked by the schema all the same).
UNFORMABLE = ("not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependencies", "prefixItems",
              "contains", "propertyNames", "unevaluatedProperties", "$dynamicRef", "$recursiveRef")  # fmt: skip


class FieldError(ValueError):
    """A field whose text cannot become a value (e.g. ``"abc"`` in a number field)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


class Field:
    """One schema node: a widget, its value (or ``_UNSET``) and a place for its error. ``refs`` are the local
    references followed to reach it (what bounds a recursive schema)."""

    widget: widgets.Widget  # what the form shows for the node, made by each kind of field
    remove_button: widgets.Button  # an array row's only: removes the row

    def __init__(
        self,
        schema: Mapping[str, Any],
        path: str,
        label: str,
        required: bool,
        form: SchemaForm,
        *,
        refs: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        self.schema = schema
        self.path = path
        self.required = required
        self.form = form
        self.refs = refs
        form.built += 1
        self.error = widgets.HTML("")
        form.fields[path] = form.fields.get(path, self)
        title = schema.get("title") or label
        marker = " *" if required else ""
        # one label width for every field, so that the inputs line up
        self.label = widgets.HTML(str(join([tag("b", str(title)), marker])), layout={"width": LABEL_WIDTH})
        description = schema.get("description")
        self.words = [str(each) for each in (description, note, _hints(schema)) if each]
        self.help = widgets.HTML("")
        self.describe()

    def describe(self, *more: str) -> None:
        """The help line: the server's description, then the kit's notes and hints (all as text)."""
        self.words.extend(more)
        self.help.value = str(tag("small", " · ".join(self.words))) if self.words else ""

    def value(self) -> Any:
        raise NotImplementedError

    def set(self, value: Any) -> bool:
        """Show ``value`` in the widgets (a default); ``False`` when this field cannot hold it."""
        return False

    def missing(self) -> Any:
        """An empty field: left out if optional; a required one blocks, unless the form sends without checking."""
        if self.required and self.form.checking:
            raise FieldError(self.path, "required")
        return _UNSET

    def box(self, editor: widgets.Widget) -> widgets.Widget:
        return widgets.VBox([widgets.HBox([self.label, editor, self.error]), self.help])

    def watch(self, widget: widgets.Widget) -> None:
        widget.observe(lambda _: self.form.changed(touched=self.path), names="value")


class TextField(Field):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        bounds = _span(self.schema, "minLength", "maxLength")
        self.input = widgets.Text(placeholder=f"{bounds} characters" if bounds else "")
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        return self.input.value if self.input.value else self.missing()

    def set(self, value: Any) -> bool:
        if isinstance(value, str) and value:
            self.input.value = value
        return isinstance(value, str) and bool(value)


class NumberField(Field):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.integer = self.schema.get("type") == "integer"
        kind = "integer" if self.integer else "number"
        self.input = widgets.Text(placeholder=f"{kind} {_span(self.schema, 'minimum', 'maximum')}".rstrip())
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        text = self.input.value.strip()
        if not text:
            return self.missing()
        try:
            if self.integer:
                return int(text)
            number = float(text)
        except ValueError:
            raise FieldError(self.path, "not an integer" if self.integer else "not a number") from None
        return int(number) if number.is_integer() and "." not in text else number

    def set(self, value: Any) -> bool:
        fits = isinstance(value, int | float) and not isinstance(value, bool) and (not self.integer or
                                                                                  isinstance(value, int))  # fmt: skip
        if fits:
            self.input.value = json.dumps(value)
        return fits


class BooleanField(Field):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        options = [("false", False), ("true", True)] if self.required else [(UNSET_LABEL, _UNSET), ("true", True),
                                                                             ("false", False)]  # fmt: skip
        self.input = widgets.Dropdown(options=options)
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        return self.input.value

    def set(self, value: Any) -> bool:
        if isinstance(value, bool):
            self.input.value = value
        return isinstance(value, bool)


class ChoiceField(Field):
    """``enum`` and ``const``: a dropdown of the allowed values (shown as JSON)."""

    def choices(self) -> list[Any]:
        return self.schema["enum"] if "enum" in self.schema else [self.schema["const"]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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

    def set(self, value: Any) -> bool:
        index = next((i for i, known in enumerate(self.values) if _exact(known) == _exact(value)), None)
        if index is not None:
            self.input.value = index
        return index is not None


class NullField(ChoiceField):
    """``type: null``: its one value, which an optional field may leave out like any other."""

    def choices(self) -> list[Any]:
        return [None]


class JsonField(Field):
    """A node a form cannot hold (no type, ``not``, an open map, a reference past the depth): any JSON value, typed
    as JSON text; its note says why."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.input = widgets.Textarea(placeholder="JSON value", rows=2)
        self.watch(self.input)
        self.widget = self.box(self.input)

    def value(self) -> Any:
        text = self.input.value
        if not text.strip():
            return self.missing()
        return _parse_json(text, self.path)

    def set(self, value: Any) -> bool:
        self.input.value = json.dumps(value, ensure_ascii=False)
        return True


class ObjectField(Field):
    """A group of properties; an optional group is included only when ticked."""

    def __init__(self, *args: Any, root: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        required = set(self.schema.get("required") or ())
        properties = self.schema.get("properties") or {}
        self.children = {
            name: build_field(child, f"{self.path}.{name}", name, name in required, self.form, refs=self.refs)
            for name, child in properties.items()
            if isinstance(child, Mapping | bool)
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

    def set(self, value: Any) -> bool:
        if not isinstance(value, dict) or not set(value) <= set(self.children):
            return False
        if self.include is not None:
            self.include.value = True
        return all([self.children[name].set(item) for name, item in value.items()])


class ArrayField(Field):
    """Rows of one item schema (a sub-form each, for an array of objects), with add and remove buttons."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
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
        index = len(self.rows)
        row = build_field(self.items, f"{self.path}[{index}]", f"[{index}]", True, self.form, refs=self.refs)
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

    def set(self, value: Any) -> bool:
        if not isinstance(value, list):
            return False
        while self.rows:
            self.remove_row(self.rows[-1])
        if self.include is not None:
            self.include.value = True
        return all([self.add_row().set(item) for item in value])


class UnionField(Field):
    """``anyOf`` / ``oneOf`` (and type lists): pick a branch, fill in that branch."""

    def __init__(self, *args: Any, branches: list[Mapping[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.branches = [build_field(branch, self.path, f"option {i + 1}", True, self.form, refs=self.refs)
                         for i, branch in enumerate(branches)]  # fmt: skip
        options = [(_branch_label(branch, built.schema, i), i) for i, (branch, built) in
                   enumerate(zip(branches, self.branches, strict=True))]  # fmt: skip
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

    def set(self, value: Any) -> bool:
        for index, branch in enumerate(self.branches):
            if branch.set(value) and _holds(branch, value):
                self.selector.value = index
                return True
        return False


class NullableField(Field):
    """A value or an explicit ``null``: the value's own field, and a "null" box that sends ``null`` instead."""

    def __init__(self, *args: Any, inner: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        label = str(self.schema.get("title") or self.path.rsplit(".", 1)[-1])
        self.inner = build_field(inner, self.path, label, self.required, self.form, refs=self.refs)
        self.null = widgets.Checkbox(description="null", value=False, indent=False, layout={"width": "5em"},
                                     tooltip="send null (the schema allows it)")  # fmt: skip
        self.watch(self.null)
        self.widget = widgets.HBox([self.inner.widget, self.null, self.error])

    def value(self) -> Any:
        return None if self.null.value else self.inner.value()

    def set(self, value: Any) -> bool:
        self.null.value = value is None
        return value is None or self.inner.set(value)


def build_field(
    schema: Mapping[str, Any] | bool,
    path: str,
    label: str,
    required: bool,
    form: SchemaForm,
    *,
    refs: tuple[str, ...] = (),
    root: bool = False,
) -> Field:
    """The widget for one schema node, its default (if any) shown in it."""
    node, refs, note = _resolved(schema, form.schema, refs)
    field = _field_for(node, path, label, required, form, refs=refs, note=note, root=root)
    if "default" in node and not note:
        with form.prefilling():
            shown = field.set(node["default"]) and _holds(field, node["default"])
        default = json.dumps(node["default"], ensure_ascii=False)
        field.describe(f"default {default}, prefilled (sent as shown)" if shown else
                       f"default {default} (not prefilled: the form cannot show it)")  # fmt: skip
    return field


def _field_for(
    schema: Mapping[str, Any],
    path: str,
    label: str,
    required: bool,
    form: SchemaForm,
    *,
    refs: tuple[str, ...],
    note: str,
    root: bool,
) -> Field:
    args = (schema, path, label, required, form)
    properties = schema.get("properties")
    wanted = 1 + (len(properties) if isinstance(properties, Mapping) else 0)
    if not note and form.built + wanted > MAX_FIELDS:
        note = f"typed as JSON: the form holds at most {MAX_FIELDS} fields"
    if note:
        return JsonField(*args, refs=refs, note=note)
    unformable = next((keyword for keyword in UNFORMABLE if keyword in schema), None)
    if unformable is not None:
        return JsonField(*args, refs=refs, note=f"typed as JSON: a form cannot hold {unformable!r}")
    inner = _nullable_inner(schema)
    if inner is not None:
        return NullableField(*args, refs=refs, inner=inner)
    for keyword in ("anyOf", "oneOf"):
        if isinstance(schema.get(keyword), list):
            base = {key: value for key, value in schema.items() if key not in (keyword, "default")}
            return UnionField(*args, refs=refs, branches=[_merged(base, branch) for branch in schema[keyword]])
    kind = schema.get("type")
    if isinstance(kind, list):
        if len(kind) == 1:
            return _field_for({**schema, "type": kind[0]}, *args[1:], refs=refs, note=note, root=root)
        rest = {key: value for key, value in schema.items() if key != "default"}
        return UnionField(*args, refs=refs, branches=[{**rest, "type": one} for one in kind])
    if "enum" in schema or "const" in schema:
        return ChoiceField(*args, refs=refs)
    if kind is None and "properties" in schema:
        kind = "object"  # (a schema that lists properties and forgot its type)
    if (
        form.raw
        and not root  # (a tool that takes no arguments: an empty form)
        and kind == "object"
        and not schema.get("properties")
        and schema.get("additionalProperties") is not False
    ):
        return JsonField(*args, refs=refs, note="typed as JSON: an object with keys of your choice")
    if kind == "array" and not isinstance(schema.get("items", {}), Mapping | bool):
        return JsonField(*args, refs=refs, note="typed as JSON: a form cannot hold a list of item schemas")
    if kind == "object":
        return ObjectField(*args, refs=refs, root=root)
    field_classes: dict[Hashable, type[Field]] = {  # by the schema's type, whatever the server wrote there
        "array": ArrayField,
        "string": TextField,
        "number": NumberField,
        "integer": NumberField,
        "boolean": BooleanField,
        "null": NullField,
    }
    return field_classes.get(kind, JsonField)(*args, refs=refs)


def _resolved(
    schema: Mapping[str, Any] | bool, document: Mapping[str, Any], refs: tuple[str, ...]
) -> tuple[Mapping[str, Any], tuple[str, ...], str]:
    """The node with its local references followed (and a one-element ``allOf`` merged), the references followed
    to reach it, and a note when the rest must be typed as JSON (a reference outside, unknown, or past the depth)."""
    node: Mapping[str, Any] = {} if schema is True else {"not": {}} if schema is False else schema
    for _ in range(REF_DEPTH * 8):  # (a chain of references to references ends)
        ref = node.get("$ref")
        if isinstance(ref, str):
            if refs.count(ref) >= REF_DEPTH:
                return node, refs, f"typed as JSON: {ref} refers to itself, and the form follows it {REF_DEPTH} times"
            target = local_target(document, ref)
            if not isinstance(target, Mapping | bool):
                return node, refs, (f"typed as JSON: the form follows #/... pointers within the schema only, not "
                                    f"{ref} (the kit never fetches a schema)")  # fmt: skip
            rest = {key: value for key, value in node.items() if key != "$ref"}
            found: Mapping[str, Any] = {} if target is True else {"not": {}} if target is False else target
            node, refs = _merged(found, rest), (*refs, ref)
            continue
        parts = node.get("allOf")
        if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], Mapping):
            node = _merged(parts[0], {key: value for key, value in node.items() if key != "allOf"})
            continue
        return node, refs, ""
    return node, refs, "typed as JSON: a chain of references too long to follow"


def _merged(base: Mapping[str, Any], extra: Mapping[str, Any] | Any) -> dict[str, Any]:
    """A node and the keywords beside it (``title``, ``description``, ``default`` next to a ``$ref``)."""
    return {**base, **extra} if isinstance(extra, Mapping) else dict(base)


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and (schema.get("type") == "null" or schema.get("const", 0) is None)


def _nullable_inner(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The value's schema of a node that is a value or ``null`` (``None`` if it is no such node)."""
    rest = {key: value for key, value in schema.items() if key not in ("nullable", "default")}
    if schema.get("nullable") is True and "type" in schema and schema["type"] != "null":
        return rest
    kind = schema.get("type")
    if isinstance(kind, list) and "null" in kind and len(kind) > 1:
        others = [one for one in kind if one != "null"]
        return {**rest, "type": others[0] if len(others) == 1 else others}
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and len(branches) > 1 and any(_is_null(b) for b in branches):
            values = [branch for branch in branches if not _is_null(branch)]
            if not values:
                return None
            base = {key: value for key, value in rest.items() if key != keyword}
            return _merged(base, values[0]) if len(values) == 1 else {**base, keyword: values}
    return None


class SchemaForm(widgets.VBox):
    """A form for one input schema; ``arguments()`` is the value to send, or ``None``."""

    def __init__(self, schema: Mapping[str, Any], check: Check, *, raw: bool = False) -> None:
        """``check(arguments)`` returns a ``Misfit`` (where and why) or ``None``; ``raw`` is a raw call's form (the
        tool's own schema, and the choice to send without checking)."""
        super().__init__()
        self.schema = schema
        self.check = check
        self.raw = raw
        self.fields: dict[str, Field] = {}
        self.touched: set[str] = set()  # paths of the fields a person edited
        self.problem_path: str | None = None  # where the arguments fail, if they do
        self._building = True
        self._prefilling = 0
        self.built = 0  # fields built so far (see MAX_FIELDS)
        self.problem = widgets.HTML("")
        self.review_button = widgets.Button(description="Review call", button_style="primary", disabled=True)
        self.unchecked: widgets.Checkbox | None = None
        controls: list[widgets.Widget] = [self.review_button]
        if raw:
            self.unchecked = widgets.Checkbox(description=UNCHECKED_LABEL, value=False, indent=False,
                                              layout={"width": "auto"})  # fmt: skip
            self.unchecked.observe(lambda _: self.changed(), names="value")
            controls.append(self.unchecked)
        self.root = build_field(schema, "$", "arguments", True, self, root=True)
        self._building = False
        self.children = [self.root.widget, self.problem, widgets.HBox(controls)]
        self.add_class("purra-form")
        self.reindex()
        self.changed()

    @property
    def checking(self) -> bool:
        """Whether the arguments must fit before Review (always, but on a raw form set to send without checking)."""
        return self.unchecked is None or not self.unchecked.value

    @contextmanager
    def prefilling(self) -> Iterator[None]:
        """While defaults are shown: the fields they fill are not counted as edited by a person."""
        self._prefilling += 1
        try:
            yield
        finally:
            self._prefilling -= 1

    def reindex(self) -> None:
        """Rebuild the path index after rows or branches changed (errors show next to live fields)."""
        if self._building:
            return
        self.fields = {}
        _index(self.root, self.fields)

    def arguments(self) -> dict[str, Any] | None:
        """The arguments as they stand, if they fit the schema (or the form sends without checking: then the
        problem shows as a warning); else ``None`` (the reason is shown)."""
        try:
            value = self.root.value()
        except FieldError as error:
            self._show_problem(Misfit(error.path, str(error)))
            return None
        if not isinstance(value, dict):
            self._show_problem(Misfit("$", "the arguments must be a JSON object"))
            return None
        found = self.check(value)
        self._show_problem(found, warning=not self.checking)
        return value if found is None or not self.checking else None

    def changed(self, touched: str | None = None) -> None:
        """Check the arguments again; ``touched`` is the path of the field a person just edited."""
        if touched is not None and not self._prefilling:
            self.touched.add(touched)
        if self._building:
            return
        self.review_button.disabled = self.arguments() is None

    def _show_problem(self, misfit: Misfit | None, *, warning: bool = False) -> None:
        """One place for the problem: in words next to its field once a person edited it (the path and the
        problem as a hint on hover), else as a quiet line saying what Review waits for. A ``warning`` (the form
        sends without checking) is the schema's problem that Review does not wait for."""
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
        color = WARN_COLOR if warning else ERROR_COLOR
        at_field = field is not None and self._was_touched(field.path) and not self._is_form_itself(field)
        if field is not None and at_field:
            field.error.value = str(tag("span", words, style=f"color:{color}", title=hint))
        if warning:
            self.problem.value = str(tag("small", f"not checked: the tool's schema says {path}: {words}; "
                                         "it is sent as it is if you approve", style=f"color:{color}",
                                         title=hint))  # fmt: skip
        elif not at_field:
            self.problem.value = str(tag("small", f"Review call waits for {path}: {words}", title=hint))

    def _is_form_itself(self, field: Field) -> bool:
        """Whether ``field`` is the root object, which shows as the form (its problems on the form's line)."""
        return field is self.root and isinstance(field, ObjectField)

    def _was_touched(self, path: str) -> bool:
        """Whether a person edited the field at ``path`` or one inside it (a new row is not edited yet)."""
        return any(t == path or t.startswith((path + ".", path + "[")) for t in self.touched)


class ToolForm(SchemaForm):
    """A tool's form, shown with one output below it for the call it reviewed: the approval widget while
    pending, then that call's record (see ``records``), so the saved notebook keeps the reviewed call."""

    def __init__(self, tool: ToolVerdict, *, limits: McpToolLimits, review: Review) -> None:
        raw = not tool.callable
        self.tool = tool
        self.pending: object = None  # what the last review gave: a PendingCall, or a result
        self.reviewed = LiveOutput()
        self._review = review
        super().__init__(tool.input_schema, argument_checker(tool.input_schema, raw=raw, limits=limits), raw=raw)
        self.review_button.on_click(lambda _: self.review())

    def review(self) -> object:
        """Propose the call the form holds (what "Review call" does); a call this form proposed before and
        nobody decided is denied, so that only the new one can be approved. A form set to send without checking
        proposes the call unchecked (its approval says so)."""
        arguments = self.arguments()
        if arguments is None:
            return None
        previous, self.pending = self.pending, self._review(arguments, self.raw, self.checking)
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
        path = "a raw call (the tool's own schema)" if self.raw else f"a PurrA {self.tool.bound_effect or 'read'} call"
        static = text_bundle(f"argument form for {self.tool.name}: {path}; it needs a running kernel")
        return widget_bundle(self, static, buttons=[self.review_button.description], again=AGAIN)

    def _ipython_display_(self) -> None:
        display(self.bundle(), raw=True)
        self.reviewed.show(text_bundle("no call reviewed yet"))


def tool_form(tool: ToolVerdict, *, limits: McpToolLimits, review: Review) -> ToolForm:
    """A form for ``tool``'s arguments; "Review call" shows what ``review(arguments, raw, check_arguments)``
    returns (the approval widget, or the result when the session's policy decided) below it. A tool outside the
    profile gets a raw form: its own schema, and the choice to send without checking."""
    return ToolForm(tool, limits=limits, review=review)


def _parse_json(text: str, path: str) -> Any:
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
    elif isinstance(field, NullableField):
        _index(field.inner, into)


def _exact(value: Any) -> str:
    """A text that tells 1 from 1.0 and from True (Python's == does not)."""
    return json.dumps(value, sort_keys=True)


def _holds(field: Field, value: Any) -> bool:
    """Whether ``field`` gives exactly ``value``."""
    try:
        return _exact(field.value()) == _exact(value)
    except FieldError:
        return False


def _hints(schema: Mapping[str, Any]) -> str:
    """The rules a placeholder does not show (``format``, ``pattern``, bounds of items...), in words: hints, the
    check is the schema's."""
    return ", ".join(words(schema) for keyword, words in _HINT_WORDS.items() if keyword in schema)


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


_HINT_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "format": lambda s: f"format {s.get('format')}",
    **{
        key: _WORDS[key]
        for key in ("pattern", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "uniqueItems")
    },
    "multipleOf": lambda s: f"a multiple of {s.get('multipleOf')}",
    "minProperties": lambda s: f"at least {s.get('minProperties')} keys",
    "maxProperties": lambda s: f"at most {s.get('maxProperties')} keys",
}


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


def _branch_label(branch: Mapping[str, Any], resolved: Mapping[str, Any], index: int) -> str:
    """A branch's name in the choice: its title, the name its reference gives (``#/$defs/Circle``), its type."""
    ref = branch.get("$ref")
    named = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and "/" in ref else None
    label = resolved.get("title") or named or resolved.get("type") or f"option {index + 1}"
    return str(label) if not isinstance(label, list) else "/".join(map(str, label))
