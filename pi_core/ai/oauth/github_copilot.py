"""GitHub Copilot sign-in (provider ``github-copilot``), as VS Code's Copilot Chat and
pi 1.6.0 do it.

1. GitHub's device flow (github.com or a GitHub Enterprise domain): the user enters a
   code at ``github.com/login/device``; pi polls until GitHub hands out an access token.
2. That GitHub token is exchanged for a short-lived Copilot token
   (``api.github.com/copilot_internal/v2/token``); it is the OAuth ``access`` token, the
   GitHub token the ``refresh`` token (a refresh is a new exchange).
3. The account's model list (``<copilot api>/models``) is kept as
   ``availableModelIds``; models whose policy is still unconfigured are enabled.

Requests go to the endpoint the Copilot token names (``proxy-ep=proxy.X`` →
``https://api.X``) with Copilot Chat's editor headers. Endpoints:
``PI_OAUTH_GITHUB_COPILOT_GITHUB_URL`` (replaces ``https://<domain>``), ``…_API_URL``
(replaces ``https://api.<domain>``) and ``…_BASE_URL`` (the Copilot API itself).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from pi_hookspecs import LoginCallbacks, LoginError, Model, OAuthCredentials

from ._common import Poll, endpoint, poll_device_code, request_json

PROVIDER = "github-copilot"
NAME = "GitHub Copilot"
CLIENT_ID = "Iv1.b507a08c87ecfe98"
"""Copilot Chat's public GitHub OAuth app."""
USER_AGENT = "GitHubCopilotChat/0.35.0"
COPILOT_HEADERS = {
    "User-Agent": USER_AGENT,
    "Editor-Version": "vscode/1.107.0",
    "Editor-Plugin-Version": "copilot-chat/0.35.0",
    "Copilot-Integration-Id": "vscode-chat",
}
API_VERSION = "2026-06-01"
DEFAULT_BASE_URL = "https://api.individual.githubcopilot.com"
EXPIRY_MARGIN_MS = 5 * 60 * 1000


def normalize_domain(text: str) -> str | None:
    """The host name of a GitHub Enterprise URL or domain (``None``: not one)."""
    value = text.strip()
    if not value:
        return None
    host = urlsplit(value if "://" in value else f"https://{value}").hostname
    return host or None


def _github_url(domain: str) -> str:
    return endpoint(PROVIDER, "GITHUB_URL", f"https://{domain}").rstrip("/")


def _api_url(domain: str) -> str:
    return endpoint(PROVIDER, "API_URL", f"https://api.{domain}").rstrip("/")


def base_url_for(token: str, enterprise_domain: str | None = None) -> str:
    """The Copilot API endpoint of a Copilot token (its ``proxy-ep``), else the
    enterprise or the individual default; ``PI_OAUTH_GITHUB_COPILOT_BASE_URL`` wins."""
    override = endpoint(PROVIDER, "BASE_URL", "")
    if override:
        return override.rstrip("/")
    match = re.search(r"proxy-ep=([^;]+)", token or "")
    if match:
        return "https://" + re.sub(r"^proxy\.", "api.", match.group(1))
    if enterprise_domain:
        return f"https://copilot-api.{enterprise_domain}"
    return DEFAULT_BASE_URL


def _enterprise(credentials: OAuthCredentials) -> str | None:
    value = credentials.extra("enterpriseUrl")
    return normalize_domain(value) if isinstance(value, str) and value else None


async def _copilot_token(github_token: str, enterprise_domain: str | None) -> OAuthCredentials:
    _, body = await request_json(
        "GET",
        f"{_api_url(enterprise_domain or 'github.com')}/copilot_internal/v2/token",
        headers={"Authorization": f"Bearer {github_token}", **COPILOT_HEADERS},
        what="Copilot token exchange",
    )
    if (
        not isinstance(body, dict)
        or not isinstance(body.get("token"), str)
        or not isinstance(body.get("expires_at"), int | float)
    ):
        raise LoginError(f"unexpected Copilot token answer: {str(body)[:200]}")
    extra: dict[str, Any] = {"enterpriseUrl": enterprise_domain} if enterprise_domain else {}
    return OAuthCredentials(
        access=body["token"], refresh=github_token, expires=int(body["expires_at"] * 1000) - EXPIRY_MARGIN_MS, **extra
    )


async def _account_models(token: str, enterprise_domain: str | None) -> tuple[list[str], list[str]]:
    """``(available model ids, ids whose policy waits to be enabled)``."""
    base = base_url_for(token, enterprise_domain)
    _, body = await request_json(
        "GET",
        f"{base}/models",
        headers={"Authorization": f"Bearer {token}", **COPILOT_HEADERS, "X-GitHub-Api-Version": API_VERSION},
        what="Copilot model list",
    )
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise LoginError("unexpected Copilot model list")
    entries = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        supports = (item.get("capabilities") or {}).get("supports") or {}
        if isinstance(supports, dict) and supports.get("tool_calls") is False:
            continue
        policy = (item.get("policy") or {}).get("state") if isinstance(item.get("policy"), dict) else None
        entries.append((item["id"], item.get("model_picker_enabled") is True, policy))
    picker = [i for i, enabled, policy in entries if enabled and policy != "disabled"]
    fallback = base == DEFAULT_BASE_URL and not picker
    available = [i for i, _, policy in entries if policy == "enabled"] if fallback else picker
    pending = [i for i, enabled, policy in entries if policy == "unconfigured" and (enabled or fallback)]
    return available, pending


