"""Streamable HTTP for one connection, failing closed: one failed request is one failed result.

The pinned SDK's client transport (mcp 1.29.1) ends the whole session when one POST gets an HTTP error
status, waits for the full timeout on answers that can never come (a wrong content type, a body that is
not JSON-RPC, an event stream that ends first), reads an event without bound, and keeps reading a
request the client stopped waiting for. This transport offers ``ClientSession`` the same two streams and
instead:

- fails only the request that an HTTP status, a reset or a bad body hit, at once, with a code (``Failure``
  through ``TransportEvents.request_failed``); only what ends the session ends it (a 404 to the session's
  id, a server that refuses connections): ``TransportEvents.session_ended``;
- resumes an event stream that carried an event id, as the spec says (``Last-Event-ID`` after the
  server's ``retry``), for as long as the kit waits;
- keeps at most ``max_message_bytes`` of any one message in memory;
- closes a request's HTTP response the moment the kit stops waiting for it (``drop``);
- gives the session's ``DELETE`` ``CLOSE_GRACE`` seconds at close, then drops the connection.

No request is retried and no session is reopened on its own. Every URL it shows is redacted and every
text it builds is scrubbed of the config's secrets. Runs on the runner's loop only.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from httpx_sse import ServerSentEvent
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.streamable_http import LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCRequest, JSONRPCResponse, RequestId

from .config import Scrubber, ServerConfig, is_secure, redact_url
from .errors import SERVER_TEXT_CHARS, SERVER_TEXT_NOTE
from .oauth import AuthFailed, AuthorizationRequest, IssuerCheck, Person, forget_tokens, provider
from .transport import Failure, Streams, TransportContext
from .wire import (
    AUTH_FAILED,
    AUTH_INSECURE,
    AUTH_REGISTRATION_FAILED,
    AUTH_REQUIRED,
    AUTH_RESOURCE_MISMATCH,
    AUTH_TOKEN_FAILED,
    CATALOG_LIMIT,
    CONNECTION_CLOSED,
    EVENT_ERROR,
    HTTP,
    PROTOCOL_ERROR,
    RATE_LIMITED,
    RESULT_TOO_LARGE,
    SESSION_EXPIRED,
    TRANSPORT_ERROR,
)

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider

CLOSE_GRACE = 2.0  # seconds the session's DELETE may take at close before the connection is dropped
DEFAULT_RETRY = 1.0  # seconds before resuming an event stream when the server named no ``retry``
MIN_RETRY = 0.05  # a server asking for ``retry: 0`` still does not get a busy loop
# Statuses the resumption of an event stream shares with any request (the session ended, credentials, rate).
_ANSWERED_ANY_REQUEST = (401, 403, 404, 429)
JSON = "application/json"
SSE = "text/event-stream"
_LINE_END = re.compile(rb"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class TransportEvents:
    """What the transport reports to its connection (each called on the loop)."""

    request_failed: Callable[[RequestId, Failure], None]
    session_ended: Callable[[str, str], None]  # (cause, code)
    note: Callable[[str, str], None]  # a session log row: (event, detail)


@dataclass(frozen=True, slots=True)
class _Sent:
    id: RequestId
    method: str


class _Failed(Exception):
    """Ends one request's exchange with its ``Failure``."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class _TooLarge(Exception):
    pass


