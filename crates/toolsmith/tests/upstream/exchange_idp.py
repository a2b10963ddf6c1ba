"""An identity provider and an MCP server that trusts it, for toolsmith's token-exchange test
(RFC 8693, `connection: exchange`). One process, one port:

- the identity provider: its OpenID configuration, its keys (RS256, made at start), `GET
  /mint?sub=NAME[&aud=A...]` (a token for toolsmith — audience `toolsmith-test` unless the
  audiences are given — as a person's login would give them), and `POST /token` for the client `toolsmith` (secret `idp-secret`, HTTP basic):
  `client_credentials` (toolsmith's own token) and token exchange (a person's token for
  toolsmith exchanged for one whose audience is the requested one, `act` naming toolsmith);
- an MCP server at /mcp (the official Python SDK) that accepts only this provider's tokens
  issued for its own URL; its tool `whoami` answers the calling token's subject, audience,
  `act`, the token itself and the exchanges made so far, by subject.

Run: python exchange_idp.py [PORT] → prints `PORT <n>` once listening on 127.0.0.1 (a free
port when none is given).
"""
import base64
import json
import socket
import sys
import time

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
KID = "idp-1"
CLIENT = ("toolsmith", "idp-secret")
TOOLSMITH_AUDIENCE = "toolsmith-test"
TTL = 600
EXCHANGES = {}


def b64(n: int) -> str:
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def sign(claims: dict) -> str:
    return jwt.encode(claims, KEY, algorithm="RS256", headers={"kid": KID})


def check(token: str, audience: str) -> dict | None:
    try:
        return jwt.decode(token, KEY.public_key(), algorithms=["RS256"], audience=audience)
    except jwt.PyJWTError:
        return None


def main():
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    resource = f"{base}/mcp"

    class Verifier:
        async def verify_token(self, token: str):
            claims = check(token, resource)
            if claims is None:
                return None
            return AccessToken(token=token, client_id=claims.get("client_id", "idp"), scopes=[],
                               expires_at=claims["exp"], resource=resource,
                               subject=claims["sub"], claims=claims)

    server = MCPServer(
        "toolsmith-exchange-fixture",
        token_verifier=Verifier(),
        auth=AuthSettings(issuer_url=base, resource_server_url=resource, required_scopes=[],
                          validate_token_resource=True),
    )

    @server.tool(annotations={"readOnlyHint": True})
    def whoami() -> dict:
        """Who the calling token belongs to and whom it is for."""
        token = get_access_token()
        claims = (token.claims or {}) if token else {}
        return {"sub": claims.get("sub"), "aud": claims.get("aud"), "act": claims.get("act"),
                "token": token.token if token else None, "exchanges": dict(EXCHANGES)}

    def error(code: str, why: str, status: int = 400):
        return JSONResponse({"error": code, "error_description": why}, status_code=status)

    async def configuration(_: Request):
        return JSONResponse({"issuer": base, "jwks_uri": f"{base}/jwks",
                             "token_endpoint": f"{base}/token"})

    async def jwks(_: Request):
        numbers = KEY.public_key().public_numbers()
        return JSONResponse({"keys": [{"kty": "RSA", "kid": KID, "alg": "RS256", "use": "sig",
                                       "n": b64(numbers.n), "e": b64(numbers.e)}]})

    async def mint(request: Request):
        now = int(time.time())
        audiences = request.query_params.getlist("aud") or [TOOLSMITH_AUDIENCE]
        return JSONResponse({"token": sign({
            "iss": base, "sub": request.query_params["sub"],
            "aud": audiences[0] if len(audiences) == 1 else audiences,
            "iat": now, "exp": now + TTL, "scope": "toolsmith:call"})})

    async def token(request: Request):
        auth = request.headers.get("authorization", "")
        given = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
        if given != ":".join(CLIENT):
            return error("invalid_client", "toolsmith's client id and secret, sent as HTTP basic", 401)
        form = await request.form()
        audience = form.get("audience")
        if not audience:
            return error("invalid_target", "an audience is asked for")
        now = int(time.time())
        grant = form.get("grant_type")
        if grant == "client_credentials":
            claims = {"sub": "client:toolsmith", "client_id": CLIENT[0]}
        elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":
            subject = check(form.get("subject_token", ""), TOOLSMITH_AUDIENCE)
            if subject is None:
                return error("invalid_grant", "the subject token is not one of mine for toolsmith")
            EXCHANGES[subject["sub"]] = EXCHANGES.get(subject["sub"], 0) + 1
            claims = {"sub": subject["sub"], "act": {"sub": CLIENT[0]}}
        else:
            return error("unsupported_grant_type", f"{grant!r}")
        claims.update({"iss": base, "aud": audience, "iat": now, "exp": now + TTL})
        return JSONResponse({"access_token": sign(claims), "token_type": "Bearer",
                             "expires_in": TTL,
                             "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})

    app = server.streamable_http_app(host="127.0.0.1")
    app.router.routes.extend([
        Route("/.well-known/openid-configuration", configuration),
        Route("/jwks", jwks),
        Route("/mint", mint),
        Route("/token", token, methods=["POST"]),
    ])
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
