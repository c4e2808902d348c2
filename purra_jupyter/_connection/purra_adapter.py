"""The one place that uses private names of purra and purra-mcp (both pinned to 1.0.3).

A verdict here must be the one a PurrA host reaches, so the kit runs purra-mcp's own schema contract,
byte count, listing request and failure codes rather than copies of them. Those are private in purra,
so they may move in any release: ``problems()`` names what moved, and ``check()`` (run at connect)
refuses to go on with one clear sentence instead of failing later with a misleading code.

What purra-mcp 1.0.3 does not offer, the kit copies, and says so here:

- **The listing loop.** purra-mcp pages ``tools/list`` only inside ``_discover_mcp_tools`` (behind
  ``discover_mcp_tools``), which cannot list a catalog: it needs the bindings' names before listing, returns only
  the bound tools (as its own entries, never the listed ``types.Tool``), and stops at the first bound tool it
  refuses. The kit must show every tool with its verdict, so it keeps its own loop (``listing.list_tools``) over
  purra-mcp's page request, byte count, limits and codes; the cursor rule is a literal inside that function (no
  constant, no validator, no ``McpToolLimits`` field): ``MAX_CURSOR_BYTES`` is the kit's copy of it.
- **Per-tool admission.** The name pattern, description bytes and ``taskSupport`` checks are inline in the same
  function too; ``listing.verdict_of`` repeats them in its order. Tests compare both with ``discover_mcp_tools``.
- **Why a schema is refused.** The only structured result is a code: ``_remote_contract`` raises
  ``McpAdapterError`` with ``code`` ``mcp_schema_unsupported`` and no details, whichever check refused (its size
  and ``$schema`` checks, which the catalog repeats for their reasons, or purra's contract, whose
  ``StructuredOutputError`` carries the same details for every refusal: path ``$``, keyword ``schema``). The
  catalog's refusal code is that ``code``; its reasons come from text where purra gives only text:
  ``purra.structured._snapshot`` raises a bare ``ValueError`` whose words alone say which limit it hit
  (``shape_problem`` names them), ``purra.schema.schema_contract_violations`` returns ``"<path>: <problem>"``
  strings (``profile_violations`` splits them), and ``purra.structured._check_schema_nodes`` raises
  ``ValueError("null schema keyword")`` without a path (the catalog finds the paths itself).
"""

from __future__ import annotations

import enum
import functools
import importlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, NoReturn

from .._base.errors import McpSessionError
from .._base.kept import ByObject
from .._base.wire import PURRA_INCOMPATIBLE

if TYPE_CHECKING:
    from mcp import ClientSession, types
    from purra.contracts.tools import ExecutionState
    from purra.structured import StructuredOutputContract, StructuredOutputLimits
    from purra_mcp import McpToolLimits

PINNED = {"purra": "1.0.3", "purra-mcp": "1.0.3"}
# Every private name the kit uses, as "module:name", with what the kit uses it for.
GUARDED = {
    "purra_mcp:_remote_contract": "the schema contract of a listed tool (verdicts, argument checks)",
    "purra_mcp:_bytes": "byte counts of listings and schemas, as purra-mcp measures them",
    "purra_mcp:_fail": "purra-mcp's failure codes for the catalog listing",
    "purra_mcp:_request": "one tools/list page under purra-mcp's limits and codes",
    "purra.structured:_snapshot": "schema depth, node and size checks behind a verdict's reasons",
    "purra.schema:_SCHEMA_KEYWORDS": "the keywords purra's profile walks (null keyword reasons)",
}
# A literal inside purra-mcp's ``_discover_mcp_tools`` (see the module's docstring), so copied; tests list with
# both at the boundary.
MAX_CURSOR_BYTES = 512
_CHANGE = (
    "pin purra==1.0.3 and purra-mcp==1.0.3, or update purra_jupyter/_connection/purra_adapter.py for the new release"
)


