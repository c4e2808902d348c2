"""Argument forms generated from schemas: every keyword family of the profile, and a property test."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from conftest import demo_in_memory, wait_until
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from purra_mcp import McpAdapterError, McpToolLimits, _remote_contract

import purra_jupyter as pj
from purra_jupyter._purra.calls import argument_checker
from purra_jupyter._ui.approval import PendingCall
from purra_jupyter._ui.forms import (
    UNSET_LABEL,
    ArrayField,
    BooleanField,
    ChoiceField,
    FieldError,
    JsonField,
    NullableField,
    NumberField,
    ObjectField,
    SchemaForm,
    TextField,
    UnionField,
)

LIMITS = McpToolLimits()


def form_for(schema: dict) -> SchemaForm:
    return SchemaForm(schema, argument_checker(schema, raw=False, limits=LIMITS))


def contract_accepts(schema: dict, value: Any) -> bool:
    contract, _ = _remote_contract(schema, LIMITS)
    try:
        contract.validate_value(value)
    except Exception:
        return False
    return True


SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 20, "description": "Words to <find>."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "exact": {"type": "boolean"},
        "mode": {"enum": ["fast", "thorough"]},
        "kind": {"const": "search"},
        "note": {"type": ["string", "null"]},
        "filter": {
            "type": "object",
            "properties": {"tag": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["tag"],
            "additionalProperties": False,
        },
        "ids": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3},
        "target": {
            "anyOf": [
                {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
                {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            ]
        },
        "choice": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}


def test_optional_fields_left_empty_are_absent() -> None:
    form = form_for(SCHEMA)
    form.fields["$.query"].input.value = "mcp"
    form.fields["$.limit"].input.value = "5"
    assert form.arguments() == {"query": "mcp", "limit": 5}
    assert not form.review_button.disabled


def test_every_keyword_family_produces_contract_valid_arguments() -> None:
    form = form_for(SCHEMA)
    fields = form.fields
    assert "*" in fields["$.query"].label.value and "*" not in fields["$.ratio"].label.value
    assert "Words to &lt;find&gt;." in fields["$.query"].help.value
    assert fields["$.limit"].input.placeholder == "integer from 1 to 10"
    fields["$.query"].input.value = "mcp"
    fields["$.limit"].input.value = "5"
    fields["$.ratio"].input.value = "0.5"
    fields["$.exact"].input.value = False
    mode = fields["$.mode"].input
    assert [label for label, _ in mode.options] == [UNSET_LABEL, '"fast"', '"thorough"']
    mode.value = 1
    fields["$.kind"].input.value = 0
    note = fields["$.note"]
    assert isinstance(note, NullableField)
    note.null.value = True  # an explicit null
    fields["$.filter"].include.value = True
    form.fields["$.filter.tag"].input.value = "a"
    ids = fields["$.ids"]
    assert isinstance(ids, ArrayField)
    ids.add_row().input.value = "x"
    ids.add_row().input.value = "y"
    ids.remove_row(ids.rows[0])
    fields["$.choice"].selector.value = 1
    form.fields["$.choice"].branches[1].input.value = "text"
    arguments = form.arguments()
    assert arguments == {
        "query": "mcp",
        "limit": 5,
        "ratio": 0.5,
        "exact": False,
        "mode": "thorough",
        "kind": "search",
        "note": None,
        "filter": {"tag": "a"},
        "ids": ["y"],
        "choice": "text",
    }
    assert contract_accepts(SCHEMA, arguments)


def test_a_nested_anyof_branch_switch_gives_valid_arguments() -> None:
    form = form_for(SCHEMA)
    form.fields["$.query"].input.value = "mcp"
    form.fields["$.limit"].input.value = "5"
    target = form.fields["$.target"]
    target.selector.value = 0
    target.branches[0].children["url"].input.value = "https://example.org"
    assert form.arguments()["target"] == {"url": "https://example.org"}
    target.selector.value = 1
    assert form.arguments() is None  # the path branch needs its own required value
    target.branches[1].children["path"].input.value = "/tmp/x"
    arguments = form.arguments()
    assert arguments["target"] == {"path": "/tmp/x"} and contract_accepts(SCHEMA, arguments)


def test_an_out_of_range_number_shows_its_path_and_blocks_review() -> None:
    form = form_for(SCHEMA)
    form.fields["$.query"].input.value = "mcp"
    form.fields["$.limit"].input.value = "50"
    assert form.arguments() is None and form.review_button.disabled
    error = form.fields["$.limit"].error.value  # in words, the path and keyword only as a hint on hover
    assert ">at most 10</span>" in error and "title='$.limit: 50 is greater than the maximum of 10'" in error
    assert form.problem.value == ""  # shown once: at the field
    form.fields["$.limit"].input.value = "abc"
    assert "not an integer" in form.fields["$.limit"].error.value
    form.fields["$.limit"].input.value = "10"
    assert form.arguments() is not None and not form.review_button.disabled
    assert form.fields["$.limit"].error.value == ""
    form.fields["$.ids"].add_row().input.value = ""  # not edited yet: no error at it, a quiet line says why
    assert form.arguments() is None and form.fields["$.ids[0]"].error.value == ""
    assert "Review call waits for $.ids[0]" in form.problem.value


def test_a_form_shows_no_error_before_a_field_is_touched() -> None:
    form = form_for(SCHEMA)
    assert form.review_button.disabled and all(field.error.value == "" for field in form.fields.values())
    assert {field.label.layout.width for field in form.fields.values()} == {"12em"}  # the inputs line up
    assert "Review call waits for $.query: required" in form.problem.value
    form.fields["$.query"].input.value = "x"
    form.fields["$.query"].input.value = ""
    assert ">required</span>" in form.fields["$.query"].error.value and form.problem.value == ""


def test_a_tool_form_reviews_into_the_approval_widget() -> None:
    with pj.connect(demo_in_memory()) as session:
        form = session.form("search_documents")
        form.fields["$.query"].input.value = "jupyter"
        form.fields["$.limit"].input.value = "2"
        form.review_button.click()
        pending = form.pending
        assert isinstance(pending, PendingCall) and pending.job.arguments == {"query": "jupyter", "limit": 2}
        pending.widget.approve_button.click()
        wait_until(lambda: pending.state == "done", what="the approved call")
        assert pending.result.ok

        raw = session.form("greet")  # outside the profile: a raw form, checked with the tool's own schema
        assert raw.raw and raw.unchecked is not None and raw.review_button.disabled
        assert "Review call waits for $.name: required" in raw.problem.value
        punctuation = raw.fields["$.punctuation"]  # its default is shown, marked, and sent as shown
        assert punctuation.input.value == "!"
        assert "default &quot;!&quot;, prefilled (sent as shown)" in punctuation.help.value
        raw.fields["$.name"].input.value = "Ada"
        raw.review_button.click()
        assert raw.pending.job.raw and raw.pending.job.arguments == {"name": "Ada", "punctuation": "!"}
        raw.pending.deny()


# --- property: whatever the schema and the edits, a form gives contract-valid arguments or none ---

NAMES = st.sampled_from(["a", "b", "c"])
LEAVES = st.one_of(
    st.fixed_dictionaries({"type": st.just("string")}, optional={"minLength": st.integers(0, 3),
                                                                 "maxLength": st.integers(0, 5)}),
    st.fixed_dictionaries({"type": st.sampled_from(["integer", "number"])},
                          optional={"minimum": st.integers(-5, 0), "maximum": st.integers(0, 5)}),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.builds(lambda values: {"enum": values}, st.lists(st.sampled_from([1, "x", True, None]), min_size=1,
                                                        max_size=3, unique=True)),
    st.just({"const": "k"}),
    st.just({"type": ["string", "null"]}),
)  # fmt: skip


def _objects(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.one_of(
        st.builds(
            lambda properties, required, closed: {
                "type": "object",
                "properties": properties,
                "required": sorted(set(required) & set(properties)),
                "additionalProperties": closed,
            },
            st.dictionaries(NAMES, children, max_size=3),
            st.lists(NAMES, max_size=3),
            st.booleans(),
        ),
        st.builds(lambda items, most: {"type": "array", "items": items, "maxItems": most}, children, st.integers(0, 3)),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda branches: {"oneOf": branches}, st.lists(children, min_size=1, max_size=2)),
    )


ROOTS = st.builds(
    lambda properties, required: {"type": "object", "properties": properties,
                                  "required": sorted(set(required) & set(properties))},
    st.dictionaries(NAMES, st.recursive(LEAVES, _objects, max_leaves=6), max_size=3),
    st.lists(NAMES, max_size=3),
)  # fmt: skip
TEXTS = st.sampled_from(["", "x", "ab", "abc", "-1", "0", "1", "3", "2.5", "1e3", "7", "true", "null", "{}"])


def independent_validator(schema: dict) -> jsonschema.protocols.Validator:
    """JSON Schema 2020-12 itself, not purra's contract: an oracle the form's own check does not share."""
    return jsonschema.Draft202012Validator(schema)


def profile_schema(schema: dict) -> bool:
    try:
        _remote_contract(schema, LIMITS)
    except McpAdapterError:
        return False  # not a profile schema: such tools get the JSON editor instead
    return True


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=ROOTS, edits=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10), TEXTS), max_size=25))
def test_whatever_a_person_edits_the_form_gives_valid_arguments_or_none(
    schema: dict, edits: list[tuple[int, int, str]]
) -> None:
    assume(profile_schema(schema))
    form = form_for(schema)
    validator = independent_validator(schema)
    for which, choice, text in edits:
        fields = list(form.fields.values())
        _edit(fields[which % len(fields)], choice, text)
        arguments = form.arguments()
        assert form.review_button.disabled == (arguments is None)
        if arguments is not None:
            assert validator.is_valid(arguments), (schema, arguments)


BOUNDED_LEAVES = st.one_of(
    st.builds(lambda low, high: {"type": "string", "minLength": low, "maxLength": low + high},
              st.integers(1, 2), st.integers(0, 3)),
    st.builds(lambda kind, low, high: {"type": kind, "minimum": low, "maximum": high},
              st.sampled_from(["integer", "number"]), st.integers(-5, 0), st.integers(0, 5)),
)  # fmt: skip
# Roots that hold at least one bounded field somewhere, so the refusal half of the property has work to do.
BOUNDED_ROOTS = st.builds(
    lambda root, leaf, required, nest: _with_leaf(root, leaf, required, nest), ROOTS, BOUNDED_LEAVES, st.booleans(),
    st.booleans(),
)  # fmt: skip


def _with_leaf(root: dict, leaf: dict, required: bool, nest: bool) -> dict:
    child = {"type": "object", "properties": {"z": leaf}, "required": ["z"]} if nest else leaf
    return {
        **root,
        "properties": {**root["properties"], "z": child},
        "required": [*root["required"], *(["z"] if required else [])],
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(schema=st.one_of(ROOTS, BOUNDED_ROOTS), data=st.data())
def test_a_valid_value_comes_back_exactly_and_one_out_of_bounds_is_refused(schema: dict, data: st.DataObject) -> None:
    """A form must give exactly the valid value a person enters; then one field set beyond its bounds (a
    maximum, a minimum, a maxLength) must be refused, at that field's path."""
    assume(profile_schema(schema))
    value = data.draw(values_for(schema))
    # An empty text field means "not set", so a form cannot give the empty string; any other valid value it must.
    assume("" not in texts_in(value) and independent_validator(schema).is_valid(value))
    assume(contract_accepts(schema, value))
    form = form_for(schema)
    enter(form.root, value)
    assert exact(form.arguments()) == exact(value), form.problem.value
    assert not form.review_button.disabled

    bounded = [(path, field) for path, field in form.fields.items() if _bounded(field) and _present(value, path)]
    event("a field out of bounds" if bounded else "no bounded field")
    if bounded:
        path, field = data.draw(st.sampled_from(bounded))
        field.input.value = _beyond(field.schema)
        assert form.arguments() is None and form.review_button.disabled
        # The refusal names the field, or the anyOf/oneOf holding it (the contract cannot tell which branch).
        reported = form.problem_path
        assert path == reported or path.startswith((reported + ".", reported + "[")), (path, reported)


