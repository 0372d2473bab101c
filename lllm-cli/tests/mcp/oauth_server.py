"""An MCP server behind OAuth 2.1 for the MCP client's OAuth tests, on the official Python SDK (PyPI `mcp` 2.x):
the MCP endpoint and its own authorization server on one origin, http://127.0.0.1:PORT.

Run it with the interpreter that scripts/servers/mcp.sh installs ($LLLM_MCP_PYTHON):
    python oauth_server.py --record FILE [--token-seconds N] [--no-registration] [--foreign-endpoint] [--wrong-iss]

- /mcp needs a bearer token (401 with WWW-Authenticate otherwise); /.well-known/oauth-protected-resource/mcp
  names the authorization server; /.well-known/oauth-authorization-server describes it.
- /authorize approves at once (no person): it redirects to the client's redirect_uri with a code and the state.
- Access tokens live --token-seconds (default 3600) and are refused after; refresh tokens rotate.
  --advertise-seconds N tells the client another lifetime (so that only a 401 says the token expired);
  --refuse-refresh refuses every refresh token.
- /register (dynamic client registration) unless --no-registration; the client `lllm-preregistered`
  (public, any loopback redirect) always exists.
- --foreign-endpoint: the metadata sends authorization_endpoint to another host (127.0.0.2).
- --wrong-iss: the redirect back carries an `iss` that is not the issuer; --wrong-state: another `state`.
Every registration and token grant is appended to FILE as a JSON line with the tokens issued, so that a test
can check they never appear in lllm's output. Writes "oauth_server: ready http://127.0.0.1:PORT/mcp" on stderr.
The tool `whoami` answers "authorized as CLIENT_ID".
"""

import argparse
import asyncio
import json
import secrets
import socket
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.server import Context  # noqa: F401  (kept for readers: tools may take one)
from mcp.shared.auth import OAuthClientInformationFull


def log(line: str) -> None:
    sys.stderr.write(f"oauth_server: {line}\n")
    sys.stderr.flush()


class LoopbackClient(OAuthClientInformationFull):
    """A client registered beforehand for native apps: any loopback redirect (RFC 8252 7.3: the port varies)."""

    def validate_redirect_uri(self, redirect_uri):
        if redirect_uri is None or not str(redirect_uri).startswith("http://127.0.0.1:"):
            return super().validate_redirect_uri(redirect_uri)
        return redirect_uri


class Provider:
    """Approves every authorization at once; keeps everything in memory."""

    def __init__(self, base: str, record: str, token_seconds: int, wrong_iss: bool) -> None:
        self.base = base
        self.advertised_seconds = token_seconds
        self.refuse_refresh = False
        self.wrong_state = False
        self.record_path = record
        self.token_seconds = token_seconds
        self.wrong_iss = wrong_iss
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    def record(self, **event) -> None:
        with open(self.record_path, "a") as f:
            f.write(json.dumps(event) + "\n")

    async def get_client(self, client_id: str):
        if client_id == "lllm-preregistered" and client_id not in self.clients:
            return LoopbackClient(
                client_id=client_id,
                redirect_uris=["http://127.0.0.1/callback"],
                token_endpoint_auth_method="none",
                scope="mcp extra",
                grant_types=["authorization_code", "refresh_token"],
            )
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info
        self.record(event="register", client_id=client_info.client_id,
                    redirect_uris=[str(u) for u in client_info.redirect_uris or []])

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = "code-" + secrets.token_hex(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.record(event="authorize", client_id=client.client_id, scopes=params.scopes or [],
                    redirect_uri=str(params.redirect_uri))
        iss = "http://127.0.0.2:1" if self.wrong_iss else None
        state = "forged-state" if self.wrong_state else params.state
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=state, iss=iss)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode):
        self.codes.pop(authorization_code.code, None)
        return self.issue(client.client_id, authorization_code.scopes, "authorization_code")

    async def load_refresh_token(self, client, refresh_token: str):
        if self.refuse_refresh:
            self.record(event="refused_refresh", client_id=client.client_id)
            return None
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]):
        self.refresh.pop(refresh_token.token, None)
        return self.issue(client.client_id, scopes or refresh_token.scopes, "refresh_token")

    async def load_access_token(self, token: str):
        access = self.access.get(token)
        if access is None or (access.expires_at is not None and access.expires_at <= time.time()):
            return None
        return access

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def issue(self, client_id: str, scopes: list[str], grant: str):
        from mcp.shared.auth import OAuthToken

        access = "at-" + secrets.token_hex(24)
        refresh = "rt-" + secrets.token_hex(24)
        expires_at = int(time.time()) + self.token_seconds
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes, expires_at=expires_at)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        self.record(event="token", grant=grant, client_id=client_id, access_token=access, refresh_token=refresh)
        return OAuthToken(access_token=access, expires_in=self.advertised_seconds, refresh_token=refresh,
                          scope=" ".join(scopes) or None)


def foreign_endpoint(app, port: int):
    """An ASGI wrapper whose authorization server metadata sends authorization_endpoint to 127.0.0.2."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/.well-known/oauth-authorization-server":
            body = {}
            chunks = []

            async def keep(message):
                if message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))

            await app(scope, receive, keep)
            body = json.loads(b"".join(chunks))
            body["authorization_endpoint"] = f"http://127.0.0.2:{port}/authorize"
            data = json.dumps(body).encode()
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
            await send({"type": "http.response.body", "body": data})
            return
        await app(scope, receive, send)

    return wrapped


async def serve(sock: socket.socket, args) -> None:
    import uvicorn

    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    provider = Provider(base, args.record, args.token_seconds, args.wrong_iss)
    provider.advertised_seconds = args.advertise_seconds or args.token_seconds
    provider.refuse_refresh = args.refuse_refresh
    provider.wrong_state = args.wrong_state
    server = MCPServer(
        "oauth-test",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=not args.no_registration,
                                                                  valid_scopes=["mcp", "extra"]),
            required_scopes=["mcp"],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says which OAuth client called."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        return f"authorized as {token.client_id if token else 'nobody'}"

    app = server.streamable_http_app(host="127.0.0.1")
    if args.foreign_endpoint:
        app = foreign_endpoint(app, port)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    log(f"ready {base}/mcp")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser(description="MCP server behind OAuth for lllm's tests")
    parser.add_argument("--record", required=True, help="append registrations and token grants here (JSON lines)")
    parser.add_argument("--token-seconds", type=int, default=3600, help="lifetime of an access token")
    parser.add_argument("--advertise-seconds", type=int, help="the lifetime told to the client (default: the real one)")
    parser.add_argument("--refuse-refresh", action="store_true", help="refuse every refresh token")
    parser.add_argument("--no-registration", action="store_true", help="no dynamic client registration")
    parser.add_argument("--foreign-endpoint", action="store_true", help="authorization_endpoint on another host")
    parser.add_argument("--wrong-state", action="store_true", help="redirect back with another `state`")
    parser.add_argument("--wrong-iss", action="store_true", help="redirect back with a foreign `iss`")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    asyncio.run(serve(sock, args))


if __name__ == "__main__":
    main()
