"""`rt.memory`: turning memory on and off, switching embedders, and its status.

Switching the embedder of a home that holds memories is cheap to ask for and done in the
background: the substrate indexes the new embedder's stored vectors at once (none, the first time)
and fills in the rest through the embedding worker while recall goes on with what is indexed;
`status()` shows how far it got, and `wait_vectors()` waits for the end. Vectors are kept per
embedder, so switching back finds the old ones in place. Declared in `resident.operations.memory`.
"""

from __future__ import annotations

import logging

from resident.actors.replication import NO_REALM_NOTE
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
from resident.messages.memory_calls import (
    EnableMemory,
    Indexed,
    MemorySwitch,
    NoOptions,
    VectorsReady,
    WaitIndexed,
    WaitVectors,
)
from resident.messages.store import Commit, Committed, GetWriterStatistics
from resident.runtime.context import Call, Context
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.tables import MEMORY_CONFIG

__all__ = ["disable", "enable", "require_memory", "settle", "status", "wait_indexed", "wait_vectors"]

logger = logging.getLogger(__name__)

def require_memory(memory: MemoryStatus) -> None:
    """`MemoryDisabled` (naming the command that turns memory on) unless `memory` says memory is on."""
    if not memory.enabled:
        raise MemoryDisabled(MEMORY_OFF_MESSAGE)


def enable(context: Context, _call: Call, request: EnableMemory) -> MemorySwitch:
    """Admit the provider (Hindsight, in supervised mode) with its embedder; `changed` is False if it was on so."""
    if request.provider not in PROVIDERS:
        raise InvalidInput(
            f"unknown memory provider {request.provider!r}; the provider is: {', '.join(PROVIDERS)}"
        )
    spec = _checked_embedder(context, request.embedder)
    event = MemorySwitchedOn(at=context.clock.time(), provider=request.provider, embedder=spec)
    committed: Committed = context.write(Commit(events=(event,)))
    if committed.applied:
        # The substrate turns on (and switches embedder) when it hears of the event; the next
        # request should find it on, embedding with the embedder just admitted.
        _settle(context)
    return MemorySwitch(changed=committed.applied > 0, enabled=True)


def _checked_embedder(context: Context, embedder: str | None) -> str:
    if embedder is not None:
        return check_embedder_spec(embedder)
    config = context.config
    try:
        return check_embedder_spec(config.memory_embedder)
    except ResidentError as error:
        where = config.path or "resident.toml"
        raise type(error)(f"{where}: [memory] embedder: {error.message}") from None


def disable(context: Context, _call: Call, _request: NoOptions) -> MemorySwitch:
    """Stop new writes and recalls; nothing is deleted. `changed` is False if memory was already off."""
    committed: Committed = context.write(Commit(events=(MemorySwitchedOff(at=context.clock.time()),)))
    if committed.applied:
        _settle(context)  # so that no recall after this returns is still served
    return MemorySwitch(changed=committed.applied > 0, enabled=False)


def _settle(context: Context) -> None:
    # The switch is durable already; a substrate that is restarting reads it when it starts.
    try:
        settle(context)
    except ActorUnavailable as error:
        logger.warning("memory switched, but the substrate did not confirm it in time: %s", error)


def settle(context: Context, timeout: float = 30.0) -> None:
    """Wait until the substrate has taken in every change committed so far, and stored what it derived.

    Every committed record reaches the substrate (the writer publishes it before answering anyone),
    and a recall takes in whatever reached it first, so a `remember` is recallable once it returns.
    The substrate analyses new records in batches just after: this waits until it has, and until
    their keyword terms (and hash vectors) are stored. The writer answers statistics once what was
    queued before is committed, and each actor handles messages in order.
    """
    context.check_open()
    context.writer.ask(GetWriterStatistics(), timeout)
    context.substrate.ask(GetSubstrateStatus(), timeout)
    context.writer.ask(GetWriterStatistics(), timeout)


def wait_indexed(context: Context, _call: Call, request: WaitIndexed) -> Indexed:
    """Whether the substrate took in every change committed so far within `timeout` (see `settle`)."""
    try:
        settle(context, request.timeout)
    except ActorUnavailable as error:
        return Indexed(done=False, reason=str(error))
    return Indexed(done=True)


def wait_vectors(context: Context, _call: Call, request: WaitVectors) -> VectorsReady:
    """Whether every memory has a vector of the current embedder before `timeout` (at once with `hash`)."""
    context.check_open()
    try:
        context.substrate.ask(WaitForVectors(), request.timeout)
    except ActorUnavailable:
        return VectorsReady(ready=False)
    return VectorsReady(ready=True)


def status(context: Context, _call: Call, _request: NoOptions) -> MemoryStatus:
    """On or off, provider and embedder, substrate and embedding worker health, record counts by state."""
    context.check_open()
    with context.store.reader() as reader:
        config = reader.get(MEMORY_CONFIG, "memory")
    statistics = context.statistics()
    worker = statistics.child("embedder")
    try:
        substrate: SubstrateStatus | None = context.substrate.ask(GetSubstrateStatus(), timeout=5.0)
    except ActorUnavailable:
        substrate = None
    embedder = config.embedder if config else "hash"
    configured = context.config.memory_embedder
    try:
        model: EmbedderWorkerStatus | None = context.embedder.ask(GetEmbedderWorkerStatus(), timeout=1.0)
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
        replication_note=NO_REALM_NOTE if context.config.realm_url is None else "",
        worker=worker.state,
        worker_restarts=worker.total_restarts,
        embedder_late=substrate.embedder_late if substrate else False,
        configured_embedder=configured if configured != embedder else "",
        model_pid=model.pid if model is not None else None,
    )
