"""The Hindsight substrate: indexes memories as they become durable, keeps their vectors filled, answers recall.

The substrate is not on a `remember`'s path: the caller (or the member actor) checks and shapes
the record and the writer commits it and answers the caller. The writer tells the substrate of
every committed change (`Published`) before it answers anyone, and the substrate takes new
records in a batch at a time: one analysis of their texts gives their keyword terms and, with the
hash embedder, their vectors; both are stored (derived entries, no event, best effort) and the
records indexed. Every read of the index (`_indexed()`) takes in whatever was published before it,
so a record is keyword-recallable by the time its `remember` returns. Records whose commit stored
their terms already (imports) are indexed from what is stored.

Vectors of any embedder but the hash embedder follow the write: the substrate never waits for
one. The embedding worker (`resident.actors.embedding`) runs the embedder in its own thread; the
substrate asks it for the vectors of records that lack them a chunk at a time (the filler) and for
the vector of each recall's query, and the answers come back as messages. A recall waits for its
query's vector at most `QUERY_WAIT` seconds, and not at all while the worker is failing or late
(some request outstanding longer than that): it then answers from the keyword index and whatever
vectors are indexed. The filler retries a failing embedder on a growing schedule.

LMDB is the truth and the in-memory `RecallIndex` a cache, built from the store after the start
ping is answered, a chunk at a time between other messages (`resident.actors.index_build`): no
start waits on work the size of the home. A recall asked before the build is done is answered
once it is (the build going on a chunk per turn meanwhile), and a status finishes it first, so
both answer from every record. Every recall result is re-read from LMDB and
selected for serving by `resident.memory.serving`, so a record withheld or retracted a moment ago
is never returned even if the index has not heard of the change yet. A record committed but not yet analysed when the
substrate stops is found at the next rebuild without stored terms and analysed then. Vectors are
stored per embedder (`resident.memory.stored_vectors`): switching embedders rebuilds the index with
the new one's vectors and fills in the rest in the background; switching back finds the old ones
in place.

This actor is the dispatcher: it wires messages to the machines beside it, each a plain class that
owns its state and transitions and schedules itself through the wake-up or timer it is given —
the index's lifecycle (`substrate_lifecycle`: build, load, generation, check), the indexing queue
(`substrate_indexing`), the embedder's state (`substrate_embedder`), vector filling
(`substrate_filling`), waiting recalls (`substrate_waiting`), snapshot saving (`substrate_saving`)
and usage flushing (`substrate_usage`). The reading, analysing, searching and writing stay here.
"""

from __future__ import annotations

import errno
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.actors.index_build import index_stored
from resident.actors.index_snapshot import (
    Snapshot,
    SnapshotState,
    load_snapshot,
    snapshot_path,
    snapshot_state,
    verify_snapshot,
    write_snapshot,
)
from resident.actors.io_worker import Done, IoWorker
from resident.actors.substrate_embedder import FILL_DEADLINE, QUERY_WAIT, EmbedderState
from resident.actors.substrate_filling import FillDeadline, VectorFilling
from resident.actors.substrate_indexing import Indexable, IndexingQueue, index_entry, joined_terms, stack_vectors
from resident.actors.substrate_lifecycle import IndexLifecycle, Verify
from resident.actors.substrate_saving import SnapshotSaves
from resident.actors.substrate_usage import UsageFlush
from resident.actors.substrate_waiting import BuildDeadline, QueryDeadline, Search, WaitingRecall, WaitingRecalls
from resident.errors import InvalidInput, MemoryDisabled, MemoryIndexing, SubstrateUnavailable
from resident.memory.embedders import embedder_name, runs_inline, semantic_weight
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.index import RecallIndex
from resident.memory.integrity import corruption_error
from resident.memory.records import MAX_QUERY_CHARS, clean_query, indexed_text
from resident.memory.serving import Served, select_served
from resident.memory.stored_terms import encode_terms, is_current, split_terms
from resident.memory.stored_vectors import encode_vector, stored_vector, vector_key
from resident.memory.text import Analysis, analyse, term_ids, term_ids_batch, terms_of
from resident.memory.visibility import can_see_bank
from resident.messages.bounds import MAX_RECALL_K
from resident.messages.memory import (
    Bank,
    BankCreated,
    EmbeddingFailed,
    EmbedTexts,
    GetSubstrateStatus,
    Lifecycle,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    NoteRecalled,
    Recall,
    RecallHit,
    RecordAdmitted,
    RecordRetracted,
    RecordSuperseded,
    ReplicationState,
    SubstrateStatus,
    TextsEmbedded,
    VectorsFilled,
    WaitForVectors,
)
from resident.messages.replication import RecordConflicted, RecordInvalidated, RecordsRestored, RecordsSynced
from resident.messages.store import Commit, Published
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Store
from resident.store.tables import BANKS, MEMORY_CONFIG, RECORDS, TERMS, VECTORS
from resident.store.usage import usage_entries
from resident.supervisor import (
    Address,
    ChildContext,
    Completed,
    ForwardReply,
    Reply,
    SupervisedActor,
    settle_all,
)