async def _enable(token: str, model_ids: list[str], enterprise_domain: str | None) -> list[str]:
    enabled = []
    base = base_url_for(token, enterprise_domain)
    for model_id in model_ids:
        try:
            status, _ = await request_json(
                "POST",
                f"{base}/models/{model_id}/policy",
                json_body={"state": "enabled"},
                headers={
                    "Authorization": f"Bearer {token}",
                    **COPILOT_HEADERS,
                    "openai-intent": "chat-policy",
                    "x-interaction-type": "chat-policy",
                },
                what="Copilot model policy",
                accept_status=(400, 403, 404, 429),
            )
        except LoginError:
            continue
        if status == 429:
            break
        if 200 <= status < 300:
            enabled.append(model_id)
    return enabled


async def login(callbacks: LoginCallbacks) -> OAuthCredentials:
    answer = await callbacks.prompt(
        "GitHub Enterprise URL/domain (blank for github.com)", placeholder="company.ghe.com"
    )
    enterprise = normalize_domain(answer)
    if answer.strip() and not enterprise:
        raise LoginError("invalid GitHub Enterprise URL/domain")
    domain = enterprise or "github.com"
    github = _github_url(domain)
    form_headers = {"User-Agent": USER_AGENT}
    _, device = await request_json(
        "POST",
        f"{github}/login/device/code",
        form={"client_id": CLIENT_ID, "scope": "read:user"},
        headers=form_headers,
        what="GitHub device code request",
    )
    if (
        not isinstance(device, dict)
        or not isinstance(device.get("device_code"), str)
        or not isinstance(device.get("user_code"), str)
        or not isinstance(device.get("verification_uri"), str)
        or not isinstance(device.get("expires_in"), int | float)
    ):
        raise LoginError(f"unexpected device code answer: {str(device)[:200]}")
    uri = device["verification_uri"]
    if urlsplit(uri).scheme not in ("https", "http"):
        raise LoginError("the device code answer names an untrusted verification address")
    callbacks.device_code(device["user_code"], uri, expires_in=device["expires_in"])

    async def poll() -> Poll:
        _, body = await request_json(
            "POST",
            f"{github}/login/oauth/access_token",
            form={
                "client_id": CLIENT_ID,
                "device_code": device["device_code"],
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            },
            headers=form_headers,
            what="GitHub device authorization",
        )
        if isinstance(body, dict) and isinstance(body.get("access_token"), str):
            return Poll("complete", body["access_token"])
        error = body.get("error") if isinstance(body, dict) else None
        if error == "authorization_pending":
            return Poll("pending")
        if error == "slow_down":
            interval = body.get("interval") if isinstance(body, dict) else None
            return Poll("slow_down", interval=float(interval) if isinstance(interval, int | float) else None)
        if isinstance(error, str):
            description = body.get("error_description") if isinstance(body, dict) else None
            return Poll("failed", message=f"device flow failed: {error}" + (f": {description}" if description else ""))
        return Poll("failed", message="unexpected device authorization answer")

    interval = device.get("interval")
    github_token = await poll_device_code(
        callbacks,
        poll,
        interval=float(interval) if isinstance(interval, int | float) else None,
        expires_in=float(device["expires_in"]),
        wait_first=True,
    )
    credentials = await _copilot_token(github_token, enterprise)
    available, pending = await _account_models(credentials.access, enterprise)
    enabled: list[str] = []
    if pending:
        callbacks.progress("Enabling models...")
        enabled = await _enable(credentials.access, pending, enterprise)
    credentials.availableModelIds = list(dict.fromkeys([*available, *enabled]))  # type: ignore[attr-defined]
    return credentials


async def refresh(credentials: OAuthCredentials) -> OAuthCredentials:
    enterprise = _enterprise(credentials)
    refreshed = await _copilot_token(credentials.refresh, enterprise)
    try:
        available, _ = await _account_models(refreshed.access, enterprise)
    except LoginError:
        available = credentials.extra("availableModelIds") or []
    refreshed.availableModelIds = available  # type: ignore[attr-defined]
    return refreshed


def base_url(credentials: OAuthCredentials, model: Model) -> str:
    return base_url_for(credentials.access, _enterprise(credentials))


def headers(credentials: OAuthCredentials, model: Model) -> dict[str, str]:
    return dict(COPILOT_HEADERS)


def models(credentials: OAuthCredentials, candidates: list[Model]) -> list[Model]:
    """Only the models the account may use (when the login recorded them)."""
    available = credentials.extra("availableModelIds")
    if not isinstance(available, list) or not all(isinstance(i, str) for i in available):
        return candidates
    allowed = set(available)
    return [m for m in candidates if m.id in allowed]
