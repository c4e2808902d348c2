"""The one seam where what the MCP SDK, anyio and purra-mcp raise becomes a kit code and a one-line message.

A message names only what the kit knows (the server's name, a timeout, a working directory); whatever the server
chose (an error's text, a line that is not JSON-RPC) goes to ``server_text``, scrubbed before it is cut. The one
exception is a protocol version, which a refusal names when it is a version's name (a date, a draft's name; no
secret), so that a person sees which era the server is of. The HTTP transport reports its failures as each request's
``Failure`` (``_transports.http``): none of them comes here.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

import anyio

from .._base import runner
from .._base.config import Scrubber, ServerConfig
from .._base.errors import KEPT_APART, SERVER_TEXT_NOTE, McpSessionError, last_words
from .._base.wire import (
    CONNECT_FAILED,
    CONNECTION_CLOSED,
    PROTOCOL_ERROR,
    PROTOCOL_UNSUPPORTED,
    RESULT_INVALID,
    RESULT_TOO_LARGE,
    STDIO,
    TIMEOUT,
    TRANSPORT_ERROR,
)
from .._transports.ingress import NotJsonRpc
from .._transports.stdio import LineTooLong
from .tracking import Deadline

if TYPE_CHECKING:
    from mcp.types import ErrorData

# What else the SDK's client and anyio's streams raise for what a server did: pydantic's ValidationError and
# JSONDecodeError are ValueErrors, a pipe's errors OSErrors, ``ClientSession.initialize``'s refusal of a protocol
# version a RuntimeError. Anything else that reaches ``translate`` is a bug of the kit.
SDK_RAISES = (ValueError, OSError, RuntimeError)
FAILURE_STDERR_LINES = 20  # the last of the server's stderr lines a failure carries as its server_text
STDERR_NOTE = f"The server's last stderr lines are {KEPT_APART}."
_NOT_CONNECTED = (CONNECTION_CLOSED, TRANSPORT_ERROR, PROTOCOL_ERROR)  # while connecting: a failed connect

# Protocol eras. A server of protocol 2026-07-28 has no ``initialize``: it answers it with method not found or with
# its UnsupportedProtocolVersionError (-32022, whose ``data.supported`` lists its versions), and tells its versions
# to ``server/discover`` (``supportedVersions``; ``protocolVersions`` is read too, as some drafts name it).
MODERN_ERA = "2026-07-28"
MODERN_ONLY_CODES = (-32601, -32022)
DISCOVER = "server/discover"
DISCOVER_KEYS = ("supportedVersions", "protocolVersions")
ERROR_KEYS = ("supported",)
MAX_LISTED = 16  # versions a message names; a longer list is cut and says how many more
# A protocol version as a message may name it (see ``is_version_name``).
_VERSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,31}")
# mcp 1.29.1's ``ClientSession.initialize`` refuses a version outside its SUPPORTED_PROTOCOL_VERSIONS with a
# RuntimeError of these words and the version (tests/test_eras.py pins them with a server that offers 2099-01-01).
_SDK_REFUSAL = "Unsupported protocol version from the server: "


def package_label(name: str) -> str:
    """``name version`` of an installed package, as a message names it."""
    return f"{name} {version(name)}"


@functools.cache
def accepted_versions() -> tuple[str, ...]:
    """The protocol versions this kit accepts: those the MCP SDK can negotiate that purra-mcp's monitor accepts,
    asked of the installed packages (purra-mcp keeps its list inside ``accept_protocol_version``)."""
    from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS
    from purra_mcp import McpCatalogMonitor

    def accepts(candidate: str) -> bool:
        try:
            McpCatalogMonitor().accept_protocol_version(candidate)
        except Exception:
            return False
        return True

    return tuple(candidate for candidate in SUPPORTED_PROTOCOL_VERSIONS if accepts(candidate))


def named(versions: list[str] | tuple[str, ...]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(filter(None, (", ".join(versions[:-1]), versions[-1]))) if versions else "none"


def accepted_note() -> str:
    return f"This kit accepts only protocol {named(accepted_versions())} ({package_label('purra-mcp')}'s)."


def versions_in(value: object, keys: tuple[str, ...]) -> list[str] | None:
    """The protocol versions a server lists under the first of ``keys`` in ``value`` (a discover result, an error's
    data), or ``None`` when it lists none."""
    if not isinstance(value, Mapping):
        return None
    listed = next((value[key] for key in keys if isinstance(value.get(key), list)), None)
    return [str(item) for item in listed] if listed is not None else None


def is_version_name(text: str, scrub: Scrubber) -> bool:
    """Whether a message may name ``text``, a version the server chose: a date or a draft's name (never a link or
    markup) that holds no secret."""
    return _VERSION_NAME.fullmatch(text) is not None and scrub(text) == text


def versions_shown(versions: list[str], scrub: Scrubber) -> str:
    """The versions a server listed, as a message names them: only names of versions, at most ``MAX_LISTED``; how
    many others it listed."""
    names = [item for item in versions if is_version_name(item, scrub)][:MAX_LISTED]
    others = len(versions) - len(names)
    more = f" (and {others} other {'entry' if others == 1 else 'entries'})" if others else ""
    return (named(names) if names else "no version by name") + more


def sdk_refused_version(exc: BaseException) -> str | None:
    """The version the MCP SDK's ``initialize`` refused, if ``exc`` is that refusal."""
    text = str(exc)
    return text[len(_SDK_REFUSAL) :] if isinstance(exc, RuntimeError) and text.startswith(_SDK_REFUSAL) else None


