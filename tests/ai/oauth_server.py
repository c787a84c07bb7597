"""A local OAuth authorization server for the login tests (loopback HTTP, a thread).

It speaks what pi's three subscription logins expect, at the paths they use:

* Anthropic: ``GET /oauth/authorize`` (redirects with a code) and JSON
  ``POST /v1/oauth/token`` (authorization_code with PKCE, refresh_token);
* OpenAI Codex: ``GET /oauth/authorize``, form ``POST /oauth/token``, and the device
  endpoints ``/api/accounts/deviceauth/usercode`` and ``/api/accounts/deviceauth/token``;
* GitHub: ``POST /login/device/code``, ``POST /login/oauth/access_token`` (device
  grant), ``GET /copilot_internal/v2/token`` and the Copilot ``GET /models``.

Every code exchange verifies the PKCE verifier against the challenge of the
authorization request (S256) and the redirect URI; device polls answer
``authorization_pending`` until the test (or :meth:`approve_device`) approves; the
refresh grant rotates tokens and counts how often it ran, optionally held until the
test releases it (:attr:`hold_refresh`) or refused (:attr:`refuse_refresh`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def fake_jwt(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


@dataclass
class Grant:
    client_id: str
    redirect_uri: str
    challenge: str
    state: str | None
    scope: str | None


@dataclass
class OAuthServer:
    expires_in: int = 3600
    access_prefix: str = "sk-ant-oat01-"
    account_id: str = "acct-123"
    grants: dict[str, Grant] = field(default_factory=dict)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    refreshes: int = 0
    refresh_tokens: set[str] = field(default_factory=set)
    refuse_refresh: bool = False
    hold_refresh: threading.Event | None = None
    refresh_started: threading.Event = field(default_factory=threading.Event)
    device_approved: threading.Event = field(default_factory=threading.Event)
    device_polls: int = 0
    copilot_exchanges: int = 0
    copilot_proxy: str = "proxy.individual.githubcopilot.com"

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server._get(self)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if "json" in (self.headers.get("Content-Type") or ""):
                    body = json.loads(raw or b"{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                server._post(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        if self.hold_refresh is not None:
            self.hold_refresh.set()
        self.device_approved.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def approve_device(self) -> None:
        self.device_approved.set()

    # ------------------------------------------------------------------ tokens

    def _tokens(self, **extra: Any) -> dict[str, Any]:
        refresh = "rt-" + secrets.token_hex(6)
        self.refresh_tokens.add(refresh)
        if self.access_prefix == "jwt":
            access = fake_jwt(
                {"https://api.openai.com/auth": {"chatgpt_account_id": self.account_id}, "n": secrets.token_hex(4)}
            )
        else:
            access = self.access_prefix + secrets.token_hex(6)
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": self.expires_in,
            "token_type": "bearer",
            **extra,
        }

    # ------------------------------------------------------------------ handlers

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/oauth/authorize":
            self.authorize_requests.append(query)
            if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
                self._send(handler, 400, {"error": "invalid_request", "error_description": "PKCE S256 required"})
                return
            code = "code-" + secrets.token_hex(6)
            self.grants[code] = Grant(
                query["client_id"],
                query["redirect_uri"],
                query["code_challenge"],
                query.get("state"),
                query.get("scope"),
            )
            location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
            self._send(handler, 302, None, {"Location": location})
        elif parts.path == "/copilot_internal/v2/token":
            token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
            if token not in self.refresh_tokens and token != "gho-github-token":
                self._send(handler, 401, {"message": "Bad credentials"})
                return
            if handler.headers.get("Editor-Version") is None:
                self._send(handler, 400, {"message": "editor headers missing"})
                return
            self.copilot_exchanges += 1
            if self.refuse_refresh and self.copilot_exchanges > 1:
                self._send(handler, 401, {"message": "token revoked"})
                return
            copilot = f"tid=t{self.copilot_exchanges};exp=1;proxy-ep={self.copilot_proxy};st=dotcom"
            self._send(handler, 200, {"token": copilot, "expires_at": int(time.time()) + self.expires_in})
        elif parts.path == "/models":
            self._send(
                handler,
                200,
                {
                    "data": [
                        {"id": "gpt-4.1", "model_picker_enabled": True, "policy": {"state": "enabled"}},
                        {"id": "claude-sonnet-4", "model_picker_enabled": True, "policy": {"state": "enabled"}},
                        {"id": "o-disabled", "model_picker_enabled": True, "policy": {"state": "disabled"}},
                        {
                            "id": "no-tools",
                            "model_picker_enabled": True,
                            "capabilities": {"supports": {"tool_calls": False}},
                        },
                    ]
                },
            )
        else:
            self._send(handler, 404, {"error": "not_found"})

    def _post(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = urlsplit(handler.path).path
        if path in ("/v1/oauth/token", "/oauth/token"):
            self.token_requests.append(body)
            self._token(handler, body)
        elif path == "/api/accounts/deviceauth/usercode":
            self._send(handler, 200, {"device_auth_id": "dev-1", "user_code": "ABCD-1234", "interval": "0"})
        elif path == "/api/accounts/deviceauth/token":
            self.device_polls += 1
            if not self.device_approved.is_set():
                self._send(handler, 403, {"error": {"code": "deviceauth_authorization_pending"}})
                return
            verifier = secrets.token_urlsafe(32)
            code = "devcode-" + secrets.token_hex(4)
            self.grants[code] = Grant(
                "app_EMoamEEZ73f0CkXaXp7hrann", self.url + "/deviceauth/callback", s256(verifier), None, None
            )
            self._send(handler, 200, {"authorization_code": code, "code_verifier": verifier})
        elif path == "/login/device/code":
            if body.get("scope") != "read:user":
                self._send(handler, 400, {"error": "bad scope"})
                return
            self._send(
                handler,
                200,
                {
                    "device_code": "dc-1",
                    "user_code": "WXYZ-9876",
                    "verification_uri": "https://github.com/login/device",
                    "interval": 0,
                    "expires_in": 900,
                },
            )
        elif path == "/login/oauth/access_token":
            self.device_polls += 1
            if (
                body.get("grant_type") != "urn:ietf:params:oauth:grant-type:device_code"
                or body.get("device_code") != "dc-1"
            ):
                self._send(handler, 200, {"error": "bad_verification_code"})
            elif not self.device_approved.is_set():
                self._send(handler, 200, {"error": "authorization_pending"})
            else:
                self._send(handler, 200, {"access_token": "gho-github-token", "token_type": "bearer"})
        else:
            self._send(handler, 404, {"error": "not_found"})

    def _token(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        grant_type = body.get("grant_type")
        if grant_type == "authorization_code":
            grant = self.grants.pop(body.get("code", ""), None)
            if grant is None:
                self._send(handler, 400, {"error": "invalid_grant", "error_description": "unknown code"})
            elif s256(body.get("code_verifier", "")) != grant.challenge:
                self._send(handler, 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
            elif body.get("redirect_uri") != grant.redirect_uri or body.get("client_id") != grant.client_id:
                self._send(handler, 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"})
            else:
                self._send(handler, 200, self._tokens())
        elif grant_type == "refresh_token":
            self.refresh_started.set()
            if self.hold_refresh is not None:
                self.hold_refresh.wait(30)
            token = body.get("refresh_token")
            if self.refuse_refresh or token not in self.refresh_tokens:
                self._send(handler, 400, {"error": "invalid_grant", "error_description": "refresh token revoked"})
                return
            self.refresh_tokens.discard(token)  # rotated: a second use fails
            self.refreshes += 1
            self._send(handler, 200, self._tokens())
        else:
            self._send(handler, 400, {"error": "unsupported_grant_type"})
