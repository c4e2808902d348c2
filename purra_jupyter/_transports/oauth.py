"""The MCP authorization flow for a url server, run by the MCP SDK's ``OAuthClientProvider`` (an ``httpx.Auth``
on the kit's own client): discovery, registration (dynamic, pre-registered or a client metadata document), PKCE,
the token endpoint, refresh and step-up are the SDK's. The kit adds the person's part (``OAuth.authorize``, or in a
notebook a ``Person`` asked in the cell that waits, with the one-shot ``LoopbackListener``), checks the address the
browser was sent back to (its ``state``) and the authorization server's issuer, keeps tokens in memory only, and
hands every secret to the session's scrubber the moment it exists.
"""

from __future__ import annotations

import inspect
import json
import socket
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import anyio

from .._base import runner
from .._base.config import Authorize, ServerConfig, is_secure
from .._base.markup import DOCTYPE, join, tag
from .._base.wire import (
    AUTH_DENIED,
    AUTH_FAILED,
    AUTH_INSECURE,
    AUTH_ISSUER_MISMATCH,
    AUTH_REQUIRED,
    AUTH_STATE_MISMATCH,
)

if TYPE_CHECKING:
    import h11
    from anyio.abc import SocketStream
    from anyio.streams.stapled import MultiListener
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

# Where the authorization server sends the browser back. With ``authorize`` nothing listens there: the function
# hands the kit the address the browser was sent to. In a notebook the address carries the port of the one-shot
# listener (``LoopbackListener``), which exists only while the person's turn lasts.
CALLBACK_PATH = "/purra-jupyter/callback"
REDIRECT_URI = f"http://127.0.0.1{CALLBACK_PATH}"
CLIENT_NAME = "purra-jupyter"
LISTENER_READ_SECONDS = 10.0  # how long one connection to the listener may take to send its request


