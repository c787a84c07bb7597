"""What ``pi sandbox status`` and ``/sandbox`` show: the active policy, in words and JSON."""

from __future__ import annotations

import os
from typing import Any

from .settings import GUARANTEES, Policy, plan

UNCONFINED_PREFIX = "unconfined"


def _home(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home != "/" and (path == home or path.startswith(home + "/")) else path


def summary(policy: Policy) -> str:
    """One line: the preset and the network (the ``/sandbox`` command's description)."""
    if not policy.enabled:
        return "sandbox off (preset off): commands run unconfined"
    network = {
        "off": "network off",
        "on": "network on",
        "proxy": f"network via proxy to {len(policy.allowed_hosts)} host(s)",
    }
    return f"sandbox {policy.preset}, {network[policy.network]}"


def to_json(
    policy: Policy, cwd: str, backend: str | None, error: str | None, weaker: dict[str, str] | None = None
) -> dict[str, Any]:
    data: dict[str, Any] = {"preset": policy.preset, "source": policy.source, "enabled": policy.enabled}
    if not policy.enabled:
        return data
    the_plan = plan(policy, cwd)
    data.update(
        backend=backend,
        backendSetting=policy.backend,
        error=error,
        readable="everything except the denied paths",
        denied=the_plan.deny,
        denyPatterns=list(policy.deny_read),
        writable=the_plan.writable,
        protected=the_plan.protected,
        network=policy.network,
        allowedHosts=list(policy.allowed_hosts),
        environment={
            "mode": "minimal" if policy.env_minimal else "filtered",
            "allow": list(policy.env_allow),
            "deny": list(policy.env_deny),
        },
        unconfined=f"!{UNCONFINED_PREFIX} COMMAND (asks first; never for the model)",
        hiddenSockets=the_plan.hidden_sockets,
        allowedSockets=the_plan.allowed_sockets,
        weakerAccepted=dict(weaker or {}),
    )
    return data


def describe(
    policy: Policy, cwd: str, backend: str | None, error: str | None, weaker: dict[str, str] | None = None
) -> str:
    lines = [f"pluggable-pi-sandbox: preset {policy.preset} (from {policy.source})"]
    if not policy.enabled:
        lines.append("Commands run unconfined: the bash tool and !commands reach whatever you can.")
        return "\n".join(lines)
    data = to_json(policy, cwd, backend, error, weaker)
    if error:
        lines.append(f"NOT ACTIVE - every command is refused: {error}")
    else:
        lines.append(f"backend: {backend}")
        for name, why in (weaker or {}).items():
            lines.append(f"  accepted weaker (acceptWeaker): {name}: {GUARANTEES[name]} does NOT hold: {why}")
    lines.append("read: everything, except")
    lines.extend(f"  {_home(p)}" for p in data["denied"])
    if not data["denied"]:
        lines.append("  (no denied path exists)")
    lines.append("write: " + (", ".join(_home(p) for p in data["writable"]) or "nothing"))
    if data["protected"]:
        lines.append("  read-only inside: " + ", ".join(_home(p) for p in data["protected"]))
    if policy.network == "off":
        lines.append("network: off")
    elif policy.network == "on":
        lines.append("network: on (not contained)")
    else:
        hosts = ", ".join(policy.allowed_hosts) or "(no host)"
        lines.append(f"network: through pi's proxy, only to {hosts}")
    env = data["environment"]
    if env["mode"] == "minimal":
        lines.append(
            "environment: only PATH, HOME, LANG, TERM … (minimal)"
            + (f", plus {', '.join(env['allow'])}" if env["allow"] else "")
        )
    else:
        allowed = f" (allowed: {', '.join(env['allow'])})" if env["allow"] else ""
        lines.append(f"environment: secrets removed (*_KEY, *_TOKEN, *_SECRET, AWS_* …){allowed}")
    sockets = len(data["hiddenSockets"])
    allowed = f"; allowed: {', '.join(_home(p) for p in data['allowedSockets'])}" if data["allowedSockets"] else ""
    lines.append(f"unix sockets outside the project: hidden ({sockets} here){allowed}")
    lines.append(f"unconfined: type !{UNCONFINED_PREFIX} COMMAND to run one command outside the sandbox (asks first)")
    return "\n".join(lines)
