"""Postings of the keyword index: immutable segments (CSR tables of rows and term frequencies grouped
by term), each with every term's largest BM25 tf-part, the bound the pruned search needs.

A segment never changes once made: new rows go to a new one, and merging two makes a third. That is
what lets a save share a segment's arrays with the live index instead of copying them, and what
makes a term's bound (its peak) cheap: computed once when the segment is made, combined at a merge.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["K1", "B", "Segment", "length_norm", "peaks_of", "run_starts", "spread"]

# BM25's parameters (why these values: `resident.memory.keyword`).
K1 = 1.2
B = 0.4


@dataclass(frozen=True, slots=True)
class Segment:
    """Postings of some rows, grouped by term: term `terms[i]` owns `rows[starts[i]:starts[i+1]]`.

    `peaks[i]` is at least the largest tf-part `tf / (tf + norm[row])` among term i's postings when
    the rows' average length was `average` (the pruned search's bound of what the term can add).
    """

    terms: npt.NDArray[np.uint64]
    starts: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int32]
    tf: npt.NDArray[np.float32]
    peaks: npt.NDArray[np.float32]
    average: float
    # The rows of the postings lie in [low, high] (segments hold ranges of rows that do not overlap).
    low: int
    high: int

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def from_pairs(
        cls,
        rows: npt.NDArray[np.int32],
        terms: npt.NDArray[np.uint64],
        lengths: npt.NDArray[np.float32],
        average: float,
    ) -> Segment:
        """A segment from one `(row, term)` pair per token occurrence; `lengths` are every row's
        length, and `average` their mean now."""
        if not len(terms):
            nothing = np.zeros(0, dtype=np.float32)
            return cls(terms[:0], np.zeros(1, dtype=np.int64), rows[:0], nothing, nothing, average, 0, -1)
        vocab = np.sort(terms)
        vocab = vocab[run_starts(vocab)]
        base = int(rows.min())
        row_bits = np.uint64(max(1, int(rows.max()) - base).bit_length())
        low = (np.uint64(1) << row_bits) - np.uint64(1)
        # Each pair packs into one uint64 (term key above, row offset below), so a plain value sort
        # groups pairs by term and then row. The term key is the term's own top bits when those
        # tell the vocabulary apart (almost always), else its index in the vocabulary.
        top = vocab >> row_bits
        if (top[1:] != top[:-1]).all():
            packed = (terms & ~low) | (rows - base).astype(np.uint64)
        else:
            packed = (np.searchsorted(vocab, terms).astype(np.uint64) << row_bits) | (rows - base).astype(np.uint64)
        packed.sort()
        first = np.flatnonzero(run_starts(packed))
        tf = np.diff(first, append=len(packed)).astype(np.float32)
        pairs = packed[first]
        # Both are sorted and every vocabulary term has pairs, so the k-th run of one key is term k.
        keys = pairs >> row_bits
        starts = np.append(np.flatnonzero(run_starts(keys)), len(pairs))
        segment_rows = ((pairs & low) + np.uint64(base)).astype(np.int32)
        peaks = peaks_of(starts, segment_rows, tf, lengths, average)
        return cls(vocab, starts, segment_rows, tf, peaks, average, base, int(rows.max()))

    @classmethod
    def merge(cls, older: Segment, newer: Segment, average: float) -> Segment:
        """One segment holding both; every row of `newer` is above every row of `older`.

        Each term's peak is the larger of the two, each raised to hold at `average` (the rows'
        mean length now): recomputing it would read every posting again.
        """
        vocab = np.union1d(older.terms, newer.terms)
        at_old = np.searchsorted(vocab, older.terms)
        at_new = np.searchsorted(vocab, newer.terms)
        count_old = np.zeros(len(vocab), dtype=np.int64)
        count_old[at_old] = np.diff(older.starts)
        count = count_old.copy()
        count[at_new] += np.diff(newer.starts)
        starts = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(count, out=starts[1:])
        # Within a term, the older segment's postings come first, so rows stay ascending.
        to_old = spread(starts[at_old], older.starts)
        to_new = spread(starts[at_new] + count_old[at_new], newer.starts)
        rows = np.empty(len(older) + len(newer), dtype=np.int32)
        tf = np.empty(len(rows), dtype=np.float32)
        rows[to_old], rows[to_new] = older.rows, newer.rows
        tf[to_old], tf[to_new] = older.tf, newer.tf
        peaks = np.zeros(len(vocab), dtype=np.float32)
        peaks[at_old] = older.peaks_at(average)
        peaks[at_new] = np.maximum(peaks[at_new], newer.peaks_at(average))
        return cls(vocab, starts, rows, tf, peaks, average, older.low, newer.high)

    def peaks_at(self, average: float, at: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.float32]:
        """Bounds of the tf-parts of the terms (those at `at`, or all) when the rows' mean length is `average`.

        With c = k1 * b / average, a tf-part tf / (tf + k1 (1 - b) + c * length) grows by at most
        the factor c_then / c_now = average / self.average when c falls, and shrinks when it grows.
        """
        peaks = self.peaks if at is None else self.peaks[at]
        if average <= self.average or not len(peaks):
            return peaks
        # Rounded up in float32: a bound may be loose, never short.
        return np.nextafter((peaks * (average / self.average)).astype(np.float32), np.float32(np.inf))

    def lookup(
        self, terms: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """For each of `terms`: whether this segment has it, and its posting range `[lo, hi)`."""
        if not len(self.terms):
            nowhere = np.zeros(len(terms), dtype=np.int64)
            return np.zeros(len(terms), dtype=np.bool_), nowhere, nowhere
        found, at = self.find(terms)
        return found, self.starts[at], self.starts[at + 1]

    def find(self, terms: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]]:
        """For each of `terms`: whether this segment has it, and where in `self.terms` (any place if not)."""
        if not len(self.terms):
            return np.zeros(len(terms), dtype=np.bool_), np.zeros(len(terms), dtype=np.intp)
        at = np.minimum(np.searchsorted(self.terms, terms), len(self.terms) - 1)
        return self.terms[at] == terms, at


def length_norm(lengths: npt.NDArray[np.float32], average: float) -> npt.NDArray[np.float32]:
    """`k1 * (1 - b + b * length / average)` of rows of `lengths`, in float32 as the scores use it."""
    norm: npt.NDArray[np.float32] = (K1 * (1 - B)) + (K1 * B / average) * lengths
    return norm


def peaks_of(
    starts: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int32],
    tf: npt.NDArray[np.float32],
    lengths: npt.NDArray[np.float32],
    average: float,
) -> npt.NDArray[np.float32]:
    """Each term's largest tf-part `tf / (tf + norm[row])` over its postings (grouped by `starts`),
    with the rows' mean length `average`; every term has a posting."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    parts = tf / (tf + length_norm(lengths[rows], average))
    largest: npt.NDArray[np.float32] = np.maximum.reduceat(parts, starts[:-1])
    # Rounded up: the scores divide in float64 what this divided in float32.
    peaks: npt.NDArray[np.float32] = np.nextafter(largest * np.float32(1 + 1e-6), np.float32(np.inf))
    return peaks


def run_starts(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """Where each run of equal values begins, in a sorted array."""
    starts = np.empty(len(values), dtype=np.bool_)
    starts[:1] = True
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return starts


def spread(block_starts: npt.NDArray[np.int64], source_starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Destination of every posting when block i (source `source_starts[i]:[i+1]`) moves to `block_starts[i]`."""
    sizes = np.diff(source_starts)
    return np.repeat(block_starts - source_starts[:-1], sizes) + np.arange(source_starts[-1])
