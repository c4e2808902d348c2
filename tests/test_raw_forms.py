"""Raw forms for real schemas, and sending without checking: widgets set and clicked as a person would, the call
approved by a click, and the arguments the server received compared exactly (a server in this process that
echoes them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from html import escape
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from mcp import types
from mcp.server.lowlevel import Server

import purra_jupyter as pj
from purra_jupyter._base import raw_schema
from purra_jupyter._purra.envelope import RawResult
from purra_jupyter._ui.approval import UNCHECKED_BANNER, PendingCall
from purra_jupyter._ui.forms import (
    MAX_FIELDS,
    REF_DEPTH,
    UNCHECKED_LABEL,
    UNSET_LABEL,
    ArrayField,
    BooleanField,
    ChoiceField,
    JsonField,
    NullableField,
    NumberField,
    ObjectField,
    SchemaForm,
    TextField,
    ToolForm,
    UnionField,
)

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# --- schemas as published servers write them (zod-to-json-schema: draft-07, $schema, closed objects) ---------

EDIT_FILE = {  # server-filesystem's edit_file
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                    "newText": {"type": "string", "description": "Text to replace with"},
                },
                "required": ["oldText", "newText"],
                "additionalProperties": False,
            },
        },
        "dryRun": {"type": "boolean", "default": False, "description": "Preview changes using git-style diff format"},
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}
RESOURCE_LINKS = {  # server-everything's get-resource-links
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "count": {"default": 3, "description": "Number of resource links to return (1-10)", "type": "number",
                  "minimum": 1, "maximum": 10},
    },
}  # fmt: skip
ANNOTATED = {  # server-everything's get-annotated-message
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "messageType": {"type": "string", "enum": ["error", "success", "debug"], "description": "Type of message"},
        "includeImage": {"default": False, "description": "Whether to include an example image", "type": "boolean"},
    },
    "required": ["messageType"],
}
GZIP = {  # server-everything's gzip-file-as-resource (a format, and string defaults)
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "name": {"default": "README.md.gz", "type": "string", "description": "Name of the output file"},
        "data": {"default": "https://example.org/README.md", "type": "string", "format": "uri"},
        "outputType": {"default": "resourceLink", "type": "string", "enum": ["resourceLink", "resource"]},
    },
}
NO_ARGUMENTS = {"$schema": DRAFT_07, "type": "object", "properties": {}}  # server-everything's get-env

# --- schemas of the shapes a raw form holds ---------------------------------------------------------------------

DEFINITIONS = {  # draft-07: definitions, a $ref with a title beside it
    "$schema": DRAFT_07,
    "type": "object",
    "definitions": {"point": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                              "required": ["x", "y"], "additionalProperties": False}},
    "properties": {"at": {"$ref": "#/definitions/point", "title": "Where"}, "to": {"$ref": "#/definitions/point"}},
    "required": ["at"],
    "additionalProperties": False,
}  # fmt: skip
DEFS = {  # 2020-12: $defs, a oneOf of references, an escaped pointer
    "$schema": DRAFT_2020_12,
    "type": "object",
    "$defs": {
        "Circle": {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
                   "required": ["kind", "radius"]},
        "Square": {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
                   "required": ["kind", "side"]},
        "a/b": {"type": "string", "minLength": 2},
    },
    "properties": {
        "shape": {"oneOf": [{"$ref": "#/$defs/Circle"}, {"$ref": "#/$defs/Square"}]},
        "label": {"$ref": "#/$defs/a~1b"},
    },
    "required": ["shape"],
}  # fmt: skip
LINKED = {  # a recursive reference through an optional object
    "type": "object",
    "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                       "required": ["value"]}},
    "properties": {"head": {"$ref": "#/$defs/node"}},
    "required": ["head"],
}  # fmt: skip
TREE = {  # a recursive reference through an array (rows of sub-forms)
    "type": "object",
    "$defs": {"tree": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}}}}},
    "properties": {"root": {"$ref": "#/$defs/tree"}},
    "required": ["root"],
}  # fmt: skip
NULLABLE = {
    "type": "object",
    "properties": {
        "typed": {"type": ["string", "null"]},
        "branch": {"anyOf": [{"type": "integer"}, {"type": "null"}], "description": "an integer or null"},
        "openapi": {"type": "string", "nullable": True},
    },
    "required": ["typed", "branch", "openapi"],
}
CHOICES = {
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {
        "color": {"enum": ["red", "green", 3, None, True]},
        "level": {"type": "string", "enum": ["low", "high"]},
        "kind": {"const": "fixed"},
    },
    "required": ["color", "kind"],
}
HINTED = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "pattern": "^[^@]+@[^@]+$"},
        "step": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
    },
    "required": ["email"],
}
PARTLY_JSON = {  # each node a form cannot hold is one JSON field; the rest stays a form
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "not_zero": {"not": {"const": 0}},
        "either": {"if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "integer"}},
        "tags": {"type": "object", "patternProperties": {"^t": {"type": "string"}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "outside": {"$ref": "https://example.org/schema.json"},
    },
    "required": ["name"],
}
COUNT = {"$schema": DRAFT_07, "type": "object", "properties": {"count": {"type": "integer", "minimum": 1}},
         "required": ["count"], "additionalProperties": False}  # fmt: skip

TOOLS = {
    "edit_file": EDIT_FILE,
    "get-resource-links": RESOURCE_LINKS,
    "get-annotated-message": ANNOTATED,
    "gzip-file-as-resource": GZIP,
    "get-env": NO_ARGUMENTS,
    "definitions": DEFINITIONS,
    "defs": DEFS,
    "linked": LINKED,
    "tree": TREE,
    "nullable": NULLABLE,
    "choices": CHOICES,
    "hinted": HINTED,
    "partly_json": PARTLY_JSON,
    "count": COUNT,
}


def echo_server(*, validate: bool) -> Any:
    """A server that answers every call with the arguments it received, as JSON text; ``validate`` makes it check
    them against the tool's schema first (the SDK's own validation, answered as a tool error)."""
    server: Any = Server("echo")
    server.received = []  # what the tool itself was called with

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=name, inputSchema=schema) for name, schema in TOOLS.items()]

    @server.call_tool(validate_input=validate)
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[types.TextContent]:
        server.received.append(arguments)
        return [types.TextContent(type="text", text=json.dumps(arguments, sort_keys=True))]

    return server


@contextmanager
def echo_session(*, validate: bool = False) -> Iterator[pj.McpSession]:
    with pj.connect(pj.ServerConfig("echo", server=echo_server(validate=validate))) as session:
        yield session


def exact(value: Any) -> str:
    """A text that tells 1 from 1.0 and from True (Python's == does not)."""
    return json.dumps(value, sort_keys=True)


def approved(form: ToolForm) -> RawResult:
    """Click "Review call", then "Approve" on the approval it shows, and wait for the raw result."""
    assert not form.review_button.disabled, form.problem.value
    form.review_button.click()
    pending = form.pending
    assert isinstance(pending, PendingCall) and pending.job.raw
    shown = pending.job.shown_arguments[1]  # the approval shows exactly what the form holds, defaults included
    assert exact(shown) == exact(form.arguments())
    assert escape(json.dumps(shown, indent=2, ensure_ascii=False)) in pending.widget.children[0].value
    pending.widget.approve_button.click()
    wait_until(lambda: pending.state == "done", what="the approved call")
    result = pending.result
    assert isinstance(result, RawResult)
    return result


def sent(form: ToolForm) -> Any:
    """What the server received from the form's call, approved by clicks."""
    result = approved(form)
    assert result.ok, result
    return json.loads(result.content[0]["text"])


# --- realistic schemas --------------------------------------------------------------------------------------------


def test_filesystem_edit_file_an_array_of_objects_as_rows_of_sub_forms() -> None:
    with echo_session(validate=True) as session:
        form = session.form("edit_file")
        assert form.raw and isinstance(form.fields["$.edits"], ArrayField)
        form.fields["$.path"].input.value = "/tmp/notes.md"
        edits = form.fields["$.edits"]
        for old, new in (("a", "b"), ("drop", "me"), ("c", "")):
            edits.add_button.click()
            row = edits.rows[-1]
            assert isinstance(row, ObjectField) and row.include is None  # a row's object is always there
            row.children["oldText"].input.value = old
            row.children["newText"].input.value = new
        assert form.review_button.disabled  # the third row's newText is required and empty
        assert "Review call waits for $.edits[2].newText: required" in form.problem.value
        edits.rows[1].remove_button.click()
        edits.rows[1].children["newText"].input.value = "d"
        dry_run = form.fields["$.dryRun"]
        assert isinstance(dry_run, BooleanField) and dry_run.input.value is False  # its default, shown
        assert "default false, prefilled (sent as shown)" in dry_run.help.value
        kept = [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}]
        assert exact(sent(form)) == exact({"path": "/tmp/notes.md", "edits": kept, "dryRun": False})


