"""Keyword terms stored beside each record, so rebuilding the recall index need not analyse text.

The substrate analyses each retained memory's text once, for the hash embedder and the keyword
index together. The term ids of that analysis are written to the derived `terms` table in the
same transaction as the record, and a rebuild reads them back as one array instead of analysing
every text again (at 100k records, most of a rebuild's time).

A stored value is an 8-byte tag naming the analysis, then the record's term ids (one per token
occurrence) as little-endian uint64. A value with another tag, written by an older analysis,
counts as missing: that record's text is analysed again, as is a record stored without terms.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from resident.memory.text import Terms

__all__ = ["TERMS_TAG", "decode_terms", "encode_terms", "is_current", "split_terms"]

# Change the tag whenever `resident.memory.text` tokenises or hashes differently: stored terms
# are then analysed again instead of being matched against queries analysed the new way.
TERMS_TAG = b"terms-v2"
_WORD = np.dtype("<u8")
_TAG_WORD = np.frombuffer(TERMS_TAG, dtype=_WORD)[0]


def encode_terms(term_ids: npt.NDArray[np.uint64]) -> bytes:
    """One record's term ids as a stored value."""
    return TERMS_TAG + np.asarray(term_ids, dtype=_WORD).tobytes()


def is_current(value: bytes | None) -> bool:
    """Whether a stored value holds terms of the current analysis (None: nothing stored)."""
    return value is not None and value.startswith(TERMS_TAG) and not len(value) % _WORD.itemsize


def split_terms(terms: Terms, count: int) -> list[npt.NDArray[np.uint64]]:
    """Split a batch's `(doc, term)` pairs into the term ids of each of its `count` texts."""
    docs, ids = terms
    order = np.argsort(docs, kind="stable")
    bounds = np.searchsorted(docs[order], np.arange(count + 1)).tolist()
    grouped = ids[order]
    return [grouped[bounds[i] : bounds[i + 1]] for i in range(count)]


def decode_terms(
    rows: Sequence[int], values: Sequence[bytes | memoryview], count: int
) -> tuple[Terms, npt.NDArray[np.bool_]]:
    """The `(row, term)` pairs of stored values (value i belongs to row `rows[i]` of `count`),
    and which rows they covered; values of another tag or a torn length are skipped.

    All values are joined and viewed as one array of words, then the tag words and the words of
    skipped values are dropped: no per-record arrays, which at 100k records would cost more than
    the analysis they replace.
    """
    covered = np.zeros(count, dtype=np.bool_)
    owners = np.asarray(rows, dtype=np.int32)
    sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    whole = sizes % _WORD.itemsize == 0
    if not whole.all():
        # A torn value would shift every word after it in the join: leave such values out first.
        kept = np.flatnonzero(whole)
        values = [values[i] for i in kept.tolist()]
        owners, sizes = owners[kept], sizes[kept]
    if not values:
        return (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint64)), covered
    words = np.frombuffer(b"".join(values), dtype=_WORD)
    lengths = sizes // _WORD.itemsize
    tag_at = np.cumsum(lengths) - lengths
    ours = lengths > 0
    ours[ours] = words[tag_at[ours]] == _TAG_WORD
    keep = np.repeat(ours, lengths)
    keep[tag_at[ours]] = False
    covered[owners[ours]] = True
    docs = np.repeat(owners[ours], lengths[ours] - 1)
    return (docs, words[keep].astype(np.uint64, copy=False)), covered
