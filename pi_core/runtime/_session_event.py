"""The base of pi's own session events, apart from :mod:`pi_core.runtime.events` so that
:mod:`pi_core.runtime._occasional_events`, which that module imports on first use, does
not import it back. Import it from :mod:`pi_core.runtime.events`."""

from pydantic import ConfigDict

from pi_hookspecs import PiModel


class SessionEvent(PiModel):
    model_config = ConfigDict(extra="forbid")
    type: str