def test_everything_defaults_are_prefilled_sent_as_shown_and_left_out_when_cleared() -> None:
    with echo_session(validate=True) as session:
        links = session.form("get-resource-links")
        count = links.fields["$.count"]
        assert isinstance(count, NumberField) and count.input.value == "3"
        assert "default 3, prefilled (sent as shown)" in count.help.value
        assert count.error.value == "" and links.problem.value == ""  # a default is not an edit
        assert exact(sent(links)) == exact({"count": 3})
        count.input.value = ""  # cleared: an optional field left empty is left out (the server's default decides)
        assert exact(sent(links)) == exact({})

        gzip = session.form("gzip-file-as-resource")
        assert gzip.fields["$.outputType"].input.label == '"resourceLink"'  # an enum's default, picked
        assert "format uri" in gzip.fields["$.data"].help.value
        gzip.fields["$.name"].input.value = "other.gz"
        assert exact(sent(gzip)) == exact({"name": "other.gz", "data": "https://example.org/README.md",
                                           "outputType": "resourceLink"})  # fmt: skip

        annotated = session.form("get-annotated-message")
        message_type = annotated.fields["$.messageType"]
        assert isinstance(message_type, ChoiceField)
        assert [label for label, _ in message_type.input.options] == ['"error"', '"success"', '"debug"']
        message_type.input.value = 2
        annotated.fields["$.includeImage"].input.value = True
        assert exact(sent(annotated)) == exact({"messageType": "debug", "includeImage": True})

        empty = session.form("get-env")  # a tool with no arguments: an empty form, ready to review
        assert isinstance(empty.root, ObjectField) and not empty.root.children
        assert exact(sent(empty)) == exact({})


