"""The Hindsight substrate: embeds, durably writes and indexes memories, and answers recall.

Retain is a pipeline that never blocks on another actor. `Retain` messages queue up; one flush
embeds every queued text as a single numpy batch and tells the writer one `Commit` per record,
each carrying a `ForwardReply` back here with the caller's reply inside. When the writer's commit
is durable, its outcomes come back as one `Completed` message: the substrate indexes the new
records and settles all the callers together. A record is therefore recallable by the time its
`remember` returns. While a batch is at the writer, new retains wait for it and then go as one
batch: under load the batches grow with it, and most of the work is per batch, not per record.

LMDB is the truth and the in-memory `RecallIndex` a cache: `setup()` rebuilds it from the store
before the first request is handled (the address buffers requests meanwhile), and every recall
result is re-read from LMDB before it is served, so a record withheld or retracted a moment ago
is never returned even if the index has not heard of the change yet.

When the embedder fails (down, slow, garbage), writes go on without vectors and keyword/temporal
recall keeps working. The substrate then stops calling it on the write and recall paths, so a
slow endpoint costs one timeout rather than one per request; a backfill probes it on a growing
schedule and, once it answers, fills in the missing vectors and lets the paths use it again.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident.errors import EmbedderUnavailable, InvalidInput, MemoryDisabled
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.integrity import corruption_error, is_intact
from resident.memory.records import MAX_QUERY_CHARS, clean_query
from resident.memory.stored_terms import decode_terms, encode_terms, is_current, split_terms
from resident.memory.text import Analysis, Terms, analyse, term_ids, term_ids_batch, terms_of
from resident.memory.visibility import can_see, can_see_bank, is_served
from resident.messages.memory import (
    Bank,
    BankCreated,
    GetSubstrateStatus,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    Principal,
    Recall,
    RecallHit,
    Receipt,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
    Retain,
    SubstrateStatus,
    VectorsFilled,
)
from resident.messages.replication import RecordConflicted, RecordInvalidated, RecordsSynced
from resident.messages.store import Commit, Published
from resident.store.projections import MEMORY_OFF_MESSAGE
from resident.store.store import Buffer, Reader, Store
from resident.store.tables import BANKS, MEMORY_CONFIG, RECORDS, TERMS, VECTORS, Table
from resident.supervisor import Address, ChildContext, Completed, ForwardReply, Reply, SupervisedActor, settle_all

__all__ = ["MAX_QUERY_CHARS", "MAX_RECALL_K", "Substrate", "decode_vector", "encode_vector", "indexed_text"]

logger = logging.getLogger(__name__)

MAX_RECALL_K = 100
BACKFILL_BATCH = 256
BACKFILL_MAX_DELAY = 30.0
# Recall counts go to the writer in small, frequent commits: each rewrites the records it counts,
# and a short commit never holds the GIL long enough to delay a recall running beside it.
INDEX_DELAY = 0.02
USAGE_FLUSH_SECONDS = 0.25
USAGE_BATCH = 64
# Terms written back for records stored without them go in commits of this many (a home written
# before terms were stored has all its records to fill in at its first rebuild).
TERMS_FILL_BATCH = 5_000
EmbedderFactory = Callable[[str], Embedder]
# Latin, accented and CJK text: analysing it touches every table the analysis builds lazily.
_WARM_UP_TEXT = "Warm-up: análisis 预热"
# A stored record decoded as just what the index keeps of it (see `IndexEntry`).
_STORED_ENTRY = msgspec.msgpack.Decoder(IndexEntry)


def encode_vector(embedder: str, vector: npt.NDArray[np.float32]) -> bytes:
    """A stored vector: the embedder's name, a NUL, then float32 bytes (so a switch can tell them apart)."""
    return embedder.encode("utf-8") + b"\0" + np.asarray(vector, dtype=np.float32).tobytes()


