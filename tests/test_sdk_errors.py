"""The seams where what the MCP SDK, anyio, purra and httpx raise becomes a kit code (``sdk_errors.translate``;
the HTTP transport's ``SharedSession.broken`` for one request): each exception class they raise there, fed as the
real exception, gives its code and a message that names only what the kit knows (the server's words go to
``server_text``, scrubbed); anything else is a bug of the kit and is raised."""

from __future__ import annotations

import errno
import json
import sys
from typing import Any

import anyio
import pydantic
import pytest
from mcp import types
from mcp.shared.exceptions import McpError, UrlElicitationRequiredError
from purra.structured import StructuredOutputError
from purra_mcp import McpAdapterError

import purra_jupyter as pj
from purra_jupyter._base.config import Scrubber
from purra_jupyter._connection.seam import Speaker, translate
from purra_jupyter._connection.tracking import Deadline
from purra_jupyter._transports.ingress import Ingress

SECRET = "sk-live-0123456789abcdef"
CONFIG = pj.ServerConfig("srv", command=sys.executable, env={"TOKEN": SECRET}, timeout=7)
STDIO = Speaker("srv", CONFIG, "stdio", Scrubber(CONFIG.secrets), "")


def validation_error() -> pydantic.ValidationError:
    try:
        types.JSONRPCMessage.model_validate_json(f'{{"jsonrpc": "2.0", "nonsense": "{SECRET}"}}')
    except pydantic.ValidationError as error:
        return error
    raise AssertionError("pydantic accepted it")


def decode_error() -> json.JSONDecodeError:
    try:
        json.loads(f"{{{SECRET}")
    except json.JSONDecodeError as error:
        return error
    raise AssertionError("json accepted it")


REFUSED = "Unsupported protocol version from the server: "  # the MCP SDK's words when initialize refuses one


def mcp_error(code: int, message: str = f"the server says {SECRET} at https://evil.example/x") -> McpError:
    return McpError(types.ErrorData(code=code, message=message))


# (exception, connecting, code, words the message holds)
CASES: list[tuple[BaseException, bool, str, str]] = [
    (McpAdapterError("", code="mcp_protocol_unsupported"), True, "mcp_protocol_unsupported", "accepts only protocol"),
    (McpAdapterError("", code="mcp_catalog_limit_exceeded"), False, "mcp_catalog_limit_exceeded", "PurrA's limits"),
    (McpAdapterError("", code="mcp_pagination_invalid"), False, "mcp_pagination_invalid", "invalid cursor"),
    (StructuredOutputError("", code="mcp_schema_unsupported"), False, "mcp_schema_unsupported", "profile"),
    (TimeoutError(), True, "mcp_timeout", "did not answer initialize within 7 s"),
    (TimeoutError(), False, "mcp_timeout", "did not answer within 7 s"),
    (mcp_error(-32001), False, "mcp_timeout", "did not answer in time"),
    (mcp_error(408), False, "mcp_timeout", "did not answer in time"),
    (mcp_error(types.CONNECTION_CLOSED), True, "mcp_connect_failed", "closed the connection during initialize"),
    (mcp_error(types.CONNECTION_CLOSED), False, "mcp_connection_closed", "closed the connection"),
    (mcp_error(-32602), False, "mcp_protocol_error", "answered with error -32602"),
    (mcp_error(-32603), True, "mcp_protocol_error", "answered with error -32603"),
    (UrlElicitationRequiredError([]), False, "mcp_protocol_error", "answered with error"),
    (anyio.ClosedResourceError(), False, "mcp_connection_closed", "closed the connection"),
    (anyio.BrokenResourceError(), False, "mcp_connection_closed", "closed the connection"),
    (anyio.EndOfStream(), True, "mcp_connect_failed", "closed the connection"),
    (OSError(errno.ENOENT, "No such file or directory"), True, "mcp_connect_failed", "Could not start"),
    (OSError(errno.EACCES, "Permission denied"), True, "mcp_connect_failed", "Permission denied"),
    (BrokenPipeError(errno.EPIPE, "Broken pipe"), False, "mcp_transport_error", "a failure (BrokenPipeError)"),
    (validation_error(), False, "mcp_transport_error", "an answer the MCP SDK cannot read (ValidationError)"),
    (decode_error(), True, "mcp_connect_failed", "an answer the MCP SDK cannot read (JSONDecodeError)"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), False, "mcp_transport_error", "cannot read"),
    (RuntimeError(f"{REFUSED}2099-01-01"), True, "mcp_protocol_unsupported", "offered protocol 2099-01-01, which"),
    (RuntimeError(f"{REFUSED}{SECRET}"), True, "mcp_protocol_unsupported", "version that is not a version's name"),
    (RuntimeError("another failure"), True, "mcp_connect_failed", "a failure (RuntimeError)"),
]