class _RedirectRefused(Exception):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class _EventStream:
    """The WHATWG event-stream algorithm over bytes, keeping at most ``max_bytes`` of one event or line
    (httpx-sse buffers a line without bound). ``last_id`` and ``retry`` outlive a reconnection."""

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self.last_id: str | None = None
        self.retry: float | None = None
        self.restart()

    async def wait_to_reconnect(self) -> None:
        """The pause before a reconnection: the server's ``retry`` (at least ``MIN_RETRY``), else ``DEFAULT_RETRY``."""
        await anyio.sleep(max(MIN_RETRY, DEFAULT_RETRY if self.retry is None else self.retry))

    def restart(self) -> None:
        self._pending = bytearray()  # the line read so far
        self._after_cr = False  # the last chunk ended with "\r": a "\n" starting the next one belongs to it
        self._event = ""
        self._data: list[str] = []
        self._size = 0

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events ``chunk`` completes; looks at each byte once, however long a line grows."""
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        events = []
        start = 0
        for end in _LINE_END.finditer(chunk):
            self._pending += chunk[start : end.start()]
            line = self._pending.decode("utf-8", "replace")
            self._pending.clear()
            start = end.end()
            if event := self._line(line):
                events.append(event)
        self._pending += chunk[start:]
        if self._size + len(self._pending) > self._max:
            raise _TooLarge
        return events

    def _line(self, line: str) -> ServerSentEvent | None:
        if not line:
            event = ServerSentEvent(self._event or "message", "\n".join(self._data), self.last_id or "")
            dispatch = bool(self._data)
            self._event, self._data, self._size = "", [], 0
            return event if dispatch else None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._max:
                raise _TooLarge
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry = int(value) / 1000
        return None


class HttpTransport:
    """The exchanges of one Streamable HTTP session; see the module's docstring."""

    def __init__(
        self,
        config: ServerConfig,
        client: httpx.AsyncClient,
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        tasks: TaskGroup,
        events: TransportEvents,
        *,
        max_message_bytes: int,
        scrub: Scrubber,
        grace: Callable[[], float],
        auth: OAuthClientProvider | None = None,
    ) -> None:
        self._config = config
        self._auth = auth
        self._url = config.url or ""
        self._client = client
        self._incoming = incoming
        self._tasks = tasks
        self._events = events
        self._max = max_message_bytes
        self._scrub = scrub
        self._grace = grace
        self._session_id: str | None = None
        self._protocol_version: str | None = None
        self._ended = False
        self._inflight: dict[RequestId, anyio.CancelScope] = {}

    @property
    def _server(self) -> str:
        return f"Server '{self._config.name}'"

    async def forget_authorization(self) -> None:
        """Drop the tokens (in the SDK's provider and its storage): the next request starts the flow over."""
        if self._auth is not None:
            await forget_tokens(self._auth)

    def drop(self, request_id: RequestId) -> None:
        """Stop the exchange of ``request_id`` now: its response is closed, nothing more of it is read."""
        scope = self._inflight.get(request_id)
        if scope is not None:
            scope.cancel()

    # --- sending --------------------------------------------------------------------------------------

    async def send_all(self, outgoing: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """Each message ``ClientSession`` writes, in order: a request runs as an exchange of its own; the
        ``initialized`` notification is delivered before anything after it, then the server's own stream
        is opened; other notifications and responses are delivered each on their own."""
        async with outgoing:
            async for item in outgoing:
                root = item.message.root
                if isinstance(root, JSONRPCRequest):
                    self._tasks.start_soon(self._exchange, item.message, _Sent(root.id, root.method))
                elif getattr(root, "method", None) == "notifications/initialized":
                    await self._deliver(item.message, "notifications/initialized")
                    self._tasks.start_soon(self._listen)
                else:
                    self._tasks.start_soon(self._deliver, item.message, getattr(root, "method", "a response"))
        await self._incoming.aclose()

    async def _exchange(self, message: JSONRPCMessage, sent: _Sent) -> None:
        with anyio.CancelScope() as scope:
            self._inflight[sent.id] = scope
            try:
                failure = await self._answer_of(message, sent)
            finally:
                del self._inflight[sent.id]
        if not scope.cancel_called and failure is not None and not self._ended:
            self._events.request_failed(sent.id, failure)

    async def _answer_of(self, message: JSONRPCMessage, sent: _Sent) -> Failure | None:
        """POST ``message`` and forward its answer; ``None`` once it came (or the session ended)."""
        try:
            async with self._post(message) as response:
                if not await self._status_ok(response, sent):
                    return None
                if sent.method == "initialize":
                    self._session_id = response.headers.get(MCP_SESSION_ID) or None
                kind = _content_type(response)
                if kind == JSON:
                    await self._json_answer(response, sent)
                elif kind == SSE:
                    await self._stream_answer(response, sent)
                else:
                    raise self._failed(PROTOCOL_ERROR, f"answered {sent.method} with a content type that is "
                                       "neither JSON nor an event stream", server_text=kind or "none")  # fmt: skip
        except _Failed as failed:
            return failed.failure
        except _TooLarge:
            code = CATALOG_LIMIT if sent.method == "tools/list" else RESULT_TOO_LARGE
            return self._failure(code, f"sent an answer to {sent.method} over {self._max} bytes; "
                                 "the rest was not read")  # fmt: skip
        except (httpx.HTTPError, _RedirectRefused) as error:
            return self._broken(error, sent.method)
        except (AuthFailed, OAuthFlowError) as error:
            return self._auth_failure(error)
        return None

    async def _status_ok(self, response: httpx.Response, sent: _Sent) -> bool:
        """Whether ``response`` carries an answer to read; raises ``_Failed`` for an error status. A 404
        to the session's id ends the session (returns ``False``). The message names the status only: the reason
        phrase and the body are the server's words (``server_text``)."""
        status = response.status_code
        if 200 <= status < 300 and status != 202:
            return True
        what = f"HTTP {status}"
        if status == 202:
            raise self._failed(PROTOCOL_ERROR, f"accepted {sent.method} ({what}) but sent no answer")
        if status == 404 and self._session_id is not None:
            self._end(SESSION_EXPIRED, f"the server ended the session ({what} to {sent.method}); open a new "
                      "one with pj.connect()")  # fmt: skip
            return False
        said = await self._said(response)
        if status == 404:
            raise self._failed(PROTOCOL_ERROR, f"has no MCP endpoint at {redact_url(self._url)} ({what})",
                               server_text=said)  # fmt: skip
        if status in (401, 403):
            wants = ("other credentials than the authorization gave" if self._config.oauth is not None else
                     "credentials: connect with --oauth (pj.OAuth()) if it uses the MCP authorization flow, "
                     "or give headers such as Authorization")  # fmt: skip
            raise self._failed(AUTH_REQUIRED, f"refused {sent.method}: {what}; it wants {wants}",
                               server_text=said)  # fmt: skip
        if status == 429:
            after = response.headers.get("retry-after")
            seconds = after is not None and after.strip().isdigit()
            wait = f"it asks to retry after {after.strip()} s" if seconds else (
                "it named a Retry-After" if after else "it named no Retry-After")  # fmt: skip
            asked = "" if seconds or after is None else f"Retry-After: {after}"
            raise self._failed(RATE_LIMITED, f"is rate limiting: {what} to {sent.method}; {wait}",
                               server_text="\n".join(filter(None, (asked, said))))  # fmt: skip
        code = TRANSPORT_ERROR if status >= 500 else PROTOCOL_ERROR
        raise self._failed(code, f"answered {sent.method} with {what}", server_text=said)

    async def _said(self, response: httpx.Response) -> str:
        """What an error status says in the server's words: its reason phrase and the start of its body,
        scrubbed, then bounded (empty if it says nothing)."""
        body = b""
        limit = self._scrub.margin(SERVER_TEXT_CHARS)
        try:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) >= limit:
                    break
        except httpx.HTTPError:
            pass
        text = "\n".join(filter(None, (response.reason_phrase.strip(), body[:limit].decode("utf-8", "replace"))))
        return self._scrub.words(text)

    async def _json_answer(self, response: httpx.Response, sent: _Sent) -> None:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self._max:
                raise _TooLarge
        if not await self._take(self._parsed(bytes(body), f"answered {sent.method} with a body"), sent):
            raise self._failed(PROTOCOL_ERROR, f"answered {sent.method} with a message that is not its answer")

    async def _stream_answer(self, response: httpx.Response, sent: _Sent) -> None:
        """Read the event stream until the answer; a stream that ends first is resumed from its last event
        id after the server's ``retry``, for as long as the kit waits (it drops the exchange at its deadline)."""
        stream = _EventStream(self._max)
        ended = await self._read_events(response, stream, sent)
        while ended is not None:
            if stream.last_id is None:
                raise self._failed(TRANSPORT_ERROR, f"ended the event stream of {sent.method} before the answer "
                                   f"({ended}) with no event id to resume from", answered=False)  # fmt: skip
            await stream.wait_to_reconnect()
            headers = {**self._headers(accept=SSE), LAST_EVENT_ID: stream.last_id}
            async with self._client.stream("GET", self._url, headers=headers) as resumed:
                if resumed.status_code not in _ANSWERED_ANY_REQUEST and not 200 <= resumed.status_code < 300:
                    raise self._failed(TRANSPORT_ERROR, f"refused to resume the event stream of {sent.method} "
                                       f"(HTTP {resumed.status_code} to the GET with its Last-Event-ID), so its "
                                       "answer did not come", answered=False,
                                       server_text=await self._said(resumed))  # fmt: skip
                if not await self._status_ok(resumed, sent):
                    return
                kind = _content_type(resumed)
                if kind != SSE:
                    raise self._failed(PROTOCOL_ERROR, f"resumed the event stream of {sent.method} with another "
                                       "content type", server_text=kind or "none")  # fmt: skip
                stream.restart()
                ended = await self._read_events(resumed, stream, sent)

    async def _read_events(self, response: httpx.Response, stream: _EventStream, sent: _Sent | None) -> str | None:
        """Forward ``response``'s events; ``None`` once the answer to ``sent`` came, else how the stream ended."""
        on = f"on the stream of {sent.method}" if sent is not None else "on its own stream"
        try:
            async for chunk in response.aiter_bytes():
                for event in stream.feed(chunk):
                    if (
                        event.event == "message"
                        and event.data
                        and await self._take(self._parsed(event.data.encode(), f"sent an event {on}"), sent)
                    ):
                        return None
        except (httpx.ReadError, httpx.RemoteProtocolError) as error:  # a reset, a server killed mid-stream
            return f"the connection broke: {error.__class__.__name__}"
        return "the stream ended"

    async def _take(self, message: JSONRPCMessage, sent: _Sent | None) -> bool:
        """Forward one server message to the session; ``True`` when it is the answer to ``sent``."""
        root = message.root
        answer = isinstance(root, JSONRPCResponse | JSONRPCError)
        if isinstance(root, JSONRPCResponse | JSONRPCError) and sent is not None and root.id != sent.id:
            raise self._failed(PROTOCOL_ERROR, f"answered {sent.method} (request {sent.id!r}) with the answer to "
                               "another request", server_text=f"the answer's id: {root.id!r}")  # fmt: skip
        if answer and sent is not None and sent.method == "initialize" and isinstance(root, JSONRPCResponse):
            version = root.result.get("protocolVersion")
            self._protocol_version = version if isinstance(version, str) else None
        await self._incoming.send(SessionMessage(message))
        return answer and sent is not None

    async def _deliver(self, message: JSONRPCMessage, what: str) -> None:
        """POST a notification or a response (the server owes no answer but ``202``), within the timeout."""
        with anyio.move_on_after(self._config.timeout) as scope:
            try:
                async with self._post(message) as response:
                    if response.status_code == 404 and self._session_id is not None:
                        self._end(SESSION_EXPIRED, f"the server ended the session (HTTP 404 to {what}); open a "
                                  "new one with pj.connect()")  # fmt: skip
                    elif not 200 <= response.status_code < 300:
                        self._note(f"{self._server} refused {what}: HTTP {response.status_code}")
            except (httpx.HTTPError, _RedirectRefused) as error:
                failure = self._broken(error, what)
                if failure is not None:
                    self._note(failure.message)
        if scope.cancelled_caught:
            self._note(f"{self._server} did not accept {what} within {self._config.timeout:g} s; given up")

    async def _listen(self) -> None:
        """The server's own stream (GET): its notifications and requests, reopened from its last event id
        when it ends; a server without one (405) is fine. Its failures are logged, never fatal."""
        stream = _EventStream(self._max)
        failures = 0
        while failures < 3 and not self._ended:
            headers = self._headers(accept=SSE)
            if stream.last_id is not None:
                headers[LAST_EVENT_ID] = stream.last_id
            try:
                async with self._client.stream("GET", self._url, headers=headers) as response:
                    if response.status_code == 405:
                        return
                    kind = _content_type(response)
                    if response.status_code != 200 or kind != SSE:
                        self._note(f"{self._server} refused its own event stream (HTTP {response.status_code}, "
                                   f"{self._scrub.shown(kind) or 'no content type'}); not reopened")  # fmt: skip
                        return
                    failures = 0
                    stream.restart()
                    ended = await self._read_events(response, stream, None)
                    if ended != "the stream ended":
                        failures += 1
            except _Failed as failed:
                self._note(f"{failed.failure.message} (on its own event stream)")
                failures += 1
            except _TooLarge:
                self._note(f"{self._server} sent a message over {self._max} bytes on its own event stream; dropped")
                failures += 1
            except (httpx.HTTPError, _RedirectRefused) as error:
                self._note(f"{self._server}'s own event stream failed: {error.__class__.__name__}")
                failures += 1
            except (AuthFailed, OAuthFlowError) as error:
                self._note(f"{self._auth_failure(error).message} (on its own event stream)")
                return
            await stream.wait_to_reconnect()
        if failures:
            self._note(f"{self._server}'s own event stream failed {failures} times in a row; not reopened")

    async def close(self) -> None:
        """End the session on the server (``DELETE``) within ``CLOSE_GRACE`` seconds, then stop every exchange."""
        grace = min(CLOSE_GRACE, self._grace())
        if self._session_id is not None and not self._ended:
            with anyio.move_on_after(grace) as scope:
                try:
                    response = await self._client.delete(self._url, headers=self._headers())
                    if response.status_code not in (200, 202, 204, 404, 405):
                        self._note(f"{self._server} answered the session's DELETE with HTTP {response.status_code}")
                except (httpx.HTTPError, _RedirectRefused, AuthFailed, OAuthFlowError) as error:
                    self._note(f"the session's DELETE failed: {error.__class__.__name__}")
            if scope.cancelled_caught:
                self._note(f"{self._server} did not answer the session's DELETE within {grace:g} s; "
                           "the connection was dropped")  # fmt: skip
        self._ended = True
        self._tasks.cancel_scope.cancel()

    # --- helpers -------------------------------------------------------------------------------------

    def _post(self, message: JSONRPCMessage) -> Any:
        return self._client.stream("POST", self._url, content=_body(message), headers=self._headers())

    def _headers(self, *, accept: str = f"{JSON}, {SSE}") -> dict[str, str]:
        headers = {"accept": accept, "content-type": JSON}
        if self._session_id is not None:
            headers[MCP_SESSION_ID] = self._session_id
        if self._protocol_version is not None:
            headers[MCP_PROTOCOL_VERSION] = self._protocol_version
        return headers

    def _broken(self, error: Exception, method: str) -> Failure | None:
        """A request that failed below HTTP. A server that no longer accepts connections once the session is open
        is gone: the session ends (``None``), whether or not it had a session id. What httpx says (it may quote
        what the server sent) is the failure's ``server_text``; the messages name only what the kit knows."""
        said = self._scrub.words(str(error))
        if isinstance(error, _RedirectRefused):
            return self._failure(TRANSPORT_ERROR, f"redirected {method} to another origin; refused, nothing was sent "
                                 "there", server_text=redact_url(error.url))  # fmt: skip
        if isinstance(error, httpx.TooManyRedirects):
            return self._failure(TRANSPORT_ERROR, f"redirected {method} in a loop; given up")
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout) and self._protocol_version is not None:
            self._note(f"{self._server} could not be reached for {method}: {self._scrub.shown(str(error))}")
            self._end(CONNECTION_CLOSED, f"the server at {redact_url(self._url)} can no longer be reached: "
                      f"{unreachable_reason(error)}; is it still running?")  # fmt: skip
            return None
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
            return self._failure(TRANSPORT_ERROR, f"could not be reached at {redact_url(self._url)}: "
                                 f"{unreachable_reason(error)}", server_text=said)  # fmt: skip
        return self._failure(TRANSPORT_ERROR, f"broke off the exchange of {method} before the answer "
                             f"({error.__class__.__name__})", answered=False, server_text=said)  # fmt: skip

    def _auth_failure(self, error: AuthFailed | OAuthFlowError) -> Failure:
        """A failure of the authorization flow, with its code; what the SDK or a server said is kept apart."""
        if isinstance(error, AuthFailed):
            return self._failure(error.code, f"could not be authorized: {error.message}",
                                 server_text=self._scrub.words(error.server_text))  # fmt: skip
        if isinstance(error, OAuthRegistrationError):
            code, what = AUTH_REGISTRATION_FAILED, "its authorization server refused to register this client"
        elif isinstance(error, OAuthTokenError):
            code, what = AUTH_TOKEN_FAILED, "its token endpoint refused the exchange"
        elif "does not match" in str(error):  # the SDK raises no class of its own for this one
            code, what = AUTH_RESOURCE_MISMATCH, "its protected-resource metadata names another resource"
        else:
            code, what = AUTH_FAILED, "the authorization flow failed"
        return self._failure(code, f"could not be authorized: {what}", server_text=self._scrub.shown(str(error)))

    def _end(self, code: str, cause: str) -> None:
        if not self._ended:
            self._ended = True
            self._events.session_ended(self._scrub(cause), code)

    def _failure(self, code: str, message: str, *, answered: bool = True, server_text: str = "") -> Failure:
        note = f" {SERVER_TEXT_NOTE}" if server_text else ""
        return Failure(code, self._scrub(f"{self._server} {message}.{note}"), answered, self._scrub(server_text))

    def _failed(self, code: str, message: str, *, answered: bool = True, server_text: str = "") -> _Failed:
        return _Failed(self._failure(code, message, answered=answered, server_text=server_text))

    def _note(self, detail: str) -> None:
        self._events.note(EVENT_ERROR, self._scrub(detail))

    def _parsed(self, data: bytes, what: str) -> JSONRPCMessage:
        try:
            return JSONRPCMessage.model_validate_json(data)
        except ValueError:
            excerpt = self._scrub.words(data[: self._scrub.margin(SERVER_TEXT_CHARS)].decode("utf-8", "replace"))
            raise self._failed(PROTOCOL_ERROR, f"{what} that is not JSON-RPC", server_text=excerpt) from None


