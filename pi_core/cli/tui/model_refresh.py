"""The online refresh of dynamic model catalogues that ``/model`` and
``/scoped-models`` start as they open (as pi 1.6.0's pickers do)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...runtime import AgentSession


def refreshes(session: AgentSession) -> bool:
    """Whether opening a model picker refreshes catalogues: a plugin's catalogue is
    dynamic and pi is not offline (``--offline``, ``PI_OFFLINE``)."""
    from ...ai.catalogue_snapshots import network_disabled

    return bool(session.models.dynamic_providers()) and not network_disabled()


async def refresh_catalogues(session: AgentSession) -> tuple[list[str], bool]:
    """The session's shared online catalogue refresh (15 s at most): ``(providers that
    failed, timed out)``; a refresh that failed as a whole names its error instead."""
    from ..update_models import shared_refresh

    errors, timed_out = await shared_refresh(session).refresh()
    if "*" in errors:
        return [f"model catalogs: {errors['*']}"], timed_out
    return sorted(errors), timed_out


def refresh_note(errors: list[str], timed_out: bool) -> str:
    """The line a picker shows once the catalogue refresh it started has ended."""
    if timed_out:
        return "Model refresh timed out; showing cached models."
    if len(errors) == 1:
        return f"Could not refresh {errors[0]}; showing cached models."
    if errors:
        return f"Could not refresh {len(errors)} model catalogs ({', '.join(errors)}); showing cached models."
    return "Model catalogs refreshed."
