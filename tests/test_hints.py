"""Property: the catalog's hints lead to a fix. Over generated refused schemas ($defs and $ref, nested and
recursive; a draft-07 $schema; default, format, pattern; null keyword values; additionalProperties schemas; boolean
subschemas; exclusive bounds on integers and numbers; output schemas with defaults), doing what each reason says at
its path, word for word, makes purra-mcp accept the schema. A recursive $ref says it cannot be inlined, and its hint
(drop it) is followed too."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import types
from purra_mcp import McpToolLimits

from purra_jupyter._connection import purra_adapter
from purra_jupyter._purra.listing import verdict_of
from purra_jupyter._purra.reasons import DRAFT_2020_12

LIMITS = McpToolLimits()
NAMES = st.sampled_from(["a", "b", "c"])
REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#/$defs/A/$defs/C", "#/definitions/D", "#", "#/$defs/gone"])
DEFINITIONS = ("$defs", "definitions")


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def _strings() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={"default": st.just("x"), "format": st.just("uri"), "pattern": st.just("^a"),
                  "description": st.sampled_from(["d", None])},
    )  # fmt: skip


def _integers() -> st.SearchStrategy[dict]:
    """Integers with exclusive bounds (2020-12 numbers or a draft-04 flag on minimum) that leave some integer."""

    def build(low: int, gap: int, kind: str, nullable: bool) -> dict:
        schema: dict = {"type": ["integer", "null"] if nullable else "integer"}
        if kind in ("low", "both"):
            schema["exclusiveMinimum"] = low
        if kind in ("high", "both"):
            schema["exclusiveMaximum"] = low + gap
        if kind == "draft-04":
            schema.update(minimum=low, exclusiveMinimum=True)
        return schema

    kinds = st.sampled_from(["low", "high", "both", "draft-04"])
    return st.builds(build, st.integers(-3, 3), st.integers(2, 4), kinds, st.booleans())


def _numbers() -> st.SearchStrategy[dict]:
    bound = st.sampled_from([0, 0.5, -2.25, 7])
    return st.fixed_dictionaries(
        {"type": st.just("number")}, optional={"exclusiveMinimum": bound, "exclusiveMaximum": st.just(10)}
    )


def _ref() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({"$ref": REFS}, optional={"description": st.just("d"), "default": st.just(1)})


LEAVES = st.one_of(_strings(), _integers(), _numbers(), _ref(), st.just(True))


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    member = st.one_of(children, st.just(False))  # false: the property must be absent
    objects = st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(NAMES, member, max_size=3)},
        optional={
            "additionalProperties": st.one_of(st.booleans(), children),
            "$defs": st.fixed_dictionaries({}, optional={"C": children}),
            "default": st.just({}),
        },
    )
    arrays = st.fixed_dictionaries({"type": st.just("array"), "items": st.one_of(children, st.booleans())})
    return st.one_of(objects, arrays)


SUBSCHEMAS = st.recursive(LEAVES, _extend, max_leaves=8)


@st.composite
def roots(draw: st.DrawFn) -> dict:
    schema: dict = {"type": "object", "properties": draw(st.dictionaries(NAMES, SUBSCHEMAS, min_size=1, max_size=3))}
    definitions = draw(st.fixed_dictionaries({}, optional={"A": SUBSCHEMAS, "B": SUBSCHEMAS}))
    if definitions:
        schema["$defs"] = definitions
    if draw(st.booleans()):
        schema["definitions"] = {"D": draw(SUBSCHEMAS)}
    if draw(st.booleans()):  # the whole root given by reference
        schema = {"$ref": "#/$defs/Root", "$defs": {**schema.pop("$defs", {}), "Root": schema}}
    dialect = draw(st.sampled_from([None, "http://json-schema.org/draft-07/schema#", DRAFT_2020_12]))
    return schema if dialect is None else {"$schema": dialect, **schema}


# --- following the hints, word for word ----------------------------------------------------------------------

_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _tokens(path: str, where: str) -> list[str | int]:
    assert path.startswith(where), path
    rest = path[len(where) :]
    return [int(index) if index else name for name, index in _PATH_TOKEN.findall(rest)]


def _at(schema: Any, tokens: list[str | int]) -> Any:
    for token in tokens:
        schema = schema[token]
    return schema


def apply_reason(schema: dict, reason: str, where: str) -> str:
    """Do what ``reason`` says at its path; returns the action taken (``inline`` and ``drop-defs`` are left for
    ``follow``, which does them once every other hint is applied: the definitions are fixed before they are
    copied)."""
    path, rest = reason.split(": ", 1)
    _, hint = rest.split(" — ", 1)
    tokens = _tokens(path, where)
    parent, key = _at(schema, tokens[:-1]), tokens[-1]
    if hint.startswith("inline "):
        return "inline"
    if hint == "drop it once every $ref into it is inlined":
        return "drop-defs"
    if hint.startswith("drop it"):
        del parent[key]
        also = re.match(r"drop it and use (\w+): (\S+) ", hint)
        if also:
            parent[also[1]] = json.loads(also[2])
        return "drop"
    replaced = re.match(r"use (\w+): (-?\d+) ", hint)
    if replaced:
        del parent[key]
        parent[replaced[1]] = int(replaced[2])
        return "replace"
    value = re.match(r"use (\{\}|true|false) ", hint)
    if value:
        parent[key] = json.loads(value[1])
        return "use"
    raise AssertionError(f"a hint a test cannot follow: {reason}")


def _inline(node: Any, root: dict, depth: int = 0) -> Any:
    """Every ``$ref`` replaced by its target's keywords (then its own), as the inline hints say."""
    assert depth < 50, "inlining did not end: a recursive $ref was left"
    if isinstance(node, list):
        return [_inline(child, root, depth) for child in node]
    if not isinstance(node, dict):
        return node
    result: dict = {}
    if "$ref" in node:
        target = root
        for token in node["$ref"][2:].split("/"):
            target = target[token]
        result.update(_inline(copy.deepcopy(target), root, depth + 1))
    result.update({key: _inline(value, root, depth) for key, value in node.items() if key != "$ref"})
    return result