def problems() -> list[str]:
    """One sentence per pinned version that differs and per guarded name that is gone; empty when all hold."""
    found = []
    for package, pinned in PINNED.items():
        try:
            installed = version(package)
        except PackageNotFoundError:
            installed = "none"
        if installed != pinned:
            found.append(f"{package} {installed} is installed, but purra-jupyter is built on {pinned}: {_CHANGE}.")
    for guarded, use in GUARDED.items():
        module, name = guarded.split(":")
        if not hasattr(importlib.import_module(module), name):
            found.append(f"{module}.{name} ({use}) no longer exists in the installed {module}: {_CHANGE}.")
    return found


@functools.cache
def check() -> None:
    """Raise ``mcp_purra_incompatible`` naming the first problem; cached, so a connect pays it once."""
    found = problems()
    if found:
        check.cache_clear()
        raise McpSessionError(PURRA_INCOMPATIBLE, found[0])


def _private(guarded: str) -> Any:
    """The private ``module:name``: unannotated in purra, so each use here says what it gives."""
    module, name = guarded.split(":")
    return getattr(importlib.import_module(module), name)


def canonical_json(value: object) -> str:
    """One text per JSON value (sorted keys, no spaces): the key of the contract caches and the digest's fallback."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def remote_contract(schema: object, limits: McpToolLimits) -> StructuredOutputContract:
    """purra-mcp's contract for a listed schema (its ``McpAdapterError`` when it refuses one), built once
    per distinct schema: building one costs more than a call, and big catalogs repeat their schemas. A catalog's
    tool keeps its schema object for the catalog's revision, so a call finds its contract by that object, without
    writing the schema out again."""
    outcome = _by_object.get(schema, lambda: _contract_of(canonical_json(schema), limits), limits)
    if isinstance(outcome, Exception):
        raise outcome.with_traceback(None)
    return outcome


def run_state() -> ExecutionState:
    """A run's state as PurrA's core hands it to a tool handler: fresh, since the kit runs one call per run."""
    return _execution_state()()


@functools.cache
def _execution_state() -> type[ExecutionState]:
    from purra.contracts.tools import ExecutionState

    return ExecutionState


CONTRACTS_KEPT = 1024
_by_object: ByObject[object, StructuredOutputContract | Exception] = ByObject(CONTRACTS_KEPT)  # (and the limits)


@functools.lru_cache(maxsize=CONTRACTS_KEPT)
def _contract_of(schema_text: str, limits: McpToolLimits) -> StructuredOutputContract | Exception:
    from purra_mcp import McpAdapterError

    try:
        contract: StructuredOutputContract = _private("purra_mcp:_remote_contract")(json.loads(schema_text), limits)[0]
    except McpAdapterError as error:
        return error
    return contract


def clear_contract_cache() -> None:
    """Forget every contract built so far (the discovery benchmark measures a server never seen)."""
    _contract_of.cache_clear()


def json_bytes(value: object) -> int:
    """The size purra-mcp gives a JSON value (compact UTF-8); raises on values JSON cannot carry."""
    size: int = _private("purra_mcp:_bytes")(value)
    return size


def fail(code: str) -> NoReturn:
    """Raise purra-mcp's own ``McpAdapterError`` with ``code``."""
    _private("purra_mcp:_fail")(code)
    raise AssertionError("unreachable")  # purra-mcp's _fail always raises


async def list_page(client: ClientSession, cursor: str | None, limits: McpToolLimits) -> types.ListToolsResult:
    """One ``tools/list`` page, sent and refused exactly as ``discover_mcp_tools`` does (its codes)."""
    from mcp import types

    params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
    request = types.ClientRequest(types.ListToolsRequest(params=params))
    page: types.ListToolsResult = await _private("purra_mcp:_request")(
        client, request, types.ListToolsResult, limits, None
    )
    return page