# --- $ref, $defs, definitions, recursion --------------------------------------------------------------------------


def test_draft_07_definitions_are_read_in_the_schema_itself() -> None:
    with echo_session(validate=True) as session:
        form = session.form("definitions")
        at, to = form.fields["$.at"], form.fields["$.to"]
        assert isinstance(at, ObjectField) and "Where" in at.label.value and at.include is None
        assert isinstance(to, ObjectField) and to.include is not None  # optional: included only when ticked
        at.children["x"].input.value = "1"
        at.children["y"].input.value = "-2"
        assert exact(sent(form)) == exact({"at": {"x": 1, "y": -2}})
        to.include.value = True
        to.children["x"].input.value = "5"
        assert form.review_button.disabled and "$.to.y" in form.problem.value
        to.children["y"].input.value = "6"
        assert exact(sent(form)) == exact({"at": {"x": 1, "y": -2}, "to": {"x": 5, "y": 6}})


def test_2020_12_defs_one_of_references_is_a_choice_named_by_the_references() -> None:
    with echo_session(validate=True) as session:
        form = session.form("defs")
        shape = form.fields["$.shape"]
        assert isinstance(shape, UnionField)
        assert [label for label, _ in shape.selector.options] == ["Circle", "Square"]
        shape.branches[0].children["radius"].input.value = "1.5"
        assert exact(sent(form)) == exact({"shape": {"kind": "circle", "radius": 1.5}})
        shape.selector.value = 1
        assert form.review_button.disabled  # the square needs its side
        form.fields["$.shape.side"].input.value = "2"
        label = form.fields["$.label"]  # "#/$defs/a~1b": the pointer's escapes read as JSON Pointer says
        assert isinstance(label, TextField)
        label.input.value = "x"
        assert form.review_button.disabled and "is too short" in label.error.value
        label.input.value = "xy"
        assert exact(sent(form)) == exact({"shape": {"kind": "square", "side": 2}, "label": "xy"})