def _without_definitions(node: Any) -> Any:
    if isinstance(node, list):
        return [_without_definitions(child) for child in node]
    if isinstance(node, dict):
        return {key: _without_definitions(value) for key, value in node.items() if key not in DEFINITIONS}
    return node


def follow(schema: dict, reasons: list[str], where: str) -> tuple[dict, list[str]]:
    fixed = copy.deepcopy(schema)
    actions = [apply_reason(fixed, reason, where) for reason in reasons]
    if "inline" in actions:
        fixed = _inline(fixed, fixed)
    if "drop-defs" in actions:
        fixed = _without_definitions(fixed)
    return fixed, actions


def _has_refs(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" in node or any(_has_refs(value) for value in node.values())
    return isinstance(node, list) and any(_has_refs(child) for child in node)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(input_schema=roots(), output_schema=st.one_of(st.none(), roots()))
def test_following_every_hint_makes_purra_accept_the_schema(input_schema: dict, output_schema: Any) -> None:
    tool = types.Tool(name="t", inputSchema=input_schema, outputSchema=output_schema)
    verdict = verdict_of(tool, LIMITS)
    for where, schema in (("inputSchema", input_schema), ("outputSchema", output_schema)):
        refused = schema is not None and purra_adapter.schema_refusal(schema, LIMITS) is not None
        verdict_of_schema = verdict.input_verdict if where == "inputSchema" else verdict.output_verdict
        assert (verdict_of_schema == "unsupported") == refused  # the verdict stays purra-mcp's
        if not refused:
            continue
        reasons = [reason for reason in verdict.reasons if reason.split(": ", 1)[0].split(".")[0] == where]
        assert reasons, (where, verdict.reasons)
        fixed, _ = follow(schema, reasons, where)
        assert not _has_refs(fixed)
        refusal = purra_adapter.schema_refusal(fixed, LIMITS)
        assert refusal is None, (reasons, fixed)
        if where == "outputSchema":
            assert "optional parameter" not in " ".join(reasons)


def test_a_recursive_ref_says_it_cannot_be_inlined_and_dropping_it_is_accepted() -> None:
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array",
                                                                         "items": {"$ref": "#/$defs/Node"}}}}},
    }  # fmt: skip
    reasons = list(verdict_of(types.Tool(name="t", inputSchema=schema), LIMITS).reasons)
    recursive = "inputSchema.$defs.Node.properties.children.items.$ref"
    [said] = [reason for reason in reasons if reason.startswith(recursive)]
    assert '"#/$defs/Node" cannot be inlined' in said and "recursive schema, which PurrA cannot represent" in said
    fixed, actions = follow(schema, reasons, "inputSchema")
    assert actions.count("drop") == 1 and "inline" in actions
    assert fixed == {
        "type": "object",
        "properties": {"tree": {"type": "object", "properties": {"children": {"type": "array", "items": {}}}}},
    }
    assert purra_adapter.schema_refusal(fixed, LIMITS) is None


def test_fastmcps_own_keyword_says_what_the_tools_author_can_change() -> None:
    """FastMCP marks a result it wraps with ``x-fastmcp-wrap-result``; the author never wrote it, so "drop it" says
    nothing they can do: the hint says what makes FastMCP leave it out."""
    wrapped = {"type": "object", "properties": {"result": {"type": "array", "items": {"type": "string"}}},
               "required": ["result"], "x-fastmcp-wrap-result": True}  # fmt: skip
    [reason] = verdict_of(types.Tool(name="t", inputSchema={"type": "object"}, outputSchema=wrapped), LIMITS).reasons
    assert reason.startswith('outputSchema.x-fastmcp-wrap-result: "x-fastmcp-wrap-result" is outside the profile')
    assert "FastMCP adds it" in reason and "return an object (a pydantic model, a dataclass or a TypedDict)" in reason
    unwrapped = {key: value for key, value in wrapped.items() if key != "x-fastmcp-wrap-result"}
    assert purra_adapter.schema_refusal(unwrapped, LIMITS) is None  # (the rest of it is inside the profile)
