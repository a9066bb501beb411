"""The rows one kind of recall may return, kept up to date instead of computed again per recall.

A recall's filters (banks, activation, whether inactive rows count) are the same from one recall
of a member to the next, while computing which rows pass them reads every row: 4-6 numpy passes
over a million rows. So the index keeps the answer for the filters it was asked recently, and
updates it as rows are added or change state (`RecallIndex` says which rows changed); a recall
then costs nothing for its filter. Each answer is kept twice: one flag per row (what numpy
gathers at candidate rows) and packed eight rows to a byte (what the vector graph's
`IDSelectorBitmap` reads inside its walk, row r being bit r % 8 of byte r // 8).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["AllowedRows"]

_MIN_CAPACITY = 1024


class AllowedRows:
    """Which rows 0..n-1 pass one recall's filters, as flags and as a packed bitmap."""

    def __init__(self, flags: npt.NDArray[np.bool_]) -> None:
        self._count = 0
        self._allowed = 0
        self._flags = np.zeros(_MIN_CAPACITY, dtype=np.bool_)
        self._bits = np.zeros(_MIN_CAPACITY // 8, dtype=np.uint8)
        self.extend(flags)

    def __len__(self) -> int:
        return self._count

    @property
    def allowed(self) -> int:
        """How many rows pass."""
        return self._allowed

    @property
    def flags(self) -> npt.NDArray[np.bool_]:
        """One flag per row (a view: valid until the next change)."""
        return self._flags[: self._count]

    @property
    def bits(self) -> npt.NDArray[np.uint8]:
        """The flags packed, row r at bit r % 8 of byte r // 8 (a view: valid until the next change)."""
        return self._bits[: (self._count + 7) // 8]

    def extend(self, flags: npt.NDArray[np.bool_]) -> None:
        """Append the flags of new rows."""
        first, count = self._count, self._count + len(flags)
        if count > len(self._flags):
            capacity = len(self._flags)
            while capacity < count:
                capacity *= 2
            grown = np.zeros(capacity, dtype=np.bool_)
            grown[:first] = self._flags[:first]
            self._flags = grown
            bits = np.zeros(capacity // 8, dtype=np.uint8)
            bits[: len(self._bits)] = self._bits
            self._bits = bits
        self._flags[first:count] = flags
        self._count = count
        self._allowed += int(np.count_nonzero(flags))
        self._pack(first // 8, (count + 7) // 8)

    def update(self, rows: npt.NDArray[np.int64], flags: npt.NDArray[np.bool_]) -> None:
        """Set the flags of existing `rows` (unique)."""
        self._allowed += int(np.count_nonzero(flags)) - int(np.count_nonzero(self._flags[rows]))
        self._flags[rows] = flags
        for byte in np.unique(rows // 8).tolist():
            self._pack(byte, byte + 1)

    def _pack(self, first_byte: int, end_byte: int) -> None:
        self._bits[first_byte:end_byte] = np.packbits(self._flags[first_byte * 8 : end_byte * 8], bitorder="little")
