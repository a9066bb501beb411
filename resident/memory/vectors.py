"""Vector index of recall: one unit vector per row, searched by cosine (a dot product).

A row may have no vector yet (the embedder was down when it was written); it is kept in the
`present` mask as missing, skipped by search, and filled in later with `set`.

Vectors are stored dimension-major (one array row per dimension), so an exact search is a single
`query @ matrix` over contiguous memory. Measured at 100k x 256 float32 on the 2-core machine,
that runs about twice as fast as the row-major `matrix @ query` and much faster than gathering
the allowed rows first, so an exact search scans all rows and picks the allowed ones afterwards.

From `ANN_MIN_ROWS` rows on, an approximate graph (`resident.memory.ann`) finds the candidates
instead, with the caller's filter applied inside its walk. A thread of the index adds rows to
the graph `BUILD_CHUNK` at a time, once `BUILD_STEP` are waiting; until a row is in the graph it is
scored exactly (the rows past the graph's, and the "late" rows whose vector arrived after their
turn), so a search never misses a row for not being in the graph yet. While the thread is adding
to the graph, a search does not wait for it: it scans every row exactly, as below the threshold.
Every candidate the graph returns is scored again with the exact vector. A persisted graph is read
back on that thread too, searches scanning exactly meanwhile: reading it grows with the home, and
must not delay the first answer.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.allowed import AllowedRows
from resident.memory.ann import Ann
from resident.memory.fusion import top_k

__all__ = ["VectorIndex"]

_log = logging.getLogger(__name__)

_MIN_CAPACITY = 1024
# Below this many rows an exact scan costs under a millisecond: no graph is built.
ANN_MIN_ROWS = 20_000
# Rows waiting to be added before the thread adds them, and rows it adds at a time (holding the
# graph for about a second at 15-20k rows a second, during which searches scan exactly).
BUILD_STEP = 4096
BUILD_CHUNK = 10_000
# A process must not end while a build thread is inside faiss (C++ aborts the process then): at
# exit, every build thread is told to stop after its chunk, and waited for.
_EXIT_WAIT = 60.0
_BUILDING: weakref.WeakSet[VectorIndex] = weakref.WeakSet()
_STORE_BLOCK = 1024  # rows per transposed copy: 1 MB at 256 dimensions, measured 3-4x faster than one copy


class VectorIndex:
    """Float32 vectors for rows 0..n-1, capacity doubling; the dimension is fixed by the first vector.

    Rows are stored at unit length (zero rows stay zero), so cosine is a dot product whatever the
    embedder returned.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._dim = dim
        self._count = 0
        self._present = np.zeros(_MIN_CAPACITY, dtype=np.bool_)
        # Rows below `_base_rows` are the columns of `_base` (a persisted index's, memory-mapped);
        # the rest are those of `_columns`, shape (dim, capacity): its column c is row `_base_rows + c`.
        self._base: npt.NDArray[np.float32] | None = None
        self._base_rows = 0
        self._columns: npt.NDArray[np.float32] | None = None
        if dim is not None:
            self._columns = np.zeros((dim, _MIN_CAPACITY), dtype=np.float32)
        # The graph holds the present rows below `_covered`, and the late rows once it took them.
        # `_graph_lock` is held while the build thread adds to the graph (and to read it whole);
        # `_late_lock` guards `_late`, which both threads change.
        self._ann: Ann | None = None
        self._covered = 0
        self._late: set[int] = set()
        self._building_below = 0
        self._graph_lock = threading.Lock()
        self._late_lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._stopping = False
        # While a persisted graph is read on the build thread: how many rows it holds.
        self._loading_rows: int | None = None

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays that `from_state` makes the same index of again (a persisted index's vectors): the
        rows' columns are `base` then `grown`, side by side (a writer joins them as it writes), and
        the graph (`ann`, its bytes; `ann_covered`, `ann_late`: which rows it does not hold yet).

        Only `present` is a copy. The columns are the live ones, not copied (a gigabyte at a million
        rows): a row's vector is only written while the row is absent from `present` (filled in), or
        written again with the same values (a fill replayed), so a writer may catch only an absent
        row half-written, and no search reads the vector of a row whose `present` flag is off."""
        empty = np.zeros((self._dim or 0, 0), dtype=np.float32)
        grown = self._columns[:, : self._count - self._base_rows] if self._columns is not None else empty
        base = self._base if self._base is not None else empty
        arrays = {"present": self._present[: self._count].copy(), "base": base, "grown": grown}
        with self._graph_lock:
            if self._ann is not None:
                arrays["ann"] = self._ann.state()
            arrays["ann_covered"] = np.array([self._covered if self._ann is not None else 0], dtype=np.int64)
            with self._late_lock:
                arrays["ann_late"] = np.array(sorted(self._late), dtype=np.int64)
        return arrays

    @classmethod
    def from_state(cls, state: Mapping[str, npt.NDArray[Any]]) -> VectorIndex:
        """The index of persisted `present` flags and `columns` (dim x rows), which it keeps as given:
        a memory map stays one, its pages read from the file and copied only where a row is set;
        and its graph, if it had one, read into memory on the build thread (rows it did not hold
        are added afresh)."""
        present, columns = state["present"], state["columns"]
        count = len(present)
        index = cls()
        if columns.size:
            if columns.shape[1] != count or columns.dtype != np.float32:
                raise InvalidInput(
                    f"persisted vectors are {columns.shape} {columns.dtype}, expected {count} float32 rows"
                )
            index._dim = int(columns.shape[0])
            index._base, index._base_rows = columns, count
        index._reserve(count)
        index._present[:count] = present
        index._count = count
        if "ann" in state and index._dim is not None:
            covered = min(count, int(state["ann_covered"][0]))
            late = {row for row in state["ann_late"].tolist() if row < count}
            index._load_graph(state["ann"], covered, late)
        else:
            index._schedule()
        return index

    def _load_graph(self, serialised: npt.NDArray[np.uint8], covered: int, late: set[int]) -> None:
        """Read the persisted graph on the build thread, then add what it does not hold.

        Reading it is proportional to the home (370 MB at a million rows, faiss cannot walk a mapped
        graph), so it must not delay the first answer: until it is read, searches scan exactly, as
        while the thread adds a chunk. The calling thread takes the graph lock and the thread lets
        it go, so that `state` (a save) waits for the graph instead of persisting an index without
        one; and rows below `covered` whose vector comes meanwhile are late, as the graph will not
        hold them.
        """
        self._building_below = covered
        self._loading_rows = int(np.count_nonzero(self._present[:covered])) - sum(1 for row in late if row < covered)
        self._graph_lock.acquire()  # released by the build thread once the graph is in
        self._builder = threading.Thread(
            target=self._load_then_build, args=(serialised, covered, late), name="resident-ann", daemon=True
        )
        _BUILDING.add(self)
        self._builder.start()

    def _load_then_build(self, serialised: npt.NDArray[np.uint8], covered: int, late: set[int]) -> None:
        """The build thread of a loaded index: the graph first (the lock is held for it), then the rest.

        A graph faiss cannot read (a torn file) is dropped and built again from the vectors, which
        are sound: the rows are still found meanwhile, by the exact scan.
        """
        try:
            try:
                self._ann = Ann.from_state(serialised)
                self._covered = covered
            except InvalidInput as error:
                _log.warning("the persisted vector graph is rebuilt: %s", error)
                self._ann, self._covered, late = None, 0, set()
            with self._late_lock:
                if self._ann is None:
                    self._late.clear()
                self._late.update(late)
        finally:
            self._loading_rows = None
            self._graph_lock.release()
        self._build()

    @property
    def dim(self) -> int | None:
        """The vector dimension, or None while no vector has been given."""
        return self._dim

    def __len__(self) -> int:
        return self._count

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Which rows have a vector (a read-only view; False where the embedder was down)."""
        view = self._present[: self._count]
        view.flags.writeable = False
        return view

    def append(
        self,
        n_rows: int,
        vectors: npt.NDArray[np.floating] | None,
        present: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        """Add `n_rows` rows; `vectors` (n_rows, dim) or None for none, `present` says which are real."""
        self.store(n_rows, vectors, self.check(n_rows, vectors, present))

    def check(
        self,
        n_rows: int,
        vectors: npt.NDArray[np.floating] | None,
        present: npt.NDArray[np.bool_] | None = None,
    ) -> npt.NDArray[np.bool_]:
        """What `append` would add, checked without adding it: which of the rows are real vectors.

        For a caller that must know a batch is valid before it changes anything else.
        """
        if vectors is None:
            return np.zeros(n_rows, dtype=np.bool_)
        real = np.ones(n_rows, dtype=np.bool_) if present is None else np.asarray(present, dtype=np.bool_)
        if real.shape != (n_rows,):
            raise InvalidInput(f"present must have one flag per row ({n_rows}), got shape {real.shape}")
        self._check(vectors, n_rows)
        return real

    def store(self, n_rows: int, vectors: npt.NDArray[np.floating] | None, real: npt.NDArray[np.bool_]) -> None:
        """Add rows `check` accepted (`real` is what it returned)."""
        start = self._count
        self._reserve(start + n_rows)
        self._present[start : start + n_rows] = real
        if vectors is not None and self._columns is not None:
            at = start - self._base_rows
            # Block by block, so each transposed copy stays in cache.
            for lo in range(0, n_rows, _STORE_BLOCK):
                hi = min(lo + _STORE_BLOCK, n_rows)
                self._columns[:, at + lo : at + hi] = _unit_rows(vectors[lo:hi], real[lo:hi]).T
        self._count = start + n_rows
        self._schedule()

    def set(self, rows: npt.ArrayLike, vectors: npt.NDArray[np.floating]) -> None:
        """Store vectors for existing `rows` (e.g. filled in after the embedder came back)."""
        row_arr = np.asarray(rows, dtype=np.int64)
        self._check(vectors, len(row_arr))
        if len(row_arr) and (row_arr.min() < 0 or row_arr.max() >= self._count):
            raise InvalidInput(f"rows must lie in 0..{self._count - 1}")
        self._reserve(self._count)
        unit = _unit_rows(vectors, np.ones(len(row_arr), dtype=np.bool_)).T
        in_base = row_arr < self._base_rows
        if self._base is not None and in_base.any():
            self._base[:, row_arr[in_base]] = unit[:, in_base]
        if self._columns is not None and not in_base.all():
            self._columns[:, row_arr[~in_base] - self._base_rows] = unit[:, ~in_base]
        self._present[row_arr] = True
        # A row the build thread has read (or is reading) gets its vector into the graph later.
        passed = row_arr[row_arr < max(self._covered, self._building_below)]
        if len(passed):
            with self._late_lock:
                self._late.update(passed.tolist())
        self._schedule()

    def count_present(self) -> int:
        """How many rows have a vector."""
        return int(np.count_nonzero(self._present[: self._count]))

    def missing(self) -> npt.NDArray[np.int64]:
        """Rows that have no vector yet, in row order."""
        return np.flatnonzero(~self._present[: self._count]).astype(np.int64)

    def search(
        self, query: npt.ArrayLike, mask: npt.NDArray[np.bool_] | None, limit: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The `limit` rows (among `mask`, with a vector) most similar to `query`, best first.

        Only rows of positive cosine are returned: a row pointing away from the query is not
        evidence for it.
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        scores = self.similarities(query)
        if scores is None or limit <= 0:
            return empty
        wanted = (scores > 0) & self._present[: self._count]
        if mask is not None:
            wanted &= mask[: self._count]
        rows = np.flatnonzero(wanted)
        return top_k(rows, scores[rows], limit)

    def nearest(
        self, query: npt.ArrayLike, allowed: AllowedRows, limit: int, *, exact: bool = False
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The `limit` allowed rows of highest positive cosine with `query`, best first, with their
        exact cosines; None when nothing can be compared (no vectors yet, or a zero query).

        Through the graph when there is one and it is free (`exact` forbids it), with the rows it
        does not hold yet scored exactly beside it; else by the exact scan of every row.
        """
        unit = self._unit(query)
        if unit is None:
            return None
        if limit <= 0 or not allowed.allowed:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if not exact and self._ann is not None and self._graph_lock.acquire(blocking=False):
            try:
                covered = self._covered
                with self._late_lock:
                    late = np.fromiter(self._late, dtype=np.int64, count=len(self._late))
                graph = self._ann.search(unit, limit, allowed.bits)
            finally:
                self._graph_lock.release()
            rows = np.unique(np.concatenate((graph, np.arange(covered, self._count, dtype=np.int64), late)))
            rows = rows[allowed.flags[rows] & self._present[rows]]
            scores = self.cosines(unit, rows).astype(np.float64)
            positive = scores > 0
            return top_k(rows[positive], scores[positive], limit)
        cosines = self.similarities(unit)
        if cosines is None:
            return None
        rows = np.flatnonzero(allowed.flags & self._present[: self._count] & (cosines > 0))
        return top_k(rows, cosines[rows], limit)

    def cosines(self, query: npt.ArrayLike, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The cosine of `query` with each of `rows` (0 for rows without a vector, or a zero query)."""
        unit = self._unit(query)
        if unit is None:
            return np.zeros(len(rows), dtype=np.float32)
        cosines: npt.NDArray[np.float32] = self._gather(rows) @ unit
        # A row without a vector may hold a half-written one, from a save that caught it being filled.
        cosines[~self._present[rows]] = 0.0
        return cosines

    def wait_built(self, timeout: float | None = None) -> bool:
        """Wait for the build thread (if any) to finish; whether the graph holds every row it will."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return not self._waiting()

    def graph_rows(self) -> int:
        """How many rows the graph holds (0 without one; a persisted graph still being read counts
        the rows it was saved with)."""
        loading, ann = self._loading_rows, self._ann
        if loading is not None:
            return loading
        return len(ann) if ann is not None else 0

    def similarities(self, query: npt.ArrayLike) -> npt.NDArray[np.float32] | None:
        """The cosine of every row with `query` (0 for rows without a vector); None when nothing
        can be compared (no vectors yet, or a zero query)."""
        unit = self._unit(query)
        if unit is None:
            return None
        # Rows without a vector are zero columns, so their cosine is 0 already.
        parts = [unit @ self._base] if self._base is not None else []
        if self._columns is not None and self._count > self._base_rows:
            parts.append(unit @ self._columns[:, : self._count - self._base_rows])
        scores: npt.NDArray[np.float32] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return scores

    def _unit(self, query: npt.ArrayLike) -> npt.NDArray[np.float32] | None:
        """`query` at unit length; None when nothing can be compared (no vectors, or a zero query)."""
        if (self._columns is None and self._base is None) or self._count == 0:
            return None
        query_vec = np.asarray(query, dtype=np.float32).reshape(-1)
        if query_vec.shape != (self._dim,):
            raise InvalidInput(f"query vector has {query_vec.shape[0]} dimensions, the index {self._dim}")
        norm = float(np.linalg.norm(query_vec))
        if norm == 0.0:
            return None
        return (query_vec / np.float32(norm)).astype(np.float32, copy=False)

    def _gather(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The stored (unit or zero) vectors of `rows`, one row each."""
        out = np.zeros((len(rows), self._dim or 0), dtype=np.float32)
        base, columns, base_rows = self._base, self._columns, self._base_rows
        in_base = rows < base_rows
        if base is not None and in_base.any():
            out[in_base] = base[:, rows[in_base]].T
        if columns is not None and not in_base.all():
            out[~in_base] = columns[:, rows[~in_base] - base_rows].T
        return out

    def _waiting(self) -> int:
        """Rows the graph should hold and does not: 0 below `ANN_MIN_ROWS`."""
        if self._dim is None or self._count < ANN_MIN_ROWS:
            return 0
        return self._count - self._covered + len(self._late)

    def _schedule(self) -> None:
        """Start the build thread if enough rows wait for the graph (or there is no graph yet)."""
        waiting = self._waiting()
        if not waiting or (self._ann is not None and waiting < BUILD_STEP):
            return
        if self._stopping or (self._builder is not None and self._builder.is_alive()):
            return
        self._builder = threading.Thread(target=self._build, name="resident-ann", daemon=True)
        _BUILDING.add(self)
        self._builder.start()

    def stop_building(self, timeout: float | None = None) -> None:
        """Stop the build thread after its current chunk, and wait for it; no build starts again."""
        self._stopping = True
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    def _build(self) -> None:
        """Add waiting rows to the graph, `BUILD_CHUNK` at a time, until none wait (the build thread)."""
        while not self._stopping:
            with self._late_lock:
                late = np.array(sorted(self._late), dtype=np.int64)
            low = self._covered
            high = min(self._count, low + BUILD_CHUNK)
            if high == low and not len(late):
                return
            self._building_below = high
            present = self._present
            rows = np.concatenate((late, low + np.flatnonzero(present[low:high]))).astype(np.int64)
            vectors = self._gather(rows)
            with self._graph_lock:
                if self._ann is None and len(rows):
                    self._ann = Ann.trained(vectors)
                if self._ann is not None:
                    self._ann.add(rows, vectors)
                self._covered = high
                with self._late_lock:
                    self._late.difference_update(late.tolist())

    def _check(self, vectors: npt.NDArray[np.floating], n_rows: int) -> None:
        if vectors.ndim != 2 or vectors.shape[0] != n_rows:
            raise InvalidInput(f"vectors must have shape ({n_rows}, dim), got {vectors.shape}")
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise InvalidInput(f"vectors have {vectors.shape[1]} dimensions, the index {self._dim}")

    def _reserve(self, rows: int) -> None:
        """Make room for `rows` rows, and for vectors once the dimension is known."""
        capacity = len(self._present)
        while capacity < rows:
            capacity *= 2
        if capacity != len(self._present):
            present = np.zeros(capacity, dtype=np.bool_)
            present[: self._count] = self._present[: self._count]
            self._present = present
        # `_columns` holds the rows past the base, with room to double like the flags.
        room = max(_MIN_CAPACITY, capacity - self._base_rows)
        if self._dim is not None and (self._columns is None or self._columns.shape[1] < rows - self._base_rows):
            room = max(room, 2 * (self._columns.shape[1] if self._columns is not None else 0))
            columns = np.zeros((self._dim, room), dtype=np.float32)
            grown = self._count - self._base_rows
            if self._columns is not None:
                columns[:, :grown] = self._columns[:, :grown]
            self._columns = columns


def _unit_rows(vectors: npt.NDArray[np.floating], real: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    """Rows at unit length; rows that are not real, are zero or are not finite become zero.

    Embedders already return unit rows, so only the rows that are off are rescaled.
    """
    rows = np.array(vectors, dtype=np.float32)
    squared = np.einsum("ij,ij->i", rows, rows)
    usable = real & np.isfinite(squared) & (squared > 0)
    rows[~usable] = 0.0
    off = np.flatnonzero(usable & (np.abs(squared - 1.0) > 1e-4))
    rows[off] /= np.sqrt(squared[off])[:, None]
    return rows


@atexit.register
def _stop_every_build() -> None:
    for index in list(_BUILDING):
        index.stop_building(_EXIT_WAIT)