def _content_type(response: httpx.Response) -> str:
    value: str = response.headers.get("content-type", "")
    return value.partition(";")[0].strip().lower()


def _body(message: JSONRPCMessage) -> bytes:
    return json.dumps(message.model_dump(by_alias=True, mode="json", exclude_none=True)).encode()


@asynccontextmanager
async def open_http(
    config: ServerConfig,
    events: TransportEvents,
    *,
    max_message_bytes: int,
    scrub: Scrubber,
    grace: Callable[[], float],
    person: Person | None = None,
) -> AsyncIterator[tuple[Any, Any, HttpTransport]]:
    """The streams ``ClientSession`` reads and writes, and the transport behind them; ``scrub`` also takes each
    secret the authorization flow obtains; ``grace()`` is how long the session's ``DELETE`` may take at the end
    (at most ``CLOSE_GRACE``); ``person`` answers the flow when the config's OAuth has no ``authorize``
    function."""
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)
    auth = provider(config, scrub.add, person) if config.oauth is not None else None
    async with _http_client(config, events, auth) as client, anyio.create_task_group() as tasks:
        transport = HttpTransport(
            config, client, incoming_writer, tasks, events, max_message_bytes=max_message_bytes, scrub=scrub,
            grace=grace, auth=auth,
        )  # fmt: skip
        tasks.start_soon(transport.send_all, outgoing_reader)
        try:
            yield incoming, outgoing, transport
        finally:
            with anyio.CancelScope(shield=True):
                await transport.close()
            await incoming_writer.aclose()
            await outgoing.aclose()


