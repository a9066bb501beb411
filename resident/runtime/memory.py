"""`rt.memory`: turning memory on and off, switching embedders, and its status.

Switching the embedder of a home that holds memories is cheap to ask for and done in the
background: the substrate indexes the new embedder's stored vectors at once (none, the first time)
and fills in the rest through the embedding worker while recall goes on with what is indexed;
`status()` shows how far it got, and `wait_vectors()` waits for the end. Vectors are kept per
embedder, so switching back finds the old ones in place.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resident.errors import ActorUnavailable, InvalidInput, MemoryDisabled, ResidentError
from resident.memory.embedders import check_embedder_spec
from resident.messages.memory import (
    PROVIDERS,
    EmbedderWorkerStatus,
    GetEmbedderWorkerStatus,
    GetSubstrateStatus,
    MemoryStatus,
    MemorySwitchedOff,
    MemorySwitchedOn,
    SubstrateStatus,
    WaitForVectors,
)
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

    def enable(self, provider: str = "hindsight", embedder: str | None = None) -> bool:
        """Admit the provider (Hindsight, in supervised mode). False if it was already on like this.

        `embedder` is `hash`, `local` or a loopback llama URL; None takes resident.toml's
        `[memory] embedder` (`hash` when it names none).
        """
        if provider not in PROVIDERS:
            raise InvalidInput(f"unknown memory provider {provider!r}; the provider is: {', '.join(PROVIDERS)}")
        spec = self._checked_embedder(embedder)
        event = MemorySwitchedOn(at=self._runtime.clock.time(), provider=provider, embedder=spec)
        committed: Committed = self._runtime._internal.write(Commit(events=(event,)))
        if committed.applied:
            # The substrate turns on (and switches embedder) when it hears of the event; the next
            # request should find it on, embedding with the embedder just admitted.
            self._settle()
        return committed.applied > 0

    def _checked_embedder(self, embedder: str | None) -> str:
        if embedder is not None:
            return check_embedder_spec(embedder)
        configured = self._runtime.config.memory_embedder
        try:
            return check_embedder_spec(configured)
        except ResidentError as error:
            where = self._runtime.config.path or "resident.toml"
            raise type(error)(f"{where}: [memory] embedder: {error.message}") from None

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
        """Wait until the substrate has taken in every change committed so far, and stored what it derived.

        Every committed record reaches the substrate (the writer publishes it before answering
        anyone), and a recall takes in whatever reached it first, so a `remember` is recallable
        once it returns. The substrate analyses new records in batches just after: this waits
        until it has, and until their keyword terms (and hash vectors) are stored. The writer
        answers statistics once what was queued before is committed, and each actor handles
        messages in order.
        """
        runtime = self._runtime
        runtime.check_open()
        runtime._internal.wiring.writer.ask(GetWriterStatistics(), timeout)
        runtime._internal.wiring.substrate.ask(GetSubstrateStatus(), timeout)
        runtime._internal.wiring.writer.ask(GetWriterStatistics(), timeout)

    def wait_vectors(self, timeout: float = 60.0) -> bool:
        """Wait until every memory has a vector of the current embedder; False if `timeout` passed first.

        With the hash embedder that is at once; with any other, vectors follow `remember` (and a
        switch of embedder) from the embedding worker.
        """
        self._runtime.check_open()
        try:
            self._runtime._internal.wiring.substrate.ask(WaitForVectors(), timeout)
        except ActorUnavailable:
            return False
        return True

    def status(self) -> MemoryStatus:
        """On or off, provider and embedder, substrate and embedding worker health, record counts by state."""
        runtime = self._runtime
        runtime.check_open()
        with runtime._internal.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        statistics = runtime.statistics()
        worker = statistics.child("embedder")
        wiring = runtime._internal.wiring
        try:
            substrate: SubstrateStatus | None = wiring.substrate.ask(GetSubstrateStatus(), timeout=5.0)
        except ActorUnavailable:
            substrate = None
        embedder = config.embedder if config else "hash"
        configured = runtime.config.memory_embedder
        try:
            model: EmbedderWorkerStatus | None = wiring.embedder.ask(GetEmbedderWorkerStatus(), timeout=1.0)
        except ActorUnavailable:
            # Busy inside a request to a slow embedder: its model pid is not worth waiting for.
            model = None
        return MemoryStatus(
            enabled=bool(config and config.enabled),
            provider=config.provider if config else "hindsight",
            embedder=embedder,
            substrate=statistics.child("substrate").state,
            records=substrate.records if substrate else 0,
            missing_vectors=substrate.missing_vectors if substrate else 0,
            embedder_error=substrate.embedder_error if substrate else "",
            by_lifecycle=substrate.by_lifecycle if substrate else {},
            by_replication=substrate.by_replication if substrate else {},
            replication_note=runtime.replication_note(),
            worker=worker.state,
            worker_restarts=worker.total_restarts,
            embedder_late=substrate.embedder_late if substrate else False,
            configured_embedder=configured if configured != embedder else "",
            model_pid=model.pid if model is not None else None,
        )
