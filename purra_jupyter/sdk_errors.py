"""The one seam where what the MCP SDK, anyio and purra-mcp raise becomes a kit code and a one-line message.

A message names only what the kit knows (the server's name, a timeout, a working directory); whatever the server
chose (an error's text, a line that is not JSON-RPC) goes to ``server_text``, scrubbed before it is cut. The HTTP
transport reports its failures as each request's ``Failure`` (``http_transport``): none of them comes here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from . import runner
from .config import Scrubber, ServerConfig
from .errors import KEPT_APART, SERVER_TEXT_NOTE, McpSessionError
from .tracking import Deadline
from .wire import CONNECT_FAILED, CONNECTION_CLOSED, PROTOCOL_ERROR, STDIO, TIMEOUT, TRANSPORT_ERROR

# What else the SDK's client and anyio's streams raise for what a server did: pydantic's ValidationError and
# JSONDecodeError are ValueErrors, a pipe's errors OSErrors, ``ClientSession.initialize``'s refusal of a protocol
# version a RuntimeError. Anything else that reaches ``translate`` is a bug of the kit.
SDK_RAISES = (ValueError, OSError, RuntimeError)
FAILURE_STDERR_LINES = 20  # the last of the server's stderr lines a failure carries as its server_text
STDERR_NOTE = f"The server's last stderr lines are {KEPT_APART}."
_NOT_CONNECTED = (CONNECTION_CLOSED, TRANSPORT_ERROR, PROTOCOL_ERROR)  # while connecting: a failed connect


def stderr_hint(stderr: str) -> str:
    """What a failure's message says of the server's stderr: where its last lines are (never the lines
    themselves: a message is shown where URLs become links)."""
    return f" {STDERR_NOTE}" if stderr.strip() else ""


def with_stderr(error: McpSessionError, stderr: str, scrub: Scrubber) -> McpSessionError:
    """``error`` carrying the server's last stderr lines after what else it carries, when its message points to
    them."""
    tail = "\n".join(stderr.strip().splitlines()[-FAILURE_STDERR_LINES:])
    if STDERR_NOTE not in error.message or not tail or tail in error.server_text:
        return error
    said = "\n".join(filter(None, (error.server_text, tail)))
    return McpSessionError(error.code, error.message, server_text=scrub.words(said))


@dataclass(frozen=True, slots=True)
class Speaker:
    """What a message may say of the connection that failed: ``hint`` is where its stderr lines are, if any."""

    name: str
    config: ServerConfig
    kind: str
    scrub: Scrubber
    hint: str


def offending_line(error: Exception, scrub: Scrubber) -> str:
    """The server's line that is not JSON-RPC (pydantic keeps it as the error's input) or not UTF-8: scrubbed,
    then bounded."""
    found: Any = error.object.decode("utf-8", "replace") if isinstance(error, UnicodeDecodeError) else None
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = next((item.get("input") for item in errors() if isinstance(item.get("input"), str)), None)
        except Exception:
            found = None
    return repr(scrub.shown(found if isinstance(found, str) else str(error)))


def translate(exc: BaseException, speaker: Speaker, *, connecting: bool, deadline: Deadline | None) -> McpSessionError:
    """Map one failure to a code and a message (most specific first) that names only what the kit knows; what the
    server said goes to ``server_text``, scrubbed before it is cut. HTTP failures never get here: the HTTP
    transport reports each as its request's ``Failure``. An exception that neither the SDK, anyio nor purra-mcp
    raises for what a server did is a bug of the kit: it is raised again, with its traceback."""
    from mcp import types
    from mcp.shared.exceptions import McpError
    from purra.errors import CodedAgentCoreError  # purra-mcp's McpAdapterError, and purra's own (a contract's)

    name = speaker.name
    hint = speaker.hint
    if isinstance(exc, CodedAgentCoreError):
        what = _ADAPTER_MESSAGES.get(exc.code, "purra-mcp refused the operation")
        return McpSessionError(exc.code, f"Server '{name}': {what}.{hint if exc.code == TIMEOUT else ''}")
    if isinstance(exc, TimeoutError):
        within = f"{deadline.seconds:g}" if deadline is not None else f"{speaker.config.timeout:g}"
        what = "answer initialize" if connecting else "answer"
        return McpSessionError(TIMEOUT, f"Server '{name}' did not {what} within {within} s.{hint}")
    if isinstance(exc, McpError):
        code = exc.error.code
        if code in (408, -32001):
            return McpSessionError(TIMEOUT, f"Server '{name}' did not answer in time.{hint}")
        if code == types.CONNECTION_CLOSED:
            if connecting:
                return McpSessionError(
                    CONNECT_FAILED, f"Server '{name}' closed the connection during initialize.{hint}"
                )
            return McpSessionError(CONNECTION_CLOSED, f"Server '{name}' closed the connection.{hint}")
        return McpSessionError(
            PROTOCOL_ERROR,
            f"Server '{name}' answered with error {code}. {SERVER_TEXT_NOTE}",
            server_text=speaker.scrub.words(exc.error.message),
        )
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
        # The transport's streams are gone: the server exited or the connection dropped.
        closed = CONNECT_FAILED if connecting else CONNECTION_CLOSED
        return McpSessionError(closed, f"Server '{name}' closed the connection.{hint}")
    if isinstance(exc, OSError) and connecting and speaker.kind == STDIO:
        cwd = speaker.config.cwd
        if cwd is not None and not os.path.isdir(cwd):
            return McpSessionError(CONNECT_FAILED, f"The working directory {cwd!r} of '{name}' does not exist.")
        return McpSessionError(
            CONNECT_FAILED, f"Could not start {speaker.config.command!r} for '{name}': {exc.strerror or exc}."
        )
    if not isinstance(exc, SDK_RAISES):  # a bug of the kit: raised as it is, with its traceback
        raise exc
    failed = CONNECT_FAILED if connecting else TRANSPORT_ERROR
    what = "an answer the MCP SDK cannot read" if isinstance(exc, ValueError) else "a failure"
    return McpSessionError(
        failed,
        f"Server '{name}': {what} ({exc.__class__.__name__}). {SERVER_TEXT_NOTE}{hint}",
        server_text=speaker.scrub.words(str(exc)),
    )


class ErrorSeam:
    """One connection's seam: any failure as a kit code and a one-line message without secrets, carrying the
    server's stderr tail (read when the failure happens) where the message points to it."""

    def __init__(self, config: ServerConfig, kind: str, scrub: Scrubber, stderr: Callable[[], str]) -> None:
        self._config = config
        self._kind = kind
        self._scrub = scrub
        self._stderr = stderr

    def hint(self) -> str:
        """Where a message says the server's last stderr lines are (empty when it wrote none)."""
        return stderr_hint(self._stderr())

    def with_stderr(self, error: McpSessionError) -> McpSessionError:
        return with_stderr(error, self._stderr(), self._scrub)

    def connect_failure(self, exc: Exception, deadline: Deadline) -> McpSessionError:
        """What a failed connect raises: a failure that names nothing more specific (timeout, credentials,
        protocol version ...) is a failed connect."""
        if isinstance(exc, McpSessionError) and exc.code in _NOT_CONNECTED:
            exc = McpSessionError(CONNECT_FAILED, exc.message, server_text=exc.server_text)
        return self.translate(exc, connecting=True, deadline=deadline)

    def translate(
        self, exc: BaseException, *, connecting: bool = False, deadline: Deadline | None = None
    ) -> McpSessionError:
        """``exc`` (an SDK, anyio or purra-mcp failure, or the kit's own code already) as the kit's error; a bug of
        the kit is raised again."""
        if isinstance(exc, McpSessionError):
            return self.with_stderr(exc)
        speaker = Speaker(self._config.name, self._config, self._kind, self._scrub, self.hint())
        error = translate(runner.leaf_exception(exc), speaker, connecting=connecting, deadline=deadline)
        return self.with_stderr(McpSessionError(error.code, self._scrub(error.message), server_text=error.server_text))