def decode_vector(raw: bytes) -> tuple[str, npt.NDArray[np.float32]]:
    name, _, data = raw.partition(b"\0")
    return name.decode("utf-8"), np.frombuffer(data, dtype=np.float32)


def indexed_text(record: MemoryRecord) -> str:
    """What gets embedded and keyword-indexed: the summary, a newline, the body.

    A summary made from the body's first line is not repeated: it would count those words twice
    in keyword ranking, and analysing it again is a third of a rebuild's work for short memories.
    """
    # A long first line is summarised as its beginning and an ellipsis; that is in the body too.
    if record.body.startswith(record.summary.removesuffix("…")):
        return record.body
    return f"{record.summary}\n{record.body}"


def _stored_vector(raw: bytes | None, embedder: str) -> npt.NDArray[np.float32] | None:
    """A stored vector if `embedder` made it; vectors of another embedder count as missing."""
    if raw is None:
        return None
    stored_by, values = decode_vector(raw)
    return values if stored_by == embedder else None


def _entry(record: MemoryRecord, text: str = "") -> IndexEntry:
    return IndexEntry(
        id=record.id,
        bank=record.bank,
        lifecycle=record.lifecycle,
        replication=record.replication,
        activation=record.activation,
        occurred_at=record.occurred_at,
        recorded_at=record.recorded_at,
        text=text or indexed_text(record),
    )


@dataclass(frozen=True, slots=True)
class _EmbedFlush:
    """Embed and write whatever `Retain`s are queued (told by the substrate to itself)."""


@dataclass(frozen=True, slots=True)
class _IndexQueued:
    """Index the durable records queued since the last time (told by the substrate to itself)."""


@dataclass(frozen=True, slots=True)
class _Backfill:
    """Try to embed records that were written without a vector."""


@dataclass(frozen=True, slots=True)
class _FlushUsage:
    """Write the recall counts gathered since the last flush."""


