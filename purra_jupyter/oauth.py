"""The MCP authorization flow for a url server, run by the MCP SDK's ``OAuthClientProvider`` (an ``httpx.Auth``
on the kit's own client): discovery, registration (dynamic, pre-registered or a client metadata document), PKCE,
the token endpoint, refresh and step-up are the SDK's. The kit adds the person's part (``OAuth.authorize``, the
address the browser was sent back to, its ``state`` checked), keeps tokens in memory only, and hands every secret
to the session's scrubber the moment it exists.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import anyio

from .config import ServerConfig
from .wire import AUTH_DENIED, AUTH_FAILED, AUTH_STATE_MISMATCH

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

# Where the authorization server sends the browser back. Nothing listens there: the person (or ``authorize``)
# hands the kit the address the browser was sent to.
REDIRECT_URI = "http://127.0.0.1/purra-jupyter/callback"
CLIENT_NAME = "purra-jupyter"


class AuthFailed(Exception):
    """The authorization flow cannot go on; ``code`` and a message without any token, code or secret value."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class MemoryTokens:
    """The SDK's ``TokenStorage``, in memory for the kernel's life; each secret it is given is scrubbed from
    then on (``learn``)."""

    def __init__(self, learn: Callable[..., None], client: OAuthClientInformationFull | None) -> None:
        self._learn = learn
        self._tokens: OAuthToken | None = None
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

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
        self, authorize: Callable[[str], Any] | None, scopes: tuple[str, ...] | None, learn: Callable[..., None]
    ) -> None:
        self._authorize = authorize
        self._scopes = scopes
        self._learn = learn
        self._url = ""
        self._state = ""

    async def redirect(self, url: str) -> None:
        """Keep the URL (with the configured scopes added to the SDK's choice) and its ``state``."""
        self._url = with_scopes(url, self._scopes)
        self._state = _query(self._url).get("state", "")

    async def callback(self) -> tuple[str, str | None]:
        if self._authorize is None:
            raise AuthFailed(
                AUTH_FAILED,
                "the server asks for authorization and no OAuth(authorize=...) function was given to answer it",
            )
        return self.code_of(await run_sync_or_async(self._authorize, self._url))

    def code_of(self, redirected: object) -> tuple[str, str]:
        """The code in the address the browser was sent back to; refused unless its ``state`` is this request's."""
        if not isinstance(redirected, str) or not redirected.strip():
            raise AuthFailed(AUTH_FAILED, "authorize() must return the address the browser was redirected to")
        query = _query(redirected.strip())
        if "error" in query:
            reason = query["error"][:80]
            raise AuthFailed(AUTH_DENIED, f"the authorization server refused the authorization ({reason})")
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


def provider(config: ServerConfig, learn: Callable[..., None]) -> OAuthClientProvider:
    """The SDK's provider for ``config.oauth``: a pre-registered client if one is given, else dynamic
    registration (or the client metadata document where the authorization server supports it)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    oauth = config.oauth
    assert oauth is not None
    metadata = OAuthClientMetadata(redirect_uris=[REDIRECT_URI], client_name=CLIENT_NAME)  # type: ignore[list-item]
    client = None
    if oauth.client_id is not None:
        method = "client_secret_basic" if oauth.client_secret else "none"
        client = OAuthClientInformationFull(
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            token_endpoint_auth_method=method,
        )
    flow = Authorization(oauth.authorize, tuple(oauth.scopes) if oauth.scopes else None, learn)
    return OAuthClientProvider(
        config.url or "",
        metadata,
        MemoryTokens(learn, client),
        redirect_handler=flow.redirect,
        callback_handler=flow.callback,
        timeout=config.timeout,
        client_metadata_url=oauth.client_metadata_url,
    )


async def run_sync_or_async(func: Callable[[str], Any], url: str) -> Any:
    """``func(url)``, awaited if it is async, else in a worker thread (a person's function may block)."""
    if inspect.iscoroutinefunction(func):
        return await func(url)
    return await anyio.to_thread.run_sync(func, url)


__all__ = ["REDIRECT_URI", "AuthFailed", "Authorization", "MemoryTokens", "provider", "with_scopes"]