def unreachable_reason(error: BaseException) -> str:
    """Why a server could not be reached, in words: refused, DNS, TLS or timeout (httpx keeps the OS's
    error in the chain of causes)."""
    reasons = (
        (ConnectionRefusedError, "the connection was refused (is the server running, on that port?)"),
        (socket.gaierror, "its host name could not be resolved (DNS)"),
        (ssl.SSLCertVerificationError, "its TLS certificate could not be verified"),
        (ssl.SSLError, "the TLS handshake failed (is it https?)"),
        (httpx.ConnectTimeout, "it did not accept the connection in time"),
        (TimeoutError, "it did not accept the connection in time"),
    )
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(seen) < 16:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for kind, reason in reasons:
        if any(isinstance(link, kind) for link in seen):
            return reason
    return f"the connection failed ({error.__class__.__name__})"


@asynccontextmanager
async def _http_client(
    config: ServerConfig, events: TransportEvents, auth: httpx.Auth | None
) -> AsyncIterator[httpx.AsyncClient]:
    """Our own httpx client: the config's headers, or the MCP authorization flow (``oauth``, the SDK's
    provider as the client's auth); redirects followed only within the origin that redirects, so custom
    headers (credentials) never reach another origin; every request over https, or http to a loopback host
    (what the config checks for the server, the flow's endpoints get here). No read timeout: each request's
    wait has the kit's deadline, which closes its response."""

    async def secure_only(request: httpx.Request) -> None:
        if not is_secure(request.url.scheme, request.url.host):  # (the address is the server's choice: apart)
            raise AuthFailed(AUTH_INSECURE, "refused to send a request over http:// to an address the flow found: "
                             "authorization endpoints must be https (http only for loopback)",
                             server_text=redact_url(str(request.url)))  # fmt: skip

    async def same_origin_redirects(response: httpx.Response) -> None:
        if response.has_redirect_location:
            target = response.url.join(response.headers["location"])
            if _origin(target) != _origin(response.url):
                events.note(EVENT_ERROR, f"refused a redirect to another origin: {redact_url(str(target))}")
                raise _RedirectRefused(str(target))

    issuers = IssuerCheck()

    async def issuer_checked(response: httpx.Response) -> None:
        if auth is not None and response.request.method == "GET" and response.status_code == 200:
            if "/.well-known/" in response.url.path:
                issuers.read(str(response.url), await response.aread())

    async with httpx.AsyncClient(
        headers=dict(config.headers or {}),
        auth=auth,
        timeout=httpx.Timeout(config.timeout, read=None),
        follow_redirects=True,
        event_hooks={"request": [secure_only], "response": [same_origin_redirects, issuer_checked]},
    ) as client:
        yield client


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


