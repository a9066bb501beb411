"""`rt.memory`: turning memory on and off, and its status."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resident.errors import ActorUnavailable, InvalidInput, MemoryDisabled
from resident.memory.embedders import check_embedder_spec
from resident.messages.memory import PROVIDERS, GetSubstrateStatus, MemoryStatus, MemorySwitchedOff, MemorySwitchedOn
from resident.messages.store import Commit, Committed, GetWriterStatistics
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.tables import MEMORY_CONFIG

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["MemoryControl"]

logger = logging.getLogger(__name__)

class MemoryControl:
    """Memory is off on a fresh home; turning it on or off is an event, and off deletes nothing."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def enable(self, provider: str = "hindsight", embedder: str = "hash") -> bool:
        """Admit the provider (Hindsight, in supervised mode). False if it was already on like this."""
        if provider not in PROVIDERS:
            raise InvalidInput(f"unknown memory provider {provider!r}; the provider is: {', '.join(PROVIDERS)}")
        spec = check_embedder_spec(embedder)
        event = MemorySwitchedOn(at=self._runtime.clock.time(), provider=provider, embedder=spec)
        committed: Committed = self._runtime._internal.write(Commit(events=(event,)))
        if committed.applied:
            # The substrate turns on (and switches embedder) when it hears of the event; the next
            # request should find it on, embedding with the embedder just admitted.
            self._settle()
        return committed.applied > 0

    def disable(self) -> bool:
        """Stop new writes and recalls; nothing is deleted. False if memory was already off."""
        switched_off = MemorySwitchedOff(at=self._runtime.clock.time())
        committed: Committed = self._runtime._internal.write(Commit(events=(switched_off,)))
        if committed.applied:
            self._settle()  # so that no recall after this returns is still served
        return committed.applied > 0

    def _settle(self) -> None:
        # The switch is durable already; a substrate that is restarting reads it when it starts.
        try:
            self.wait_indexed()
        except ActorUnavailable as error:
            logger.warning("memory switched, but the substrate did not confirm it in time: %s", error)

    def require_enabled(self) -> None:
        """Raise `MemoryDisabled` (naming the command that turns memory on) unless memory is on."""
        with self._runtime._internal.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is None or not config.enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

    def wait_indexed(self, timeout: float = 30.0) -> None:
        """Wait until the substrate has taken in every change committed so far.

        Writes through `remember` are indexed before they return; records committed another way
        (an import, a raw commit through the internal write path) reach the substrate as published events just after
        their commit. This waits for those: the writer has published everything it committed
        once it answers a later message, and the substrate handles messages in order.
        """
        runtime = self._runtime
        runtime.check_open()
        runtime.wiring.writer.ask(GetWriterStatistics(), timeout)
        runtime.wiring.substrate.ask(GetSubstrateStatus(), timeout)

    def status(self) -> MemoryStatus:
        """On or off, provider and embedder, substrate health, and record counts by state."""
        runtime = self._runtime
        runtime.check_open()
        with runtime._internal.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        state = runtime.statistics().child("substrate").state
        try:
            substrate = runtime.wiring.substrate.ask(GetSubstrateStatus(), timeout=5.0)
        except ActorUnavailable:
            substrate = None
        return MemoryStatus(
            enabled=bool(config and config.enabled),
            provider=config.provider if config else "hindsight",
            embedder=config.embedder if config else "hash",
            substrate=state,
            records=substrate.records if substrate else 0,
            missing_vectors=substrate.missing_vectors if substrate else 0,
            embedder_error=substrate.embedder_error if substrate else "",
            by_lifecycle=substrate.by_lifecycle if substrate else {},
            by_replication=substrate.by_replication if substrate else {},
            replication_note=runtime.replication_note(),
        )