class AuthFailed(Exception):
    """The authorization flow cannot go on; ``code`` and a message without any token, code or secret value, nor
    anything a server chose (that is ``server_text``)."""

    def __init__(self, code: str, message: str, *, server_text: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.server_text = server_text


class MemoryTokens:
    """The SDK's ``TokenStorage``, in memory for the kernel's life; each secret it is given is scrubbed from
    then on (``learn``)."""

    def __init__(self, learn: Callable[..., None], client: OAuthClientInformationFull | None) -> None:
        self._learn = learn
        self._tokens: OAuthToken | None = None
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def forget_tokens(self) -> None:
        self._tokens = None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._learn(*(value for value in (tokens.access_token, tokens.refresh_token) if value))
        self._tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_secret:
            self._learn(client_info.client_secret)
        self._client = client_info


class Authorization:
    """The person's part of one flow: the authorization URL goes to ``authorize``, whose answer (the address
    the browser was redirected to) must carry this request's ``state`` and a code."""

    def __init__(
        self,
        authorize: Authorize | None,
        scopes: tuple[str, ...] | None,
        learn: Callable[..., None],
        person: Person | None = None,
        port: int | None = None,
    ) -> None:
        self._authorize = authorize
        self._scopes = scopes
        self._learn = learn
        self._person = person
        self._port = port
        self._url = ""
        self._state = ""

    async def redirect(self, url: str) -> None:
        """Keep the URL (with the configured scopes added to the SDK's choice) and its ``state``. The URL comes
        from the authorization server's metadata: a browser opens it, so it must be https (or loopback)."""
        if not _is_secure_url(url):
            raise AuthFailed(
                AUTH_INSECURE, "the authorization endpoint is not https (nor http on this machine); refused"
            )
        self._url = with_scopes(url, self._scopes)
        self._state = _query(self._url).get("state", "")

    async def callback(self) -> tuple[str, str | None]:
        if self._authorize is not None:
            return self.code_of(await run_sync_or_async(self._authorize, self._url))
        if self._person is None:
            raise AuthFailed(
                AUTH_FAILED,
                "the server asks for authorization and no OAuth(authorize=...) function was given to answer it",
            )
        return self.code_of(await self._ask_person(self._person))

    async def _ask_person(self, person: Person) -> str:
        """The person's turn, in the cell that waits: the listener exists for exactly as long."""
        async with person.turn(), LoopbackListener(self._port, self._state).running() as listener:
            request = AuthorizationRequest(
                person.server, self._url, listener.redirect_uri, listener.answer, person.timeout
            )
            try:
                return await runner.in_waiting_cell(lambda: person.ask(request), person.cell)
            except runner.NoWaitingCell:
                raise AuthFailed(
                    AUTH_REQUIRED,
                    "the server asks for authorization again while no cell waits for it; run s.reauthorize() in a cell",
                ) from None

    def code_of(self, redirected: object) -> tuple[str, str]:
        """The code in the address the browser was sent back to; refused unless its ``state`` is this request's."""
        if not isinstance(redirected, str) or not redirected.strip():
            raise AuthFailed(AUTH_FAILED, "authorize() must return the address the browser was redirected to")
        query = _query(redirected.strip())
        if "error" in query:
            reason = "\n".join(query[key] for key in ("error", "error_description") if key in query)
            raise AuthFailed(AUTH_DENIED, "the authorization server refused the authorization", server_text=reason)
        if query.get("state") != self._state:
            raise AuthFailed(
                AUTH_STATE_MISMATCH,
                "the address's state does not match this authorization request (an old or another attempt); "
                "refused, nothing was exchanged",
            )
        if not query.get("code"):
            raise AuthFailed(AUTH_FAILED, "the address carries no authorization code")
        self._learn(query["code"])
        return query["code"], query["state"]


@dataclass(frozen=True)
class AuthorizationRequest:
    """What the person is shown and how their answer may come back: ``url`` (from the server: text, opened only
    by the person), and ``loopback``, the address the listener received, if the browser came back to it."""

    server: str
    url: str
    redirect_uri: str
    loopback: Future[str]
    timeout: float

    @property
    def authorization_server(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class Person:
    """Who answers an authorization when no ``authorize`` function was given: ``ask(request)`` runs in the
    cell that waits (``runner.in_waiting_cell``) and returns the address the browser was sent back to;
    ``turn()`` holds the session's other deadlines meanwhile; ``timeout`` is how long the person has."""

    server: str
    ask: Callable[[AuthorizationRequest], str]
    turn: Callable[[], AbstractAsyncContextManager[None]]
    timeout: float
    cell: object  # what the cell that waits for this session serves: only it is asked (``runner.in_waiting_cell``)


class LoopbackListener:
    """The one-shot listener on 127.0.0.1 for the browser's way back: it takes one request to
    ``CALLBACK_PATH`` (answering any other path 404), answers it with a page that says whether its ``state``
    is this request's, hands its address on (``answer``) and closes at once; it also closes when the person's
    turn ends another way (pasted address, Cancel, timeout)."""

    def __init__(self, port: int | None, state: str) -> None:
        self._port = port
        self._state = state
        self.answer: Future[str] = Future()
        self.redirect_uri = redirect_uri(port)
        self._taken = False  # one callback request is taken; the listener closes once it is answered
        self._served = anyio.Event()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[LoopbackListener]:
        if self._port is None:
            yield self
            return
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self._port)
        except OSError:  # the port was taken since: only the pasted address can come back
            yield self
            return
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._serve, listener)
                try:
                    yield self
                finally:
                    tasks.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # what ended the person's turn, not the group around it
            raise runner.leaf_exception(group) from None

    async def _serve(self, listener: MultiListener[SocketStream]) -> None:
        try:
            async with anyio.create_task_group() as connections:
                connections.start_soon(listener.serve, self._handle)
                await self._served.wait()
                connections.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await listener.aclose()

    async def _handle(self, stream: SocketStream) -> None:
        import h11

        async with stream:
            connection = h11.Connection(h11.SERVER)
            with anyio.move_on_after(LISTENER_READ_SECONDS):
                event = connection.next_event()
                while event is h11.NEED_DATA:
                    try:
                        connection.receive_data(await stream.receive(65536))
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                    event = connection.next_event()
            if not isinstance(event, h11.Request) or self._taken:
                return
            target = event.target.decode("ascii", "replace")
            if urlsplit(target).path != CALLBACK_PATH:
                await _respond(stream, connection, 404, "Not found.")
                return
            self._taken = True
            ok = _query(target).get("state") == self._state and "code" in _query(target)
            page = (
                "Authorized: you can close this tab and go back to the notebook."
                if ok
                else "Refused: this is not the address of the notebook's authorization request."
            )
            await _respond(stream, connection, 200 if ok else 400, page)
            self.answer.set_result(f"http://127.0.0.1:{self._port}{target}")
            self._served.set()


async def _respond(stream: SocketStream, connection: h11.Connection, status: int, text: str) -> None:
    import h11

    title = tag("title", "purra-jupyter")
    page = join([DOCTYPE, tag("meta", charset="utf-8"), title, tag("p", text, style="font:16px sans-serif")])
    body = page.encode()
    headers = [
        ("content-type", "text/html; charset=utf-8"),
        ("content-length", str(len(body))),
        ("content-security-policy", "default-src 'none'"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        ("connection", "close"),
    ]
    try:
        await stream.send(connection.send(h11.Response(status_code=status, headers=headers)))
        await stream.send(connection.send(h11.Data(data=body)) + connection.send(h11.EndOfMessage()))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, h11.LocalProtocolError):
        pass


def redirect_uri(port: int | None) -> str:
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}" if port is not None else REDIRECT_URI


