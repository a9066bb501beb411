"""`rt.chaos`: make a named actor fail on purpose (fault tests and demos)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from resident.errors import ActorUnavailable
from resident.messages.supervision import Crash

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["Chaos"]


class Chaos:
    """Crash actors by the names `rt.statistics()` shows (`substrate`, `writer`, `members/deven`, ...)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def names(self) -> list[str]:
        return sorted(self._runtime._internal.wiring.addresses)

    def crash(self, name: str, *, kind: Literal["error", "exit"] = "error", reason: str = "chaos") -> None:
        """Queue a crash for `name`: an exception (`error`) or a `SystemExit` (`exit`) in its thread."""
        address = self._runtime._internal.wiring.addresses.get(name)
        if address is None:
            raise ActorUnavailable(f"no actor is named {name!r}; crashable actors: {', '.join(self.names())}")
        address.tell(Crash(reason=reason, kind=kind))