def purra_refusal(offered: str, scrub: Scrubber) -> str:
    """Why no tool of a session of protocol ``offered`` (one the MCP SDK speaks and purra-mcp refuses: an older
    era's) is callable under PurrA, in one line; the version is named only when it is a version's name."""
    if is_version_name(offered, scrub):
        return f"a PurrA host refuses protocol {offered}"
    return "a PurrA host refuses this server's protocol version (not a version's name)"


def recorded_refusal(offered: object, scrub: Scrubber) -> str | None:
    """Why a PurrA host refuses the protocol a recorded session negotiated (``purra_refusal``), or ``None`` when this
    kit accepts it or none was recorded: what ``Connection.protocol_refused`` said of it, had it been live."""
    return None if offered is None or offered in accepted_versions() else purra_refusal(str(offered), scrub)


def beside_contract(speaker: Speaker, offered: str) -> McpSessionError:
    """``mcp_protocol_unsupported`` for what the PurrA path would do on a session of protocol ``offered``, which
    opened beside the contract: the raw path is the way."""
    return McpSessionError(
        PROTOCOL_UNSUPPORTED,
        f"Server '{speaker.name}': {purra_refusal(offered, speaker.scrub)}, so no tool of it is bound or called "
        "under PurrA; use the raw path (raw=True, %mcp_call --raw).",
    )


def refused_version(speaker: Speaker, offered: str, refuser: str) -> McpSessionError:
    """``mcp_protocol_unsupported`` naming the version the server offered (if it is a version's name; else it is
    kept apart), who refused it and the versions this kit accepts."""
    if is_version_name(offered, speaker.scrub):
        return McpSessionError(
            PROTOCOL_UNSUPPORTED,
            f"Server '{speaker.name}' offered protocol {offered}, which {refuser} does not accept. {accepted_note()}",
        )
    return McpSessionError(
        PROTOCOL_UNSUPPORTED,
        f"Server '{speaker.name}' offered a protocol version that is not a version's name, which {refuser} does "
        f"not accept. {accepted_note()} {SERVER_TEXT_NOTE}",
        server_text=speaker.scrub.words(offered),
    )


def modern_only(speaker: Speaker, error: ErrorData, discovered: list[str] | None) -> McpSessionError:
    """``mcp_protocol_unsupported`` for a server that answered ``initialize`` with ``error`` (method not found,
    -32022): a server of protocol 2026-07-28, which the SDK purra-mcp is built on cannot speak; with the versions it
    listed (its ``server/discover`` answer, else its error's data) if it listed any."""
    listed = discovered if discovered is not None else versions_in(error.data, ERROR_KEYS)
    where = f"its {DISCOVER} lists" if discovered is not None else "its error lists"
    versions = f"; {DISCOVER} gave no versions"
    if listed is not None:
        versions = f"; {where} {versions_shown(listed, speaker.scrub)}"
    return McpSessionError(
        PROTOCOL_UNSUPPORTED,
        f"Server '{speaker.name}' answered initialize with error {error.code}: this server speaks only protocol "
        f"{MODERN_ERA}, which {package_label('purra-mcp')} (and so this kit) cannot{versions}. {accepted_note()} "
        f"{SERVER_TEXT_NOTE}{speaker.hint}",
        server_text=speaker.scrub.words(str(error.message)),
    )


def stderr_hint(stderr: str) -> str:
    """What a failure's message says of the server's stderr: where its last lines are (never the lines
    themselves: a message is shown where URLs become links)."""
    return f" {STDERR_NOTE}" if stderr.strip() else ""


