"""The raw path's argument check: a tool's own JSON Schema read as data, never as instructions.

The schema comes from a server nobody here trusts, and the check runs before any approval (on every form edit,
on the kernel's thread), so it does nothing the server chooses beyond the check itself:

- **No reference leaves the schema.** ``$ref`` (and ``$dynamicRef``) resolve within the schema document only:
  the registry is empty and retrieves nothing, where jsonschema's default fetches an ``http://`` or ``file:``
  address from the person's own machine and network. A reference to anything outside is a schema the kit
  cannot check with (``mcp_schema_unsupported``).
- **Patterns run in linear time.** ``pattern`` and ``patternProperties`` (and the ``additionalProperties``
  that depends on them) match with RE2 (``google-re2``), whose time grows linearly with the text and whose
  memory is bounded: Python's ``re``, which jsonschema uses, backtracks (``^(\\w+\\s?)*$`` took 15 s on one
  41-character value). A pattern RE2 does not run (look-around, back-references, a repeat over 1000) is a
  schema the kit cannot check with, and so is ``unevaluatedProperties`` beside ``patternProperties``
  (jsonschema matches those with ``re`` inside). Every match of one check shares ``PATTERN_BUDGET_SECONDS``.
- **OpenAPI's ``nullable: true`` admits ``null``** beside the node's ``type``, as Ajv and OpenAPI 3.0 read it (a
  server that wrote it means it; JSON Schema itself ignores the keyword).

Everything else is jsonschema's, for the draft the schema declares (2020-12 when it declares none).
``local_target`` reads a local reference (``#/$defs/...``, ``#/definitions/...``) in the schema itself, for the
forms; it never retrieves anything either.
"""

from __future__ import annotations

import contextvars
import functools
import json
import re
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .kept import ByObject
from .wire import INVALID_ARGUMENTS, SCHEMA_UNSUPPORTED

PATTERN_BUDGET_SECONDS = 0.5  # all pattern matching of one check; each match itself is linear-time (RE2)
RE2_MAX_MEMORY = 8 << 20  # bytes RE2 may use for one compiled pattern (its default)


@dataclass(frozen=True, slots=True)
class Misfit:
    """Why arguments cannot be sent as they are: where (``path``, in the arguments) and what, in the kit's words;
    ``code`` is ``mcp_invalid_arguments`` when the arguments do not fit, ``mcp_schema_unsupported`` when the
    schema is one the kit cannot check with; ``keyword`` is the rule PurrA's contract refused by (PurrA path only).
    """

    path: str
    problem: str
    code: str = INVALID_ARGUMENTS
    keyword: str = ""


Check = Callable[[Any], Misfit | None]


class _Unusable(Exception):
    """The schema cannot be checked within the rules above; the message says why."""


_budget: contextvars.ContextVar[float] = contextvars.ContextVar("purra_jupyter_pattern_budget")


