"""Why purra's ``purra.output-schema/v1`` profile refuses a schema, in words a server's author can act on: each
problem with its path in the schema and the change that would make it pass.

Whether a schema passes is purra's own code (``purra_adapter.schema_refusal``); this module only explains a refusal,
and never passes what purra refuses: when no finder here names the problem, the reason says purra refused it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import unquote

from .._connection import purra_adapter
from .._connection.purra_adapter import Shape

if TYPE_CHECKING:
    from purra_mcp import McpToolLimits

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_SAFE_INTEGER = 2**53 - 1

# Hints for the keywords purra's profile refuses, phrased for the server's author.
_KEYWORD_HINTS = {
    "$ref": "inline the referenced schema",
    "$defs": "inline the definitions where they are used",
    "definitions": "inline the definitions where they are used",
    "$id": "drop it",
    "$comment": "drop it or move it into description",
    "default": "drop it and document the default in the description (an optional parameter is simply "
    "left out of required)",
    "format": "drop it and describe the expected format in the description",
    "pattern": "drop it, describe the pattern in the description and check it on the server",
    "examples": "drop it or move examples into the description",
    "exclusiveMinimum": "drop it and check the bound on the server",  # _bound_hint says more where it can
    "exclusiveMaximum": "drop it and check the bound on the server",
    "allOf": "merge the branches into one schema",
    "not": "drop it and check the value on the server",
    "if": "drop the conditional and check it on the server",
    "then": "drop the conditional and check it on the server",
    "else": "drop the conditional and check it on the server",
    "patternProperties": "list the properties explicitly",
    "propertyNames": "drop it and check names on the server",
    "dependentRequired": "drop it and check it on the server",
    "dependentSchemas": "drop it and check it on the server",
    "prefixItems": "use one items schema",
    "contains": "drop it and check it on the server",
    "multipleOf": "drop it and check it on the server",
    "readOnly": "drop it",
    "writeOnly": "drop it",
    "deprecated": "drop it or say so in the description",
    "nullable": 'use type [..., "null"] or anyOf with {"type": "null"}',
    # FastMCP writes it, not the tool's author: the mark of a result it wraps as {"result": ...}
    "x-fastmcp-wrap-result": 'FastMCP adds it to a tool that returns no object (it sends {"result": ...}): return '
    "an object (a pydantic model, a dataclass or a TypedDict) and FastMCP needs no wrapper",
}


# What a binding declares a tool does: purra's ToolRiskLevel values (spelled here, so that importing the catalog


def schema_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """Every problem purra's profile finds in ``schema``, as ``"<path>: <what> — <hint>"``."""
    reasons: list[str] = []
    finders = (
        _size_reasons,
        _dialect_reasons,
        _root_reasons,
        _shape_reasons,
        _null_reasons,
        _profile_reasons,
        _inlined_reasons,
    )
    for finder in finders:
        try:
            reasons.extend(finder(schema, where, limits))
        except (TypeError, ValueError, OverflowError, RecursionError):
            continue
    # Deduplicate while keeping order: the same problem may be seen by two finders.
    unique = list(dict.fromkeys(reasons))
    return unique or [f"{where}: {FALLBACK_REASON} — simplify the schema"]


def protocol_reason(refused: str) -> str:
    """The reason every tool of a session whose protocol PurrA refuses carries first (``refused`` says why, in one
    line: ``Connection.protocol_refused``)."""
    return f"protocolVersion: {refused} — explore the tool on the raw path (raw=True, %mcp_call --raw)"


TASK_REQUIRED_REASON = (
    "execution.taskSupport: 'required' — PurrA calls a tool directly and waits for its result, never as a task: "
    "run it on the raw path, outside the PurrA contract, with s.call(tool, args, raw=True, task=True); "
    "or (the server's author) make tasks optional"
)
FALLBACK_REASON = "refused by purra's purra.output-schema/v1 profile"


def _body(schema: Any) -> Any:
    return {key: value for key, value in schema.items() if key != "$schema"} if isinstance(schema, dict) else schema


def _size_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    size = purra_adapter.json_bytes(schema)
    if size > limits.max_schema_bytes:
        return [f"{where}: {size} bytes, over the {limits.max_schema_bytes}-byte limit — simplify the schema"]
    return []