# purra-mcp's codes carry no message (remote text is never attached); these say what each means.
_ADAPTER_MESSAGES = {
    "mcp_protocol_unsupported": "negotiated a protocol version PurrA does not accept (it accepts 2025-06-18 "
    "and 2025-11-25)",
    "mcp_catalog_limit_exceeded": "the tool catalog exceeds PurrA's limits (pages, tool count, catalog, "
    "schema or description bytes)",
    "mcp_pagination_invalid": "tools/list returned an invalid cursor (empty, over 512 bytes, or repeated)",
    "mcp_name_conflict": "two tools (or two bindings) share a name",
    "mcp_catalog_invalid": "the tool listing is not valid JSON that PurrA can measure",
    "mcp_tools_unavailable": "the server does not advertise the tools capability",
    "mcp_schema_unsupported": "a tool's schema is outside PurrA's purra.output-schema/v1 profile",
    "mcp_tool_unsupported": "the tool requires task-augmented execution, which PurrA does not use",
    "mcp_binding_missing": "a bound tool is no longer listed",
    "mcp_binding_invalid": "a binding is invalid (local name, title or scope validator)",
    "mcp_catalog_stale": "its tools changed since they were listed; call refresh()",
    "mcp_connection_closed": "the session is closed",
    "mcp_not_initialized": "the session is not initialized",
    TIMEOUT: "did not answer within the time limit",
    PROTOCOL_ERROR: "answered with a protocol error",
    TRANSPORT_ERROR: "the transport failed",
}


__all__ = ["STDERR_NOTE", "ErrorSeam", "Speaker", "offending_line", "stderr_hint", "translate", "with_stderr"]