__all__ = ["MAX_QUERY_CHARS", "MAX_RECALL_K", "QUERY_WAIT", "START_TIMEOUT", "Substrate"]

logger = logging.getLogger(__name__)

# How long the substrate's start may take: reading its settings and warming up the text analysis,
# never indexing the home (see `resident.actors.index_build`).
START_TIMEOUT = 15.0
# Terms written back for records stored without them go in commits of this many (a home written
# before terms were stored has all its records to fill in at its first rebuild).
TERMS_FILL_BATCH = 5_000
EmbedderFactory = Callable[[str], Embedder]
# Latin, accented and CJK text: analysing it touches every table the analysis builds lazily.
_WARM_UP_TEXT = "Warm-up: análisis 预热"
_PROBE_TEXT = "probe"


# -- messages the substrate tells itself ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _IndexQueued:
    """Analyse and index the durable records queued since the last time."""


@dataclass(frozen=True, slots=True)
class _BuildChunk:
    """Index the next chunk of the home's stored records (the build after a start or a switch)."""


@dataclass(frozen=True, slots=True)
class _SaveIndex:
    """Persist the index (`resident.actors.index_snapshot`)."""


@dataclass(frozen=True, slots=True)
class _Saved:
    """The I/O thread finished writing the snapshot of `records` records, reflecting event `seq`."""

    records: int
    # How many records added since the last save this one covers.
    unsaved: int
    started: float


@dataclass(frozen=True, slots=True)
class _Verified:
    """The I/O thread checked the mapped files of the snapshot loaded by build `generation`."""

    generation: int


@dataclass(frozen=True, slots=True)
class _Fill:
    """Fill in vectors of records that have none of the current embedder's."""


@dataclass(frozen=True, slots=True)
class _FlushUsage:
    """Write the recall counts gathered since the last flush (`UsageFlush`)."""


# -- what travels with a record or a request --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Filled:
    ids: tuple[str, ...]
    vectors: npt.NDArray[np.float32]
    embedder: str