def test_a_recursive_reference_is_followed_to_a_bounded_depth_then_typed_as_json() -> None:
    with echo_session(validate=True) as session:
        form = session.form("linked")
        node = form.fields["$.head"]
        depth = 0
        while isinstance(node, ObjectField):
            node.children["value"].input.value = str(depth)
            if node.include is not None:
                node.include.value = True
            node, depth = node.children["next"], depth + 1
        assert depth == REF_DEPTH and isinstance(node, JsonField)
        assert f"refers to itself, and the form follows it {REF_DEPTH} times" in node.help.value
        node.input.value = '{"value": 9, "next": {"value": 10}}'  # past the depth: the rest as JSON
        assert exact(sent(form)) == exact(
            {
                "head": {
                    "value": 0,
                    "next": {"value": 1, "next": {"value": 2, "next": {"value": 9, "next": {"value": 10}}}},
                }
            }
        )
        node.input.value = '{"value": "nine"}'  # the JSON is checked by the schema like any field
        assert form.review_button.disabled and "is not of type" in node.error.value
        assert "$.head.next.next.next.value" in node.error.value  # (the path, on hover)


def test_a_recursive_array_of_objects_adds_rows_down_to_the_depth() -> None:
    with echo_session(validate=True) as session:
        form = session.form("tree")
        root = form.fields["$.root"]
        root.children["name"].input.value = "top"
        children = root.children["children"]
        children.add_button.click()
        child = children.rows[0]
        assert isinstance(child, ObjectField)
        child.children["name"].input.value = "kid"
        child.children["children"].add_button.click()
        grandchild = child.children["children"].rows[0]
        grandchild.children["name"].input.value = "grandkid"
        grandchild.children["children"].add_button.click()
        deepest = grandchild.children["children"].rows[0]
        assert isinstance(deepest, JsonField)  # the reference's fourth use along the path
        deepest.input.value = '{"name": "leaf"}'
        assert exact(sent(form)) == exact({"root": {"name": "top", "children": [
            {"name": "kid", "children": [{"name": "grandkid", "children": [{"name": "leaf"}]}]}]}})  # fmt: skip


# --- nullable, enums, const ---------------------------------------------------------------------------------------


def test_every_spelling_of_nullable_is_a_value_or_an_explicit_null() -> None:
    with echo_session() as session:  # (the SDK's validator does not know OpenAPI's nullable: no server check)
        form = session.form("nullable")
        fields = {name: form.fields[f"$.{name}"] for name in ("typed", "branch", "openapi")}
        assert all(isinstance(field, NullableField) for field in fields.values())
        assert isinstance(fields["branch"].inner, NumberField) and "an integer or null" in fields["branch"].help.value
        for field in fields.values():
            field.null.value = True
        assert exact(sent(form)) == exact({"typed": None, "branch": None, "openapi": None})
        fields["typed"].null.value = False
        fields["typed"].inner.input.value = "words"
        fields["branch"].null.value = False
        fields["branch"].inner.input.value = "7"
        assert exact(sent(form)) == exact({"typed": "words", "branch": 7, "openapi": None})
        fields["branch"].inner.input.value = "7.5"
        assert form.review_button.disabled  # an integer, or null


NULLABLE_VALUES = st.fixed_dictionaries({
    "typed": st.one_of(st.none(), st.text("ab yz", min_size=1, max_size=5)),
    "branch": st.one_of(st.none(), st.integers(-10**6, 10**6)),
    "openapi": st.one_of(st.none(), st.text("xyz", min_size=1, max_size=4)),
})  # fmt: skip
CHOICE_VALUES = st.fixed_dictionaries(
    {"color": st.sampled_from(CHOICES["properties"]["color"]["enum"]), "kind": st.just("fixed")},
    optional={"level": st.sampled_from(["low", "high"])},
)
EDIT_VALUES = st.fixed_dictionaries(
    {"path": st.text("/abc", min_size=1, max_size=8),
     "edits": st.lists(st.fixed_dictionaries({"oldText": st.text("ab\n", min_size=1, max_size=4),
                                              "newText": st.text("cd ", min_size=1, max_size=4)}), max_size=4)},
    optional={"dryRun": st.booleans()},
)  # fmt: skip


