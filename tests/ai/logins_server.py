"""A scripted authorization server for the logins of tests/ai/test_ai_logins_*.py
(loopback HTTP, a thread): each provider's endpoints under ``/<provider>/…``, as pi
1.6.0's flows call them.

* ``openai`` (Sign in with ChatGPT): ``GET /openai/api/accounts/authorize`` redirects
  with a code, the state and an issued ``client_id``; ``POST …/api/accounts/oauth/token``
  checks PKCE, the issued client, the redirect URI and the resource;
* ``xai``, ``kimi``, ``meta``: device authorization and token endpoints (one
  ``authorization_pending`` answer, then the tokens); Meta's key mint;
* ``openrouter``: ``GET /openrouter/auth`` redirects to ``callback_url`` with a code;
  ``POST /openrouter/api/v1/auth/keys`` checks PKCE and returns a key;
* ``radius``: ``GET /radius/v1/oauth`` (discovery), ``GET /radius/authorize``,
  ``POST /radius/v1/oauth/token`` and ``/radius/v1/oauth/device``.

Refresh grants rotate the tokens and are counted per provider; ``refuse`` names the
providers whose refresh fails (401 ``invalid_grant``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class LoginsServer:
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    refreshes: dict[str, int] = field(default_factory=dict)
    polls: dict[str, int] = field(default_factory=dict)
    refuse: set[str] = field(default_factory=set)
    omit_refresh_token: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                server._record("GET", parts.path, query, dict(self.headers))
                server._get(self, parts.path, query)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                if "json" in (self.headers.get("Content-Type") or ""):
                    body = json.loads(raw or "{}")
                else:
                    body = {k: v[0] for k, v in parse_qs(raw).items()}
                path = urlsplit(self.path).path
                server._record("POST", path, body, dict(self.headers))
                server._post(self, path, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def posted(self, path: str) -> list[dict[str, Any]]:
        return [body for method, p, body, _ in self.requests if method == "POST" and p == path]

    def _record(self, method: str, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self.lock:
            self.requests.append((method, path, body, headers))

    # ------------------------------------------------------------------ answers

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, body: Any = None, location: str | None = None
    ) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        handler.send_response(status)
        if location:
            handler.send_header("Location", location)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _code(self, **grant: str) -> str:
        code = "code-" + secrets.token_hex(6)
        self.codes[code] = grant
        return code

    def _tokens(self, provider: str, **extra: Any) -> dict[str, Any]:
        tokens: dict[str, Any] = {
            "access_token": f"{provider}-access-{secrets.token_hex(4)}",
            "refresh_token": f"{provider}-refresh-{secrets.token_hex(4)}",
            "expires_in": 3600,
            **extra,
        }
        return tokens

    def _get(self, handler: BaseHTTPRequestHandler, path: str, query: dict[str, str]) -> None:
        if path == "/openai/api/accounts/authorize":
            code = self._code(challenge=query["code_challenge"], redirect_uri=query["redirect_uri"], client="issued-7")
            target = (
                f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state'], 'client_id': 'issued-7'})}"
            )
            return self._send(handler, 302, location=target)
        if path == "/openrouter/auth":
            code = self._code(challenge=query["code_challenge"])
            return self._send(handler, 302, location=f"{query['callback_url']}?code={code}")
        if path == "/radius/v1/oauth":
            return self._send(handler, 200, {"authorizationEndpoint": f"{self.url}/radius/authorize"})
        if path == "/radius/authorize":
            code = self._code(challenge=query["code_challenge"], redirect_uri=query["redirect_uri"])
            target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
            return self._send(handler, 302, location=target)
        self._send(handler, 404, {"error": "not_found"})

    def _pkce(self, code: str, verifier: str) -> dict[str, str] | None:
        grant = self.codes.pop(code, None)
        if grant is None or s256(verifier) != grant["challenge"]:
            return None
        return grant

    def _device(self, provider: str) -> dict[str, Any]:
        return {
            "device_code": f"{provider}-device",
            "user_code": "USER-CODE",
            "verification_uri": f"https://{provider}.example/device",
            "verification_uri_complete": f"https://{provider}.example/device?code=USER-CODE",
            "expires_in": 600,
            "interval": 0.01,
        }

    def _poll(self, provider: str) -> bool:
        """The first poll is pending, the next ones approved."""
        with self.lock:
            self.polls[provider] = self.polls.get(provider, 0) + 1
            return self.polls[provider] > 1

    def _refresh(self, handler: BaseHTTPRequestHandler, provider: str) -> bool:
        """Count a refresh; answer 401 when refused (``True``: answered)."""
        with self.lock:
            self.refreshes[provider] = self.refreshes.get(provider, 0) + 1
        if provider in self.refuse:
            self._send(handler, 401, {"error": "invalid_grant", "error_description": "refresh token revoked"})
            return True
        return False

    def _post(self, handler: BaseHTTPRequestHandler, path: str, body: dict[str, Any]) -> None:
        grant_type = body.get("grant_type")
        device_grant = "urn:ietf:params:oauth:grant-type:device_code"
        if path == "/openai/api/accounts/oauth/token":
            if body.get("resource") != "https://api.openai.com/v1" or body.get("client_id") != "issued-7":
                return self._send(handler, 400, {"error": "invalid_client"})
            scope = "openid offline_access chatgpt.tokens.use.direct"
            if grant_type == "refresh_token":
                if self._refresh(handler, "openai"):
                    return None
                return self._send(handler, 200, self._tokens("openai", scope=scope))
            grant = self._pkce(body.get("code", ""), body.get("code_verifier", ""))
            if grant is None or grant["redirect_uri"] != body.get("redirect_uri"):
                return self._send(handler, 400, {"error": "invalid_grant"})
            return self._send(handler, 200, self._tokens("openai", scope=scope, id_token="id.token.sig"))
        if path == "/xai/oauth2/device/code":
            return self._send(handler, 200, self._device("xai"))
        if path == "/xai/oauth2/token":
            if grant_type == "refresh_token":
                if self._refresh(handler, "xai"):
                    return None
                tokens = self._tokens("xai")
                if self.omit_refresh_token:
                    del tokens["refresh_token"]
                return self._send(handler, 200, tokens)
            if grant_type == device_grant and body.get("device_code") == "xai-device":
                if not self._poll("xai"):
                    return self._send(handler, 400, {"error": "authorization_pending"})
                return self._send(handler, 200, self._tokens("xai"))
        if path == "/openrouter/api/v1/auth/keys":
            grant = self._pkce(body.get("code", ""), body.get("code_verifier", ""))
            if grant is None or body.get("code_challenge_method") != "S256":
                return self._send(handler, 403, {"error": {"message": "Invalid code or verifier"}})
            return self._send(handler, 200, {"key": "sk-or-v1-" + secrets.token_hex(6)})
        if path == "/kimi/api/oauth/device_authorization":
            return self._send(handler, 200, self._device("kimi"))
        if path == "/kimi/api/oauth/token":
            if grant_type == "refresh_token":
                if self._refresh(handler, "kimi"):
                    return None
                return self._send(handler, 200, self._tokens("kimi"))
            if grant_type == device_grant:
                if not self._poll("kimi"):
                    return self._send(handler, 400, {"error": "authorization_pending"})
                return self._send(handler, 200, self._tokens("kimi"))
        if path == "/meta/oidc/device/authorization/":
            return self._send(handler, 200, self._device("meta"))
        if path == "/meta/oidc/device/token/":
            if not self._poll("meta"):
                return self._send(handler, 400, {"error": "authorization_pending"})
            return self._send(handler, 200, {"access_token": "meta-identity"})
        if path == "/meta/muse-code/key":
            auth = handler.headers.get("Authorization")
            if auth != "Bearer meta-identity" or handler.headers.get("x-api-version") != "1.0.0":
                return self._send(handler, 401, {"detail": "bad identity"})
            mints = len(self.posted("/meta/muse-code/key"))
            if (mints > 1 or not self.polls.get("meta")) and self._refresh(handler, "meta"):
                return None
            return self._send(handler, 200, {"api_key": "meta-key-" + secrets.token_hex(4)})
        if path == "/radius/v1/oauth/device":
            return self._send(handler, 200, self._device("radius"))
        if path == "/radius/v1/oauth/token":
            scope = "gateway offline_access"
            if grant_type == "refresh_token":
                if self._refresh(handler, "radius"):
                    return None
                return self._send(handler, 200, self._tokens("radius", scope=scope))
            if grant_type == device_grant:
                if not self._poll("radius"):
                    return self._send(handler, 400, {"error": "authorization_pending"})
                return self._send(handler, 200, self._tokens("radius", scope=scope))
            grant = self._pkce(body.get("code", ""), body.get("code_verifier", ""))
            if (
                grant is None
                or grant["redirect_uri"] != body.get("redirect_uri")
                or body.get("client_id") != "pi-gateway"
            ):
                return self._send(handler, 400, {"error": "invalid_grant"})
            return self._send(handler, 200, self._tokens("radius", scope=scope))
        self._send(handler, 404, {"error": "not_found"})
