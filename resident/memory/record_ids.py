"""The record ids of the recall index's rows, and the row of an id, without a Python object per id.

A persisted index's ids are three arrays (`state`): the ids in row order, the same sorted, and the
row of each sorted id; a loaded index keeps them as given (memory-mapped), reads an id by its row
and finds a row by binary search, so loading costs nothing per record. Ids added since live in a
list and a dict beside them until the next `state` merges them in (a merge of two sorted runs).
Before this, a load turned a million ids into a list and a dict: about a third of a second that
grew with the home, on every start and after every crash of the substrate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput

__all__ = ["RecordIds"]


def _encoded(ids: Sequence[str]) -> npt.NDArray[np.bytes_]:
    return np.array([record_id.encode("utf-8") for record_id in ids], dtype=np.bytes_)


class RecordIds:
    """Ids of rows 0..n-1: a sorted base (arrays) and the ids added after it (a list and a dict)."""

    def __init__(self) -> None:
        self._base: npt.NDArray[np.bytes_] = np.zeros(0, dtype="S1")
        self._sorted: npt.NDArray[np.bytes_] = self._base
        self._order: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._grown: list[str] = []
        self._grown_rows: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._base) + len(self._grown)

    def __getitem__(self, row: int) -> str:
        based = len(self._base)
        if row < based:
            return bytes(self._base[row]).decode("utf-8")
        return self._grown[row - based]

    def row(self, record_id: str) -> int | None:
        """The row of `record_id`, or None if it has none."""
        row = self._grown_rows.get(record_id)
        if row is not None or not len(self._sorted):
            return row
        key = record_id.encode("utf-8")
        at = int(np.searchsorted(self._sorted, key))
        if at < len(self._sorted) and self._sorted[at] == key:
            return int(self._order[at])
        return None

    def __contains__(self, record_id: object) -> bool:
        return isinstance(record_id, str) and self.row(record_id) is not None

    def isdisjoint(self, ids: Iterable[str]) -> bool:
        """Whether none of `ids` has a row."""
        return not any(record_id in self for record_id in ids)

    def extend(self, ids: Sequence[str]) -> None:
        """Give `ids` (new, distinct) the next rows."""
        first = len(self)
        self._grown_rows.update(zip(ids, range(first, first + len(ids)), strict=True))
        self._grown.extend(ids)

    def state(self) -> dict[str, npt.NDArray[Any]]:
        """The ids as arrays for `from_state`: in row order, sorted, and the row of each sorted one."""
        if self._grown:
            grown = _encoded(self._grown)
            grown_order = np.argsort(grown, kind="stable")
            grown_sorted = grown[grown_order]
            # Merge two sorted runs: each grown id goes before the first base id not below it.
            at = np.searchsorted(self._sorted, grown_sorted)
            # `insert` casts to the array's width: widen it first, or longer ids would be cut.
            width = f"S{max(self._sorted.dtype.itemsize, grown.dtype.itemsize)}"
            self._sorted = np.insert(self._sorted.astype(width, copy=False), at, grown_sorted)
            self._order = np.insert(self._order, at, grown_order + len(self._base))
            self._base = np.concatenate((self._base, grown))
            self._grown, self._grown_rows = [], {}
        return {"ids": self._base, "ids_sorted": self._sorted, "ids_order": self._order}

    @classmethod
    def from_state(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> RecordIds:
        """The ids `state` described, kept as given; InvalidInput if the arrays do not fit together."""
        ids = cls()
        base, ordered, order = arrays["ids"], arrays["ids_sorted"], arrays["ids_order"]
        if not (len(base) == len(ordered) == len(order)) or base.dtype.kind != "S" or ordered.dtype.kind != "S":
            raise InvalidInput(f"persisted record ids do not fit together: {len(base)}, {len(ordered)}, {len(order)}")
        ids._base, ids._sorted, ids._order = base, ordered, order
        return ids

    @classmethod
    def of(cls, ids: Sequence[str]) -> RecordIds:
        """Ids `ids` as rows 0..n-1 (an index persisted before the ids were arrays named them in a list)."""
        made = cls()
        made.extend(list(ids))
        return made