def enter(field: Any, value: Any) -> None:
    """Make ``field`` show ``value`` with the widgets a person uses (value fit for the field's schema)."""
    if isinstance(field, NullableField):
        field.null.value = value is None
        if value is not None:
            enter(field.inner, value)
    elif isinstance(field, ObjectField):
        if field.include is not None:
            field.include.value = True
        for name, child in field.children.items():
            if name in value:
                enter(child, value[name])
            else:
                clear(child)
    elif isinstance(field, ArrayField):
        while field.rows:
            field.rows[-1].remove_button.click()
        for item in value:
            field.add_button.click()
            enter(field.rows[-1], item)
    elif isinstance(field, ChoiceField):
        field.input.value = [exact(known) for known in field.values].index(exact(value))
    elif isinstance(field, BooleanField):
        field.input.value = value
    else:
        field.input.value = value if isinstance(value, str) else json.dumps(value)


def _unset(field: Any) -> Any:
    return next((value for label, value in field.input.options if label == UNSET_LABEL), None)


def clear(field: Any) -> None:
    """Leave an optional field unset, as a person would."""
    if getattr(field, "include", None) is not None:
        field.include.value = False
    elif isinstance(field, ChoiceField | BooleanField):
        field.input.value = _unset(field)
    else:
        field.input.value = ""


@pytest.mark.parametrize(
    ("tool", "values"), [("nullable", NULLABLE_VALUES), ("choices", CHOICE_VALUES), ("edit_file", EDIT_VALUES)]
)
def test_generated_values_round_trip_through_the_form_to_exactly_those_arguments(
    tool: str, values: st.SearchStrategy[dict[str, Any]]
) -> None:
    with echo_session() as session:

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(value=values)
        def round_trip(value: dict[str, Any]) -> None:
            form = session.form(tool)
            enter(form.root, value)
            assert exact(sent(form)) == exact(value)

        round_trip()


def test_enums_and_const_are_dropdowns_of_their_values() -> None:
    with echo_session(validate=True) as session:
        form = session.form("choices")
        color, level, kind = (form.fields[f"$.{name}"] for name in ("color", "level", "kind"))
        assert [label for label, _ in color.input.options] == ['"red"', '"green"', "3", "null", "true"]
        assert [label for label, _ in level.input.options] == [UNSET_LABEL, '"low"', '"high"']
        assert [label for label, _ in kind.input.options] == ['"fixed"']
        color.input.value = 3  # the option showing `null`
        assert exact(sent(form)) == exact({"color": None, "kind": "fixed"})


# --- hints, and JSON only where a form cannot hold a node ----------------------------------------------------------


def test_formats_patterns_and_bounds_are_hints_and_the_schema_checks() -> None:
    with echo_session(validate=True) as session:
        form = session.form("hinted")
        email, step = form.fields["$.email"], form.fields["$.step"]
        assert "format email" in email.help.value and "must match ^[^@]+@[^@]+$" in email.help.value
        assert "more than 0" in step.help.value and "a multiple of 0.5" in step.help.value
        email.input.value = "not an address"
        assert form.review_button.disabled and "does not match" in email.error.value
        email.input.value = "ada@example.org"
        step.input.value = "0.75"
        assert form.review_button.disabled and "multiple of 0.5" in step.error.value
        step.input.value = "1.5"
        assert exact(sent(form)) == exact({"email": "ada@example.org", "step": 1.5})


