"""The demo MCP server behind the MCP authorization flow, with its own authorization server, on 127.0.0.1.

    python oauth_server.py [--secrets FILE] [--token-seconds N] [--refuse-registration] [--refuse-token]

prints "listening on http://127.0.0.1:PORT/mcp", then serves. Everything but the in-memory provider is the MCP
SDK's own: its authorization server routes (metadata, dynamic registration, ``/authorize``, ``/token``), its
protected-resource metadata, and its bearer-token check in front of the demo server's Streamable HTTP endpoint.

``/authorize`` consents at once (no login page): it sends the browser straight back to the client's redirect
address with a code and the request's state, as a person's approval would. Every code, token and client secret
it issues is appended to ``--secrets`` (one per line), so that a test can look for each in what a notebook
saved. Access tokens live ``--token-seconds`` (default 3600) and come with a refresh token (not with
``--no-refresh``).
``--refuse-registration`` answers every registration with an error; ``--refuse-token`` refuses every code;
``--wrong-issuer`` serves authorization server metadata naming another issuer than the one it is found at.
``GET /_events`` says how many clients registered, codes were issued, tokens issued and tokens refreshed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import socket
import sys
import time
from pathlib import Path

import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    ProviderTokenVerifier,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_resource_metadata_url, create_auth_routes, create_protected_resource_routes
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from purra_jupyter.demo.server import build_server

SCOPE = "demo"
logging.getLogger("mcp.server.streamable_http").setLevel(logging.CRITICAL)  # a client gone at shutdown


class Provider:
    """An authorization server in memory that approves every request it is sent."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.events = {"registered": 0, "codes": 0, "tokens": 0, "refreshed": 0}

    def _keep(self, *values: str | None) -> None:
        if self.options.secrets:
            with open(self.options.secrets, "a") as sink:
                sink.writelines(f"{value}\n" for value in values if value)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if self.options.refuse_registration:
            raise RegistrationError("invalid_client_metadata", "registration is closed on this server")
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.events["registered"] += 1
        self._keep(client_info.client_secret)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 600,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.events["codes"] += 1
        self._keep(code)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.options.refuse_token:
            raise TokenError("invalid_grant", "this server refuses every code")
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh_tokens.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh_tokens.pop(refresh_token.token, None)
        self.events["refreshed"] += 1
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, None)

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.tokens.get(token)
        if access is None or (access.expires_at is not None and access.expires_at < time.time()):
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        seconds = self.options.token_seconds
        self.tokens[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time() + seconds), resource=resource
        )
        if not self.options.no_refresh:
            self.refresh_tokens[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        self.events["tokens"] += 1
        self._keep(access, refresh)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=seconds,
            refresh_token=None if self.options.no_refresh else refresh,
            scope=" ".join(scopes),
        )


def build_app(base: str, provider: Provider, *, wrong_issuer: bool = False) -> Starlette:
    manager = StreamableHTTPSessionManager(
        app=build_server(), security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )

    class McpEndpoint:
        async def __call__(self, scope, receive, send) -> None:
            await manager.handle_request(scope, receive, send)

    resource = AnyHttpUrl(f"{base}/mcp")
    issuer = AnyHttpUrl(base)

    async def events(_request: Request) -> JSONResponse:
        return JSONResponse(provider.events)

    routes = [
        *create_auth_routes(
            provider,
            issuer_url=AnyHttpUrl(f"{base}/elsewhere") if wrong_issuer else issuer,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
        ),
        *create_protected_resource_routes(
            resource_url=resource, authorization_servers=[issuer], scopes_supported=[SCOPE]
        ),
        Route(
            "/mcp",
            endpoint=RequireAuthMiddleware(McpEndpoint(), [SCOPE], build_resource_metadata_url(resource)),
            methods=["GET", "POST", "DELETE"],
        ),
        Route("/_events", endpoint=events),
    ]
    middleware = [
        Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(ProviderTokenVerifier(provider))),
        Middleware(AuthContextMiddleware),
    ]
    return Starlette(routes=routes, middleware=middleware, lifespan=lambda _app: manager.run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--secrets", type=Path)
    parser.add_argument("--token-seconds", type=int, default=3600)
    parser.add_argument("--refuse-registration", action="store_true")
    parser.add_argument("--refuse-token", action="store_true")
    parser.add_argument("--wrong-issuer", action="store_true")
    parser.add_argument("--no-refresh", action="store_true")
    options = parser.parse_args(argv)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = build_app(base, Provider(options), wrong_issuer=options.wrong_issuer)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", ws="none"))
    print(f"listening on {base}/mcp", flush=True)
    asyncio.run(server.serve(sockets=[sock]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
