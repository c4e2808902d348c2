"""Tool calls: through a PurrA binding (an ``Envelope``) or raw, for exploration (a ``RawResult``).

The PurrA path runs purra-mcp's own registration handler, so the envelope is byte for byte what a
host gets. Tool failures never raise: they come back with an ``error_code``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from . import catalog as catalog_layer
from .envelope import Envelope, RawResult
from .errors import McpSessionError
from .wire import (
    APPROVAL_DENIED,
    APPROVAL_REQUIRED,
    BINDING_MISSING,
    CATALOG_STALE,
    CLOSED,
    CONFIG_INVALID,
    CONNECTION_CLOSED,
    EVENT_APPROVAL,
    EVENT_CALL,
    FAILED,
    INVALID_ARGUMENTS,
    RESULT_TOO_LARGE,
    STALE,
    TIMEOUT,
    TOOL_ERROR,
)

if TYPE_CHECKING:
    from mcp import ClientSession
    from purra.ports import ToolRegistration

    from .session import McpSession

EMPTY_ENVELOPE = '{"text":[],"structured":null}'  # purra-mcp's envelope on every failure
MAX_TIMEOUT_SECONDS = 300.0


def call(
    session: McpSession,
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    approve: bool | None = None,
    raw: bool = False,
    timeout: float | None = None,
) -> Envelope | RawResult:
    """Call tool ``name`` (local or remote) once the call is approved; see ``McpSession.call``."""
    arguments = dict(arguments or {})
    limit = _timeout(session, timeout)
    remote = _remote_name(session, name)
    fail = _raw_failure if raw else _envelope_failure
    if session.state in (CLOSED, FAILED):
        return fail(session, remote, CONNECTION_CLOSED, f"the session is {session.state}")
    if session.state == STALE:
        return fail(session, remote, CATALOG_STALE, "the tools changed since they were listed; call refresh()")
    how = _approval(session, approve)
    if how is None:
        session.log.add(EVENT_APPROVAL, f"denied {remote}")
        return fail(session, remote, APPROVAL_DENIED, "the call was denied; nothing was sent")
    session.log.add(EVENT_APPROVAL, f"{how}: {remote}")
    if raw:
        return _call_raw(session, remote, arguments, limit)
    if remote not in session._bindings:
        # Approving a call of an unbound tool is the person's declaration that it is a read tool.
        catalog_layer.bind(session, remote)
        session.log.add(EVENT_APPROVAL, f"{how}: bound {remote} as a read tool for this call")
    return _call_bound(session, remote, arguments, limit)


def _timeout(session: McpSession, timeout: float | None) -> float:
    if timeout is None:
        return session.limits.timeout_ms / 1000
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise McpSessionError(CONFIG_INVALID, "timeout must be a number of seconds above 0 and at most 300.")
    return float(timeout)


def _remote_name(session: McpSession, name: str) -> str:
    for remote, binding in session._bindings.items():
        if binding.local_name == name:
            return remote
    if name in session._bindings or name in session.catalog:
        return name
    listed = ", ".join(tool.name for tool in session.catalog.tools[:12]) or "none"
    raise McpSessionError(BINDING_MISSING, f"'{session.name}' has no tool or binding '{name}'; it lists: {listed}.")


def _approval(session: McpSession, approve: bool | None) -> str | None:
    """How the call was approved, or ``None`` when it is denied."""
    if approve is True:
        return "approved in code"
    if approve is False or (approve is None and session.approval == "deny"):
        return None
    if session.approval == "auto":
        return "approved by the session's auto policy"
    raise McpSessionError(
        APPROVAL_REQUIRED,
        f"Calls on '{session.name}' need an approval: pass approve=True to approve this call in code, "
        "or connect with approval='auto'.",
    )


def _call_bound(session: McpSession, remote: str, arguments: dict[str, Any], limit: float) -> Envelope:
    from purra.structured import StructuredOutputError

    registration = _registration(session, remote)
    local = registration.schema.name
    try:
        registration.argument_contract.validate_value(arguments)
    except StructuredOutputError as error:
        where = f"{error.details.get('path', '$')} ({error.details.get('keyword', 'schema')})"
        message = f"the arguments do not fit the tool's contract at {where}; nothing was sent"
        return _logged(session, Envelope(session.name, local, EMPTY_ENVELOPE, INVALID_ARGUMENTS, 0.0, message), "purra")

    async def handle(client: ClientSession) -> Any:
        return await registration.handler(None, arguments)

    started = time.perf_counter()
    result, code, message = _run(session, handle, limit)
    elapsed = (time.perf_counter() - started) * 1000
    if result is None:
        return _logged(session, Envelope(session.name, local, EMPTY_ENVELOPE, code, elapsed, message), "purra")
    return _logged(session, Envelope(session.name, local, result.content, result.error_code, elapsed), "purra")


def _registration(session: McpSession, remote: str) -> ToolRegistration:
    local = session._bindings[remote].local_name
    assert session._purra_catalog is not None
    return next(r for r in session._purra_catalog.registrations if r.schema.name == local)


def _run(
    session: McpSession, func: Callable[[ClientSession], Awaitable[Any]], limit: float
) -> tuple[Any, str | None, str]:
    """Run on the loop; a timeout or a lost connection becomes a code (the session stays usable)."""
    try:
        return session._request(func, timeout=limit), None, ""
    except McpSessionError as error:
        if error.code in (TIMEOUT, CONNECTION_CLOSED):
            return None, error.code, error.message
        raise


def _call_raw(session: McpSession, remote: str, arguments: dict[str, Any], limit: float) -> RawResult:
    from mcp import types
    from purra_mcp import McpAdapterError, _bytes, _request

    problem = _raw_argument_problem(session.catalog[remote].input_schema, arguments)
    if problem:
        return _raw_failure(session, remote, INVALID_ARGUMENTS, problem)
    limits = catalog_layer.call_limits(session)
    request = types.ClientRequest(
        types.CallToolRequest(params=types.CallToolRequestParams(name=remote, arguments=arguments))
    )

    async def send(client: ClientSession) -> Any:
        try:
            return await _request(client, request, types.CallToolResult, limits, None)
        except McpAdapterError as error:
            return error.code

    started = time.perf_counter()
    result, code, message = _run(session, send, limit)
    elapsed = (time.perf_counter() - started) * 1000
    if isinstance(result, str):
        code, message, result = result, "purra-mcp refused the answer", None
    if result is None:
        return _logged(session, RawResult(session.name, remote, error_code=code, elapsed_ms=elapsed,
                                          message=message), "raw")  # fmt: skip
    dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    if len(result.content) > limits.max_content_blocks or _bytes(dumped) > limits.max_result_bytes:
        return _logged(session, RawResult(session.name, remote, error_code=RESULT_TOO_LARGE, elapsed_ms=elapsed,
                       message=f"over {limits.max_content_blocks} blocks or {limits.max_result_bytes} bytes; "
                       "nothing of it is shown"), "raw")  # fmt: skip
    return _logged(
        session,
        RawResult(
            session.name,
            remote,
            content=dumped.get("content", []),
            structured_content=result.structuredContent,
            is_error=bool(result.isError),
            error_code=TOOL_ERROR if result.isError else None,
            elapsed_ms=elapsed,
        ),
        "raw",
    )


def _raw_argument_problem(schema: Mapping[str, Any], arguments: dict[str, Any]) -> str:
    """The first way ``arguments`` break the tool's own schema (draft as it declares), or ``""``."""
    import jsonschema
    from jsonschema.exceptions import best_match

    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        error = best_match(validator_class(schema).iter_errors(arguments))
    except Exception as exc:  # a server's schema can break a validator in many ways: refuse, do not crash
        return f"the tool's own input schema cannot check arguments ({exc.__class__.__name__}); nothing was sent"
    if error is None:
        return ""
    return f"{error.json_path}: {error.message}"


def _envelope_failure(session: McpSession, remote: str, code: str, message: str) -> Envelope:
    local = session._bindings[remote].local_name if remote in session._bindings else remote
    return _logged(session, Envelope(session.name, local, EMPTY_ENVELOPE, code, 0.0, message), "purra")


def _raw_failure(session: McpSession, remote: str, code: str, message: str) -> RawResult:
    return _logged(session, RawResult(session.name, remote, error_code=code, message=message), "raw")


def _logged(session: McpSession, result: Any, path: str) -> Any:
    ms = "" if math.isclose(result.elapsed_ms, 0.0) else f" {result.elapsed_ms:.0f} ms"
    session.log.add(EVENT_CALL, f"{result.tool} ({path}){ms}: {result.error_code or 'ok'}")
    return result