def test_only_the_nodes_a_form_cannot_hold_are_json_fields_each_with_its_reason() -> None:
    with echo_session() as session:
        form = session.form("partly_json")
        assert isinstance(form.fields["$.name"], TextField)
        reasons = {"not_zero": "&#x27;not&#x27;", "either": "&#x27;if&#x27;", "tags": "&#x27;patternProperties&#x27;",
                   "labels": "keys of your choice", "outside": "never fetches"}  # fmt: skip
        for name, reason in reasons.items():
            field = form.fields[f"$.{name}"]
            assert isinstance(field, JsonField) and reason in field.help.value, (name, field.help.value)
        form.fields["$.name"].input.value = "n"
        form.fields["$.not_zero"].input.value = "0"
        assert form.review_button.disabled and "should not be valid" in form.fields["$.not_zero"].error.value
        form.fields["$.not_zero"].input.value = "[1, 2]"
        form.fields["$.labels"].input.value = '{"a": "b"}'
        form.fields["$.tags"].input.value = "{oops"
        assert form.review_button.disabled and "not JSON" in form.fields["$.tags"].error.value
        form.fields["$.tags"].input.value = '{"t1": "x", "other": 3}'
        assert exact(sent(form)) == exact({"name": "n", "not_zero": [1, 2], "labels": {"a": "b"},
                                           "tags": {"t1": "x", "other": 3}})  # fmt: skip


# --- send without checking -----------------------------------------------------------------------------------------


def test_without_checking_the_servers_own_validation_answers_only_after_approval() -> None:
    with echo_session(validate=True) as session:
        server = session.connection.config.server
        refused = session.call("count", {"count": 0}, raw=True)  # checked: refused here, nothing sent
        assert isinstance(refused, RawResult) and refused.error_code == "mcp_invalid_arguments"
        assert "$.count" in refused.message and "nothing was sent" in refused.message
        assert server.received == []

        pending = session.call("count", {"count": 0}, raw=True, check_arguments=False)
        assert isinstance(pending, PendingCall) and pending.state == "pending" and pending.job.raw
        details = pending.widget.children[0].value
        assert escape(UNCHECKED_BANNER) in details and "NOT checked" in details
        assert "sent exactly as shown, NOT checked" in pending.job.shown_arguments[0]
        assert server.received == []  # nothing before the approval
        pending.widget.approve_button.click()
        wait_until(lambda: pending.state == "done", what="the approved unchecked call")
        result = pending.result
        assert isinstance(result, RawResult) and result.is_error and result.error_code == "mcp_tool_error"
        assert "Input validation error" in result.content[0]["text"]  # the server's own words
        assert server.received == []  # the SDK's validation refused it before the tool ran
        approvals = [row.detail for row in session.log.events("approval")]
        assert any("approved by a click" in row and ", unchecked" in row for row in approvals), approvals


def test_the_raw_forms_toggle_sends_what_the_schema_refuses_and_warns_of_it() -> None:
    with echo_session() as session:  # (a server that does not validate: what it receives is what was sent)
        form = session.form("count")
        assert form.unchecked is not None and form.unchecked.description == UNCHECKED_LABEL
        assert form.review_button.disabled and "Review call waits for $.count: required" in form.problem.value
        form.unchecked.value = True  # a required field left empty is left out: the server's validation decides
        assert not form.review_button.disabled and "not checked" in form.problem.value
        assert "required" in form.problem.value
        form.fields["$.count"].input.value = "0"
        assert not form.review_button.disabled
        assert "not checked" in form.problem.value and "less than the minimum" in form.fields["$.count"].error.value
        form.fields["$.count"].input.value = "zero"  # a value a number field cannot make: still blocks
        assert form.review_button.disabled and "not an integer" in form.fields["$.count"].error.value
        form.fields["$.count"].input.value = "0"
        form.review_button.click()
        assert isinstance(form.pending, PendingCall) and form.pending.job.check_arguments is False
        form.pending.deny()
        assert exact(sent(form)) == exact({"count": 0})
        form.unchecked.value = False
        assert form.review_button.disabled  # checked again


def test_check_arguments_false_is_for_raw_calls_only() -> None:
    with echo_session() as session:
        for kwargs in ({"check_arguments": False}, {"check_arguments": "no", "raw": True}):
            with pytest.raises(pj.McpSessionError) as raised:
                session.call("count", {"count": 0}, **kwargs)
            assert raised.value.code == "mcp_config_invalid" and "\n" not in raised.value.message
            assert raised.value.message in ("check_arguments must be True or False.", "check_arguments=False is "
                                            "for raw calls only (raw=True): a PurrA call's arguments are always "
                                            "checked against its contract.")  # fmt: skip
        assert session.connection.config.server.received == []