def _dialect_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] != DRAFT_2020_12:
        return [
            f"{where}.$schema: declares {str(schema['$schema'])[:80]!r}, PurrA reads only JSON Schema 2020-12 "
            f"— drop it (the rest is then read as 2020-12) or declare {DRAFT_2020_12}"
        ]
    return []


def _root_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    body = _body(schema)
    if isinstance(body, dict) and "$ref" in body:  # the root a person has once its $ref is inlined as told
        body = _inlined(body, _refs_of(body), _budget(limits))
    if not isinstance(body, dict) or body.get("type") != "object":
        found = body.get("type") if isinstance(body, dict) else type(body).__name__
        return [f'{where}.type: the root type is {json.dumps(found)}, not "object" — wrap the values in an object']
    return []


def _shape_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """Depth, node count, size as purra counts it, and numbers outside ±(2^53−1)."""
    body = _body(schema)
    problem = purra_adapter.shape_problem(body, limits)
    if problem is None:
        return []
    profile = problem.profile
    if problem.shape is Shape.NUMBER:
        return [
            f"{path}: {value!r} is outside ±(2^53−1) or not finite — use a bound PurrA can represent, or drop it"
            for path, value in _bad_numbers(body, where)
        ]
    if problem.shape is Shape.RESOURCE:
        depth, nodes = _depth_and_nodes(body)
        found = []
        if depth > profile.schema_depth:
            found.append(f"{where}: nested {depth} levels deep, over {profile.schema_depth} — flatten the schema")
        if nodes > profile.schema_nodes:
            found.append(f"{where}: {nodes} schema nodes, over {profile.schema_nodes} — simplify the schema")
        return found
    if problem.shape is Shape.BYTES:
        return [
            f"{where}: larger than {profile.schema_bytes} bytes as PurrA counts it (numbers count 24 bytes) "
            "— simplify the schema"
        ]
    return [f"{where}: {problem.text} — use plain JSON values"]


def _bad_numbers(value: object, path: str) -> list[tuple[str, float]]:
    found: list[tuple[str, float]] = []
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return found
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or (number.is_integer() and abs(number) > _SAFE_INTEGER):
            found.append((path, value))
    elif isinstance(value, dict):
        for key, child in value.items():
            found.extend(_bad_numbers(child, f"{path}.{key}"))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found.extend(_bad_numbers(child, f"{path}[{index}]"))
    return found


def _depth_and_nodes(value: Any) -> tuple[int, int]:
    """Depth and node count the way purra's snapshot counts them (keys are nodes one level down)."""
    deepest, nodes = 0, 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        nodes += 1
        deepest = max(deepest, level)
        if isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, level + 1))
                stack.append((child, level + 1))
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return deepest, nodes


def _null_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """purra refuses a null keyword value (other than const) where it walks: properties, branches, items; and,
    once the definitions are inlined as told, inside them too."""
    keywords = purra_adapter.schema_keywords()  # keywords outside it get their own reason
    return [
        f"{node.path}.{key}: null — drop it or give it a value of its type"
        for node in _walk(_body(schema), where)
        if isinstance(node.value, dict)
        for key, value in node.value.items()
        if value is None and key != "const" and key in keywords
    ]


# --- where purra's profile looks, and the definitions a person inlines as the hints tell -------------------------
#
# Each hint starts with one of a few actions on the keyword (or subschema) at the reason's path, so that a person,
# or a test, can follow it word for word:
#   "drop it ..."                     remove it (and, with "and use K: V", set K to V beside it)
#   "use V ..."                       put the JSON value V in its place (``{}``, ``true``)
#   "use K: V ..."                    replace the keyword with K, of value V, on the same schema
#   "inline #/… here ..."             put the referenced schema's keywords in place of the ``$ref``
#   "drop it once every $ref ..."     (``$defs``, ``definitions``) last, once the definitions are fixed and inlined
# Any other words (merge the branches, list the properties) ask for a person's judgement.

_DEFINITIONS = ("$defs", "definitions")


@dataclass(frozen=True, slots=True)
class _Node:
    """A schema node where purra's profile walks (or would, once the definitions are inlined): its path as the
    reasons spell it, its JSON pointer from the schema's root, its value, and what it is to its parent: ``root``,
    ``property``, ``items``, ``branch`` or ``definition``."""

    path: str
    pointer: tuple[str, ...]
    value: Any
    role: str = "root"


