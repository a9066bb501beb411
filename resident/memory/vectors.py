"""Vector index of recall: one unit vector per row, searched by cosine (a dot product).

A row may have no vector yet (the embedder was down when it was written); it is kept in the
`present` mask as missing, skipped by search, and filled in later with `set`.

Vectors are stored dimension-major (one array row per dimension), so a search is a single
`query @ matrix` over contiguous memory. Measured at 100k x 256 float32 on the 2-core machine,
that runs about twice as fast as the row-major `matrix @ query` and much faster than gathering
the allowed rows first, so every search scans all rows and picks the allowed ones afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.fusion import top_k

__all__ = ["VectorIndex"]

_MIN_CAPACITY = 1024
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

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """Arrays that `from_state` makes the same index of again (a persisted index's vectors): the
        rows' columns are `base` then `grown`, side by side (a writer joins them as it writes)."""
        empty = np.zeros((self._dim or 0, 0), dtype=np.float32)
        grown = self._columns[:, : self._count - self._base_rows] if self._columns is not None else empty
        base = self._base if self._base is not None else empty
        return {"present": self._present[: self._count], "base": base, "grown": grown}

    @classmethod
    def from_state(cls, state: Mapping[str, npt.NDArray[Any]]) -> VectorIndex:
        """The index of persisted `present` flags and `columns` (dim x rows), which it keeps as given:
        a memory map stays one, its pages read from the file and copied only where a row is set."""
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
        return index

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
        wanted = scores > 0
        if mask is not None:
            wanted &= mask[: self._count]
        rows = np.flatnonzero(wanted)
        return top_k(rows, scores[rows], limit)

    def similarities(self, query: npt.ArrayLike) -> npt.NDArray[np.float32] | None:
        """The cosine of every row with `query` (0 for rows without a vector); None when nothing
        can be compared (no vectors yet, or a zero query)."""
        if (self._columns is None and self._base is None) or self._count == 0:
            return None
        query_vec = np.asarray(query, dtype=np.float32).reshape(-1)
        if query_vec.shape != (self._dim,):
            raise InvalidInput(f"query vector has {query_vec.shape[0]} dimensions, the index {self._dim}")
        norm = float(np.linalg.norm(query_vec))
        if norm == 0.0:
            return None
        # Rows without a vector are zero columns, so their cosine is 0 already.
        unit = (query_vec / np.float32(norm)).astype(np.float32, copy=False)
        parts = [unit @ self._base] if self._base is not None else []
        if self._columns is not None and self._count > self._base_rows:
            parts.append(unit @ self._columns[:, : self._count - self._base_rows])
        scores: npt.NDArray[np.float32] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return scores

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