# --- helpers of the properties: valid values for a schema, and entering them as a person would ----------


def values_for(schema: dict) -> st.SearchStrategy[Any]:
    """Values meant to be valid for ``schema`` (the tests keep those an independent validator accepts)."""
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            base = {key: value for key, value in schema.items() if key != keyword}
            return st.one_of([values_for({**base, **branch}) for branch in schema[keyword]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([values_for({**schema, "type": one}) for one in kind])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if kind == "object":
        properties, required = schema.get("properties") or {}, set(schema.get("required") or ())
        return st.fixed_dictionaries(
            {name: values_for(child) for name, child in properties.items() if name in required},
            optional={name: values_for(child) for name, child in properties.items() if name not in required},
        )
    if kind == "array":
        return st.lists(values_for(schema.get("items") or {}), max_size=min(schema.get("maxItems", 3), 3))
    if kind == "string":
        return st.text("abz XY", min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 6))
    if kind == "integer":
        return st.integers(schema.get("minimum", -100), schema.get("maximum", 100))
    if kind == "number":
        low, high = schema.get("minimum", -100), schema.get("maximum", 100)
        return st.one_of(st.integers(low, high), st.floats(low, high, allow_nan=False).map(lambda x: round(x, 3)))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return st.one_of(st.integers(-5, 5), st.text("ab", max_size=3), st.booleans(), st.none())


def texts_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for child in value.values() for text in texts_in(child)]
    if isinstance(value, list):
        return [text for child in value for text in texts_in(child)]
    return []


