"""What pi's login flows share: PKCE, the loopback callback server, the race between
the browser's redirect and a pasted code, device-code polling, JSON/form requests.

Endpoints are module constants of each flow; :func:`endpoint` lets an environment
variable ``PI_OAUTH_<PROVIDER>_<NAME>`` replace one (tests point the flows at a local
authorization server that way; an organisation can point them at a proxy).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import html
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2

from pi_hookspecs import AbortError, LoginCallbacks, LoginError

CALLBACK_HOST_ENV = "PI_OAUTH_CALLBACK_HOST"
"""Where the callback servers listen (pi 1.6.0's variable; default ``127.0.0.1``)."""

HTTP_TIMEOUT = 30.0
MIN_POLL_INTERVAL = 1.0
"""Device-code polling never asks more often than this (seconds)."""
DEFAULT_POLL_INTERVAL = 5.0
"""RFC 8628 §3.2: the interval when the server names none."""
SLOW_DOWN_STEP = 5.0
"""RFC 8628 §3.5: ``slow_down`` adds this much to the interval."""


def endpoint(provider: str, name: str, default: str) -> str:
    """``$PI_OAUTH_<PROVIDER>_<NAME>`` or ``default``."""
    variable = f"PI_OAUTH_{provider.upper().replace('-', '_')}_{name}"
    return os.environ.get(variable) or default


def callback_host() -> str:
    return os.environ.get(CALLBACK_HOST_ENV) or "127.0.0.1"


def now_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- PKCE


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """``(verifier, challenge)`` of RFC 7636 with the S256 method."""
    verifier = _b64url(secrets.token_bytes(32))
    return verifier, pkce_challenge(verifier)


def pkce_challenge(verifier: str) -> str:
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def parse_authorization_input(text: str) -> tuple[str | None, str | None]:
    """``(code, state)`` from what a user pasted: the redirect URL, ``code#state``,
    a query string, or the bare code."""
    value = text.strip()
    if not value:
        return None, None
    parts = urlsplit(value)
    if parts.scheme and parts.netloc:
        return _code_and_state(parts.query)
    if "#" in value:
        code, state = value.split("#", 1)
        return code or None, state or None
    if "code=" in value:
        return _code_and_state(value.lstrip("?"))
    return value, None


def _code_and_state(query: str) -> tuple[str | None, str | None]:
    values = parse_qs(query)
    code, state = values.get("code"), values.get("state")
    return (code[0] if code else None), (state[0] if state else None)


# --------------------------------------------------------------------------- callbacks


async def until_aborted(callbacks: LoginCallbacks, awaitable: Awaitable[Any]) -> Any:
    """Await ``awaitable`` unless the login's signal aborts first (then raise
    :class:`AbortError` with "Login cancelled")."""
    task = asyncio.ensure_future(awaitable)
    signal = getattr(callbacks, "signal", None)
    if signal is None:
        return await task
    if signal.aborted:
        task.cancel()
        raise AbortError("Login cancelled")
    aborted = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        aborted.cancel()
    if task not in done:
        task.cancel()
        raise AbortError("Login cancelled")
    return task.result()


async def sleep(callbacks: LoginCallbacks, seconds: float) -> None:
    await until_aborted(callbacks, asyncio.sleep(max(0.0, seconds)))


# --------------------------------------------------------------------------- HTTP


def _client() -> Any:
    return httpx2.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False)


def _describe(response: Any) -> str:
    text = response.text.strip()
    return f"HTTP {response.status_code}" + (f": {text[:500]}" if text else "")


async def request_json(
    method: str,
    url: str,
    *,
    json_body: Any = None,
    form: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    what: str,
    accept_status: tuple[int, ...] = (),
) -> tuple[int, Any]:
    """Send a request; ``(status, parsed JSON body)``. A status outside 2xx and
    ``accept_status`` raises :class:`LoginError` naming ``what`` failed."""
    sent = {"Accept": "application/json", **(headers or {})}
    try:
        async with _client() as client:
            response = await client.request(method, url, json=json_body, data=form, headers=sent)
    except Exception as error:
        raise LoginError(f"{what} failed: cannot reach {url}: {error}") from None
    if not (200 <= response.status_code < 300) and response.status_code not in accept_status:
        raise LoginError(f"{what} failed ({_describe(response)})")
    try:
        body = response.json() if response.content else None
    except ValueError:
        if response.status_code in accept_status:
            body = None
        else:
            raise LoginError(f"{what} returned invalid JSON: {response.text[:200]}") from None
    return response.status_code, body


# --------------------------------------------------------------------------- callback server

_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>pi</title></head>"
    "<body style='font-family: sans-serif; margin: 4em'><h2>{title}</h2><p>{detail}</p></body></html>"
)


