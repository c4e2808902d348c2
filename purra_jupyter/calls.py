"""Tool calls: through a PurrA binding (an ``Envelope``) or raw, for exploration (a ``RawResult``).

A call is planned (names resolved, arguments checked, nothing sent), then approved, then executed
on the loop. The PurrA path runs purra-mcp's own registration handler, so the envelope is byte for
byte what a host gets. Tool failures never raise: they come back with an ``error_code``.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import catalog as catalog_layer
from .config import check_timeout
from .envelope import Envelope, RawResult
from .errors import McpSessionError
from .wire import (
    APPROVAL_DENIED,
    BINDING_MISSING,
    CATALOG_STALE,
    CLOSED,
    CONNECTION_CLOSED,
    EVENT_APPROVAL,
    EVENT_CALL,
    FAILED,
    INVALID_ARGUMENTS,
    RESULT_INVALID,
    RESULT_TOO_LARGE,
    STALE,
    TIMEOUT,
    TOOL_ERROR,
)

if TYPE_CHECKING:
    from mcp import ClientSession

    from .session import McpSession

EMPTY_ENVELOPE = '{"text":[],"structured":null}'  # purra-mcp's envelope on every failure
Result = Envelope | RawResult


@dataclass(frozen=True, slots=True)
class CallPlan:
    """One call, resolved and checked, not yet sent. ``arguments`` is a private JSON copy."""

    session: McpSession
    remote: str
    arguments: dict[str, Any]
    raw: bool
    timeout: float

    @property
    def local(self) -> str:
        """The name the result carries: the binding's local name (or the one a call would bind)."""
        binding = self.session._bindings.get(self.remote)
        if self.raw:
            return self.remote
        return binding.local_name if binding else catalog_layer.default_local_name(self.remote)

    @property
    def declaration(self) -> str | None:
        """What approving this call also declares: binding an unbound tool as a read tool."""
        if self.raw or self.remote in self.session._bindings:
            return None
        return f"bind {self.remote} as read tool {self.local}"

    def fail(self, code: str, message: str, elapsed_ms: float = 0.0) -> Result:
        session = self.session
        if self.raw:
            return RawResult(session.name, self.remote, error_code=code, elapsed_ms=elapsed_ms, message=message)
        return Envelope(session.name, self.local, EMPTY_ENVELOPE, code, elapsed_ms, message)

    # What an approval widget needs (a batch of calls offers the same; see approval.PendingCall).

    question = "Approve this MCP call?"

    @property
    def summary(self) -> str:
        return f"{self.local}({json.dumps(self.arguments, ensure_ascii=False)[:200]})"

    @property
    def shown_arguments(self) -> tuple[str, Any]:
        return "arguments (sent exactly as shown):", self.arguments

    @property
    def detail_rows(self) -> tuple[tuple[str, str], ...]:
        return ()

    def digest(self) -> str:
        return arguments_digest(self.arguments)

    def start(self, how: str, done: Callable[[Result], None]) -> None:
        submit(self, how, done)

    def refuse(self, how: str) -> Result:
        return denied(self, how)

    def voided(self, code: str, message: str) -> Result:
        return logged(self, self.fail(code, message))

    def shown(self, result: Result) -> tuple[Any, ...]:
        return (result,)


def plan_call(
    session: McpSession, name: str, arguments: Mapping[str, Any] | None, *, raw: bool, timeout: float | None
) -> CallPlan:
    """Resolve ``name`` (local or remote) and copy ``arguments``; usage errors raise here."""
    remote = remote_name(session, name)
    try:
        copied = json.loads(json.dumps(dict(arguments or {}), allow_nan=False))
    except (TypeError, ValueError) as error:
        raise McpSessionError(INVALID_ARGUMENTS, f"The arguments are not plain JSON: {error}.") from None
    plan = CallPlan(session, remote, copied, raw, _timeout(session, timeout))
    if not raw and remote not in session._bindings and remote in session.catalog:
        tool = session.catalog[remote]
        if not tool.callable:
            raise McpSessionError(
                tool.refusal or "mcp_schema_unsupported",
                f"'{remote}' cannot be called as a PurrA read tool: {'; '.join(tool.reasons)}. "
                "Explore it with raw=True.",
            )
    return plan