class StreamableHttpTransport:
    """A Streamable HTTP server at the config's URL (``open_http``), authorized with OAuth when the config says so:
    ``ask`` shows a person the authorization when the config's OAuth has no ``authorize`` function."""

    kind = HTTP
    stderr = ""  # (a remote server's stderr is its own)

    def __init__(self, config: ServerConfig, ask: Callable[[AuthorizationRequest], str] | None = None) -> None:
        self._config = config
        self._ask = ask
        self._http: HttpTransport | None = None

    @asynccontextmanager
    async def open(self, context: TransportContext) -> AsyncIterator[Streams]:
        config = self._config
        person = None
        if config.oauth is not None and self._ask is not None:
            person = Person(config.name, self._ask, context.persons_turn, config.oauth.timeout)
        events = TransportEvents(context.request_failed, context.session_ended, context.note)
        opened = open_http(config, events, max_message_bytes=context.max_message_bytes(), scrub=context.scrub,
                           grace=context.grace, person=person)  # fmt: skip
        async with opened as (read, write, self._http):
            yield read, write

    async def ended(self) -> None:
        """(Nothing comes after the server's last answer.)"""

    def drop(self, request_id: RequestId) -> None:
        if self._http is not None:
            self._http.drop(request_id)

    async def forget_authorization(self) -> None:
        if self._http is not None:
            await self._http.forget_authorization()


__all__ = ["CLOSE_GRACE", "Failure", "HttpTransport", "StreamableHttpTransport", "TransportEvents", "open_http"]