@dataclass
class CallbackResult:
    code: str | None
    error: str | None = None
    params: dict[str, str] | None = None
    """Every query parameter of the redirect (a login may need more than the code)."""


class CallbackServer:
    """A loopback HTTP server that receives the authorization server's redirect
    (``GET <path>?code=...&state=...``) once. ``state=None``: the provider sends none
    (the random ``path`` then keeps stray requests out)."""

    def __init__(self, provider_name: str, path: str, state: str | None) -> None:
        self.provider_name = provider_name
        self.path = path
        self.state = state
        self.port = 0
        self.host = ""
        self._server: asyncio.AbstractServer | None = None
        self._result: asyncio.Future[CallbackResult] | None = None

    async def start(self, host: str, port: int) -> CallbackServer:
        loop = asyncio.get_running_loop()
        self._result = loop.create_future()
        self._server = await asyncio.start_server(self._handle, host, port)
        self.host = host
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def redirect_uri(self, host: str = "localhost") -> str:
        return f"http://{host}:{self.port}{self.path}"

    async def wait(self) -> CallbackResult:
        assert self._result is not None
        return await asyncio.shield(self._result)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._result is not None and not self._result.done():
            self._result.cancel()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass
            method, _, rest = request.decode("latin-1").partition(" ")
            target = rest.split(" ", 1)[0]
            status, title, detail = self._answer(method, target)
            body = _PAGE.format(title=html.escape(title), detail=html.escape(detail)).encode()
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nCache-Control: no-store\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    def _answer(self, method: str, target: str) -> tuple[str, str, str]:
        parts = urlsplit(target)
        if method != "GET" or parts.path != self.path:
            return "404 Not Found", "Not found", "This is pi's sign-in callback."
        query = parse_qs(parts.query)
        first = {key: values[0] for key, values in query.items() if values}
        if self.state is not None and first.get("state") != self.state:
            return "400 Bad Request", "Sign-in failed", "The state does not match this sign-in."
        result = self._result
        if result is None or result.done():
            return "409 Conflict", "Already handled", "This sign-in has already been handled."
        if "error" in first:
            detail = first.get("error_description") or first["error"]
            result.set_result(CallbackResult(None, detail))
            return "400 Bad Request", f"{self.provider_name} sign-in failed", detail
        code = first.get("code")
        if not code:
            return "400 Bad Request", "Sign-in failed", "The redirect carries no authorization code."
        result.set_result(CallbackResult(code, params=first))
        return "200 OK", f"Signed in to {self.provider_name}", "You may close this page and return to pi."


async def start_callback_server(
    provider_name: str, path: str, state: str | None, ports: tuple[int, ...], host: str | None = None
) -> CallbackServer | None:
    """A started :class:`CallbackServer` on the first port that binds (0: any free
    port), or ``None`` when none does (the user pastes the redirect instead)."""
    host = host or callback_host()
    for port in ports:
        try:
            return await CallbackServer(provider_name, path, state).start(host, port)
        except OSError:
            continue
    return None


async def wait_for_code(
    callbacks: LoginCallbacks,
    server: CallbackServer | None,
    *,
    state: str,
    message: str,
    placeholder: str | None,
) -> str:
    """The authorization code from the browser's redirect to ``server`` or from what
    the user pastes, whichever comes first (the other is cancelled)."""
    answer = await wait_for_redirect(callbacks, server, message=message, placeholder=placeholder)
    if isinstance(answer, CallbackResult):
        if answer.error:
            raise LoginError(f"authorization failed: {answer.error}")
        if answer.code:
            return answer.code
        answer = ""
    code, pasted_state = parse_authorization_input(answer)
    if pasted_state and pasted_state != state:
        raise LoginError("the pasted redirect belongs to another sign-in (state mismatch)")
    if not code:
        raise LoginError("no authorization code was given")
    return code


async def wait_for_redirect(
    callbacks: LoginCallbacks, server: CallbackServer | None, *, message: str, placeholder: str | None
) -> CallbackResult | str:
    """The browser's redirect to ``server`` (a :class:`CallbackResult`) or the text the
    user pastes (the redirect URL, a code), whichever comes first; the other is
    cancelled."""
    manual = asyncio.ensure_future(callbacks.prompt(message, placeholder=placeholder))
    waiting: set[asyncio.Future[Any]] = {manual}
    redirect = asyncio.ensure_future(server.wait()) if server is not None else None
    if redirect is not None:
        waiting.add(redirect)
    try:
        done, _ = await until_aborted(callbacks, asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED))
    finally:
        for task in waiting:
            if not task.done():
                task.cancel()
    if redirect is not None and redirect in done and not redirect.cancelled():
        result: CallbackResult = redirect.result()
        return result
    text: str = manual.result()
    return text


