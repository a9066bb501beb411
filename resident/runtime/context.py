"""What a service may use, handed to it explicitly: the store, the actors it talks to, the clock, the configuration.

A service is a plain function `service(context, call, request) -> reply` (`resident.operations`); it
never sees the `Runtime`. The context is made once when a runtime opens and lives as long as it does.
`call` says who is calling (the owner, a member session under its grant, or an app) and on which
member's surface, when the operation is bound to one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from resident.clock import Clock
from resident.config import Config
from resident.errors import MemoryDisabled
from resident.messages.store import Commit
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import MEMORY_CONFIG
from resident.supervisor import Address

if TYPE_CHECKING:
    from resident.runtime.caller import Caller

__all__ = ["Call", "Context"]


@dataclass(frozen=True, slots=True)
class Call:
    """Who calls a service, and on which member's surface (None for an operation bound to no member)."""

    caller: Caller
    member: str | None = None


@dataclass(frozen=True, slots=True)
class Context:
    """The runtime's parts a service may use; see the module docstring."""

    home: Path
    store: Store
    writer: Address
    substrate: Address
    replication: Address
    coordinator: Address
    clock: Clock
    # The configuration changes when a member joins by import; read it when needed, never keep it.
    config_now: Callable[[], Config]
    # Raises `RuntimeStopped` once the runtime is closed or its supervisor gave up.
    check_open: Callable[[], None]

    @property
    def config(self) -> Config:
        return self.config_now()

    def write(self, commit: Commit, timeout: float | None = None) -> Any:
        """Commit through the writer and wait until it is durable; the commit's answer."""
        self.check_open()
        return self.writer.ask(commit, timeout)

    def require_memory(self) -> None:
        """`MemoryDisabled` (naming the command that turns memory on) unless memory is on."""
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is None or not config.enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)