def _walk(value: Any, path: str, pointer: tuple[str, ...] = (), role: str = "root") -> Iterable[_Node]:
    """Every node purra's profile walks from ``value`` (properties, items, anyOf, oneOf), and every definition
    (``$defs``, ``definitions``) at any of them with what it walks in turn."""
    yield _Node(path, pointer, value, role)
    if not isinstance(value, dict):
        return
    children: list[tuple[str, tuple[str, ...], Any, str]] = []
    properties = value.get("properties")
    if isinstance(properties, dict):
        children.extend(
            (f"{path}.properties.{k}", ("properties", str(k)), v, "property") for k, v in properties.items()
        )
    if "items" in value:
        children.append((f"{path}.items", ("items",), value["items"], "items"))
    for keyword in ("anyOf", "oneOf"):
        if isinstance(value.get(keyword), list):
            branches = enumerate(value[keyword])
            children.extend((f"{path}.{keyword}[{i}]", (keyword, str(i)), v, "branch") for i, v in branches)
    for keyword in _DEFINITIONS:
        if isinstance(value.get(keyword), dict):
            children.extend(
                (f"{path}.{keyword}.{k}", (keyword, str(k)), v, "definition") for k, v in value[keyword].items()
            )
    for child_path, tokens, child, child_role in children:
        yield from _walk(child, child_path, (*pointer, *tokens), child_role)


@dataclass(frozen=True)
class _Refs:
    """The schema's local ``$ref`` values: what each points at, and which ones are recursive."""

    body: Any
    targets: Mapping[tuple[str, ...], tuple[str, ...] | None]  # the $ref's schema -> the pointer it names
    recursive: frozenset[tuple[str, ...]]


_MISSING = object()


def _refs_of(body: Any) -> _Refs:
    """Every ``$ref`` where purra's profile walks or a definition is, with its target and whether it recurses."""
    targets = {
        node.pointer: _pointer(node.value["$ref"])
        for node in _walk(body, "")
        if isinstance(node.value, dict) and isinstance(node.value.get("$ref"), str)
    }
    return _Refs(body, targets, _recursive(body, targets))


def _pointer(ref: str) -> tuple[str, ...] | None:
    """The tokens of a local JSON pointer reference (``#``, ``#/$defs/A``); ``None`` for any other reference."""
    if ref == "#":
        return ()
    if not ref.startswith("#/"):
        return None
    return tuple(unquote(token).replace("~1", "/").replace("~0", "~") for token in ref[2:].split("/"))


def _resolve(body: Any, pointer: tuple[str, ...]) -> Any:
    node = body
    for token in pointer:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


_EXPANSIONS = 20_000  # how far the kit follows the inlining before it judges recursion by cycles alone


def _recursive(body: Any, targets: Mapping[tuple[str, ...], tuple[str, ...] | None]) -> frozenset[tuple[str, ...]]:
    """The ``$ref``s a person inlining from the root cannot inline: each points at a schema already being copied
    (it would be copied into itself without end). Those in definitions the root never reaches, on a cycle."""
    own: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # a schema -> the $refs in it, outside its definitions
    for ref in targets:
        for end in range(len(ref) + 1):
            if not set(ref[end:]) & set(_DEFINITIONS):
                own.setdefault(ref[:end], []).append(ref)
    recursive: set[tuple[str, ...]] = set()
    reached: set[tuple[str, ...]] = set()
    steps = [0]

    def expand(schema: tuple[str, ...], copying: tuple[tuple[str, ...], ...]) -> None:
        for ref in own.get(schema, []):
            steps[0] += 1
            if steps[0] > _EXPANSIONS:
                raise _TooBig
            reached.add(ref)
            target = targets[ref]
            if target is None or _resolve(body, target) is _MISSING:
                continue
            if any(copied[: len(target)] == target for copied in copying):
                recursive.add(ref)
            else:
                expand(target, (*copying, target))

    try:
        expand((), ((),))
    except _TooBig:
        return _on_cycles(targets)
    unreached = {ref: target for ref, target in targets.items() if ref not in reached}
    return frozenset(recursive | _on_cycles(unreached) if unreached else recursive)