def refusal(plan: CallPlan) -> Result | None:
    """A result that settles the call before any approval: closed or stale session, bad arguments."""
    session = plan.session
    if session.state in (CLOSED, FAILED):
        return logged(plan, plan.fail(CONNECTION_CLOSED, f"the session is {session.state}; nothing was sent"))
    if session.state == STALE:
        return logged(plan, plan.fail(CATALOG_STALE, "the tools changed since they were listed; call refresh()"))
    problem = _argument_problem(plan)
    if problem:
        return logged(plan, plan.fail(INVALID_ARGUMENTS, f"{problem}; nothing was sent"))
    return None


def run(plan: CallPlan, how: str) -> Result:
    """Execute an approved call and wait for it (the kernel waits; an interrupt raises)."""
    approved(plan, how)
    started = time.perf_counter()
    try:
        result = plan.session._request(lambda client: execute(plan, client), timeout=plan.timeout)
    except McpSessionError as error:
        result = settle(plan, error, started)
    return logged(plan, result)


def submit(plan: CallPlan, how: str, done: Callable[[Result], None]) -> Future[Any]:
    """Execute an approved call on the loop without waiting; ``done(result)`` gets the result."""
    approved(plan, how)
    started = time.perf_counter()
    future = plan.session._submit(lambda client: execute(plan, client), timeout=plan.timeout)

    def finished(future: Future[Any]) -> None:
        if future.cancelled():
            result = plan.fail("mcp_interrupted", "the call was cancelled")
        elif future.exception() is not None:
            result = settle(plan, plan.session.translate_error(future.exception()), started)
        else:
            result = future.result()
        done(logged(plan, result))

    future.add_done_callback(finished)
    return future


def denied(plan: CallPlan, how: str) -> Result:
    plan.session.log.add(EVENT_APPROVAL, f"denied {plan.remote} ({how}), args {plan.digest()[:12]}")
    return logged(plan, plan.fail(APPROVAL_DENIED, "the call was denied; nothing was sent"))


def approved(plan: CallPlan, how: str) -> None:
    declaration = f"; declares: {plan.declaration}" if plan.declaration else ""
    plan.session.log.add(EVENT_APPROVAL, f"{how}: {plan.remote}, args {plan.digest()[:12]}{declaration}")


def arguments_digest(arguments: Any) -> str:
    """PurrA's identity digest of plain JSON ``arguments`` (through their canonical text when they
    break its limits), which an approval covers."""
    from purra.structured import json_identity_digest

    try:
        return json_identity_digest(arguments)
    except (TypeError, ValueError):
        return json_identity_digest({"json": json.dumps(arguments, sort_keys=True)})


def settle(plan: CallPlan, error: BaseException, started: float) -> Result:
    """A timeout or a lost connection is the call's result; anything else is raised."""
    if isinstance(error, McpSessionError) and error.code in (TIMEOUT, CONNECTION_CLOSED):
        return plan.fail(error.code, error.message, (time.perf_counter() - started) * 1000)
    raise error


async def execute(plan: CallPlan, client: ClientSession) -> Result:
    """Bind if the approval declared it, then call: purra-mcp's handler, or a raw ``tools/call``."""
    session = plan.session
    if plan.raw:
        return await _call_raw(plan, client)
    if plan.remote not in session._bindings:
        binding = catalog_layer.make_binding(
            plan.remote, local_name=None, title=None, scope_validator=None, concurrency_safe=False
        )
        try:
            await catalog_layer.bind_in_loop(session, client, plan.remote, binding)
        except Exception as error:
            raise catalog_layer.explained(session, plan.remote, session.translate_error(error)) from error
    registration = next(r for r in session._purra_catalog.registrations if r.schema.name == plan.local)
    started = time.perf_counter()
    result = await registration.handler(None, plan.arguments)
    elapsed = (time.perf_counter() - started) * 1000
    return Envelope(session.name, plan.local, result.content, result.error_code, elapsed)


