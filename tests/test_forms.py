"""Argument forms generated from schemas: every keyword family of the profile, and a property test."""

from __future__ import annotations

from typing import Any

from conftest import demo_config, wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from purra_mcp import McpAdapterError, McpToolLimits, _remote_contract

import purra_jupyter as pj
from purra_jupyter.calls import argument_checker
from purra_jupyter.ui.approval import PendingCall
from purra_jupyter.ui.forms import UNSET_LABEL, ArrayField, SchemaForm, UnionField

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
    assert fields["$.limit"].input.placeholder == "integer ≥ 1 ≤ 10"
    fields["$.query"].input.value = "mcp"
    fields["$.limit"].input.value = "5"
    fields["$.ratio"].input.value = "0.5"
    fields["$.exact"].input.value = False
    mode = fields["$.mode"].input
    assert [label for label, _ in mode.options] == [UNSET_LABEL, '"fast"', '"thorough"']
    mode.value = 1
    fields["$.kind"].input.value = 0
    note = fields["$.note"]
    assert isinstance(note, UnionField)
    note.selector.value = 1  # the null branch
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
    assert "maximum" in form.fields["$.limit"].error.value
    assert "$.limit" in form.problem.value
    form.fields["$.limit"].input.value = "abc"
    assert "not an integer" in form.fields["$.limit"].error.value
    form.fields["$.limit"].input.value = "10"
    assert form.arguments() is not None and not form.review_button.disabled
    assert form.fields["$.limit"].error.value == ""
    form.fields["$.ids"].add_row().input.value = ""
    assert form.arguments() is None and "$.ids[0]" in form.problem.value


def test_a_tool_form_reviews_into_the_approval_widget() -> None:
    with pj.connect(demo_config()) as session:
        form = session.form("search_documents")
        form.fields["$.query"].input.value = "jupyter"
        form.fields["$.limit"].input.value = "2"
        form.review_button.click()
        pending = form.pending
        assert isinstance(pending, PendingCall) and pending.job.arguments == {"query": "jupyter", "limit": 2}
        pending.widget.approve_button.click()
        wait_until(lambda: pending.state == "done", what="the approved call")
        assert pending.result.ok

        editor = session.form("greet")  # outside the profile: a JSON editor checked with jsonschema
        assert editor.editor is not None and editor.arguments() is None
        editor.editor.value = '{"name": 3}'
        assert editor.arguments() is None and "$.name" in editor.problem.value
        editor.editor.value = '{"name": "Ada"}'
        editor.review_button.click()
        assert editor.pending.job.raw and editor.pending.job.arguments == {"name": "Ada"}
        editor.pending.deny()


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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=ROOTS, edits=st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10), TEXTS), max_size=25))
def test_forms_give_contract_valid_arguments_or_refuse(schema: dict, edits: list[tuple[int, int, str]]) -> None:
    try:
        _remote_contract(schema, LIMITS)
    except McpAdapterError:
        return  # not a profile schema: such tools get the JSON editor instead
    form = form_for(schema)
    for which, choice, text in edits:
        fields = list(form.fields.values())
        _edit(fields[which % len(fields)], choice, text)
        arguments = form.arguments()
        assert form.review_button.disabled == (arguments is None)
        if arguments is not None:
            assert contract_accepts(schema, arguments), (schema, arguments)


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
    elif getattr(field, "include", None) is not None and choice % 2 == 0:
        field.include.value = not field.include.value
    elif hasattr(field, "input"):
        widget = field.input
        if hasattr(widget, "options"):
            options = [value for _, value in widget.options]
            widget.value = options[choice % len(options)]
        else:
            widget.value = text