def exact(value: Any) -> str:
    """A text that tells 1 from 1.0 and from True (Python's == does not)."""
    return json.dumps(value, sort_keys=True)


def enter(field: Any, value: Any) -> bool:
    """Make ``field`` hold ``value`` with the widgets a person uses; ``False`` if the field cannot."""
    if isinstance(field, UnionField):
        for index, branch in enumerate(field.branches):
            field.selector.value = index
            if enter(branch, value) and _holds(branch, value):
                return True
        return False
    if isinstance(field, NullableField):
        field.null.value = value is None
        return value is None or enter(field.inner, value)
    if isinstance(field, ObjectField):
        if not isinstance(value, dict):
            return False
        if field.include is not None:
            field.include.value = True
        return all(enter(field.children[name], item) for name, item in value.items() if name in field.children)
    if isinstance(field, ArrayField):
        if not isinstance(value, list):
            return False
        if field.include is not None:
            field.include.value = True
        while field.rows:
            field.remove_row(field.rows[-1])
        return all(enter(field.add_row(), item) for item in value)
    if isinstance(field, ChoiceField):  # enum, const and null
        index = next((i for i, known in enumerate(field.values) if exact(known) == exact(value)), None)
        if index is not None:
            field.input.value = index
        return index is not None
    if isinstance(field, BooleanField):
        if not isinstance(value, bool):
            return False
        field.input.value = value
        return True
    if isinstance(field, JsonField):
        field.input.value = json.dumps(value)
        return True
    if isinstance(field, NumberField | TextField):
        field.input.value = value if isinstance(value, str) else json.dumps(value)
        return isinstance(value, str) == isinstance(field, TextField) and not isinstance(value, bool)
    return False


