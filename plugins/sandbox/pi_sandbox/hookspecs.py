"""The hook pluggable-pi-sandbox publishes (through ``add_hookspecs``) for audit plugins."""

from __future__ import annotations

from typing import Any

from pi_hookspecs import hookspec


@hookspec
def sandbox_violation(event: Any, ctx: Any) -> None:
    """The sandbox refused something a command tried (only while pluggable-pi-sandbox is loaded).

    **Fires** once per refusal: ``event`` is a :class:`pi_sandbox.SandboxViolation` —
    ``kind`` (``"read"``: a denied path, ``"write"``: outside the writable folders or a
    protected path, ``"network"``: a host the policy does not allow, or any network
    while it is off), ``target`` (the path or ``host:port``), ``command``, ``source``
    (``"tool"`` or ``"user"``), ``tool_call_id``, ``preset``, ``backend`` and ``detail``
    (the line of output it was recognised in). Network refusals through the proxy are
    reported as they happen, for every command; file system refusals are recognised in
    the output of ``bash`` tool calls when their result is ready. pi's own ``read``,
    ``write`` and ``edit`` tools are refused as they try (``source`` ``"tool"``,
    ``command`` the tool's name, ``target`` the path it named, ``detail`` the reason).
    ``ctx`` is the context of the command (a tool context for tool calls).

    **Returns** nothing (notification); implementations may be async.

    **Errors**: reported as a warning naming the plugin; the other handlers still run
    and the command's result is unchanged.
    """
