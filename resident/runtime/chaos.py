"""`rt._internal.chaos`: make a named actor fail on purpose (fault tests, `resident run`'s planned crashes, demos)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from resident.errors import ActorUnavailable
from resident.messages.supervision import Crash
from resident.supervisor import Address

__all__ = ["Chaos"]


class Chaos:
    """Crash actors by the names `rt.statistics()` shows (`substrate`, `writer`, `members/deven`, ...)."""

    def __init__(self, addresses: Mapping[str, Address]) -> None:
        self._addresses = addresses

    def names(self) -> list[str]:
        return sorted(self._addresses)

    def crash(self, name: str, *, kind: Literal["error", "exit"] = "error", reason: str = "chaos") -> None:
        """Queue a crash for `name`: an exception (`error`) or a `SystemExit` (`exit`) in its thread."""
        address = self._addresses.get(name)
        if address is None:
            raise ActorUnavailable(f"no actor is named {name!r}; crashable actors: {', '.join(self.names())}")
        address.tell(Crash(reason=reason, kind=kind))