@dataclass(frozen=True, slots=True)
class _Retained:
    record: MemoryRecord
    vector: npt.NDArray[np.float32] | None
    reply: Reply | None
    # Which embedder made `vector`: a switch of embedder while the write was in flight voids it.
    embedder: str = ""
    # The keyword terms of the record's text, from the analysis its embedding was made from.
    terms: npt.NDArray[np.uint64] | None = None
    # The record's `indexed_text`, when the caller made it already.
    text: str = ""


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
    ) -> None:
        super().__init__(context)
        self.store = store
        self.writer = writer
        self._make_embedder = embedder_factory
        self._embedder_spec = "hash"
        # Memory on or off, as of the last switch event this substrate heard of. The writer checks
        # again inside the write transaction; this spares every request a read of its own.
        self._enabled = False
        self._embedder: Embedder | None = None
        self._embedder_error = ""
        # Set when the embedder failed: the write and recall paths skip it until a probe succeeds.
        self._embedder_down = False
        self._index = RecallIndex()
        self._unindexed: list[_Retained] = []
        self._unindexed_ids: set[str] = set()
        self._index_queued = False
        self._banks: dict[str, Bank] = {}
        self._queue: list[tuple[Retain, Reply | None]] = []
        self._flush_queued = False
        # Records told to the writer whose outcome has not come back yet. While some are in
        # flight, new retains wait for them and then go as one batch (see `_request_flush`).
        self._in_flight = 0
        self._batches = 0
        self._largest_batch = 0
        self._backfill_queued = False
        self._backfill_delay = 1.0
        # Records whose backfilled vectors are being written; not embedded again meanwhile.
        self._filling: set[str] = set()
        # Ids served since the last usage commit, once per time served (each counts one recall).
        self._recalled: list[str] = []
        self._usage_timer_armed = False
        self._rebuild_seconds = 0.0

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        self._enabled = config is not None and config.enabled
        self._use_embedder(config.embedder if config is not None else "hash")
        # Text analysis builds its Unicode tables on first use, which takes a second or more.
        # Requests wait for `setup` anyway; without this the first remember or recall would.
        term_ids(_WARM_UP_TEXT)
        self._rebuild()

    def teardown(self) -> None:
        self._flush_usage()
        self._close_embedder()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        # Queued retains were never sent to the writer: the next incarnation takes them, in order.
        queued, self._queue = self._queue, []
        self.context.address.rescue(queued)
        self._close_embedder()

    def _use_embedder(self, spec: str) -> None:
        self._close_embedder()
        self._embedder_spec = spec
        self._embedder = self._make_embedder(spec)
        self._embedder_error = ""
        self._embedder_down = False
        self._backfill_delay = 1.0

    def _close_embedder(self) -> None:
        close = getattr(self._embedder, "close", None)
        if callable(close):
            close()

    def _rebuild(self) -> None:
        """Build the in-memory index from LMDB; vectors of another embedder count as missing."""
        started = time.perf_counter()
        index = RecallIndex()
        # Zero-copy: the records, vectors and terms are read straight from the map (a few hundred
        # MB at 100k records); copying them first cost more in page faults than in copying.
        with _bulk_load(), self.store.reader(zero_copy=True) as reader:
            self._banks = dict(reader.items(BANKS))
            keys, raw_records = reader.raw_columns(RECORDS)
            rows, vectors = _aligned(reader, VECTORS, keys)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="resident-rebuild") as pool:
                # The vectors are mostly copied, which lets go of the interpreter lock: assembled
                # on the other core while this thread decodes records and terms. (The views they
                # are copied from stay valid: the read transaction outlives the pool.)
                stacked = pool.submit(_stored_matrix, rows, vectors, len(keys), self._embedder_name())
                # Only what the index keeps is decoded; the texts' terms come from the terms table.
                entries = [_STORED_ENTRY.decode(raw) for raw in raw_records]
                terms, unstored = _stored_terms(reader, keys)
                matrix, present = stacked.result()
            index.add(entries, matrix, present, terms)
        if unstored:
            self._store_terms(unstored)
        self._index = index
        self._filling.clear()
        self._rebuild_seconds = time.perf_counter() - started
        logger.info("substrate indexed %d records in %.2f s", len(entries), self._rebuild_seconds)
        if index.missing_vector_ids():
            self._queue_backfill(0.0)

    def _embedder_name(self) -> str:
        return self._embedder.name if self._embedder is not None else self._embedder_spec

    # -- messages ---------------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, Retain):
            self._require_memory()
            self._queue.append((message, self.defer()))
            self._request_flush()
            return None
        if isinstance(message, Recall):
            return self._recall(message)
        if isinstance(message, Completed):
            self._completed(message)
            return None
        if isinstance(message, Published):
            self._published(message.events)
            return None
        if isinstance(message, _IndexQueued):
            self._index_queued = False
            self._indexed()
            return None
        if isinstance(message, _EmbedFlush):
            self._embed_flush()
            return None
        if isinstance(message, _Backfill):
            self._backfill()
            return None
        if isinstance(message, _FlushUsage):
            self._usage_timer_armed = False
            self._flush_usage()
            return None
        if isinstance(message, GetSubstrateStatus):
            return self._status()
        return super().handle(message)

    def _require_memory(self) -> None:
        if not self._enabled:
            raise MemoryDisabled(MEMORY_OFF_MESSAGE)

    # -- retain -----------------------------------------------------------------------------------

    def _embed(
        self, texts: Sequence[str], *, probe: bool = False, parts: Sequence[Analysis] | None = None
    ) -> npt.NDArray[np.float32] | None:
        """Vectors for `texts`, or None when the embedder fails or is known to be failing.

        Only a probe (the backfill) calls an embedder known to be failing; any failure, whatever
        its kind, leaves the write to go on without vectors and schedules the next probe. `parts`
        is the texts' analysis, if the caller made one: the hash embedder starts from it.
        """
        embedder = self._embedder
        if embedder is None or not texts or (self._embedder_down and not probe):
            return None
        try:
            if parts is not None and isinstance(embedder, HashEmbedder):
                vectors = embedder.embed_analysed(parts, len(texts))
            else:
                vectors = embedder.embed(texts)
        except Exception as error:  # noqa: BLE001 - no embedder failure may cost a write
            self._embedder_failed(error, probe=probe)
            return None
        self._embedder_error = ""
        self._embedder_down = False
        return vectors

    def _embedder_failed(self, error: Exception, *, probe: bool) -> None:
        if not isinstance(error, EmbedderUnavailable):
            logger.error("embedder %s failed; writing without vectors", self._embedder_name(), exc_info=error)
        elif not self._embedder_down:
            logger.warning("embedder unavailable, writing without vectors: %s", error)
        self._embedder_error = str(error) or type(error).__name__
        self._embedder_down = True
        if probe:
            self._backfill_delay = min(self._backfill_delay * 2, BACKFILL_MAX_DELAY)
        self._queue_backfill(self._backfill_delay)

    def _request_flush(self) -> None:
        """Flush the queued retains soon, unless a flush already waits or earlier ones are in flight.

        While the writer holds earlier records, more retains arrive; waiting for its answer lets
        them go as one batch, and the analysis, embedding and indexing cost mostly per batch.
        """
        if self._flush_queued or self._in_flight or not self._queue:
            return
        self._flush_queued = True
        self.tell_self(_EmbedFlush())

    def _embed_flush(self) -> None:
        queue, self._queue = self._queue, []
        self._flush_queued = False
        if not queue:
            return
        self._in_flight += len(queue)
        self._batches += 1
        self._largest_batch = max(self._largest_batch, len(queue))
        texts = [indexed_text(m.record) for m, _ in queue]
        # One analysis serves the hash embedder now and the keyword index once the writes are
        # durable; it is most of the work of each.
        parts = list(analyse(texts))
        vectors = self._embed(texts, parts=parts)
        terms = split_terms(terms_of(parts), len(texts))
        name = self._embedder_name()
        for position, (message, reply) in enumerate(queue):
            vector = vectors[position] if vectors is not None else None
            admitted = RecordAdmitted(at=message.record.recorded_at, record=message.record)
            events: tuple[Any, ...] = (*message.before, admitted)
            if message.supersedes is not None:
                events = (*events, message.supersedes)
            stored = ((message.record.id, encode_vector(name, vector)),) if vector is not None else ()
            self.writer.tell(
                Commit(events=events, vectors=stored, terms=((message.record.id, encode_terms(terms[position])),)),
                ForwardReply(
                    self.context.address,
                    _Retained(message.record, vector, reply, name, terms[position], texts[position]),
                ),
            )
        if vectors is None:
            self._queue_backfill(self._backfill_delay)

    def _completed(self, message: Completed) -> None:
        admitted: list[_Retained] = []
        settlements: list[tuple[Reply | None, Any, BaseException | None]] = []
        for context, _value, error in message.outcomes:
            if isinstance(context, _Retained):
                # A previous incarnation's writes may still be answered here: never below zero.
                self._in_flight = max(0, self._in_flight - 1)
                if error is not None:
                    settlements.append((context.reply, None, error))
                    continue
                admitted.append(context)
                record = context.record
                settlements.append(
                    (
                        context.reply,
                        Receipt(id=record.id, bank=record.bank, replication=record.replication,
                                recorded_at=record.recorded_at),
                        None,
                    )
                )
            elif isinstance(context, _Filled) and context.embedder == self._embedder_name():
                self._filling.difference_update(context.ids)
                if error is not None:
                    self._queue_backfill(self._backfill_delay)
                    continue
                rows = [i for i, record_id in enumerate(context.ids) if record_id in self._indexed()]
                self._indexed().set_vectors([context.ids[i] for i in rows], context.vectors[rows])
        # The writes are durable: answer now; the index takes them in before its next read.
        settle_all(settlements)
        self._queue_index(admitted)
        self._request_flush()

    def _queue_index(self, admitted: Sequence[_Retained]) -> None:
        """Index durable records soon, in one batch with whatever else arrives meanwhile.

        Callers are answered first; every read of the index (`_indexed()`) takes the queued
        records in before it looks, so a recall always sees the writes acknowledged before it.
        """
        if not admitted:
            return
        self._unindexed.extend(admitted)
        self._unindexed_ids.update(item.record.id for item in admitted)
        if not self._index_queued:
            self._index_queued = True
            # A short wait lets a burst of writes reach the index as one batch; a read never waits.
            self.schedule(INDEX_DELAY, _IndexQueued())

    def _indexed(self) -> RecallIndex:
        """The index, with every queued record in it."""
        if self._unindexed:
            queued, self._unindexed = self._unindexed, []
            self._unindexed_ids.clear()
            self._index_records(queued)
        return self._index

    def _index_records(self, admitted: Sequence[_Retained]) -> None:
        fresh = [item for item in admitted if item.record.id not in self._index]
        if not fresh:
            return
        for item in fresh:
            if item.record.bank not in self._banks:
                self._learn_bank(item.record)
        name = self._embedder_name()
        matrix, present = _stack([item.vector if item.embedder == name else None for item in fresh])
        self._index.add([_entry(item.record, item.text) for item in fresh], matrix, present, _joined_terms(fresh))
        if present is None or not present.all():
            self._queue_backfill(self._backfill_delay)

    def _learn_bank(self, record: MemoryRecord) -> None:
        with self.store.reader() as reader:
            bank = reader.get(BANKS, record.bank)
        if bank is not None:
            self._banks[bank.name] = bank

    # -- changes committed elsewhere ----------------------------------------------------------------

    def _published(self, events: Sequence[Any]) -> None:
        added: list[MemoryRecord] = []
        for event in events:
            if isinstance(event, BankCreated):
                self._banks[event.bank.name] = event.bank
            elif isinstance(event, RecordAdmitted):
                # Most admissions came through this substrate and are indexed or queued already.
                if event.record.id not in self._index and event.record.id not in self._unindexed_ids:
                    added.append(event.record)
            elif isinstance(event, RecordSuperseded):
                self._indexed().set_lifecycle(event.id, "superseded")
            elif isinstance(event, RecordRetracted):
                self._indexed().set_lifecycle(event.id, "retracted")
            elif isinstance(event, MemorySwitchedOn):
                self._enabled = True
                if event.embedder != self._embedder_spec:
                    self._use_embedder(event.embedder)
                    self._rebuild()
            elif isinstance(event, MemorySwitchedOff):
                self._enabled = False
            elif isinstance(event, RecordsSynced):
                for record_id in event.ids:
                    self._indexed().set_replication(record_id, "synced")
            elif isinstance(event, RecordConflicted):
                self._indexed().set_replication(event.id, "conflict")
            elif isinstance(event, RecordInvalidated):
                self._indexed().set_replication(event.id, "invalidated")
        if added:
            self._index_committed(added)

    def _index_committed(self, records: Sequence[MemoryRecord]) -> None:
        """Index records another writer committed (an import, a direct commit), with their stored vectors.

        Records that came without a vector are embedded now, and those without keyword terms
        analysed, and both are stored, so that a restart does not have to do it again.
        """
        name = self._embedder_name()
        texts = [indexed_text(record) for record in records]
        with self.store.reader() as reader:
            vectors = [_stored_vector(reader.raw(VECTORS, record.id), name) for record in records]
            unstored = [row for row, record in enumerate(records) if not is_current(reader.raw(TERMS, record.id))]
        terms = split_terms(term_ids_batch(texts), len(texts))
        if unstored:
            self._store_terms([(records[row].id, terms[row]) for row in unstored])
        missing = [row for row, vector in enumerate(vectors) if vector is None]
        embedded = self._embed([texts[row] for row in missing]) if missing else None
        if embedded is not None:
            for position, row in enumerate(missing):
                vectors[row] = embedded[position]
            ids = tuple(records[row].id for row in missing)
            self.writer.tell(
                Commit(
                    events=(VectorsFilled(at=self.clock.time(), ids=ids, embedder=name),),
                    vectors=tuple((record_id, encode_vector(name, embedded[i])) for i, record_id in enumerate(ids)),
                )
            )
        self._queue_index(
            [
                _Retained(record, vectors[row], None, name, terms[row], texts[row])
                for row, record in enumerate(records)
            ]
        )

    def _store_terms(self, terms: Sequence[tuple[str, npt.NDArray[np.uint64]]]) -> None:
        """Store the keyword terms of records that were stored without them, in a few commits.

        Best effort, like recall counts: nobody waits, and a lost write only means analysing those
        texts again at the next rebuild. The terms table is a derived cache that no event rebuilds,
        so the commits carry no event.
        """
        for first in range(0, len(terms), TERMS_FILL_BATCH):
            chunk = terms[first : first + TERMS_FILL_BATCH]
            self.writer.tell(Commit(events=(), terms=tuple((record_id, encode_terms(ids)) for record_id, ids in chunk)))

    # -- backfill of missing vectors ----------------------------------------------------------------

    def _queue_backfill(self, delay: float) -> None:
        if self._backfill_queued:
            return
        self._backfill_queued = True
        if delay <= 0:
            self.tell_self(_Backfill())
        else:
            self.schedule(delay, _Backfill())

    def _backfill(self) -> None:
        self._backfill_queued = False
        missing = [i for i in self._indexed().missing_vector_ids() if i not in self._filling][:BACKFILL_BATCH]
        if not missing:
            # Nothing to fill, but a failed query embedding may have marked the embedder down.
            if self._embedder_down and self._embed(["probe"], probe=True) is None:
                return
            self._backfill_delay = 1.0
            return
        with self.store.reader() as reader:
            records = [r for r in (reader.get(RECORDS, i) for i in missing) if r is not None]
        vectors = self._embed([indexed_text(r) for r in records], probe=True)
        if vectors is None:
            return  # `_embed` scheduled the next probe
        self._backfill_delay = 1.0
        name = self._embedder_name()
        ids = tuple(r.id for r in records)
        self._filling.update(ids)
        self.writer.tell(
            Commit(
                events=(VectorsFilled(at=self.clock.time(), ids=ids, embedder=name),),
                vectors=tuple((r.id, encode_vector(name, vectors[i])) for i, r in enumerate(records)),
            ),
            ForwardReply(self.context.address, _Filled(ids, vectors, name)),
        )
        # Indexing waits for the durable write; the next chunk (if any) follows right behind it.
        self._queue_backfill(0.0)

    # -- recall -----------------------------------------------------------------------------------

    def _recall(self, message: Recall) -> list[RecallHit]:
        self._require_memory()
        principal = message.principal
        if principal is None:
            raise InvalidInput("recall needs a principal (the member or app asking)")
        query = clean_query(message.query)
        k = max(1, min(int(message.k), MAX_RECALL_K))
        banks = [name for name, bank in self._banks.items() if can_see_bank(principal, bank)]
        if not banks:
            return []
        query_vectors = self._embed([query])
        hits = self._indexed().search(
            query,
            query_vectors[0] if query_vectors is not None else None,
            banks,
            message.activation.domain,
            message.activation.project,
            self.clock.time(),
            k=min(MAX_RECALL_K, k * 2),
            include_inactive=message.include_inactive,
        )
        return self._serve(principal, hits, k, message)

    def _serve(self, principal: Principal, hits: Sequence[Any], k: int, message: Recall) -> list[RecallHit]:
        served: list[RecallHit] = []
        budget = message.char_budget
        with self.store.reader() as reader:
            for hit in hits:
                if len(served) >= k:
                    break
                record = reader.get(RECORDS, hit.id)
                if record is None or not can_see(principal, record):
                    continue
                if not is_served(record):
                    # The index had not heard yet: learn now, serve nothing (fail-closed).
                    self._indexed().set_replication(record.id, record.replication)
                    continue
                if not is_intact(record):
                    logger.error("%s", corruption_error(record).message)
                    continue
                if record.lifecycle != "active" and not message.include_inactive:
                    self._indexed().set_lifecycle(record.id, record.lifecycle)
                    continue
                summary, body = record.summary, record.body
                if len(summary) + len(body) > budget:
                    if served:
                        break
                    # The best hit alone is over budget: serve as much of it as fits, summary first.
                    summary = summary[:budget]
                    body = body[: budget - len(summary)]
                budget -= len(summary) + len(body)
                served.append(
                    RecallHit(
                        id=record.id,
                        summary=summary,
                        body=body,
                        scope=record.scope,
                        bank=record.bank,
                        kind=record.kind,
                        score=float(hit.score),
                        semantic=float(hit.semantic),
                        keyword=float(hit.keyword),
                        temporal=float(hit.temporal),
                        replication=record.replication,
                        occurred_at=record.occurred_at,
                        recorded_at=record.recorded_at,
                    )
                )
        self._note_usage(hit.id for hit in served)
        return served

    def _note_usage(self, ids: Any) -> None:
        self._recalled.extend(ids)
        if len(self._recalled) >= USAGE_BATCH:
            self._flush_usage()
        elif self._recalled and not self._usage_timer_armed:
            self._usage_timer_armed = True
            self.schedule(USAGE_FLUSH_SECONDS, _FlushUsage())

    def _flush_usage(self) -> None:
        if not self._recalled:
            return
        ids, self._recalled = tuple(sorted(self._recalled)), []
        # Usage counts are best effort: no caller waits, and a lost batch only undercounts.
        self.writer.tell(Commit(events=(RecordsRecalled(at=self.clock.time(), ids=ids),)))

    # -- status -----------------------------------------------------------------------------------

    def _status(self) -> SubstrateStatus:
        lifecycle, replication = self._indexed().counts()
        return SubstrateStatus(
            records=len(self._index),
            missing_vectors=len(self._indexed().missing_vector_ids()),
            embedder=self._embedder_name(),
            embedder_error=self._embedder_error,
            rebuild_seconds=round(self._rebuild_seconds, 3),
            by_lifecycle=lifecycle,
            by_replication=replication,
            queued=len(self._queue),
            in_flight=self._in_flight,
            batches=self._batches,
            largest_batch=self._largest_batch,
        )