def _on_cycles(targets: Mapping[tuple[str, ...], tuple[str, ...] | None]) -> frozenset[tuple[str, ...]]:
    """The ``$ref``s that inlining never ends for: each one's target holds a ``$ref`` that leads back to it."""
    within: dict[tuple[str, ...], list[tuple[str, ...]]] = {}  # a pointer -> the $refs at or under it
    for ref in targets:
        for end in range(len(ref) + 1):
            within.setdefault(ref[:end], []).append(ref)
    following = {ref: within.get(target, []) if target is not None else [] for ref, target in targets.items()}
    recursive = set()
    for start in targets:
        seen: set[tuple[str, ...]] = set()
        stack = list(following[start])
        while stack:
            ref = stack.pop()
            if ref == start:
                recursive.add(start)
                break
            if ref not in seen:
                seen.add(ref)
                stack.extend(following[ref])
    return frozenset(recursive)


def _ref_reason(path: str, node: _Node, refs: _Refs) -> str:
    ref = node.value["$ref"]
    shown = json.dumps(ref[:80])
    target = refs.targets.get(node.pointer)
    outside = f'{path}.$ref: "$ref" is outside the profile'
    if target is None:
        return f"{outside} — copy the schema {shown} names into this one in place of the $ref (it is elsewhere)"
    if _resolve(refs.body, target) is _MISSING:
        return f"{outside} — drop it: {shown} points at nothing in this schema"
    if node.pointer in refs.recursive:
        return (
            f"{outside}, and {shown} cannot be inlined: it leads back to itself (a recursive schema, which PurrA "
            "cannot represent) — drop it (any value is then accepted here: check it on the server) or write the "
            "recursion out to a bounded depth"
        )
    return f"{outside} — inline {shown} here (its keywords in place of the $ref)"


def _profile_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    body = _body(schema)
    if not isinstance(body, dict):
        return []
    nodes = list(_walk(body, where))
    refs = _refs_of(body)
    at: dict[str, _Node] = {}
    for node in nodes:
        at.setdefault(node.path, node)
    found = []
    for scope in (node for node in nodes if node.role in ("root", "definition")):
        for violation in purra_adapter.profile_violations(scope.value):
            path = scope.path + violation.path[1:]
            found.extend(_violation_reasons(path, violation, at.get(path), where, refs))
    return found


def _violation_reasons(
    path: str, violation: purra_adapter.ProfileViolation, node: _Node | None, where: str, refs: _Refs
) -> list[str]:
    value = node.value if node is not None else None
    found = []
    for keyword in violation.keywords:
        if keyword == "$ref" and node is not None:
            found.append(_ref_reason(path, node, refs))
            continue
        found.append(f"{path}.{keyword}: {json.dumps(keyword)} is outside the profile — {_hint(keyword, value, where)}")
    if violation.keywords:
        return found
    if violation.problem == "must be boolean" and violation.path.endswith(".additionalProperties"):
        return [
            f"{path}: a schema for extra properties is outside the profile, which takes true or false — use true "
            "(extra properties of any shape: check them on the server) or false (no extra properties)"
        ]
    if violation.problem == "schema must be an object" and node is not None:
        return [f"{path}: {_subschema_hint(node)}"]
    return [f"{path}: {violation.problem} — fix the keyword's value"]


def _subschema_hint(node: _Node) -> str:
    """What to write for a subschema that is not an object: a boolean (``true``, ``false``) or worse."""
    if node.value is True:
        return "a boolean schema is outside the profile — use {} (it accepts any value, as true does)"
    if node.value is not False:
        return f"{json.dumps(node.value)[:40]} is not a schema — use a schema object in its place ({{}} for any value)"
    if node.role == "items":
        return "false (no items) is outside the profile — drop it and use maxItems: 0 (the array must be empty)"
    if node.role == "property":
        return (
            "false (the property must be absent) is outside the profile — drop it (with additionalProperties: "
            "false the object still refuses the property; otherwise check on the server that it is absent)"
        )
    if node.role == "branch":
        return "false (matches nothing) is outside the profile — drop it (a branch no value takes)"
    return (
        "false (no value) is outside the profile — drop what refers to it, or check on the server that no value comes"
    )


def _hint(keyword: str, node: Any, where: str) -> str:
    """The hint for ``keyword`` on the schema ``node``: most are fixed words, some depend on the node or on which
    schema it is in."""
    if keyword == "default" and where == "outputSchema":
        return "drop it (an output schema describes the values a tool returns: a default means nothing there)"
    if keyword in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(node, dict):
        return _bound_hint(keyword, node)
    if keyword in _DEFINITIONS:
        return "drop it once every $ref into it is inlined"
    return _KEYWORD_HINTS.get(keyword, "drop it; the profile's keywords are listed in purra.schema")