async def browser_login_code(
    callbacks: LoginCallbacks,
    server: CallbackServer | None,
    *,
    url: str,
    instructions: str,
    state: str,
    redirect_uri: str,
) -> str:
    """Open ``url`` in the user's browser, then the authorization code from the
    redirect to ``server`` or from what the user pastes (:func:`wait_for_code`); the
    server is closed afterwards."""
    try:
        callbacks.open_url(url, instructions)
        code = await wait_for_code(
            callbacks,
            server,
            state=state,
            message="Complete login in your browser, or paste the authorization code / redirect URL here",
            placeholder=redirect_uri,
        )
    finally:
        if server is not None:
            server.close()
    callbacks.progress("Exchanging authorization code for tokens...")
    return code


# --------------------------------------------------------------------------- device codes


@dataclass
class Poll:
    """One answer of a device-code token endpoint."""

    status: str  # "complete" | "pending" | "slow_down" | "failed"
    value: Any = None
    message: str = ""
    interval: float | None = None


def device_wait(
    answer: dict[str, Any], *, denied: str, expired: str, denied_codes: tuple[str, ...] = ("access_denied",)
) -> Poll | None:
    """What a device-code token endpoint's standard error answer means (RFC 8628: still
    pending, slow down, denied, expired), with the provider's words for the last two;
    ``None`` for any other answer."""
    error = answer.get("error")
    if error == "authorization_pending":
        return Poll("pending")
    if error == "slow_down":
        return Poll("slow_down", interval=positive(answer.get("interval")))
    if error in denied_codes:
        return Poll("failed", message=denied)
    if error == "expired_token":
        return Poll("failed", message=expired)
    return None


async def poll_device_code(
    callbacks: LoginCallbacks,
    poll: Callable[[], Awaitable[Poll]],
    *,
    interval: float | None,
    expires_in: float | None,
    wait_first: bool = False,
) -> Any:
    """Poll until the user has entered the code (RFC 8628): ``pending`` waits the
    interval, ``slow_down`` lengthens it, ``failed`` raises, expiry raises."""
    deadline = time.monotonic() + expires_in if expires_in else float("inf")
    delay = max(MIN_POLL_INTERVAL, DEFAULT_POLL_INTERVAL if interval is None else interval)
    slowed = False
    if wait_first:
        await sleep(callbacks, min(delay, max(0.0, deadline - time.monotonic())))
    while time.monotonic() < deadline:
        answer = await until_aborted(callbacks, poll())
        if answer.status == "complete":
            return answer.value
        if answer.status == "failed":
            raise LoginError(answer.message)
        if answer.status == "slow_down":
            slowed = True
            delay = max(MIN_POLL_INTERVAL, answer.interval if answer.interval else delay + SLOW_DOWN_STEP)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await sleep(callbacks, min(delay, remaining))
    raise LoginError(
        "the device code expired before the sign-in finished"
        + (" (the server asked to slow down: check this machine's clock)" if slowed else "")
    )


def decode_jwt_payload(token: str) -> dict[str, Any] | None:
    """The claims of a JWT (not verified: only read for the account id)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


async def post(
    url: str,
    *,
    form: dict[str, str] | None = None,
    json_body: Any = None,
    headers: dict[str, str] | None = None,
    what: str,
    method: str = "POST",
) -> tuple[int, dict[str, Any]]:
    """Send a request whatever its answer: ``(status, JSON object body or {})``. Only
    an unreachable server raises :class:`LoginError` (naming ``what``)."""
    sent = {"Accept": "application/json", **(headers or {})}
    try:
        async with _client() as client:
            response = await client.request(method, url, json=json_body, data=form, headers=sent)
    except Exception as error:
        raise LoginError(f"{what} failed: cannot reach {url}: {error}") from None
    try:
        body = response.json() if response.content else None
    except ValueError:
        body = None
    return response.status_code, body if isinstance(body, dict) else {}


def oauth_error(body: dict[str, Any], *keys: str) -> str:
    """The first string among ``body[keys]`` (``error_description``, ``message`` …),
    as ``": <text>"``, or ``""``."""
    for key in keys or ("error_description", "message", "error"):
        value = body.get(key)
        if isinstance(value, str) and value.strip():
            return f": {value.strip()}"
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return f": {value['message']}"
    return ""


def trusted_http_url(value: Any, *, https_only: bool = False) -> str | None:
    """``value`` when it is an ``http(s)`` URL (a server-supplied address pi opens in
    a browser must not be a ``file:`` URL or a custom scheme), else ``None``."""
    if not isinstance(value, str) or not value.strip():
        return None
    parts = urlsplit(value.strip())
    allowed = ("https",) if https_only else ("http", "https")
    return value.strip() if parts.scheme in allowed and parts.netloc else None


def positive(value: Any) -> float | None:
    """A positive finite number, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value < float("inf") else None
