"""pluggable-pi-vertex: Gemini on Vertex AI with Google Cloud Application Default Credentials.

pi speaks Vertex AI's ``google-vertex`` API itself, and with a Google Cloud API key
(``GOOGLE_CLOUD_API_KEY``) it needs nothing more. Without one, requests need an OAuth
access token from Google Cloud's credential chain — ``gcloud auth application-default
login``, a service-account key file in ``GOOGLE_APPLICATION_CREDENTIALS``, workload
identity, the metadata server of a Google Cloud VM — which takes ``google-auth``. This
plugin brings that library and lends pi the token through the contract's
:class:`~pi_hookspecs.CredentialSource`, so only the users of Vertex AI install it::

    pi install pluggable-pi-vertex
    gcloud auth application-default login
    export GOOGLE_CLOUD_PROJECT=my-project GOOGLE_CLOUD_LOCATION=us-central1
    pi --model google-vertex/gemini-2.5-pro

The project and location may also be stored with the provider's ``auth.json`` entry
(``{"google-vertex": {"type": "api_key", "env": {...}}}``, as pi 1.6.0's ``/login``
writes it); the project defaults to the credentials' own. Tokens are kept until they
are about to expire (``google-auth`` refreshes them in a worker thread); the library is
imported on the first request that needs it, never at startup.
"""

from __future__ import annotations

__version__ = "1.0.0"

import asyncio
import json
import os
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_hookspecs import CredentialRequest, CredentialSource, RequestCredentials, hookimpl

__all__ = ["PROVIDER", "SCOPES", "VertexCredentials", "adc_path", "register_providers"]

PROVIDER = "google-vertex"
"""The provider whose requests this plugin lends tokens to."""

SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)

CREDENTIALS_MARKER = "gcp-vertex-credentials"
"""An ``apiKey`` meaning "no key: use Google Cloud credentials" (as in pi 1.6.0)."""

_PLACEHOLDER = re.compile(r"^<[^>]+>$")


def _environment(env: Mapping[str, str]) -> dict[str, str]:
    """The process environment under the provider's stored ``env`` values."""
    return {**os.environ, **env}


def adc_path(env: Mapping[str, str]) -> Path:
    """Where Application Default Credentials live: ``GOOGLE_APPLICATION_CREDENTIALS``,
    else gcloud's ``application_default_credentials.json``."""
    explicit = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return Path(explicit).expanduser()
    config = env.get("CLOUDSDK_CONFIG")
    if config:
        folder = Path(config).expanduser()
    elif sys.platform == "win32" and env.get("APPDATA"):
        folder = Path(env["APPDATA"]) / "gcloud"
    else:
        folder = Path("~/.config/gcloud").expanduser()
    return folder / "application_default_credentials.json"


