"""The substrate's first machine: building its recall index from LMDB a chunk at a time, after its start.

A substrate answers its start ping before it has read a single record: a home of a million
memories takes seconds to index, and no start may wait on work the size of the home. The build
reads the records table in key order, `BUILD_CHUNK` records per turn of the actor, with the terms
and the current embedder's vectors stored beside exactly those keys, and adds them to the index
(`resident.memory.rebuild.index_columns`). Between chunks the actor handles its inbox, so writes,
status and the filler go on meanwhile.

A recall that arrives before the build is done waits for it, and the build goes on a chunk per
turn meanwhile: the recall is answered from the whole index, exactly as it would be after the
build, never from part of it, and the actor serves writes and status between chunks instead of
building the rest of the home in the recall's turn. This was chosen over answering at once from the
part indexed plus an exact scan of the rest: the keyword scores depend on the whole corpus (each
term's document frequency, the mean length), so a part plus a scan would rank differently from the
built index until the build ended, and a scan of "the rest" is the build's own work done twice.
The recall's delay is the rest of the build, once per start without a fitting persisted index: a
million records take 35-70 s here (about 3.4 s per 100,000, half of it reading LMDB), longer than a
caller's default wait, so a recall parked longer than `BUILD_WAIT` (10 s) is refused with
`MemoryIndexing` ("recall again in a minute") instead of being left to time out
(`resident.actors.substrate_waiting`). Status still finishes the build in its turn (`finish`). Records
committed meanwhile may reach the index twice, once published and once read by a chunk; the index
keeps whichever came first (`index_columns` skips ids it holds).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from resident.memory.index import RecallIndex
from resident.memory.rebuild import StoredColumns, index_columns
from resident.memory.stored_vectors import vector_prefix
from resident.store.store import Store
from resident.store.tables import RECORDS, TERMS, VECTORS

__all__ = ["BUILD_CHUNK", "IndexBuild", "index_stored"]

# Records read and indexed per turn: about a tenth of a second of the actor's time on this machine,
# so a request waits at most that long behind the build.
BUILD_CHUNK = 10_000

Unstored = list[tuple[str, npt.NDArray[np.uint64]]]


@dataclass
class IndexBuild:
    """Where a build of `index` from the store has reached: the last record key it read."""

    store: Store
    index: RecallIndex
    embedder: str
    after: bytes | None = None
    done: bool = False
    started: float = field(default_factory=time.perf_counter)
    seconds: float = 0.0

    def step(self, limit: int | None = None) -> Unstored:
        """Index the next `limit` records (`BUILD_CHUNK` by default; None: all the rest).

        The terms of records that had none stored are returned, to be stored.
        """
        if self.done:
            return []
        chunk = BUILD_CHUNK if limit is None else limit
        # Zero-copy: the values are read straight from the map and used before the transaction ends.
        with self.store.reader(zero_copy=True) as reader:
            past = self.after + b"\0" if self.after is not None else b""
            record_keys, records = reader.raw_range(RECORDS, first=past, limit=chunk if chunk > 0 else None)
            if not record_keys:
                self._finished()
                return []
            first, last = record_keys[0], record_keys[-1]
            term_keys, terms = reader.raw_range(TERMS, first=first, last=last)
            vector_keys, vectors = reader.raw_range(
                VECTORS, prefix=vector_prefix(self.embedder), first=first, last=last
            )
            unstored = index_columns(
                self.index, StoredColumns(record_keys, records, term_keys, terms, vector_keys, vectors), self.embedder
            )
        self.after = last
        if chunk <= 0 or len(record_keys) < chunk:
            self._finished()
        return unstored

    def finish(self) -> Unstored:
        """Index every record not read yet, in one go."""
        return self.step(0)

    def _finished(self) -> None:
        self.done = True
        self.seconds = time.perf_counter() - self.started


def index_stored(store: Store, index: RecallIndex, embedder: str, ids: Iterable[str]) -> Unstored:
    """Add the stored records `ids` that `index` lacks, as the build would (a persisted index's tail).

    Their terms are read as stored rather than analysed again, as a build's are; the terms of those
    stored without are returned, to be stored.
    """
    keys = sorted({record_id.encode("utf-8") for record_id in ids if record_id not in index})
    if not keys:
        return []
    prefix = vector_prefix(embedder)
    with store.reader(zero_copy=True) as reader:
        found = [(key, reader.raw(RECORDS, key.decode("utf-8"))) for key in keys]
        record_keys = [key for key, value in found if value is not None]
        records = [value for _, value in found if value is not None]
        terms = [(key, reader.raw(TERMS, key.decode("utf-8"))) for key in record_keys]
        vectors = [(key, reader.raw(VECTORS, (prefix + key).decode("utf-8"))) for key in record_keys]
        columns = StoredColumns(
            record_keys,
            records,
            [key for key, value in terms if value is not None],
            [value for _, value in terms if value is not None],
            [key for key, value in vectors if value is not None],
            [value for _, value in vectors if value is not None],
        )
        return index_columns(index, columns, embedder)