def with_stderr(error: McpSessionError, stderr: str, scrub: Scrubber) -> McpSessionError:
    """``error`` carrying the server's last stderr lines after what else it carries, when its message points to
    them: once (a failure passes several seams, each of which may ask), and kept from the end (``last_words``), so the
    exception a traceback ends with is always there."""
    lines = scrub(stderr).rstrip().splitlines()[-FAILURE_STDERR_LINES:]
    while lines and not lines[0].strip():
        lines.pop(0)
    if STDERR_NOTE not in error.message or not lines or error.server_text.endswith(lines[-1].strip()):
        return error
    said = "\n".join(filter(None, (error.server_text, *lines)))
    return McpSessionError(error.code, error.message, server_text=last_words(said))


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


def unreadable(message: Exception, scrub: Scrubber) -> tuple[str, str, str | None]:
    """Why a server's message the SDK could not read ends the session: the cause, its code, and the server's line
    (kept apart from the cause: for the log and the failure's ``server_text``; ``None`` when it was never read)."""
    if isinstance(message, LineTooLong):
        cause = f"the server wrote a line of over {message.limit} bytes on its stdout, more than one message may be"
        return f"{cause}; it was not read", RESULT_TOO_LARGE, None
    line = message.excerpt if isinstance(message, NotJsonRpc) else offending_line(message, scrub)
    cause = f"the server sent a message that is not valid JSON-RPC (its line is {KEPT_APART}, and in the session log)"
    return cause, CONNECTION_CLOSED, line


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
        if exc.code == PROTOCOL_UNSUPPORTED:  # (the connection names the version: see ``ErrorSeam.refused_version``)
            what += f" ({accepted_note().removesuffix('.')})"
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
    offered = sdk_refused_version(exc)
    if offered is not None:
        return refused_version(speaker, offered, f"the MCP SDK ({package_label('mcp')}, and so this kit)")
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

    def speaker(self) -> Speaker:
        return Speaker(self._config.name, self._config, self._kind, self._scrub, self.hint())

    def beside_contract(self, offered: str) -> McpSessionError:
        """What the PurrA path raises on a session of protocol ``offered``, which purra-mcp refuses (see
        ``beside_contract``)."""
        return self._ours(beside_contract(self.speaker(), offered))

    def modern_only(self, error: ErrorData, discovered: list[str] | None) -> McpSessionError:
        """A server of protocol 2026-07-28 refused by name (see ``modern_only``); ``error`` its answer to
        ``initialize`` (the SDK's ``ErrorData``)."""
        return self._ours(modern_only(self.speaker(), error, discovered))

    def answer_failure(self, exc: Exception, server_text: str) -> McpSessionError:
        """What a raw ``tools/call`` answered that is no result, as the call's failure: a JSON-RPC error
        (``mcp_protocol_error``; ``server_text``, the server's words, kept apart) or an answer that is not a
        ``tools/call`` result (``mcp_result_invalid``); any other failure as ``translate`` has it."""
        from mcp.shared.exceptions import McpError

        if isinstance(exc, McpError):
            message = "the server answered with a JSON-RPC error instead of a result"
            return McpSessionError(PROTOCOL_ERROR, message, server_text=server_text)
        if isinstance(exc, ValueError | TypeError):
            return McpSessionError(RESULT_INVALID, "the server's answer is not a tools/call result; nothing is shown")
        return self.translate(exc)

    def _ours(self, error: McpSessionError) -> McpSessionError:
        """``error`` as a failure of this connection: its message scrubbed (it may name what the server chose), the
        server's stderr tail carried where the message points to it."""
        return self.with_stderr(McpSessionError(error.code, self._scrub(error.message), server_text=error.server_text))

    def translate(
        self, exc: BaseException, *, connecting: bool = False, deadline: Deadline | None = None
    ) -> McpSessionError:
        """``exc`` (an SDK, anyio or purra-mcp failure, or the kit's own code already) as the kit's error; a bug of
        the kit is raised again."""
        if isinstance(exc, McpSessionError):
            return self.with_stderr(exc)
        error = translate(runner.leaf_exception(exc), self.speaker(), connecting=connecting, deadline=deadline)
        return self._ours(error)


# purra-mcp's codes carry no message (remote text is never attached); these say what each means.
_ADAPTER_MESSAGES = {
    PROTOCOL_UNSUPPORTED: "negotiated a protocol version PurrA does not accept",
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


__all__ = [
    "DISCOVER",
    "DISCOVER_KEYS",
    "MODERN_ERA",
    "MODERN_ONLY_CODES",
    "STDERR_NOTE",
    "ErrorSeam",
    "Speaker",
    "accepted_versions",
    "beside_contract",
    "modern_only",
    "offending_line",
    "purra_refusal",
    "recorded_refusal",
    "refused_version",
    "stderr_hint",
    "translate",
    "versions_in",
    "versions_shown",
    "with_stderr",
]