def _bound_hint(keyword: str, node: Mapping[str, Any]) -> str:
    """``exclusiveMinimum: n`` on an integer is ``minimum: n+1`` (the smallest integer above n); on a number, the
    profile has no exclusive bound, so the hint says what ``minimum`` would change. Likewise for the maximum."""
    lower = keyword == "exclusiveMinimum"
    plain = "minimum" if lower else "maximum"
    value, other = node.get(keyword), node.get(plain)
    if value is False:
        return "drop it (false changes nothing)"
    if value is True:  # draft-04: a flag that makes minimum/maximum exclusive
        value, other = other, None
    if not _is_bound(value):
        return "drop it and check the bound on the server"
    if _integer_typed(node):
        bound = math.floor(value) + 1 if lower else math.ceil(value) - 1
        if _is_bound(other):
            bound = max(bound, math.ceil(other)) if lower else min(bound, math.floor(other))
        return f"use {plain}: {bound} (the same bound, for an integer)"
    shown = json.dumps(value)
    return (
        f"drop it and check the bound on the server ({plain}: {shown} would accept {shown} itself), or use "
        f"{plain}: {shown} if {shown} may be accepted"
    )


def _is_bound(value: object) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (abs(value) <= _SAFE_INTEGER)
    )


def _integer_typed(node: Mapping[str, Any]) -> bool:
    """Whether the schema takes only integers (``"integer"``, or a type list of ``"integer"`` and ``"null"``)."""
    declared = node.get("type")
    kinds = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    return "integer" in kinds and all(kind in ("integer", "null") for kind in kinds)


# --- the schema as a person has it once every $ref is inlined as told ------------------------------------------


class _TooBig(Exception):
    """Inlining the definitions gives more nodes than purra could ever take."""


def _inlined(body: Any, refs: _Refs, budget: int) -> Any:
    """``body`` with each local ``$ref`` replaced by its target's keywords (a recursive or dangling one dropped, as
    its hint says) and the definitions dropped; ``_TooBig`` past ``budget`` nodes."""
    left = [budget]

    def copy(value: Any, pointer: tuple[str, ...]) -> Any:
        left[0] -= 1
        if left[0] < 0:
            raise _TooBig
        if isinstance(value, list):
            return [copy(child, (*pointer, str(i))) for i, child in enumerate(value)]
        if not isinstance(value, dict):
            return value
        result: dict[str, Any] = {}
        target = refs.targets.get(pointer) if isinstance(value.get("$ref"), str) else None
        if target is not None and pointer not in refs.recursive and _resolve(refs.body, target) is not _MISSING:
            referenced = copy(_resolve(refs.body, target), target)
            result.update(referenced if isinstance(referenced, dict) else {})
        for key, child in value.items():
            if key not in _DEFINITIONS and not (key == "$ref" and isinstance(child, str)):
                result[key] = copy(child, (*pointer, key))
        return result

    return copy(body, ())


def _budget(limits: McpToolLimits) -> int:
    """How many nodes an inlined schema may grow to before the kit stops inlining: past purra's node limit, so
    one that far over is refused for its size whatever else is fixed."""
    return 2 * purra_adapter.node_limit(limits) + 1


def _inlined_reasons(schema: Any, where: str, limits: McpToolLimits) -> list[str]:
    """What inlining the definitions as told makes too big or too deep for purra, though the schema with its
    ``$ref``s is not: a definition used in many places is copied to each."""
    body = _body(schema)
    if not isinstance(body, dict):
        return []
    refs = _refs_of(body)
    if (
        not refs.targets
        or purra_adapter.shape_problem(body, limits) is not None
        or _size_reasons(schema, where, limits)
    ):
        return []
    inlined = f"{where} (its definitions inlined)"
    try:
        whole = _inlined(body, refs, _budget(limits))
    except _TooBig:
        limit = purra_adapter.node_limit(limits)
        return [f"{inlined}: over {limit} schema nodes — simplify the schema, or keep the definitions few and small"]
    return _size_reasons(whole, inlined, limits) + _shape_reasons(whole, inlined, limits)


__all__ = ["DRAFT_2020_12", "FALLBACK_REASON", "TASK_REQUIRED_REASON", "schema_reasons"]
