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
- keeps at most ``max_message_bytes`` of any one message in memory (events are decoded by httpx-sse,
  through that bound: ``sse.EventStream``);
- closes a request's HTTP response the moment the kit stops waiting for it (``drop``);
- gives the session's ``DELETE`` ``CLOSE_GRACE`` seconds at close, then drops the connection.

``HttpTransport`` owns the session (its tasks, the request in flight, the close); ``_Exchanges`` runs its
HTTP exchanges; ``SharedSession`` is what they share (the session's id and protocol version, whether it ended)
and how they report. No request is retried and no session is reopened on its own. Every URL it shows is
redacted and every text it builds is scrubbed of the config's secrets. Runs on the runner's loop only.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import httpx
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.streamable_http import LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCRequest, JSONRPCResponse, RequestId

from .._base.config import ServerConfig, is_secure, redact_url
from .._base.errors import SERVER_TEXT_CHARS, SERVER_TEXT_NOTE
from .._base.wire import (
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
from .base import Failure, Streams, TransportContext
from .ingress import Ingress, NotJsonRpc
from .oauth import AuthFailed, AuthorizationRequest, IssuerCheck, Person, forget_tokens, provider
from .sse import EventStream, MessageTooLarge

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider

CLOSE_GRACE = 2.0  # seconds the session's DELETE may take at close before the connection is dropped
# Statuses the resumption of an event stream shares with any request (the session ended, credentials, rate).
_ANSWERED_ANY_REQUEST = (401, 403, 404, 429)
JSON = "application/json"
SSE = "text/event-stream"
# RFC 8707's check of the protected-resource metadata: the SDK (OAuthClientProvider._validate_resource_match,
# mcp 1.29.1) raises a bare OAuthFlowError with only this sentence, no subclass and no field, and it checks the
# metadata before it keeps it (its context never holds the refused one). So the words are all there is: the
# match is the SDK's whole sentence, on that exact class.
_RESOURCE_MISMATCH = re.compile(r"Protected resource .+ does not match expected .+", re.DOTALL)


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


class _RedirectRefused(Exception):
    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class SharedSession:
    """What the exchanges of one session share: the server's session id and protocol version, whether the
    session ended; and how they report: a ``Failure``, a log row, the end, each scrubbed."""

    def __init__(self, config: ServerConfig, events: TransportEvents, ingress: Ingress) -> None:
        self.url = config.url or ""
        self.server = f"Server '{config.name}'"
        self.id: str | None = None
        self.protocol_version: str | None = None
        self.ended = False
        self._events = events
        self._ingress = ingress
        self._scrub = ingress.scrub

    def headers(self, *, accept: str = f"{JSON}, {SSE}") -> dict[str, str]:
        headers = {"accept": accept, "content-type": JSON}
        if self.id is not None:
            headers[MCP_SESSION_ID] = self.id
        if self.protocol_version is not None:
            headers[MCP_PROTOCOL_VERSION] = self.protocol_version
        return headers

    def end(self, code: str, cause: str) -> None:
        if not self.ended:
            self.ended = True
            self._events.session_ended(self._scrub(cause), code)

    def note(self, detail: str) -> None:
        self._events.note(EVENT_ERROR, self._scrub(detail))

    @property
    def unread(self) -> bool:
        """Whether nothing more of the server is read (its unasked messages outran the ingress' budget)."""
        return self._ingress.ended

    def shown(self, text: str) -> str:
        """Server text a message quotes (scrubbed, on one line, bounded)."""
        return self._scrub.shown(text)

    def failure(self, code: str, message: str, *, answered: bool = True, server_text: str = "") -> Failure:
        note = f" {SERVER_TEXT_NOTE}" if server_text else ""
        return Failure(code, self._scrub(f"{self.server} {message}.{note}"), answered, self._scrub(server_text))

    def failed(self, code: str, message: str, *, answered: bool = True, server_text: str = "") -> _Failed:
        return _Failed(self.failure(code, message, answered=answered, server_text=server_text))

    async def said(self, response: httpx.Response, body: bytes | None = None) -> str:
        """What an error status says in the server's words: its reason phrase and the start of its body (read
        here unless given), scrubbed, then bounded (empty if it says nothing)."""
        limit = self._scrub.margin(SERVER_TEXT_CHARS)
        if body is None:
            body = await read_bounded(response, limit)
        text = "\n".join(filter(None, (response.reason_phrase.strip(), body[:limit].decode("utf-8", "replace"))))
        return self._scrub.words(text)

    def parsed(self, data: bytes, what: str) -> JSONRPCMessage | None:
        """The message ``data`` holds, through the session's ingress (``None``: a notification it dropped)."""
        try:
            return self._ingress.message(data)
        except NotJsonRpc:
            excerpt = self._scrub.words(data[: self._scrub.margin(SERVER_TEXT_CHARS)].decode("utf-8", "replace"))
            raise self.failed(PROTOCOL_ERROR, f"{what} that is not JSON-RPC", server_text=excerpt) from None

    def broken(self, error: Exception, method: str) -> Failure | None:
        """A request that failed below HTTP. A server that no longer accepts connections once the session is open
        is gone: the session ends (``None``), whether or not it had a session id. What httpx says (it may quote
        what the server sent) is the failure's ``server_text``; the messages name only what the kit knows."""
        said = self._scrub.words(str(error))
        if isinstance(error, _RedirectRefused):
            return self.failure(TRANSPORT_ERROR, f"redirected {method} to another origin; refused, nothing was sent "
                                "there", server_text=redact_url(error.url))  # fmt: skip
        if isinstance(error, httpx.TooManyRedirects):
            return self.failure(TRANSPORT_ERROR, f"redirected {method} in a loop; given up")
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout) and self.protocol_version is not None:
            self.note(f"{self.server} could not be reached for {method}: {self._scrub.shown(str(error))}")
            self.end(CONNECTION_CLOSED, f"the server at {redact_url(self.url)} can no longer be reached: "
                     f"{unreachable_reason(error)}; is it still running?")  # fmt: skip
            return None
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
            return self.failure(TRANSPORT_ERROR, f"could not be reached at {redact_url(self.url)}: "
                                f"{unreachable_reason(error)}", server_text=said)  # fmt: skip
        return self.failure(TRANSPORT_ERROR, f"broke off the exchange of {method} before the answer "
                            f"({error.__class__.__name__})", answered=False, server_text=said)  # fmt: skip

    def auth_failure(self, error: AuthFailed | OAuthFlowError) -> Failure:
        """A failure of the authorization flow, with its code; what the SDK or a server said is kept apart."""
        if isinstance(error, AuthFailed):
            return self.failure(error.code, f"could not be authorized: {error.message}",
                                server_text=self._scrub.words(error.server_text))  # fmt: skip
        if isinstance(error, OAuthRegistrationError):
            code, what = AUTH_REGISTRATION_FAILED, "its authorization server refused to register this client"
        elif isinstance(error, OAuthTokenError):
            code, what = AUTH_TOKEN_FAILED, "its token endpoint refused the exchange"
        elif type(error) is OAuthFlowError and _RESOURCE_MISMATCH.fullmatch(str(error)):
            code, what = AUTH_RESOURCE_MISMATCH, "its protected-resource metadata names another resource"
        else:
            code, what = AUTH_FAILED, "the authorization flow failed"
        return self.failure(code, f"could not be authorized: {what}", server_text=self._scrub.shown(str(error)))


class _Exchanges:
    """The HTTP exchanges of one session: a request's POST and its answer (JSON, or an event stream resumed
    from its last event id), a notification's or a response's POST, and the server's own stream (GET)."""

    def __init__(
        self,
        session: SharedSession,
        config: ServerConfig,
        client: httpx.AsyncClient,
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        *,
        max_message_bytes: int,
    ) -> None:
        self._session = session
        self._timeout = config.timeout
        self._oauth = config.oauth is not None
        self._client = client
        self._incoming = incoming
        self._max = max_message_bytes

    async def answer(self, message: JSONRPCMessage, sent: _Sent) -> Failure | None:
        """POST ``message`` and forward its answer; ``None`` once it came (or the session ended)."""
        session = self._session
        try:
            async with self._post(message) as response:
                if not await self._status_ok(response, sent):
                    return None
                if sent.method == "initialize":
                    session.id = response.headers.get(MCP_SESSION_ID) or None
                kind = _content_type(response)
                if kind == JSON:
                    await self._json_answer(response, sent)
                elif kind == SSE:
                    await self._stream_answer(response, sent)
                else:
                    raise session.failed(PROTOCOL_ERROR, f"answered {sent.method} with a content type that is "
                                         "neither JSON nor an event stream", server_text=kind or "none")  # fmt: skip
        except _Failed as failed:
            return failed.failure
        except MessageTooLarge:
            code = CATALOG_LIMIT if sent.method == "tools/list" else RESULT_TOO_LARGE
            return session.failure(code, f"sent an answer to {sent.method} over {self._max} bytes; "
                                   "the rest was not read")  # fmt: skip
        except (httpx.HTTPError, _RedirectRefused) as error:
            return session.broken(error, sent.method)
        except (AuthFailed, OAuthFlowError) as error:
            return session.auth_failure(error)
        return None

    async def _status_ok(self, response: httpx.Response, sent: _Sent) -> bool:
        """Whether ``response`` carries an answer to read; raises ``_Failed`` for an error status. A 404
        to the session's id ends the session (returns ``False``). The message names the status only: the reason
        phrase and the body are the server's words (``server_text``)."""
        session = self._session
        status = response.status_code
        if 200 <= status < 300 and status != 202:
            return True
        what = f"HTTP {status}"
        if status == 202:
            raise session.failed(PROTOCOL_ERROR, f"accepted {sent.method} ({what}) but sent no answer")
        if status == 404 and session.id is not None:
            session.end(SESSION_EXPIRED, f"the server ended the session ({what} to {sent.method}); open a new "
                        "one with pj.connect()")  # fmt: skip
            return False
        body = await read_bounded(response, self._max) if status == 400 and _content_type(response) == JSON else None
        if body is not None and await self._error_answer(body, sent):
            return False
        said = await session.said(response, body)
        if status == 404:
            raise session.failed(PROTOCOL_ERROR, f"has no MCP endpoint at {redact_url(session.url)} ({what})",
                                 server_text=said)  # fmt: skip
        if status in (401, 403):
            wants = ("other credentials than the authorization gave" if self._oauth else
                     "credentials: connect with --oauth (pj.OAuth()) if it uses the MCP authorization flow, "
                     "or give headers such as Authorization")  # fmt: skip
            raise session.failed(AUTH_REQUIRED, f"refused {sent.method}: {what}; it wants {wants}",
                                 server_text=said)  # fmt: skip
        if status == 429:
            after = response.headers.get("retry-after")
            seconds = after is not None and after.strip().isdigit()
            wait = f"it asks to retry after {after.strip()} s" if seconds else (
                "it named a Retry-After" if after else "it named no Retry-After")  # fmt: skip
            asked = "" if seconds or after is None else f"Retry-After: {after}"
            raise session.failed(RATE_LIMITED, f"is rate limiting: {what} to {sent.method}; {wait}",
                                 server_text="\n".join(filter(None, (asked, said))))  # fmt: skip
        code = TRANSPORT_ERROR if status >= 500 else PROTOCOL_ERROR
        raise session.failed(code, f"answered {sent.method} with {what}", server_text=said)

    async def _error_answer(self, body: bytes, sent: _Sent) -> bool:
        """Whether an HTTP 400's JSON ``body`` is the JSON-RPC error answering ``sent`` (what Streamable HTTP has
        a server send for a request it refuses, e.g. a protocol version it does not speak); if so it goes to the
        session as that answer, the error the server meant."""
        try:
            message = self._session.parsed(body, "")
        except _Failed:
            return False
        if message is None or not isinstance(message.root, JSONRPCError) or message.root.id != sent.id:
            return False
        return await self._take(message, sent)

    async def _json_answer(self, response: httpx.Response, sent: _Sent) -> None:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self._max:
                raise MessageTooLarge
        message = self._session.parsed(bytes(body), f"answered {sent.method} with a body")
        if not await self._take(message, sent, alone=True):
            raise self._session.failed(PROTOCOL_ERROR, f"answered {sent.method} with a message that is not its "
                                       "answer")  # fmt: skip

    async def _stream_answer(self, response: httpx.Response, sent: _Sent) -> None:
        """Read the event stream until the answer; a stream that ends first is resumed from its last event
        id after the server's ``retry``, for as long as the kit waits (it drops the exchange at its deadline)."""
        session = self._session
        stream = EventStream(self._max)
        ended = await self._read_events(response, stream, sent)
        while ended is not None:
            if stream.last_id is None:
                raise session.failed(TRANSPORT_ERROR, f"ended the event stream of {sent.method} before the answer "
                                     f"({ended}) with no event id to resume from", answered=False)  # fmt: skip
            await stream.wait_to_reconnect()
            headers = {**session.headers(accept=SSE), LAST_EVENT_ID: stream.last_id}
            async with self._client.stream("GET", session.url, headers=headers) as resumed:
                if resumed.status_code not in _ANSWERED_ANY_REQUEST and not 200 <= resumed.status_code < 300:
                    raise session.failed(TRANSPORT_ERROR, f"refused to resume the event stream of {sent.method} "
                                         f"(HTTP {resumed.status_code} to the GET with its Last-Event-ID), so its "
                                         "answer did not come", answered=False,
                                         server_text=await session.said(resumed))  # fmt: skip
                if not await self._status_ok(resumed, sent):
                    return
                kind = _content_type(resumed)
                if kind != SSE:
                    raise session.failed(PROTOCOL_ERROR, f"resumed the event stream of {sent.method} with another "
                                         "content type", server_text=kind or "none")  # fmt: skip
                ended = await self._read_events(resumed, stream, sent)

    async def _read_events(self, response: httpx.Response, stream: EventStream, sent: _Sent | None) -> str | None:
        """Forward ``response``'s events; ``None`` once the answer to ``sent`` came (or nothing more of the server is
        read), else how the stream ended."""
        on = f"on the stream of {sent.method}" if sent is not None else "on its own stream"
        try:
            async with aclosing(stream.events(response)) as events:
                async for event in events:
                    if (
                        event.event == "message"
                        and event.data
                        and await self._take(self._session.parsed(event.data.encode(), f"sent an event {on}"), sent)
                    ):
                        return None
                    if self._session.unread:  # (its requests are dropped: nothing more is read of this stream)
                        return None
        except (httpx.ReadError, httpx.RemoteProtocolError) as error:  # a reset, a server killed mid-stream
            return f"the connection broke: {error.__class__.__name__}"
        return "the stream ended"

    async def _take(self, message: JSONRPCMessage | None, sent: _Sent | None, *, alone: bool = False) -> bool:
        """Forward one server message to the session (none: the ingress dropped it); ``True`` when it is the answer
        to ``sent``. ``alone``: it is the whole body of ``sent``'s answer. A request of the server's on the stream of
        ``sent`` relates to it (the spec's rule, and what the SDK's server does): it goes on with ``sent``'s id, so a
        question is tied to the call it came with."""
        if message is None:
            return False
        answer = sent is not None and self._answers(message.root, sent, alone=alone)
        related = sent.id if sent is not None and isinstance(message.root, JSONRPCRequest) else None
        metadata = ServerMessageMetadata(related_request_id=related) if related is not None else None
        await self._incoming.send(SessionMessage(message, metadata=metadata))
        return answer

    def _answers(self, root: object, sent: _Sent, *, alone: bool) -> bool:
        """Whether ``root`` is the answer to ``sent``. An answer to another request on an event stream is the session's
        to route (a late one discarded, one to an id never sent logged and dropped) while the stream is read on; as
        the whole body (``alone``) it leaves ``sent`` unanswered, which breaks the exchange."""
        if not isinstance(root, JSONRPCResponse | JSONRPCError):
            return False
        if root.id != sent.id:
            if not alone:
                return False
            raise self._session.failed(PROTOCOL_ERROR, f"answered {sent.method} (request {sent.id!r}) with the "
                                       "answer to another request",
                                       server_text=f"the answer's id: {root.id!r}")  # fmt: skip
        if sent.method == "initialize" and isinstance(root, JSONRPCResponse):
            version = root.result.get("protocolVersion")
            self._session.protocol_version = version if isinstance(version, str) else None
        return True

    async def deliver(self, message: JSONRPCMessage, what: str) -> None:
        """POST a notification or a response (the server owes no answer but ``202``), within the timeout."""
        session = self._session
        with anyio.move_on_after(self._timeout) as scope:
            try:
                async with self._post(message) as response:
                    if response.status_code == 404 and session.id is not None:
                        session.end(SESSION_EXPIRED, f"the server ended the session (HTTP 404 to {what}); open a "
                                    "new one with pj.connect()")  # fmt: skip
                    elif not 200 <= response.status_code < 300:
                        session.note(f"{session.server} refused {what}: HTTP {response.status_code}")
            except (httpx.HTTPError, _RedirectRefused) as error:
                failure = session.broken(error, what)
                if failure is not None:
                    session.note(failure.message)
        if scope.cancelled_caught:
            session.note(f"{session.server} did not accept {what} within {self._timeout:g} s; given up")

    async def listen(self) -> None:
        """The server's own stream (GET): its notifications and requests, reopened from its last event id
        when it ends; a server without one (405) is fine. Its failures are logged, never fatal."""
        session, server = self._session, self._session.server
        stream = EventStream(self._max)
        failures = 0
        while failures < 3 and not session.ended:
            headers = session.headers(accept=SSE)
            if stream.last_id is not None:
                headers[LAST_EVENT_ID] = stream.last_id
            try:
                async with self._client.stream("GET", session.url, headers=headers) as response:
                    if response.status_code == 405:
                        return
                    kind = _content_type(response)
                    if response.status_code != 200 or kind != SSE:
                        session.note(f"{server} refused its own event stream (HTTP {response.status_code}, "
                                     f"{session.shown(kind) or 'no content type'}); not reopened")  # fmt: skip
                        return
                    failures = 0
                    ended = await self._read_events(response, stream, None)
                    if session.unread:
                        return
                    if ended != "the stream ended":
                        failures += 1
            except _Failed as failed:
                session.note(f"{failed.failure.message} (on its own event stream)")
                failures += 1
            except MessageTooLarge:
                session.note(f"{server} sent a message over {self._max} bytes on its own event stream; dropped")
                failures += 1
            except (httpx.HTTPError, _RedirectRefused) as error:
                session.note(f"{server}'s own event stream failed: {error.__class__.__name__}")
                failures += 1
            except (AuthFailed, OAuthFlowError) as error:
                session.note(f"{session.auth_failure(error).message} (on its own event stream)")
                return
            await stream.wait_to_reconnect()
        if failures:
            session.note(f"{server}'s own event stream failed {failures} times in a row; not reopened")

    def _post(self, message: JSONRPCMessage) -> Any:
        return self._client.stream("POST", self._session.url, content=_body(message), headers=self._session.headers())


class HttpTransport:
    """One Streamable HTTP session: its requests each an exchange of its own (``_Exchanges``), dropped on
    demand, and its end; see the module's docstring."""

    def __init__(
        self,
        config: ServerConfig,
        client: httpx.AsyncClient,
        incoming: MemoryObjectSendStream[SessionMessage | Exception],
        tasks: TaskGroup,
        events: TransportEvents,
        *,
        max_message_bytes: int,
        ingress: Ingress,
        grace: Callable[[], float],
        auth: OAuthClientProvider | None = None,
    ) -> None:
        self._auth = auth
        self._client = client
        self._incoming = incoming
        self._tasks = tasks
        self._events = events
        self._grace = grace
        self._session = SharedSession(config, events, ingress)
        self._exchanges = _Exchanges(self._session, config, client, incoming, max_message_bytes=max_message_bytes)
        self._inflight: dict[RequestId, anyio.CancelScope] = {}

    async def forget_authorization(self) -> None:
        """Drop the tokens (in the SDK's provider and its storage): the next request starts the flow over."""
        if self._auth is not None:
            await forget_tokens(self._auth)

    def drop(self, request_id: RequestId) -> None:
        """Stop the exchange of ``request_id`` now: its response is closed, nothing more of it is read."""
        scope = self._inflight.get(request_id)
        if scope is not None:
            scope.cancel()

    async def send_all(self, outgoing: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """Each message ``ClientSession`` writes, in order: a request runs as an exchange of its own; the
        ``initialized`` notification is delivered before anything after it, then the server's own stream
        is opened; other notifications and responses are delivered each on their own."""
        exchanges = self._exchanges
        async with outgoing:
            async for item in outgoing:
                root = item.message.root
                if isinstance(root, JSONRPCRequest):
                    self._tasks.start_soon(self._exchange, item.message, _Sent(root.id, root.method))
                elif getattr(root, "method", None) == "notifications/initialized":
                    await exchanges.deliver(item.message, "notifications/initialized")
                    self._tasks.start_soon(exchanges.listen)
                else:
                    self._tasks.start_soon(exchanges.deliver, item.message, getattr(root, "method", "a response"))
        await self._incoming.aclose()

    async def _exchange(self, message: JSONRPCMessage, sent: _Sent) -> None:
        with anyio.CancelScope() as scope:
            self._inflight[sent.id] = scope
            try:
                failure = await self._exchanges.answer(message, sent)
            finally:
                del self._inflight[sent.id]
        if not scope.cancel_called and failure is not None and not self._session.ended:
            self._events.request_failed(sent.id, failure)

    async def close(self) -> None:
        """End the session on the server (``DELETE``) within ``CLOSE_GRACE`` seconds, then stop every exchange."""
        session = self._session
        grace = min(CLOSE_GRACE, self._grace())
        if session.id is not None and not session.ended:
            with anyio.move_on_after(grace) as scope:
                try:
                    response = await self._client.delete(session.url, headers=session.headers())
                    if response.status_code not in (200, 202, 204, 404, 405):
                        session.note(f"{session.server} answered the session's DELETE with HTTP "
                                     f"{response.status_code}")  # fmt: skip
                except (httpx.HTTPError, _RedirectRefused, AuthFailed, OAuthFlowError) as error:
                    session.note(f"the session's DELETE failed: {error.__class__.__name__}")
            if scope.cancelled_caught:
                session.note(f"{session.server} did not answer the session's DELETE within {grace:g} s; "
                             "the connection was dropped")  # fmt: skip
        session.ended = True
        self._tasks.cancel_scope.cancel()


async def read_bounded(response: httpx.Response, limit: int) -> bytes:
    """At most about ``limit`` bytes of ``response``'s body (what came before a broken stream)."""
    body = b""
    try:
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= limit:
                break
    except httpx.HTTPError:
        pass
    return body


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
    ingress: Ingress,
    grace: Callable[[], float],
    person: Person | None = None,
) -> AsyncIterator[tuple[Any, Any, HttpTransport]]:
    """The streams ``ClientSession`` reads and writes (every message read through ``ingress``), and the transport
    behind them; the ingress' scrubber also takes each secret the authorization flow obtains; ``grace()`` is how
    long the session's ``DELETE`` may take at the end (at most ``CLOSE_GRACE``); ``person`` answers the flow when
    the config's OAuth has no ``authorize`` function."""
    incoming_writer, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_reader = anyio.create_memory_object_stream[SessionMessage](0)
    auth = provider(config, ingress.scrub.add, person) if config.oauth is not None else None
    async with _http_client(config, events, auth) as client, anyio.create_task_group() as tasks:
        transport = HttpTransport(
            config, client, incoming_writer, tasks, events, max_message_bytes=max_message_bytes, ingress=ingress,
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
            person = Person(config.name, self._ask, context.persons_turn, config.oauth.timeout, context.waiting_cell)
        events = TransportEvents(context.request_failed, context.session_ended, context.note)
        opened = open_http(config, events, max_message_bytes=context.max_message_bytes(), ingress=context.ingress,
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