def checker(schema: Mapping[str, Any]) -> Check:
    """The check of arguments against ``schema``, built once per distinct schema, and found again by the schema
    object (a catalog's tool keeps its own for the catalog's revision) without writing the schema out again."""
    return _by_object.get(
        schema, lambda: _checker(json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    )


CHECKERS_KEPT = 512
_by_object: ByObject[Mapping[str, Any], Check] = ByObject(CHECKERS_KEPT)


@functools.lru_cache(maxsize=CHECKERS_KEPT)
def _checker(schema_text: str) -> Check:
    import jsonschema
    from jsonschema.exceptions import best_match
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    schema = json.loads(schema_text)
    try:
        draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = _bounded(draft, has_pattern_properties="patternProperties" in schema_text)(
            schema, registry=Registry()
        )
    except Exception as exc:  # a server's schema can break a validator in many ways: refuse, never crash
        misfit = Misfit("$", f"the tool's own input schema cannot check arguments ({exc.__class__.__name__})",
                        SCHEMA_UNSUPPORTED)  # fmt: skip
        return lambda arguments: misfit

    def check(arguments: Any) -> Misfit | None:
        token = _budget.set(time.monotonic() + PATTERN_BUDGET_SECONDS)
        try:
            error = best_match(validator.iter_errors(arguments))
        except Unresolvable:
            return Misfit("$", "the tool's input schema refers to a schema outside itself, which the kit never "
                          "fetches: its arguments cannot be checked", SCHEMA_UNSUPPORTED)  # fmt: skip
        except _Unusable as exc:
            return Misfit("$", str(exc), SCHEMA_UNSUPPORTED)
        except Exception as exc:
            return Misfit("$", f"the tool's own input schema cannot check arguments ({exc.__class__.__name__})",
                          SCHEMA_UNSUPPORTED)  # fmt: skip
        finally:
            _budget.reset(token)
        return None if error is None else Misfit(error.json_path, error.message)

    return check


@functools.cache
def _bounded(draft: Any, *, has_pattern_properties: bool) -> Any:
    """``draft``'s validator class with the keywords that match patterns matching with RE2."""
    import jsonschema

    keywords = draft.VALIDATORS
    replaced: dict[str, Callable[..., Iterator[Any]]] = {}
    if "pattern" in keywords:
        replaced["pattern"] = _pattern
    if "patternProperties" in keywords:
        replaced["patternProperties"] = _pattern_properties
    if "additionalProperties" in keywords:
        replaced["additionalProperties"] = functools.partial(_additional_properties, keywords["additionalProperties"])
    if "type" in keywords:
        replaced["type"] = functools.partial(_type_or_nullable, keywords["type"])
    if "unevaluatedProperties" in keywords and has_pattern_properties:
        replaced["unevaluatedProperties"] = _unevaluated_beside_patterns
    return jsonschema.validators.extend(draft, replaced)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(original: Any, validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's own keyword, given only the properties no ``patternProperties`` pattern matches (by RE2)."""
    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    if patterns and validator.is_type(instance, "object"):
        instance = {key: value for key, value in instance.items() if not any(search(p, key) for p in patterns)}
        schema = {key: value for key, value in schema.items() if key != "patternProperties"}
    yield from original(validator, allowed, instance, schema)


def _type_or_nullable(original: Any, validator: Any, types: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's own keyword, except that ``null`` fits a node that says ``nullable: true`` (OpenAPI's word)."""
    if instance is None and isinstance(schema, dict) and schema.get("nullable") is True:
        return
    yield from original(validator, types, instance, schema)


def local_target(root: Any, ref: Any) -> Any:
    """What the local reference ``ref`` (``#``, ``#/$defs/Name``: a JSON pointer into ``root``) names in ``root``, or
    ``None`` when it names nothing there or points outside the schema (which is never retrieved)."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    pointer = urllib.parse.unquote(ref[1:])
    if pointer and not pointer.startswith("/"):
        return None  # an anchor ("#name"): not a pointer the forms follow
    node = root
    for step in pointer.split("/")[1:] if pointer else []:
        key = step.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _unevaluated_beside_patterns(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    raise _Unusable(
        "the tool's input schema has unevaluatedProperties beside patternProperties, which the kit does not check "
        "(its patterns would run on a backtracking engine): its arguments cannot be checked"
    )
    yield  # (a generator, as jsonschema's keywords are)


def search(pattern: Any, text: str) -> bool:
    """Whether ``pattern`` (a server's) matches somewhere in ``text``, run by RE2 within the check's budget."""
    if time.monotonic() > _budget.get(float("inf")):
        raise _Unusable(
            f"checking the tool's patterns took over {PATTERN_BUDGET_SECONDS:g} s, the kit's budget for one check: "
            "its arguments cannot be checked"
        )
    compiled = _compiled(pattern) if isinstance(pattern, str) else None
    if compiled is None:
        raise _Unusable(
            "the tool's input schema has a pattern the kit does not run (it runs patterns in linear time, without "
            "look-around, back-references or repeats over 1000): its arguments cannot be checked"
        )
    return compiled.search(text) is not None


# ECMA-262 and Python escapes RE2 spells otherwise: \uXXXX and \u{X...} are \x{...}; Python's \Z is \z. Pairs of
# backslashes are matched first, so an escaped backslash stays one.
_ESCAPES = re.compile(r"\\(\\|u\{[0-9A-Fa-f]{1,6}\}|u[0-9A-Fa-f]{4}|Z)")


def _re2_spelling(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape == "Z":
        return r"\z"
    if escape.startswith("u"):
        return r"\x{" + escape[1:].strip("{}") + "}"
    return match.group(0)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """RE2's compiled ``pattern``, or ``None`` when RE2 does not run it (within ``RE2_MAX_MEMORY``)."""
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would write each refusal to the process's stderr
    options.max_mem = RE2_MAX_MEMORY
    try:
        return re2.compile(_ESCAPES.sub(_re2_spelling, pattern), options)
    except re2.error:
        return None


__all__ = ["PATTERN_BUDGET_SECONDS", "Check", "Misfit", "checker", "local_target", "search"]
