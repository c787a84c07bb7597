"""pluggable-pi-bedrock: Amazon Bedrock models for pi through the Converse stream API.

The plugin registers the ``bedrock-converse-stream`` wire API, which the
``amazon-bedrock`` models of pi's catalogue use. Requests are signed with AWS
Signature Version 4 from the standard AWS credentials chain (environment variables,
``AWS_PROFILE`` and the shared config files, SSO, container and instance roles) or sent
with a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``); the answer streams back in the
AWS event-stream framing. ``botocore`` does the signing, the credentials and the
framing: it is imported on the first Bedrock request only (:mod:`pi_bedrock.api`).
"""

from __future__ import annotations

__version__ = "1.0.0"

import os
from collections.abc import Callable, Mapping
from typing import Any

from pi_hookspecs import (
    ApiDefinition,
    CredentialRequest,
    CredentialSource,
    RequestCredentials,
    TranscriptRules,
    hookimpl,
)

__all__ = ["API", "PROVIDER", "credentials_available", "lend_credentials", "register_providers"]

API = "bedrock-converse-stream"
PROVIDER = "amazon-bedrock"

_AMBIENT = (
    ("AWS_BEARER_TOKEN_BEDROCK",),
    ("AWS_PROFILE",),
    ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",),
    ("AWS_CONTAINER_CREDENTIALS_FULL_URI",),
    ("AWS_WEB_IDENTITY_TOKEN_FILE",),
)
"""Variables any one group of which configures AWS credentials (as pi 1.6.0 checks)."""


def credentials_available(env: Mapping[str, str]) -> bool:
    """Whether AWS credentials are configured, from the variables alone (no file is read,
    no service asked): ``env`` (stored with the provider's ``auth.json`` entry) first,
    then the process environment."""
    return any(all(env.get(name) or os.environ.get(name) for name in group) for group in _AMBIENT)


def lend_credentials(request: CredentialRequest) -> RequestCredentials | None:
    """Hand the ``env`` stored at ``pi auth login amazon-bedrock`` (``AWS_PROFILE``,
    ``AWS_REGION`` …) to the request; the API resolves and signs with botocore itself."""
    if not request.env:
        return None
    return RequestCredentials(extra={"aws_env": dict(request.env)})


@hookimpl
def register_providers(register: Callable[[Any], Any]) -> None:
    # pi makes the conversation acceptable to the model first (its rules for every API).
    # Constant values: made with model_construct, so a run does not build their validators.
    transcript = TranscriptRules.model_construct(tool_call_id_max_length=64)
    register(ApiDefinition.model_construct(name=API, stream="pi_bedrock.api:stream", transcript=transcript))
    register(
        CredentialSource.model_construct(provider=PROVIDER, resolve=lend_credentials, available=credentials_available)
    )