@pytest.mark.parametrize(("exception", "connecting", "code", "words"), CASES, ids=lambda v: type(v).__name__)
def test_each_exception_the_sdk_anyio_or_purra_raise_has_its_code_and_a_message_of_the_kits_words(
    exception: BaseException, connecting: bool, code: str, words: str
) -> None:
    error = translate(exception, STDIO, connecting=connecting, deadline=None)
    assert isinstance(error, pj.McpSessionError)
    assert (error.code, words in error.message) == (code, True), error.message
    assert "\n" not in error.message  # one line
    for text in (error.message, error.server_text, str(error)):
        assert SECRET not in text
        assert "evil.example" not in error.message  # what the server chose is never part of the message
    if code == "mcp_protocol_error" and str(exception).startswith("the server says"):  # its words, apart
        assert "the server says ***" in error.server_text and "evil.example" in error.server_text


def test_a_deadline_names_its_whole_time_and_a_missing_working_directory_is_named() -> None:
    error = translate(TimeoutError(), STDIO, connecting=True, deadline=Deadline(3, "connecting"))
    assert error.message == "Server 'srv' did not answer initialize within 3 s."
    missing = pj.ServerConfig("srv", command=sys.executable, cwd="/no/such/directory")
    speaker = Speaker("srv", missing, "stdio", Scrubber(()), "")
    error = translate(FileNotFoundError(errno.ENOENT, "No such file"), speaker, connecting=True, deadline=None)
    assert (error.code, error.message) == (
        "mcp_connect_failed",
        "The working directory '/no/such/directory' of 'srv' does not exist.",
    )


@pytest.mark.parametrize(
    "bug",
    [KeyError("row"), AttributeError("'NoneType' object has no attribute 'x'"), TypeError("bad"), AssertionError()],
)
def test_an_exception_none_of_them_raises_is_a_bug_of_the_kit_and_is_raised_with_its_traceback(bug: Any) -> None:
    try:
        raise bug  # (so that it has a traceback, as a real one would)
    except Exception as raised:
        with pytest.raises(type(bug)) as caught:
            translate(raised, STDIO, connecting=False, deadline=None)
    assert caught.value is bug and caught.value.__traceback__ is not None


# --- the HTTP transport's seam: what httpx raises for one request becomes that request's Failure ---------------


def httpx_errors() -> list[Exception]:
    """One of each exception class httpx raises for a request (every concrete ``httpx.HTTPError``), each saying
    a secret and a URL the server chose, as httpx quotes what it was sent."""
    import httpx

    request = httpx.Request("POST", "http://127.0.0.1:1/mcp")
    said = f"the server says {SECRET} at https://evil.example/x"
    kinds: list[type[httpx.HTTPError]] = []
    pending: list[type[httpx.HTTPError]] = [httpx.HTTPError]
    while pending:
        kind = pending.pop()
        pending.extend(kind.__subclasses__())
        if kind.__module__.startswith("httpx") and not kind.__subclasses__():
            kinds.append(kind)
    errors: list[Exception] = []
    for kind in sorted(kinds, key=lambda kind: kind.__name__):
        if kind is httpx.HTTPStatusError:
            errors.append(kind(said, request=request, response=httpx.Response(500, request=request)))
        elif issubclass(kind, httpx.RequestError):
            errors.append(kind(said, request=request))
        else:
            errors.append(kind(said))
    return errors


HTTPX_ERRORS = httpx_errors()


@pytest.mark.parametrize("opened", [False, True], ids=["connecting", "open"])
@pytest.mark.parametrize("exception", HTTPX_ERRORS, ids=lambda error: type(error).__name__)
def test_each_exception_httpx_raises_for_a_request_fails_that_request_with_the_kits_words(
    exception: Exception, opened: bool
) -> None:
    """A request that breaks below HTTP fails alone, as ``mcp_transport_error``; a server that no longer accepts
    connections once the session is open ends the session (``mcp_connection_closed``). The message is one line of
    the kit's words; what httpx quoted is the failure's ``server_text``, scrubbed."""
    import httpx

    from purra_jupyter._transports.http import SharedSession, TransportEvents

    ended: list[tuple[str, str]] = []
    config = pj.ServerConfig("srv", url="http://127.0.0.1:1/mcp", headers={"Authorization": f"Bearer {SECRET}"})
    events = TransportEvents(request_failed=lambda *_: None, session_ended=lambda *end: ended.append(end),
                             note=lambda *_: None)  # fmt: skip
    shared = SharedSession(config, events, Ingress(Scrubber((SECRET,)), lambda event, detail: None))
    shared.protocol_version = "2025-11-25" if opened else None
    failure = shared.broken(exception, "tools/call")
    if opened and isinstance(exception, httpx.ConnectError | httpx.ConnectTimeout):
        assert failure is None and len(ended) == 1
        cause, code = ended[0]
        assert code == "mcp_connection_closed" and "can no longer be reached" in cause and SECRET not in cause
        return
    assert failure is not None and not ended
    assert failure.code == "mcp_transport_error", failure
    assert failure.message.startswith("Server 'srv' ") and "\n" not in failure.message
    assert SECRET not in failure.message + failure.server_text and "evil.example" not in failure.message
    if not isinstance(exception, httpx.TooManyRedirects):
        assert "the server says ***" in failure.server_text