class Substrate(SupervisedActor):
    """Hindsight's retain and recall over the home's memory records."""

    def __init__(
        self,
        context: ChildContext,
        store: Store,
        writer: Address,
        embedder_factory: EmbedderFactory,
        worker: Address,
    ) -> None:
        super().__init__(context)
        self.store = store
        self.writer = writer
        self.worker = worker
        self._make_embedder = embedder_factory
        # Memory on or off, as of the last switch event this substrate heard of. The writer checks
        # again inside the write transaction; this spares every request a read of its own.
        self._enabled = False
        self._embedder = EmbedderState()
        self._life = IndexLifecycle(store, self.wake_up(_BuildChunk()), self.schedule)
        # Where the index's persisted copy lives, and when it is persisted again.
        self._snapshot = snapshot_path(store.path)
        self._saves = SnapshotSaves(self.wake_up(_SaveIndex()))
        # Snapshot writes and checks run on this thread, never the actor's (a recall never waits on
        # the disk).
        self._io: IoWorker | None = None
        # Durable records the index has not taken in yet.
        self._queue = IndexingQueue(self.wake_up(_IndexQueued()))
        self._banks: dict[str, Bank] = {}
        self._filling = VectorFilling(self.wake_up(_Fill()), self.schedule)
        self._tokens = itertools.count(1)
        self._waiting = WaitingRecalls(self.schedule, self._answer_waiting)
        # Callers of `WaitForVectors`, answered once no record lacks a vector.
        self._vector_waiters: list[Reply | None] = []
        self._usage = UsageFlush(self.wake_up(_FlushUsage()), self._write_usage)

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        self._enabled = config is not None and config.enabled
        self._use_embedder(config.embedder if config is not None else "hash")
        # Text analysis builds its Unicode tables on first use, which takes a second or more.
        # Requests wait for `setup` anyway; without this the first remember or recall would.
        term_ids(_WARM_UP_TEXT)
        with self.store.reader() as reader:
            self._banks = dict(reader.items(BANKS))

    def started(self) -> None:
        """The start ping is answered: the persisted index is loaded and the events after it replayed,
        or, without a fitting one, the index is built from the store a chunk per turn."""
        started = time.perf_counter()
        self._io = IoWorker(self.name, self.actor_ref.tell)
        with self.store.reader() as reader:
            last = reader.last_event()
        loaded = load_snapshot(self._snapshot, embedder=self._embedder.name, last_seq=last[0] if last else 0)
        if loaded is None:
            self._start_build()
            return
        self._resume(loaded, started)

    def teardown(self) -> None:
        # Records not taken in yet are analysed now, so their terms and vectors reach the writer
        # (which stops after this actor) instead of being analysed again at the next start.
        self._indexed()
        # Recalls still waiting for a query vector are answered from what is indexed; nobody is
        # left waiting on a substrate that stopped.
        if self._waiting.for_build():
            self._complete()
            self._answer_built()
        self._waiting.give_up()
        waiters, self._vector_waiters = self._vector_waiters, []
        stopped = SubstrateUnavailable("the substrate stopped before every memory had its vector")
        settle_all([(reply, None, stopped) for reply in waiters])
        self._usage.flush()
        io, self._io = self._io, None
        if io is not None:
            io.close()
        wanted = self._saves.wanted_at_close(self._life.index.graph_rows())
        if wanted and not self._life.building:
            # At a stop the save is made here, on the way out: one still queued on the I/O thread
            # was dropped with it, and one running there finishes first (writes take turns).
            self._write(snapshot_state(self._indexed()), self._life.covered_seq)
        self._life.let_go()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        io, self._io = self._io, None
        if io is not None:
            io.close()
        # The next incarnation loads or builds an index of its own: this one's graph thread stops here.
        self._life.let_go()
        # Waiting recalls were never answered: the next incarnation takes them, in order. Records
        # not indexed yet are durable; its rebuild finds them (and analyses those without terms).
        vector_waiters, self._vector_waiters = self._vector_waiters, []
        self.context.address.rescue(
            [*self._waiting.rescue(), *((WaitForVectors(), reply) for reply in vector_waiters)]
        )

    def _use_embedder(self, spec: str) -> None:
        inline = self._make_embedder(spec) if runs_inline(spec) else None
        self._embedder = EmbedderState(
            spec=spec,
            name=inline.name if inline is not None else embedder_name(spec),
            weight=semantic_weight(spec),
            inline=inline,
        )
        self._filling.forget_request()

    def _start_build(self) -> None:
        """Index the home from LMDB from the next `_BuildChunk` on; vectors of another embedder count as missing."""
        with self.store.reader() as reader:
            self._banks = dict(reader.items(BANKS))
            last = reader.last_event()
        # The build reads every record as committed at this event or later.
        self._life.build_from_store(last[0] if last else 0, self._embedder.name)
        self._filling.restart()

    def _complete(self) -> RecallIndex:
        """The index with every stored and queued record in it: the build finishes first if it has not."""
        unstored = self._life.finish()
        if unstored is not None:
            self._built(unstored)
        return self._indexed()

    def _built(self, unstored: list[tuple[str, npt.NDArray[np.uint64]]]) -> None:
        """A chunk was indexed: store the terms it analysed; once the build is done, fill vectors in."""
        if unstored:
            self._store_derived(unstored)
        life = self._life
        if life.building:
            return
        logger.info("substrate indexed %d records in %.2f s", len(life.index), life.seconds)
        self._saves.wanted()
        self._filling.soon()
        self._settle_vector_waiters()
        self._answer_built()

    def _resume(self, loaded: Snapshot, started: float) -> None:
        """Take the persisted index (loaded since `started`), and replay the store's events after it into it."""
        life = self._life
        life.resumed(loaded)
        self._saves.loaded(life.index.graph_rows())
        with self.store.reader() as reader:
            events = list(reader.events(loaded.seq + 1))
        life.replayed = len(events)
        if events:
            admitted = [event.record.id for _, event in events if isinstance(event, RecordAdmitted)]
            # The records admitted since are indexed from their stored terms and vectors, as a build
            # would; the events then change what changed since (an admission finds its record indexed).
            unstored = index_stored(self.store, life.index, self._embedder.name, admitted)
            if unstored:
                self._store_derived(unstored)
            self._saves.replayed(len(admitted))
            self._published(Published(tuple(event for _, event in events), frozenset(admitted), events[-1][0]))
            self._refill(
                [record_id for _, event in events if isinstance(event, VectorsFilled) for record_id in event.ids]
            )
        index = self._indexed()
        life.seconds = time.perf_counter() - started
        logger.info(
            "substrate loaded %d records and replayed %d events in %.2f s",
            len(index),
            len(events),
            life.seconds,
        )
        self._filling.soon()
        self._settle_vector_waiters()

    def _refill(self, ids: Sequence[str]) -> None:
        """Index the stored vectors of `ids` (filled in after the persisted index was written)."""
        name, index = self._embedder.name, self._indexed()
        with self.store.reader() as reader:
            found = [(i, stored_vector(reader.raw(VECTORS, vector_key(name, i)), name)) for i in ids if i in index]
        rows = [(i, vector) for i, vector in found if vector is not None and len(vector) == index.vector_dim]
        if rows:
            index.set_vectors([i for i, _ in rows], np.stack([vector for _, vector in rows]))

    def _save_index(self) -> None:
        """Persist the whole index (not while it is being built) on the I/O thread, from a copy taken now.

        A failure only costs a longer restart.
        """
        if self._life.building:
            return
        if not self._saves.may_start():
            return
        io = self._io
        if io is None:
            return
        started = time.perf_counter()
        index = self._indexed()
        unsaved = self._saves.started(index.graph_rows())
        state, seq = snapshot_state(index), self._life.covered_seq
        io.run(_Saved(state.records, unsaved, started), lambda: self._write(state, seq))

    def _write(self, state: SnapshotState, seq: int) -> bool:
        """Write `state` (on whichever thread calls); whether it was written."""
        try:
            write_snapshot(self._snapshot, state, embedder=self._embedder.name, seq=seq)
        except OSError as error:
            # A full disk is already said, once and typed, by the write that met it (DiskFull); here it only
            # costs a longer restart, so it is not said again on every command's close.
            log = logger.info if error.errno == errno.ENOSPC else logger.warning
            log("recall index not persisted (%s); the next start rebuilds or replays more", error)
            return False
        return True

    def _saved(self, saved: _Saved, written: bool) -> None:
        if written:
            logger.info("substrate persisted %d records in %.2f s", saved.records, time.perf_counter() - saved.started)
        self._saves.finished(saved.unsaved, written=written)

    def _verified(self, verified: _Verified, problem: str) -> None:
        """The loaded snapshot's files were checked: one that does not match means building from the store."""
        if not problem or not self._life.current(verified.generation):
            return
        logger.warning("recall index snapshot %s is damaged (%s); building from the store", self._snapshot, problem)
        self._snapshot.unlink(missing_ok=True)
        self._indexed()
        self._start_build()

    def _from_io(self, done: Done) -> None:
        match done.tag:
            case _Saved() as saved:
                if done.error is not None:
                    logger.warning("recall index not persisted (%s)", done.error)
                self._saved(saved, done.error is None and bool(done.value))
            case _Verified() as verified:
                problem = str(done.value) if done.error is None else f"the check failed: {done.error}"
                self._verified(verified, problem)

    # -- messages ---------------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        match message:
            case Recall():
                return self._recall(message)
            case NoteRecalled(ids=ids):
                self._usage.note(ids)
            case Completed(outcomes=outcomes):
                self._completed(outcomes)
            case Published():
                self._published(message)
            case TextsEmbedded():
                self._embedded(message)
            case EmbeddingFailed():
                self._embedding_failed(message)
            case _BuildChunk():
                unstored = self._life.step()
                if unstored is not None:
                    self._built(unstored)
            case _SaveIndex():
                self._saves.due()
                self._save_index()
            case Done():
                self._from_io(message)
            case Verify(generation=generation, unverified=unverified):
                if self._io is not None and self._life.current(generation):
                    self._io.run(_Verified(generation), lambda: verify_snapshot(unverified))
            case _IndexQueued():
                self._queue.due()
                self._indexed()
            case _Fill():
                if self._filling.due():
                    self._fill()
            case FillDeadline(token=token):
                self._fill_deadline(token)
            case QueryDeadline(token=token):
                self._waiting.due(token)
            case BuildDeadline(token=token):
                self._refuse_during_build(token)
            case _FlushUsage():
                self._usage.due()
            case GetSubstrateStatus():
                return self._status()
            case WaitForVectors():
                self._vector_waiters.append(self.defer())
                self._settle_vector_waiters()
            case _:
                return super().handle(message)
        return None

    def _require_memory(self) -> None:
        if not self._enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

    # -- taking in new records ------------------------------------------------------------------------

    def _analyse(self, records: Sequence[MemoryRecord]) -> None:
        """Analyse the records queued for it as one batch: their keyword terms and, when the embedder
        runs here, their vectors; store both (derived entries: no event, best effort) and queue the
        records for the index.

        One analysis serves the hash embedder and the keyword index, and it is most of the work of
        each: analysing a batch costs a small part of analysing its texts one at a time.
        """
        texts = [indexed_text(record) for record in records]
        parts = list(analyse(texts))
        vectors = self._inline_vectors(texts, parts)
        terms = split_terms(terms_of(parts), len(texts))
        name = self._embedder.name
        self._store_derived(
            [(record.id, terms[row]) for row, record in enumerate(records)],
            None if vectors is None else (name, [(record.id, vectors[row]) for row, record in enumerate(records)]),
        )
        self._queue.ready(
            Indexable(record, None if vectors is None else vectors[row], name, terms[row], texts[row])
            for row, record in enumerate(records)
        )

    def _inline_vectors(self, texts: Sequence[str], parts: Sequence[Analysis]) -> npt.NDArray[np.float32] | None:
        """The vectors of `texts` when the embedder runs here (else they follow from the worker); the
        hash embedder starts from the texts' analysis, most of its work."""
        inline = self._embedder.inline
        if inline is None:
            return None
        if isinstance(inline, HashEmbedder):
            return inline.embed_analysed(parts, len(texts))
        return inline.embed(texts)

    def _completed(self, outcomes: Iterable[tuple[Any, Any, BaseException | None]]) -> None:
        for context, _value, error in outcomes:
            match context:
                case _Filled():
                    self._vectors_written(context, error)

    def _indexed(self) -> RecallIndex:
        """The index, with every queued record in it.

        Every read of the index goes through here, so a recall always sees the writes acknowledged
        before it, whether or not the queue's wake-up came yet.
        """
        queue = self._queue
        if unread := queue.take_unread():
            self._read_stored(unread)
        if unanalysed := queue.take_unanalysed():
            self._analyse(unanalysed)
        if ready := queue.take_ready():
            self._index_records(ready)
        return self._life.index

    def _index_records(self, admitted: Sequence[Indexable]) -> None:
        index = self._life.index
        fresh = [item for item in admitted if item.record.id not in index]
        if not fresh:
            return
        for item in fresh:
            if item.record.bank not in self._banks:
                self._learn_bank(item.record)
        name = self._embedder.name
        matrix, present = stack_vectors([item.vector if item.embedder == name else None for item in fresh])
        index.add([index_entry(item.record, item.text) for item in fresh], matrix, present, joined_terms(fresh))
        self._saves.added(len(fresh))
        if present is None or not present.all():
            self._filling.soon()

    def _learn_bank(self, record: MemoryRecord) -> None:
        with self.store.reader() as reader:
            bank = reader.get(BANKS, record.bank)
        if bank is not None:
            self._banks[bank.name] = bank

    # -- changes committed -------------------------------------------------------------------------

    def _published(self, message: Published) -> None:
        self._life.covered(message.last_seq)
        for event in message.events:
            match event:
                case BankCreated(bank=bank):
                    self._banks[bank.name] = bank
                case RecordAdmitted(record=record):
                    self._admitted(record, stored=record.id in message.stored_terms)
                case RecordSuperseded(id=record_id):
                    self._set_state(record_id, lifecycle="superseded")
                case RecordRetracted(id=record_id):
                    self._set_state(record_id, lifecycle="retracted")
                case MemorySwitchedOn(embedder=spec):
                    self._enabled = True
                    if spec != self._embedder.spec:
                        self._switch_embedder(spec)
                case MemorySwitchedOff():
                    self._enabled = False
                case RecordsSynced(ids=ids):
                    for record_id in ids:
                        self._set_state(record_id, replication="synced")
                case RecordsRestored(ids=ids):
                    for record_id in ids:
                        self._set_state(record_id, replication="pending")
                case RecordConflicted(id=record_id):
                    self._set_state(record_id, replication="conflict")
                case RecordInvalidated(id=record_id):
                    self._set_state(record_id, replication="invalidated")

    def _set_state(
        self, record_id: str, *, lifecycle: Lifecycle | None = None, replication: ReplicationState | None = None
    ) -> None:
        """Apply a committed change of a record's state to the index.

        While the build runs, a record it has not read yet is left alone: the build reads the record
        as committed, with this change in it.
        """
        index = self._indexed()
        if record_id not in index and self._life.building:
            return
        if lifecycle is not None:
            index.set_lifecycle(record_id, lifecycle)
        if replication is not None:
            index.set_replication(record_id, replication)

    def _admitted(self, record: MemoryRecord, *, stored: bool) -> None:
        """Queue a new record for the index: analysed here, or (when its commit stored its terms, as
        an import's does) indexed from what is stored."""
        if record.id not in self._life.index:
            self._queue.admit(record, stored=stored)

    def _switch_embedder(self, spec: str) -> None:
        """Index with another embedder's vectors: those stored already count, the rest are filled in."""
        self._indexed()
        self._use_embedder(spec)
        self._start_build()

    def _read_stored(self, records: Sequence[MemoryRecord]) -> None:
        """Queue records committed with their terms (an import, a direct commit) with their stored vectors.

        Terms stored by an older analysis are analysed again and stored; missing vectors are filled
        in like any others.
        """
        name = self._embedder.name
        texts = [indexed_text(record) for record in records]
        with self.store.reader() as reader:
            vectors = [stored_vector(reader.raw(VECTORS, vector_key(name, record.id)), name) for record in records]
            unstored = [row for row, record in enumerate(records) if not is_current(reader.raw(TERMS, record.id))]
        terms = split_terms(term_ids_batch(texts), len(texts))
        if unstored:
            self._store_derived([(records[row].id, terms[row]) for row in unstored])
        self._queue.ready(
            Indexable(record, vectors[row], name, terms[row], texts[row]) for row, record in enumerate(records)
        )

    def _store_derived(
        self,
        terms: Sequence[tuple[str, npt.NDArray[np.uint64]]],
        vectors: tuple[str, Sequence[tuple[str, npt.NDArray[np.float32]]]] | None = None,
    ) -> None:
        """Store records' keyword terms (and an embedder's vectors of them), in a few commits.

        Best effort, like recall counts: nobody waits, and a lost write only means analysing those
        texts again at the next rebuild (and filling their vectors in). Both tables are derived
        caches that no event rebuilds, so the commits carry no event.
        """
        for first in range(0, len(terms), TERMS_FILL_BATCH):
            chunk = terms[first : first + TERMS_FILL_BATCH]
            stored_vectors: tuple[tuple[str, bytes], ...] = ()
            if vectors is not None:
                name, rows = vectors
                stored_vectors = tuple(
                    (vector_key(name, record_id), encode_vector(name, vector))
                    for record_id, vector in rows[first : first + TERMS_FILL_BATCH]
                )
            self.writer.tell(
                Commit(
                    events=(),
                    vectors=stored_vectors,
                    terms=tuple((record_id, encode_terms(ids)) for record_id, ids in chunk),
                )
            )

    # -- filling in vectors -----------------------------------------------------------------------------

    def _fill(self) -> None:
        """Embed the next chunk of records that lack a vector of the current embedder (no request is out).

        The hash embedder embeds here and now; any other goes to the worker, one request at a time.
        With nothing to fill but the embedder marked down, a probe asks whether it is back.
        """
        embedder = self._embedder
        missing = self._indexed().missing_vector_ids(embedder.chunk(), exclude=self._filling.in_progress)
        if not missing:
            if embedder.down and embedder.inline is None:
                self._ask_worker((), (_PROBE_TEXT,))
            return
        with self.store.reader() as reader:
            records = [r for r in (reader.get(RECORDS, i) for i in missing) if r is not None]
        texts = [indexed_text(record) for record in records]
        ids = tuple(record.id for record in records)
        if embedder.inline is not None:
            self._write_vectors(ids, embedder.inline.embed(texts), embedder.name)
            self._filling.soon()
            return
        self._ask_worker(ids, tuple(texts))

    def _ask_worker(self, ids: tuple[str, ...], texts: tuple[str, ...]) -> None:
        embedder = self._embedder
        token = next(self._tokens)
        self._filling.asked(token, ids, len(texts))
        embedder.sent(token, self.clock.monotonic())
        self.worker.tell(EmbedTexts(token=token, spec=embedder.spec, texts=texts))

    def _write_vectors(self, ids: tuple[str, ...], vectors: npt.NDArray[np.float32], name: str) -> None:
        """Store filled-in vectors with their event; they are indexed once the write is durable."""
        self._filling.writing(ids)
        stored = [(vector_key(name, record_id), encode_vector(name, vectors[row])) for row, record_id in enumerate(ids)]
        self.writer.tell(
            Commit(events=(VectorsFilled(at=self.clock.time(), ids=ids, embedder=name),), vectors=tuple(stored)),
            ForwardReply(self.context.address, _Filled(ids, vectors, name)),
        )

    def _vectors_written(self, filled: _Filled, error: BaseException | None) -> None:
        self._filling.written(filled.ids)
        if filled.embedder != self._embedder.name:
            return
        if error is not None:
            self._filling.soon(self._embedder.retry_wait())
            return
        index = self._indexed()
        rows = [i for i, record_id in enumerate(filled.ids) if record_id in index]
        index.set_vectors([filled.ids[i] for i in rows], filled.vectors[rows])
        self._settle_vector_waiters()

    def _settle_vector_waiters(self) -> None:
        if self._vector_waiters and not self._life.building and not self._indexed().missing_vector_count():
            waiters, self._vector_waiters = self._vector_waiters, []
            settle_all([(reply, None, None) for reply in waiters])

    def _fill_deadline(self, token: int) -> None:
        if not self._filling.asks(token):
            return
        self._fill_failed(token, f"the embedding worker did not answer within {FILL_DEADLINE:.0f} s")

    def _fill_failed(self, token: int, error: str) -> None:
        self._embedder.answered(token)
        self._filling.failed(self._embedder.failed(error))

    def _embedder_failed(self, error: str) -> None:
        """The embedder failed: recalls stop waiting for it, and the filler tries again later."""
        self._filling.soon(self._embedder.failed(error))

    # -- answers from the embedding worker ----------------------------------------------------------

    def _embedded(self, answer: TextsEmbedded) -> None:
        embedder = self._embedder
        embedder.answered(answer.token)
        if answer.spec != embedder.spec:
            return  # for an embedder switched away from meanwhile
        count = len(answer.vectors) // (4 * answer.dim) if answer.dim > 0 else 0
        vectors = np.frombuffer(answer.vectors, dtype=np.float32).reshape(count, max(answer.dim, 1))
        if self._waiting.waits(answer.token):
            embedder.succeeded(count, answer.seconds, fill=False)
            self._waiting.vector_came(answer.token, vectors[0] if count else None)
        elif self._filling.asks(answer.token):
            width = self._life.index.vector_dim
            if width is not None and answer.dim != width:
                # The same embedder now answers in another width (a server given another model).
                self._fill_failed(
                    answer.token,
                    f"the embedder now answers {answer.dim}-dimensional vectors, its stored ones are {width}-"
                    "dimensional (was its model changed?); serve the first model again, or enable another embedder",
                )
                return
            ids = self._filling.answered()
            embedder.succeeded(count, answer.seconds, fill=bool(ids))
            if ids and count == len(ids):
                self._write_vectors(ids, vectors.copy(), embedder.name)
            self._filling.soon()

    def _embedding_failed(self, answer: EmbeddingFailed) -> None:
        self._embedder.answered(answer.token)
        if answer.spec != self._embedder.spec:
            return
        if self._waiting.waits(answer.token):
            self._embedder_failed(answer.error)
            self._waiting.vector_came(answer.token, None)
        elif self._filling.asks(answer.token):
            self._fill_failed(answer.token, answer.error)

    # -- recall -----------------------------------------------------------------------------------

    def _recall(self, message: Recall) -> list[RecallHit] | None:
        search = self._checked(message)
        if not search.banks:
            return []
        if self._life.building:
            # Answered once the build is done, which goes on a chunk per turn meanwhile: the
            # actor keeps serving writes and status between chunks instead of building the
            # rest of the home in this one turn (see `resident.actors.index_build`).
            self._waiting.wait_for_build(search, self.defer())
            self._life.hurry()
            return None
        embedder = self._embedder
        if embedder.inline is not None:
            return self._search(search, embedder.inline.embed([search.query])[0])
        if not self._should_wait():
            return self._search(search, None)
        self._wait_for_query_vector(search, self.defer())
        return None

    def _refuse_during_build(self, token: int) -> None:
        """A recall waited `BUILD_WAIT` for the build from the store and the build goes on: refuse it, typed.

        A build's end answers every recall parked for it (`_answer_built`), so a deadline that comes
        after it finds nothing parked."""
        parked = self._waiting.build_due(token)
        if parked is None:
            return
        refused = MemoryIndexing(
            f"the recall index is being built from the store ({len(self._life.index):,} memories so far); "
            "recall again in a minute"
        )
        settle_all([(parked[1], None, refused)])

    def _answer_built(self) -> None:
        """The build is done: answer the recalls that came during it, as if they came now."""
        embedder = self._embedder
        for search, reply in self._waiting.built():
            try:
                if embedder.inline is None and self._should_wait():
                    self._wait_for_query_vector(search, reply)
                    continue
                vector = embedder.inline.embed([search.query])[0] if embedder.inline is not None else None
                result: Any = self._search(search, vector)
            except Exception as error:  # noqa: BLE001 - the waiting caller gets the error, as an ask would
                settle_all([(reply, None, error)])
                continue
            settle_all([(reply, result, None)])

    def _wait_for_query_vector(self, search: Search, reply: Reply | None) -> None:
        """Answer `search` (to `reply`) once its query's vector comes back, or its wait runs out first."""
        embedder = self._embedder
        token = next(self._tokens)
        now = self.clock.monotonic()
        wait = embedder.query_wait(now)
        embedder.sent(token, now)
        self._waiting.wait_for_vector(token, WaitingRecall(search, reply, embedder.spec), wait)
        self.worker.tell(EmbedTexts(token=token, spec=embedder.spec, texts=(search.query,), query=True))

    def _checked(self, message: Recall) -> Search:
        self._require_memory()
        principal = message.principal
        if principal is None:
            raise InvalidInput("recall needs a principal (the member or app asking)")
        query = clean_query(message.query)
        k = max(1, min(int(message.k), MAX_RECALL_K))
        banks = [name for name, bank in self._banks.items() if can_see_bank(principal, bank)]
        return Search(message, principal, query, k, banks)

    def _should_wait(self) -> bool:
        """Whether a recall should wait for its query's vector: the worker is up and on time, and
        some record has a vector to compare it with."""
        embedder = self._embedder
        if embedder.down or not self._indexed().has_vectors():
            return False
        return not embedder.late(self.clock.monotonic())

    def _answer_waiting(self, waiting: WaitingRecall, vector: npt.NDArray[np.float32] | None) -> None:
        """Answer a recall that waited for its query's vector with the vector it got, if it still fits."""
        if waiting.spec != self._embedder.spec or (vector is not None and len(vector) != self._life.index.vector_dim):
            vector = None
        try:
            result: Any = self._search(waiting.search, vector)
        except Exception as error:  # noqa: BLE001 - the waiting caller gets the error, as an ask would
            settle_all([(waiting.reply, None, error)])
            return
        settle_all([(waiting.reply, result, None)])

    def _search(self, search: Search, vector: npt.NDArray[np.float32] | None) -> list[RecallHit]:
        message = search.message
        hits = self._complete().search(
            search.query,
            vector,
            search.banks,
            message.activation.domain,
            message.activation.project,
            self.clock.time(),
            k=min(MAX_RECALL_K, search.k * 2),
            include_inactive=message.include_inactive,
            semantic_weight=self._embedder.weight,
        )
        with self.store.reader() as reader:
            served = select_served(
                search.principal,
                hits,
                lambda record_id: reader.get(RECORDS, record_id),
                k=search.k,
                char_budget=message.char_budget,
                include_inactive=message.include_inactive,
            )
        self._learn_from(served)
        if message.count_usage:
            self._usage.note(served.used)
        return served.hits

    def _learn_from(self, served: Served) -> None:
        """What serving found the index had not heard yet: it learns now (the record was not served)."""
        for record in served.corrupted:
            logger.error("%s", corruption_error(record).message)
        index = self._indexed()
        for record_id, state in served.withheld:
            index.set_replication(record_id, state)
        for record_id, lifecycle in served.inactive:
            index.set_lifecycle(record_id, lifecycle)

    def _write_usage(self, ids: Sequence[str]) -> None:
        # Usage counts are best effort: no caller waits, and a lost batch only undercounts. They are
        # counted in place, with no event, so reads do not grow the log (`resident.store.usage`).
        self.writer.tell(Commit(events=(), usage=usage_entries(ids, self.clock.time())))

    # -- status -----------------------------------------------------------------------------------

    def _status(self) -> SubstrateStatus:
        # Status counts every record (and `settle` relies on it having taken every one in).
        index = self._complete()
        lifecycle, replication = index.counts()
        embedder = self._embedder
        return SubstrateStatus(
            records=len(index),
            missing_vectors=index.missing_vector_count(),
            embedder=embedder.name,
            embedder_error=embedder.error,
            rebuild_seconds=round(self._life.seconds, 3),
            by_lifecycle=lifecycle,
            by_replication=replication,
            queued=len(self._queue),
            batches=self._queue.batches,
            largest_batch=self._queue.largest_batch,
            spec=embedder.spec,
            embedder_late=embedder.late(self.clock.monotonic()),
            index_from=self._life.source,
            replayed=self._life.replayed,
        )