def _holds(field: Any, value: Any) -> bool:
    try:
        return exact(field.value()) == exact(value)
    except FieldError:
        return False


def _bounded(field: Any) -> bool:
    schema = field.schema
    if isinstance(field, NumberField):
        return "maximum" in schema or "minimum" in schema
    return isinstance(field, TextField) and "maxLength" in schema


def _beyond(schema: dict) -> str:
    """A text just outside the field's bounds."""
    if "maxLength" in schema:
        return "x" * (schema["maxLength"] + 1)
    if "maximum" in schema:
        return str(schema["maximum"] + 1)
    return str(schema["minimum"] - 1)


def _present(value: Any, path: str) -> bool:
    """Whether ``path`` (``$.a[0].b``) names a place that holds something in ``value``."""
    for step in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[1:]):
        name, index = step
        if name and isinstance(value, dict) and name in value:
            value = value[name]
        elif index and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return False
    return True


def _edit(field: Any, choice: int, text: str) -> None:
    """One person-like edit: type text, pick an option, tick a box, add or remove a row."""
    if isinstance(field, ArrayField):
        if choice % 3 == 0 and field.rows:
            field.remove_row(field.rows[-1])
        else:
            field.add_row()
    elif isinstance(field, UnionField):
        options = [value for _, value in field.selector.options]
        field.selector.value = options[choice % len(options)]
    elif isinstance(field, NullableField):
        if choice % 2 == 0:
            field.null.value = not field.null.value
        else:
            _edit(field.inner, choice // 2, text)
    elif getattr(field, "include", None) is not None and choice % 2 == 0:
        field.include.value = not field.include.value
    elif hasattr(field, "input"):
        widget = field.input
        if hasattr(widget, "options"):
            options = [value for _, value in widget.options]
            widget.value = options[choice % len(options)]
        else:
            widget.value = text