def free_loopback_port() -> int:
    """A port on 127.0.0.1 nobody uses now, for the redirect address the client registers; the listener
    binds it only during the person's turn."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


# Where authorization server metadata is looked up (RFC 8414 and OpenID Connect Discovery): the issuer is the
# address with the well-known part taken out.
_METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")
_RESOURCE_METADATA = "/.well-known/oauth-protected-resource"


def issuer_of(metadata_url: str) -> str | None:
    """The issuer a metadata address was built from, or ``None`` if it is not such an address."""
    parts = urlsplit(metadata_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    for well_known in _METADATA_PATHS:
        if parts.path.startswith(well_known):
            return origin + parts.path[len(well_known) :]
        if parts.path.endswith(well_known):
            return origin + parts.path[: -len(well_known)]
    return None


class IssuerCheck:
    """RFC 8414 §3.3, which the SDK does not check: metadata found for an authorization server that the
    protected resource named must name that same issuer (another server's metadata would send the person, and
    the code, elsewhere). The 2025-03-26 flow, without protected-resource metadata, names no issuer to hold
    it to."""

    def __init__(self) -> None:
        self._named: set[str] = set()

    def read(self, url: str, body: bytes) -> None:
        """Take in one metadata document the flow fetched (``url``); raise if it names the wrong issuer."""
        try:
            document = json.loads(body)
        except ValueError:
            return  # not JSON: the SDK reports what it cannot read
        if not isinstance(document, dict):
            return
        if _RESOURCE_METADATA in urlsplit(url).path:
            named = document.get("authorization_servers")
            if isinstance(named, list):
                self._named.update(item.rstrip("/") for item in named if isinstance(item, str))
            return
        expected = (issuer_of(url) or "").rstrip("/")
        issuer = document.get("issuer")
        if expected in self._named and isinstance(issuer, str) and issuer.rstrip("/") != expected:
            raise AuthFailed(
                AUTH_ISSUER_MISMATCH,
                "the authorization server's metadata names another issuer than the one the server named; refused",
            )


def _is_secure_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return is_secure(parts.scheme, parts.hostname or "")


def with_scopes(url: str, scopes: tuple[str, ...] | None) -> str:
    """``url`` whose ``scope`` also holds ``scopes`` (the SDK picks the server's own first, which step-up needs)."""
    if not scopes:
        return url
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    chosen = (query.get("scope") or [""])[0].split()
    query["scope"] = [" ".join(dict.fromkeys([*chosen, *scopes]))]
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query, doseq=True), parts.fragment))


def _query(url: str) -> dict[str, str]:
    try:
        return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
    except ValueError:
        return {}


def provider(config: ServerConfig, learn: Callable[..., None], person: Person | None = None) -> OAuthClientProvider:
    """The SDK's provider for ``config.oauth``: a pre-registered client if one is given, else dynamic
    registration (or the client metadata document where the authorization server supports it). Without an
    ``authorize`` function, ``person`` answers, and the redirect address names the port of the listener."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata
    from pydantic import AnyUrl

    oauth = config.oauth
    assert oauth is not None
    port = free_loopback_port() if oauth.authorize is None and person is not None else None
    redirect = AnyUrl(redirect_uri(port))
    metadata = OAuthClientMetadata(redirect_uris=[redirect], client_name=CLIENT_NAME)
    client = None
    if oauth.client_id is not None:
        method: Literal["client_secret_basic", "none"] = "client_secret_basic" if oauth.client_secret else "none"
        client = OAuthClientInformationFull(
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            redirect_uris=[redirect],
            token_endpoint_auth_method=method,
        )
    flow = Authorization(oauth.authorize, tuple(oauth.scopes) if oauth.scopes else None, learn, person, port)
    return OAuthClientProvider(
        config.url or "",
        metadata,
        MemoryTokens(learn, client),
        redirect_handler=flow.redirect,
        callback_handler=flow.callback,
        timeout=config.timeout,
        client_metadata_url=oauth.client_metadata_url,
    )


async def forget_tokens(auth: OAuthClientProvider) -> None:
    """Drop the tokens in the SDK's provider and in the storage ``provider`` gave it: the next request starts the
    flow over."""
    auth.context.clear_tokens()
    if isinstance(auth.context.storage, MemoryTokens):
        await auth.context.storage.forget_tokens()


async def run_sync_or_async(func: Authorize, url: str) -> object:
    """``func(url)``, awaited if it is async, else in a worker thread (a person's function may block). What it
    gives back is a person's code's: checked by the caller (``Authorization.code_of``)."""
    if inspect.iscoroutinefunction(func):
        return await func(url)
    return await anyio.to_thread.run_sync(func, url)


__all__ = [
    "CALLBACK_PATH",
    "REDIRECT_URI",
    "AuthFailed",
    "Authorization",
    "AuthorizationRequest",
    "IssuerCheck",
    "LoopbackListener",
    "MemoryTokens",
    "Person",
    "provider",
    "with_scopes",
]
