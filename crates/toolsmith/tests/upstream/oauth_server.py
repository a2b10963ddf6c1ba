"""An MCP server behind OAuth 2.1, for toolsmith's OAuth tests: the official Python SDK's
authorization server routes (metadata, dynamic registration, authorization, token, with PKCE)
and its bearer-token checks on /mcp (401 with the protected resource metadata's address),
over an in-memory provider that consents at once (no person in tests: the authorization
endpoint redirects straight back with a code). Access tokens last OAUTH_TTL seconds (default
3600) and come with refresh tokens; the tool `whoami` answers the calling token's client and
scopes, the token itself (so a test can look for it where it must not be) and how many tokens
were granted so far, by grant type. `POST /revoke-all` revokes every token (a user revoking
toolsmith's access at the provider); `GET /stats` answers the grants and the refresh tokens
refused.

Run: python oauth_server.py [PORT] → prints `PORT <n>` once listening on 127.0.0.1 (MCP at
/mcp); a free port when none is given.
"""
import os
import secrets
import socket
import sys
import time

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

TTL = int(os.environ.get("OAUTH_TTL", "3600"))
GRANTED = {"authorization_code": 0, "refresh_token": 0}
# Refresh tokens presented that are not (or no longer) known: revoked, or spent.
REFUSED = {"refresh_token": 0}


class Provider:
    """Clients, codes and tokens in memory; every authorization is granted."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def grant(self, client_id, scopes, resource, kind):
        GRANTED[kind] += 1
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + TTL, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=TTL,
                          refresh_token=refresh, scope=" ".join(scopes))

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self.grant(client.client_id, authorization_code.scopes,
                          authorization_code.resource, "authorization_code")

    async def load_refresh_token(self, client, refresh_token):
        found = self.refresh.get(refresh_token)
        if found is None:
            REFUSED["refresh_token"] += 1
        return found

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        return self.grant(client.client_id, scopes or refresh_token.scopes, refresh_token.resource,
                          "refresh_token")

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider()
    server = MCPServer(
        "toolsmith-oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp"],
                                                                  default_scopes=["mcp"]),
            required_scopes=[],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> dict:
        """Who the calling token belongs to, and the tokens granted so far by grant type."""
        token = get_access_token()
        return {"client_id": token.client_id if token else None,
                "scopes": token.scopes if token else [], "token": token.token if token else None,
                "granted": dict(GRANTED)}

    async def revoke_all(_: Request):
        """Revokes every token, as a user revoking toolsmith's access at the provider would."""
        provider.access.clear()
        provider.refresh.clear()
        return JSONResponse({"revoked": True})

    async def stats(_: Request):
        return JSONResponse({"granted": GRANTED, "refused": REFUSED})

    app = server.streamable_http_app(host="127.0.0.1")
    app.router.routes.extend([Route("/revoke-all", revoke_all, methods=["POST"]),
                              Route("/stats", stats)])
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