async def _call_raw(plan: CallPlan, client: ClientSession) -> RawResult:
    from mcp import types
    from purra_mcp import McpAdapterError, _bytes, _request

    session = plan.session
    limits = catalog_layer.call_limits(session)
    params = types.CallToolRequestParams(name=plan.remote, arguments=plan.arguments)
    started = time.perf_counter()
    try:
        result = await _request(
            client, types.ClientRequest(types.CallToolRequest(params=params)), types.CallToolResult, limits, None
        )
    except McpAdapterError as error:
        return plan.fail(error.code, "purra-mcp refused the answer", (time.perf_counter() - started) * 1000)
    elapsed = (time.perf_counter() - started) * 1000
    if not _plain_json(result.model_dump(by_alias=True, exclude_none=True)):
        message = "the result holds a number JSON cannot carry (NaN or Infinity); nothing is shown"
        return plan.fail(RESULT_INVALID, message, elapsed)
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    if len(result.content) > limits.max_content_blocks or _bytes(dumped) > limits.max_result_bytes:
        message = f"over {limits.max_content_blocks} blocks or {limits.max_result_bytes} bytes; nothing is shown"
        return plan.fail(RESULT_TOO_LARGE, message, elapsed)
    return RawResult(
        session.name,
        plan.remote,
        content=dumped.get("content", []),
        structured_content=result.structuredContent,
        is_error=bool(result.isError),
        error_code=TOOL_ERROR if result.isError else None,
        elapsed_ms=elapsed,
    )


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON a notebook can carry: the SDK accepts NaN and Infinity on the wire."""
    try:
        json.dumps(value, allow_nan=False, default=str)
    except ValueError:
        return False
    return True


def _timeout(session: McpSession, timeout: float | None) -> float:
    if timeout is None:
        return session.limits.timeout_ms / 1000
    check_timeout(timeout, "The call's timeout")
    return float(timeout)


def remote_name(session: McpSession, name: str) -> str:
    for remote, binding in session._bindings.items():
        if binding.local_name == name:
            return remote
    if name in session._bindings or name in session.catalog:
        return name
    listed = ", ".join(tool.name for tool in session.catalog.tools[:12]) or "none"
    raise McpSessionError(BINDING_MISSING, f"'{session.name}' has no tool or binding '{name}'; it lists: {listed}.")


def _argument_problem(plan: CallPlan) -> str:
    """Where the arguments break the contract (see ``argument_checker``), as a sentence; ``""`` if they fit."""
    schema = plan.session.catalog[plan.remote].input_schema
    check = argument_checker(schema, raw=plan.raw, limits=catalog_layer.call_limits(plan.session))
    found = check(plan.arguments)
    if found is None:
        return ""
    path, problem = found
    return f"the arguments do not fit at {path}: {problem}"


def argument_checker(schema: Mapping[str, Any], *, raw: bool, limits: Any) -> Callable[[Any], tuple[str, str] | None]:
    """A check of arguments returning ``(path, problem)`` or ``None``: PurrA's contract for the PurrA path
    (built by purra-mcp from the listed schema, as the binding's is), the tool's own JSON Schema (its
    declared draft) for the raw path. Both are built once per distinct schema."""
    if raw:
        return _raw_checker(catalog_layer.canonical_json(schema))
    from purra.structured import StructuredOutputError

    contract = catalog_layer.remote_contract(schema, limits)

    def check(arguments: Any) -> tuple[str, str] | None:
        try:
            contract.validate_value(arguments)
        except StructuredOutputError as error:
            return error.details.get("path", "$"), f"{error.details.get('keyword', 'schema')} of the contract"
        return None

    return check


@functools.lru_cache(maxsize=512)
def _raw_checker(schema_text: str) -> Callable[[Any], tuple[str, str] | None]:
    import jsonschema
    from jsonschema.exceptions import best_match

    def unusable(exc: Exception) -> tuple[str, str]:
        return "$", f"the tool's own input schema cannot check arguments ({exc.__class__.__name__})"

    # A server's schema can break a validator in many ways: refuse the arguments, never crash.
    schema = json.loads(schema_text)
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_class(schema)
    except Exception as exc:
        problem = unusable(exc)
        return lambda arguments: problem

    def check(arguments: Any) -> tuple[str, str] | None:
        try:
            error = best_match(validator.iter_errors(arguments))
        except Exception as exc:
            return unusable(exc)
        return None if error is None else (error.json_path, error.message)

    return check


def logged(plan: CallPlan, result: Result) -> Result:
    path = "raw" if plan.raw else "purra"
    ms = "" if math.isclose(result.elapsed_ms, 0.0) else f" {result.elapsed_ms:.0f} ms"
    plan.session.log.add(EVENT_CALL, f"{result.tool} ({path}){ms}: {result.error_code or 'ok'}")
    return result