def _file_project(path: Path) -> str | None:
    """The project a credentials file names (a service account's ``project_id``, a
    user login's ``quota_project_id``)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    project = data.get("project_id") or data.get("quota_project_id")
    return project if isinstance(project, str) and project else None


def _real_key(key: str | None) -> bool:
    key = (key or "").strip()
    return bool(key) and key != CREDENTIALS_MARKER and not _PLACEHOLDER.match(key)


class VertexCredentials:
    """Google Cloud access tokens for the requests of one provider, loaded once and
    cached until they are about to expire.

    :meth:`source` is what the plugin registers; tests and embedding programs may
    build their own instance (another provider name, other scopes).
    """

    def __init__(self, provider: str = PROVIDER, scopes: tuple[str, ...] = SCOPES) -> None:
        self.provider = provider
        self.scopes = scopes
        self._lock = threading.Lock()
        self._loaded: dict[str | None, tuple[Any, str | None]] = {}  # credentials file (None: ADC) -> (creds, project)
        self._transport: Any = None

    def source(self) -> CredentialSource:
        # made with model_construct (valid by construction): a run does not build its validator
        return CredentialSource.model_construct(provider=self.provider, resolve=self.resolve, available=self.available)

    # ------------------------------------------------------------------ the contract

    def available(self, env: dict[str, str]) -> bool:
        """Whether Application Default Credentials are configured (no network): a
        credentials file, a project and a location (as pi 1.6.0 checks)."""
        merged = _environment(env)
        path = adc_path(merged)
        if not path.is_file():
            return False
        project = merged.get("GOOGLE_CLOUD_PROJECT") or merged.get("GCLOUD_PROJECT") or _file_project(path)
        return bool(project and merged.get("GOOGLE_CLOUD_LOCATION"))

    async def resolve(self, request: CredentialRequest) -> RequestCredentials | None:
        """A bearer token, project and location for ``request`` (``None`` when the user
        configured a Google Cloud API key: pi sends that instead)."""
        if _real_key(request.api_key):
            return None
        merged = _environment(request.env)
        file = request.env.get("GOOGLE_APPLICATION_CREDENTIALS")
        headers: dict[str, str] = {}
        cached = self._loaded.get(file)
        if cached is not None and cached[0].valid:
            credentials, default_project = cached
            credentials.apply(headers)
        else:
            credentials, default_project = await asyncio.to_thread(self._fresh, file, headers)
        extra: dict[str, Any] = {}
        project = merged.get("GOOGLE_CLOUD_PROJECT") or merged.get("GCLOUD_PROJECT") or default_project
        if project:
            extra["project"] = project
        location = merged.get("GOOGLE_CLOUD_LOCATION")
        if location:
            extra["location"] = location
        return RequestCredentials(headers=headers, extra=extra)

    # ------------------------------------------------------------------ google-auth (in a worker thread)

    def _fresh(self, file: str | None, headers: dict[str, str]) -> tuple[Any, str | None]:
        """Load the credentials if needed, refresh an expired token, and write the
        request headers (``Authorization``, and ``x-goog-user-project`` when the
        credentials name a quota project)."""
        import google.auth
        import google.auth.exceptions
        from google.auth.transport.requests import Request

        with self._lock:
            try:
                loaded = self._loaded.get(file)
                if loaded is None:
                    if file:
                        credentials, project = _load_file(Path(file).expanduser(), list(self.scopes))
                    else:
                        credentials, project = google.auth.default(scopes=list(self.scopes))
                    loaded = self._loaded[file] = (credentials, project)
                credentials = loaded[0]
                if not credentials.valid:
                    if self._transport is None:
                        self._transport = Request()
                    credentials.refresh(self._transport)
            except (google.auth.exceptions.DefaultCredentialsError, _NoCredentials) as error:
                raise RuntimeError(
                    f"Google Vertex AI: no Google Cloud credentials ({error}). Run `gcloud auth "
                    "application-default login`, set GOOGLE_APPLICATION_CREDENTIALS to a service-account key "
                    "file, or set GOOGLE_CLOUD_API_KEY."
                ) from None
            except google.auth.exceptions.GoogleAuthError as error:
                raise RuntimeError(
                    f"Google Vertex AI: could not get an access token from the Google Cloud credentials: {error}. "
                    "Run `gcloud auth application-default login` again if the login expired."
                ) from None
            credentials.apply(headers)
            return loaded


class _NoCredentials(Exception):
    """A configured credentials file that cannot be read."""


def _load_file(path: Path, scopes: list[str]) -> tuple[Any, str | None]:
    """Credentials from a file the user configured (``auth.json``'s
    ``GOOGLE_APPLICATION_CREDENTIALS``): service-account keys and user logins with
    their own loaders, other kinds (external accounts …) with google-auth's generic one."""
    import google.auth

    try:
        info = json.loads(path.read_text())
    except OSError as error:
        raise _NoCredentials(f"File {path} was not found: {error}") from None
    except ValueError as error:
        raise _NoCredentials(f"File {path} is not valid JSON: {error}") from None
    kind = info.get("type") if isinstance(info, dict) else None
    if kind == "service_account":
        from google.oauth2 import service_account

        credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
            info, scopes=scopes
        )
        return credentials, info.get("project_id")
    if kind == "authorized_user":
        from google.oauth2 import credentials as user_credentials

        login = user_credentials.Credentials.from_authorized_user_info(  # type: ignore[no-untyped-call]
            info, scopes=scopes
        )
        return login, info.get("quota_project_id")
    loaded: tuple[Any, str | None] = google.auth.load_credentials_from_file(  # type: ignore[no-untyped-call]
        str(path), scopes=scopes
    )
    return loaded


_CREDENTIALS = VertexCredentials()


@hookimpl
def register_providers(register: Any) -> None:
    """Lend Google Cloud access tokens to the ``google-vertex`` provider's requests."""
    register(_CREDENTIALS.source())
