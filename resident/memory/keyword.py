"""Keyword index of recall: incremental BM25 over rows 0..n-1, with numpy postings.

Postings live in a few immutable segments, each a CSR table (sorted unique terms, offsets, then
rows and term frequencies grouped by term). New rows collect in a small tail that is sealed into
a segment when it grows; neighbouring segments of similar size are merged, like a binary counter,
so there are O(log n) segments and every posting is merged O(log n) times. Rows only ever grow,
and a row's text never changes, so nothing is ever deleted.

Building a segment never uses `argsort` (slow in numpy at millions of postings): each (term, row)
pair is packed into one uint64 and the packed values are sorted, which numpy does with SIMD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.fusion import top_k
from resident.memory.text import Terms, term_ids, term_ids_batch

__all__ = ["KeywordIndex"]

_T = TypeVar("_T", bound=np.generic)

K1 = 1.2
B = 0.75
_TAIL_PAIRS = 1 << 14
_MIN_CAPACITY = 1024


@dataclass(frozen=True, slots=True)
class _Segment:
    """Postings of some rows, grouped by term: term `terms[i]` owns `rows[starts[i]:starts[i+1]]`."""

    terms: npt.NDArray[np.uint64]
    starts: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int32]
    tf: npt.NDArray[np.float32]

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def from_pairs(cls, rows: npt.NDArray[np.int32], terms: npt.NDArray[np.uint64]) -> _Segment:
        """A segment from one `(row, term)` pair per token occurrence."""
        if not len(terms):
            return cls(terms[:0], np.zeros(1, dtype=np.int64), rows[:0], np.zeros(0, dtype=np.float32))
        vocab = np.sort(terms)
        vocab = vocab[_run_starts(vocab)]
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
        first = np.flatnonzero(_run_starts(packed))
        tf = np.diff(first, append=len(packed)).astype(np.float32)
        pairs = packed[first]
        # Both are sorted and every vocabulary term has pairs, so the k-th run of one key is term k.
        keys = pairs >> row_bits
        starts = np.append(np.flatnonzero(_run_starts(keys)), len(pairs))
        return cls(vocab, starts, ((pairs & low) + np.uint64(base)).astype(np.int32), tf)

    @classmethod
    def merge(cls, older: _Segment, newer: _Segment) -> _Segment:
        """One segment holding both; every row of `newer` is above every row of `older`."""
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
        to_old = _spread(starts[at_old], older.starts)
        to_new = _spread(starts[at_new] + count_old[at_new], newer.starts)
        rows = np.empty(len(older) + len(newer), dtype=np.int32)
        tf = np.empty(len(rows), dtype=np.float32)
        rows[to_old], rows[to_new] = older.rows, newer.rows
        tf[to_old], tf[to_new] = older.tf, newer.tf
        return cls(vocab, starts, rows, tf)

    def lookup(
        self, terms: npt.NDArray[np.uint64]
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """For each of `terms`: whether this segment has it, and its posting range `[lo, hi)`."""
        if not len(self.terms):
            nowhere = np.zeros(len(terms), dtype=np.int64)
            return np.zeros(len(terms), dtype=np.bool_), nowhere, nowhere
        at = np.minimum(np.searchsorted(self.terms, terms), len(self.terms) - 1)
        return self.terms[at] == terms, self.starts[at], self.starts[at + 1]


class KeywordIndex:
    """BM25 (k1=1.2, b=0.75) over rows appended in order; a row's text never changes."""

    def __init__(self) -> None:
        self._segments: list[_Segment] = []
        self._tail_rows: list[npt.NDArray[np.int32]] = []
        self._tail_terms: list[npt.NDArray[np.uint64]] = []
        self._tail_pairs = 0
        self._tail: _Segment | None = None
        self._lengths = np.zeros(_MIN_CAPACITY, dtype=np.float32)
        self._count = 0
        self._total_length = 0.0

    @classmethod
    def build(cls, texts: Sequence[str]) -> KeywordIndex:
        """An index of `texts` as rows 0..len(texts)-1 (the bulk path used at rebuild)."""
        index = cls()
        index.add(texts)
        return index

    def __len__(self) -> int:
        return self._count

    def add(self, texts: Sequence[str], analysed: Terms | None = None) -> None:
        """Append `texts` as the next rows; large batches go straight into a segment.

        `analysed`, when given, is `term_ids_batch(texts)` computed already (it is not checked).
        """
        if not texts:
            return
        docs, terms = term_ids_batch(texts) if analysed is None else (analysed[0].copy(), analysed[1])
        lengths = np.bincount(docs, minlength=len(texts)).astype(np.float32)
        first = self._count
        self._reserve(first + len(texts))
        self._lengths[first : first + len(texts)] = lengths
        self._count += len(texts)
        self._total_length += float(lengths.sum())
        if first:
            docs += np.int32(first)
        self._tail_rows.append(docs)
        self._tail_terms.append(terms)
        self._tail_pairs += len(terms)
        self._tail = None
        if self._tail_pairs >= _TAIL_PAIRS:
            self._segments.append(self._seal_tail())
            self._compact()

    def search(
        self, query: str, mask: npt.NDArray[np.bool_] | None, limit: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """The `limit` best BM25 rows for `query` among those where `mask` is True, best first.

        Only rows sharing a term with the query (score > 0) are returned. Document frequencies
        and the average length are over all rows, masked or not.
        """
        empty = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if mask is not None and len(mask) < self._count:
            raise InvalidInput(f"mask has {len(mask)} rows, the index {self._count}")
        query_terms, query_counts = np.unique(term_ids(query), return_counts=True)
        if limit <= 0 or self._count == 0 or not len(query_terms):
            return empty
        slices = self._postings(query_terms)
        if not slices:
            return empty
        df = np.zeros(len(query_terms))
        for term, rows, _ in slices:
            df[term] += len(rows)
        weight = np.log1p((self._count - df + 0.5) / (df + 0.5)) * query_counts * (K1 + 1)
        # Each row's length normalisation, once per search rather than once per posting.
        norm = (K1 * (1 - B)) + (K1 * B / (self._total_length / self._count)) * self._lengths[: self._count]
        gains = [weight[term] * tf / (tf + norm[rows]) for term, rows, tf in slices]
        scores = np.bincount(
            np.concatenate([rows for _, rows, _ in slices]), weights=np.concatenate(gains), minlength=self._count
        )
        if mask is not None:
            scores[~mask[: self._count]] = 0.0
        matched = np.flatnonzero(scores > 0)
        return top_k(matched, scores[matched], limit)

    def _postings(
        self, query_terms: npt.NDArray[np.uint64]
    ) -> list[tuple[int, npt.NDArray[np.int32], npt.NDArray[np.float32]]]:
        """The posting lists of the query terms, per segment: (query term index, rows, frequencies)."""
        slices: list[tuple[int, npt.NDArray[np.int32], npt.NDArray[np.float32]]] = []
        for segment in self._all_segments():
            found, lo, hi = segment.lookup(query_terms)
            slices.extend(
                (term, segment.rows[lo[term] : hi[term]], segment.tf[lo[term] : hi[term]])
                for term in np.flatnonzero(found).tolist()
            )
        return slices

    def _all_segments(self) -> list[_Segment]:
        if self._tail is None and self._tail_pairs:
            self._tail = _Segment.from_pairs(_joined(self._tail_rows), _joined(self._tail_terms))
        return [*self._segments, self._tail] if self._tail is not None else self._segments

    def _seal_tail(self) -> _Segment:
        segment = self._tail
        if segment is None:
            segment = _Segment.from_pairs(_joined(self._tail_rows), _joined(self._tail_terms))
        self._tail_rows, self._tail_terms, self._tail_pairs, self._tail = [], [], 0, None
        return segment

    def _compact(self) -> None:
        """Merge the newest segments while the older of the two is less than twice the newer."""
        while len(self._segments) > 1 and len(self._segments[-2]) < 2 * len(self._segments[-1]):
            newer = self._segments.pop()
            older = self._segments.pop()
            self._segments.append(_Segment.merge(older, newer))

    def _reserve(self, rows: int) -> None:
        capacity = len(self._lengths)
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        lengths = np.zeros(capacity, dtype=np.float32)
        lengths[: self._count] = self._lengths[: self._count]
        self._lengths = lengths


def _run_starts(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
    """Where each run of equal values begins, in a sorted array."""
    starts = np.empty(len(values), dtype=np.bool_)
    starts[:1] = True
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return starts


def _joined(parts: list[npt.NDArray[_T]]) -> npt.NDArray[_T]:
    """The parts as one array, without copying a single part (bulk adds come as one)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _spread(block_starts: npt.NDArray[np.int64], source_starts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Destination of every posting when block i (source `source_starts[i]:[i+1]`) moves to `block_starts[i]`."""
    sizes = np.diff(source_starts)
    return np.repeat(block_starts - source_starts[:-1], sizes) + np.arange(source_starts[-1])
