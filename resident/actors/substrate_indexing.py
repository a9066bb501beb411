"""The substrate's indexing queue: durable records waiting to be read, analysed and added to the recall index.

A machine of its own because it batches on its own clock: a burst of commits waits `INDEX_DELAY`
for the rest of the burst, then goes to one analysis and one `RecallIndex.add`, and a record is
queued once however often its admission is heard. The actor does the reading and analysing; this
class holds what is waiting at which step, when the queue is next taken in, and how the batches
went. It also holds how a queued record becomes a row of the index (`index_entry`,
`stack_vectors`, `joined_terms`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from resident.memory.index import IndexEntry
from resident.memory.records import indexed_text
from resident.memory.text import Terms
from resident.messages.memory import MemoryRecord
from resident.supervisor import WakeUp

__all__ = ["INDEX_DELAY", "Indexable", "IndexingQueue", "index_entry", "joined_terms", "stack_vectors"]

# Newly committed records wait this long for others to join their batch.
INDEX_DELAY = 0.02


@dataclass(frozen=True, slots=True)
class Indexable:
    """A durable record ready for the index, with what its analysis (or the store) gave."""

    record: MemoryRecord
    vector: npt.NDArray[np.float32] | None
    # Which embedder made `vector`: a switch of embedder since then voids it.
    embedder: str = ""
    # The keyword terms of the record's text, from the analysis its vector was made from.
    terms: npt.NDArray[np.uint64] | None = None
    # The record's `indexed_text`, when it was made already.
    text: str = ""


class IndexingQueue:
    """Durable records the index has not taken in yet: those to read from the store (their commit stored
    their terms), those to analyse, and those ready to add; and their ids, so that a record is queued once.

    `wake` brings the actor back to take the queue in `INDEX_DELAY` after the first admission; a
    read of the index takes it in sooner (the actor's `_indexed`).
    """

    def __init__(self, wake: WakeUp) -> None:
        self._wake = wake
        self._unread: list[MemoryRecord] = []
        self._unanalysed: list[MemoryRecord] = []
        self._ready: list[Indexable] = []
        self._ids: set[str] = set()
        # How many analyses ran, and the most records one took: how well bursts were batched.
        self.batches = 0
        self.largest_batch = 0

    def __len__(self) -> int:
        return len(self._unanalysed) + len(self._unread) + len(self._ready)

    def admit(self, record: MemoryRecord, *, stored: bool) -> None:
        """Queue a newly durable record (once): read from the store when its commit stored its terms,
        else analysed here; taken in soon, in one batch with whatever else arrives meanwhile."""
        if record.id in self._ids:
            return
        self._ids.add(record.id)
        (self._unread if stored else self._unanalysed).append(record)
        self._wake.after(INDEX_DELAY)

    def due(self) -> None:
        """The wake-up arrived: the actor takes the queue in now."""
        self._wake.done()

    def take_unread(self) -> list[MemoryRecord]:
        """The records to index from what their commit stored."""
        records, self._unread = self._unread, []
        return records

    def take_unanalysed(self) -> list[MemoryRecord]:
        """The records to analyse, as one batch (counted)."""
        records, self._unanalysed = self._unanalysed, []
        if records:
            self.batches += 1
            self.largest_batch = max(self.largest_batch, len(records))
        return records

    def ready(self, items: Iterable[Indexable]) -> None:
        """Records read or analysed, ready for the index."""
        self._ready.extend(items)

    def take_ready(self) -> list[Indexable]:
        """The records ready for the index; from now on their admission may queue them again (the index
        has them, and the actor checks that first)."""
        items, self._ready = self._ready, []
        if items:
            self._ids.clear()
        return items


def index_entry(record: MemoryRecord, text: str = "") -> IndexEntry:
    """The index's entry for `record` (`text`: its `indexed_text`, when made already)."""
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


def joined_terms(items: Sequence[Indexable]) -> Terms | None:
    """The terms of `items` as one batch, or None if any lacks them (the index analyses then)."""
    present = [item.terms for item in items if item.terms is not None]
    if not present or len(present) != len(items):
        return None
    docs = np.repeat(np.arange(len(present), dtype=np.int32), [len(terms) for terms in present])
    return docs, np.concatenate(present)


def stack_vectors(
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