def test_mcp_call_raw_unchecked_proposes_the_call_unchecked(ip: Any) -> None:
    with echo_session(validate=True) as session:
        pending = ip.run_line_magic("mcp_call", 'echo count --raw --unchecked {"count": "many"}')
        assert isinstance(pending, PendingCall) and pending.job.check_arguments is False
        assert session.connection.config.server.received == []
        pending.approve()
        wait_until(lambda: pending.state == "done", what="the approved call")
        assert "Input validation error" in pending.result.content[0]["text"]
        refused = ip.run_line_magic("mcp_call", 'echo count --raw {"count": "many"}')
        assert refused.error_code == "mcp_invalid_arguments"
        help_text = " ".join(str(ip.run_line_magic("mcp_call", "--help")).split())
        assert "--unchecked" in help_text and "probe the server's own validation" in help_text
        with pytest.raises(UsageError) as raised:
            ip.run_line_magic("mcp_call", 'echo count --unchecked {"count": 0}')
        assert str(raised.value).startswith("mcp_config_invalid: --unchecked is for raw calls only (--raw)")
        assert session.connection.config.server.received == []


def test_references_that_fan_out_build_a_bounded_form() -> None:
    """Twelve definitions each referring twice to the next would be 2**12 fields; a server's schema must not make
    the kernel build them: past MAX_FIELDS, a node is a JSON field saying why."""
    defs: dict[str, Any] = {}
    for i in range(12):
        child = {"$ref": f"#/$defs/d{i + 1}"}
        defs[f"d{i}"] = {"type": "object", "properties": {"l": child, "r": child}}
    defs["d12"] = {"type": "string"}
    schema = {"type": "object", "$defs": defs, "properties": {"top": {"$ref": "#/$defs/d0"}}}
    form = SchemaForm(schema, raw_schema.checker(schema), raw=True)
    assert form.built <= MAX_FIELDS + 2 * 12  # (the JSON fields standing in: at most one per sibling on a path)
    capped = [field for field in form.fields.values() if f"at most {MAX_FIELDS} fields" in field.help.value]
    assert capped and all(isinstance(field, JsonField) for field in capped)
    assert form.arguments() == {}  # (every object optional: nothing included yet)


def test_openapi_nullable_admits_null_in_the_raw_check() -> None:
    check = raw_schema.checker({"type": "object", "properties": {"x": {"type": "string", "nullable": True},
                                                                 "y": {"type": "string"}}})  # fmt: skip
    assert check({"x": None}) is None and check({"x": "text"}) is None
    assert check({"x": 3}) is not None and check({"y": None}) is not None  # only where the node says so


EVERYTHING = Path(__file__).parent / "servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


@pytest.mark.published  # a published MCP server from npm
def test_against_the_published_everything_server_a_default_is_sent_and_its_own_validation_answers() -> None:
    assert EVERYTHING.exists(), "scripts/test installs tests/servers' npm packages"
    config = pj.ServerConfig("everything", command="node", args=[str(EVERYTHING), "stdio"])
    with pj.connect(config) as session:
        links = session.form("get-resource-links")  # draft-07, a number with a default of 3
        assert links.raw and links.fields["$.count"].input.value == "3"
        result = approved(links)
        assert result.ok and result.content[0]["text"].startswith("Here are 3 resource links")
        assert len(result.content) == 4  # the line, and the 3 links the default asked for

        echo = session.form("echo")
        echo.unchecked.value = True  # `message` left empty: left out, and the server's validation answers
        refused = approved(echo)
        assert refused.error_code == "mcp_tool_error" and "Input validation error" in refused.content[0]["text"]
        assert "message" in refused.content[0]["text"]
        checked = session.call("echo", {"message": 3}, raw=True)  # checked: refused here, nothing sent
        assert checked.error_code == "mcp_invalid_arguments" and "nothing was sent" in checked.message