@contextmanager
def _bulk_load() -> Iterator[None]:
    """Pause the cyclic garbage collector while a rebuild allocates its few hundred thousand objects.

    None of them form cycles, yet every few thousand allocations the collector would walk all of
    them again; at 100k records that is a fifth of the rebuild. Collection resumes afterwards.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _joined_terms(items: Sequence[_Retained]) -> Terms | None:
    """The terms of `items` as one batch, or None if any lacks them (the index analyses then)."""
    present = [item.terms for item in items if item.terms is not None]
    if not present or len(present) != len(items):
        return None
    docs = np.repeat(np.arange(len(present), dtype=np.int32), [len(terms) for terms in present])
    return docs, np.concatenate(present)


def _stored_matrix(
    rows: list[int], values: list[Buffer], count: int, embedder: str
) -> tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.bool_] | None]:
    """Rows for `RecallIndex.add` from stored vectors (`_aligned`'s) of `count` records that `embedder` made.

    Whole-array work over all of them instead of a decode per record: at 100k records this is a
    sizeable part of a rebuild. Vectors of another embedder or of another width count as missing
    (the backfill embeds those again).
    """
    prefix = embedder.encode("utf-8") + b"\0"
    width = next((len(value) for value in values if value[: len(prefix)] == prefix), 0)
    if not width or (width - len(prefix)) % 4:
        return None, None
    keep = [i for i, value in enumerate(values) if len(value) == width]
    kept = values if len(keep) == len(values) else [values[i] for i in keep]
    joined = b"".join(kept)
    raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(kept), width)
    ours = (raw[:, : len(prefix)] == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)
    chosen = np.asarray(rows, dtype=np.intp)[keep][ours]
    dim = (width - len(prefix)) // 4
    present = np.zeros(count, dtype=bool)
    present[chosen] = True
    if len(chosen) == count and bool((chosen == np.arange(count)).all()):
        # Every record has one of ours, in order: the rows are read where they lie in the joined
        # values, past each prefix, rather than copied out (100 MB at 100k records).
        in_place: npt.NDArray[np.float32] = np.ndarray(
            (count, dim), dtype=np.float32, buffer=joined, offset=len(prefix), strides=(width, 4)
        )
        return in_place, present
    matrix = np.zeros((count, dim), dtype=np.float32)
    matrix[chosen] = np.ascontiguousarray(raw[ours, len(prefix) :]).view(np.float32)
    return matrix, present


def _stored_terms(reader: Reader, keys: list[bytes]) -> tuple[Terms, list[tuple[str, npt.NDArray[np.uint64]]]]:
    """`(row, term)` pairs for `RecallIndex.add`: stored terms, and an analysis of the texts without;
    and the terms of those, by record id, to be stored.

    `keys` are the records' keys in the records table. Records written before terms were stored,
    or stored by an older analysis, have their text read and analysed here, as every record's
    once was.
    """
    rows, values = _aligned(reader, TERMS, keys)
    (docs, terms), covered = decode_terms(rows, values, len(keys))
    missing = np.flatnonzero(~covered)
    if not len(missing):
        return (docs, terms), []
    ids = [keys[row].decode("utf-8") for row in missing.tolist()]
    # Read in the same transaction as the keys, so every record is there; "" keeps rows aligned regardless.
    texts = [indexed_text(record) if record is not None else "" for record in (reader.get(RECORDS, i) for i in ids)]
    analysed = term_ids_batch(texts)
    analysed_docs, analysed_terms = analysed
    joined = (
        np.concatenate((docs, missing[analysed_docs].astype(np.int32))),
        np.concatenate((terms, analysed_terms)),
    )
    return joined, list(zip(ids, split_terms(analysed, len(ids)), strict=True))


def _aligned(reader: Reader, table: Table[bytes], keys: list[bytes]) -> tuple[list[int], list[Buffer]]:
    """The stored values of `table` for the record `keys`: which row each belongs to, and the value.

    One pass over the table rather than a lookup per key: at 100k records, a sizeable part of a
    rebuild. Keys without a value are left out.
    """
    stored_keys, stored = reader.raw_columns(table)
    if stored_keys == keys:
        # The table is keyed by record id like the records, so with a value for every record they line up.
        return list(range(len(keys))), stored
    row_of = {key: row for row, key in enumerate(keys)}
    rows: list[int] = []
    values: list[Buffer] = []
    for key, value in zip(stored_keys, stored, strict=True):
        row = row_of.get(key)
        if row is not None:
            rows.append(row)
            values.append(value)
    return rows, values


def _stack(
    vectors: Sequence[npt.NDArray[np.float32] | None],
) -> tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.bool_] | None]:
    """Rows for `RecallIndex.add`: a matrix with zero rows where a vector is missing, and a mask."""
    present = np.fromiter((v is not None for v in vectors), dtype=bool, count=len(vectors))
    if not present.any():
        return None, None
    dim = next(v for v in vectors if v is not None).shape[0]
    if present.all() and all(v.shape[0] == dim for v in vectors if v is not None):
        return np.stack(vectors).astype(np.float32, copy=False), present  # type: ignore[arg-type]
    matrix = np.zeros((len(vectors), dim), dtype=np.float32)
    for row, vector in enumerate(vectors):
        if vector is not None and vector.shape[0] == dim:
            matrix[row] = vector
        elif vector is not None:
            present[row] = False
    return matrix, present