def cursor_refused(cursor: str, seen: Collection[str]) -> bool:
    """Whether purra-mcp refuses ``cursor`` as a next cursor (``mcp_pagination_invalid``): empty, over
    ``MAX_CURSOR_BYTES``, or one the listing has already followed."""
    return not cursor or len(cursor.encode("utf-8")) > MAX_CURSOR_BYTES or cursor in seen


def schema_refusal(schema: object, limits: McpToolLimits) -> str | None:
    """The code purra-mcp refuses ``schema`` with as a tool's schema, ``None`` when it accepts it."""
    from purra_mcp import McpAdapterError

    try:
        remote_contract(schema, limits)
    except McpAdapterError as error:
        return error.code
    return None


class Shape(enum.Enum):
    """Which of its limits purra's schema snapshot hit: each value but ``VALUE``'s is the text it raises for it."""

    NUMBER = "number outside interoperable range"
    RESOURCE = "JSON resource limit exceeded"  # depth or node count
    BYTES = "JSON byte limit exceeded"
    VALUE = "not plain JSON"  # cyclic, a non-string key, a value JSON has no spelling for


@dataclass(frozen=True, slots=True)
class ShapeProblem:
    """Why purra's snapshot refuses a schema body: the limit, purra's own words, the profile's limits it used."""

    shape: Shape
    text: str
    profile: StructuredOutputLimits


def _profile(limits: McpToolLimits) -> StructuredOutputLimits:
    """purra's limits for a schema, with purra-mcp's byte limits."""
    from purra.structured import StructuredOutputLimits

    return replace(StructuredOutputLimits(), schema_bytes=limits.max_schema_bytes, output_bytes=limits.max_result_bytes)


def node_limit(limits: McpToolLimits) -> int:
    """How many nodes purra's snapshot takes in a schema (keys count as nodes)."""
    nodes: int = _profile(limits).schema_nodes
    return nodes


def shape_problem(body: object, limits: McpToolLimits) -> ShapeProblem | None:
    """Why purra's snapshot refuses ``body`` as a schema (depth, nodes, bytes, numbers); ``None`` when it accepts
    it. ``_snapshot`` says which limit only in its ``ValueError``'s text, matched whole here."""
    profile = _profile(limits)
    try:
        _private("purra.structured:_snapshot")(
            body, depth=profile.schema_depth, nodes=profile.schema_nodes, byte_limit=profile.schema_bytes
        )
    except ValueError as error:
        text = str(error)
        shape = next((shape for shape in Shape if shape.value == text), Shape.VALUE)
        return ShapeProblem(shape, text, profile)
    return None


@dataclass(frozen=True, slots=True)
class ProfileViolation:
    """One of ``schema_contract_violations``' strings, split: where (from ``$``), the problem in purra's words, and
    the keywords when the problem is keywords outside the profile."""

    path: str
    problem: str
    keywords: tuple[str, ...] = ()


# purra writes "<path>: <problem>". A path may hold ": " (a server's property names), a problem only when it lists
# what it refuses, so the path ends at the first ": " after which a problem of either kind follows.
_VIOLATION = re.compile(r"(?s)(.*?): (unsupported (keyword|type)\(s\): (.*)|[^:]*)")


def profile_violations(body: object) -> tuple[ProfileViolation, ...]:
    """Every violation of purra's profile in ``body``, as ``purra.schema.schema_contract_violations`` finds them
    (it returns only strings)."""
    from purra.schema import schema_contract_violations

    found = []
    for violation in schema_contract_violations(body, path="$"):
        match = _VIOLATION.fullmatch(violation)
        if match is None:  # not purra 1.0.3's spelling: the whole text, at the root
            found.append(ProfileViolation("$", violation))
            continue
        path, problem, listed, items = match.groups()
        found.append(ProfileViolation(path, problem, tuple(items.split(", ")) if listed == "keyword" else ()))
    return tuple(found)


def schema_keywords() -> frozenset[str]:
    """The keywords purra's profile knows and walks."""
    return frozenset(_private("purra.schema:_SCHEMA_KEYWORDS"))
