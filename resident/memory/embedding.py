"""Embedders: what the substrate needs from one, and the hashing embedder that needs no model.

The hashing embedder is the embedded default (no server, no download). It maps a text to signed
feature-hashing counts of its character trigrams (inside normalised non-stopword words and runs
of CJK characters), its words and its CJK characters, damps them sublinearly and normalises the
row. Texts sharing words, stems or CJK characters land close, in any of the three languages.
Everything is hashed with `resident.memory.text`'s deterministic hash, so a text embeds to the
same bits in every process.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.text import Analysis, analyse, span_hashes

__all__ = ["Embedder", "HashEmbedder"]

# Whole words are more specific than trigrams; a CJK character carries about as much meaning as a
# short word, so it weighs like a trigram.
_TRIGRAM_WEIGHT = 1.0
_WORD_WEIGHT = 1.5
_CJK_WEIGHT = 1.0
# Constants that meet arrays are 0-d arrays of the array's type, which a ufunc call takes faster
# than a numpy scalar or a Python int (it matters when the arrays are a single short text's).
_MULTIPLIER = np.array(0x9E3779B97F4A7C15, dtype=np.uint64)
# Salts keep the feature kinds apart, so the word "ab" and the n-gram "ab" are different features.
_SALT_TRIGRAM = np.array(0x243F6A8885A308D3 * 3 & ((1 << 64) - 1), dtype=np.uint64)
_SALT_WORD = np.array(0x13198A2E03707344, dtype=np.uint64)
_SALT_CJK = np.array(0xA4093822299F31D0, dtype=np.uint64)
_ONE = np.array(1, dtype=np.int64)
# Features are counted in halves, in which every weight is a whole number, so the sums in a row are
# whole numbers too. A feature counts its trigram weight, by sign (a lookup, which is faster than
# converting the sign to float), scaled by its kind.
_SIGNED_TRIGRAM_HALVES = np.array([2 * _TRIGRAM_WEIGHT, -2 * _TRIGRAM_WEIGHT])
_CJK_SCALE = np.array(_CJK_WEIGHT / _TRIGRAM_WEIGHT)
_WORD_SCALE = np.array(_WORD_WEIGHT / _TRIGRAM_WEIGHT)
_LARGEST_HALVES = 2 * max(_TRIGRAM_WEIGHT, _WORD_WEIGHT, _CJK_WEIGHT)
# Sums of fewer than this many halves either way are damped through a table (64 KiB), not by `log`.
_TABLE_HALVES = 1 << 13
_TABLE_OFFSET = np.array(_TABLE_HALVES, dtype=np.int32)
_INT32_SAFE_HALVES = 1 << 30
_ONE_F32 = np.array(1.0, dtype=np.float32)


class Embedder(Protocol):
    """Turns texts into unit vectors; the substrate embeds whatever is queued as one batch."""

    @property
    def name(self) -> str:
        """Identifies the embedder and model, so vectors of different embedders never mix."""

    @property
    def dim(self) -> int | None:
        """The vector dimension, or None until it is known (a remote model's first answer)."""

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` in order: float32, shape (len(texts), dim), rows of unit length or zero.

        Raises `resident.errors.EmbedderUnavailable` when the embedder cannot answer.
        """

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed recall queries, like `embed`; a model trained with query and passage prefixes
        embeds them differently."""


class HashEmbedder:
    """Deterministic feature-hashing embedder over character n-grams; needs no model or server."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 1 or dim & (dim - 1):
            raise InvalidInput(f"hash embedder dim must be a positive power of two, got {dim}")
        self._dim = dim
        # A feature's bucket and sign are the top log2(dim) + 1 bits of its multiplicative hash.
        self._bucket_shift = np.array(64 - dim.bit_length(), dtype=np.uint64)
        self._dim_int64 = np.array(dim, dtype=np.int64)

    @property
    def name(self) -> str:
        """Always "hash"."""
        return "hash"

    @property
    def dim(self) -> int:
        """The vector dimension chosen at construction (256 by default)."""
        return self._dim

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` in one vectorised pass; an empty text (or one of stopwords) is a zero row."""
        return self.embed_analysed(list(analyse(texts)), len(texts))

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Queries embed like any text."""
        return self.embed(texts)

    def embed_analysed(self, parts: Sequence[Analysis], count: int) -> npt.NDArray[np.float32]:
        """Embed `count` texts from their analysis (`resident.memory.text.analyse`), which the
        caller may also use for keyword indexing: the analysis is most of the work."""
        out = np.zeros((count, self._dim), dtype=np.float32)
        for part in parts:
            self._embed_slice(part, out[part.first_doc : part.first_doc + part.n_docs])
        return out

    def _embed_slice(self, part: Analysis, out: npt.NDArray[np.float32]) -> None:
        """Write the rows of `part`'s documents into `out`, which is `part.n_docs` rows of zeros."""
        # Character trigrams inside kept words and CJK runs carry stems and inflections across the
        # three languages; stopwords, spaces and punctuation contribute none.
        starts = _trigram_starts(part)
        n_trigrams, n_cjk = len(starts), len(part.cjk_id)
        # All features in one array, trigrams then CJK characters then words, each salted by kind.
        hashes = np.empty(n_trigrams + n_cjk + len(part.word_id), dtype=np.uint64)
        docs = np.empty(len(hashes), dtype=np.int64)
        if n_trigrams:
            span_hashes(part.prefix, 3).take(starts, out=hashes[:n_trigrams], mode="clip")
            hashes[:n_trigrams] ^= _SALT_TRIGRAM
            docs[:n_trigrams] = part.codepoint_doc[starts]
        if n_cjk:
            np.bitwise_xor(part.cjk_id, _SALT_CJK, out=hashes[n_trigrams : n_trigrams + n_cjk])
            docs[n_trigrams : n_trigrams + n_cjk] = part.cjk_doc
        np.bitwise_xor(part.word_id, _SALT_WORD, out=hashes[n_trigrams + n_cjk :])
        docs[n_trigrams + n_cjk :] = part.word_doc
        # The top bits of a multiplicative hash: the bucket, and below it the sign.
        hashes *= _MULTIPLIER
        hashes >>= self._bucket_shift
        bucket_sign = hashes.view(np.int64)
        # Every feature adds its signed weight to one cell (document x dimension) of a flat array,
        # and one weighted bincount adds them all. In halves, as whole numbers, the float64 sums are
        # exact and do not depend on the order of the features.
        halves = _SIGNED_TRIGRAM_HALVES.take(bucket_sign & _ONE, mode="clip")
        if n_cjk:
            halves[n_trigrams : n_trigrams + n_cjk] *= _CJK_SCALE
        halves[n_trigrams + n_cjk :] *= _WORD_SCALE
        if part.first_doc:
            docs -= part.first_doc
        docs *= self._dim_int64
        bucket_sign >>= _ONE
        docs += bucket_sign
        # A weighted bincount gives float64 (numpy's stubs say intp whatever the weights).
        sums: npt.NDArray[np.float64] = np.bincount(  # type: ignore[assignment]
            docs, weights=halves, minlength=part.n_docs * self._dim
        )
        _damp(sums, _LARGEST_HALVES * len(halves), out.reshape(-1))
        # What np.linalg.norm(out, axis=1) computes, without its ten microseconds of dispatch.
        norms = np.sqrt(np.add.reduce(out * out, axis=1, keepdims=True))
        norms[norms == 0] = 1
        out /= norms


def _damp(sums: npt.NDArray[np.float64], bound: float, out: npt.NDArray[np.float32]) -> None:
    """`sign(x) * log(1 + |x|)` in float32 into `out`, for each `x` of `sums` / 2 (`sums` counts
    halves, whole numbers of at most `bound` either way).

    The sums are nearly all small, so a table of the damped value of each answers for them; the
    table holds what the float32 computation gives, so the bits are the same either way.
    """
    # Converting float64 to int32 is three times as fast as to int64 (AVX2 has an instruction for
    # the one, not the other), and exact: sums that might not fit take the `log` path.
    if bound < _INT32_SAFE_HALVES:
        index = sums.astype(np.int32)
        index += _TABLE_OFFSET
        # A negative index reads as a huge unsigned one, so one maximum checks both ends.
        if bound < _TABLE_HALVES or not len(index) or index.view(np.uint32).max() < 2 * _TABLE_HALVES:
            _damping_table().take(index, out=out, mode="clip")
            return
    signed = (sums * 0.5).astype(np.float32)
    # log(1 + |x|) rather than log1p: numpy vectorises float32 log but not log1p (5x faster here).
    np.abs(signed, out=out)
    out += _ONE_F32
    np.log(out, out=out)
    np.copysign(out, signed, out=out)


@functools.cache
def _damping_table() -> npt.NDArray[np.float32]:
    """The damped value of every sum from `-_TABLE_HALVES` to `_TABLE_HALVES - 1` halves, by the
    sum plus `_TABLE_HALVES`, computed by the same float32 operations as `_damp`'s fallback."""
    signed = (np.arange(-_TABLE_HALVES, _TABLE_HALVES) * 0.5).astype(np.float32)
    table = np.abs(signed)
    table += _ONE_F32
    np.log(table, out=table)
    np.copysign(table, signed, out=table)
    table.flags.writeable = False
    return table


def _trigram_starts(part: Analysis) -> npt.NDArray[np.intp]:
    """Where a trigram starts whose three codepoints all belong to kept (non-stopword) words or are
    CJK characters."""
    length = len(part.codepoints)
    if length < 3:
        return np.zeros(0, dtype=np.intp)
    # +1 where a kept word starts, -1 where it ends: the running sum is 1 inside kept words.
    kept = np.zeros(length + 1, dtype=np.int32)
    kept[part.word_start] = 1
    kept[part.word_end] = -1
    np.add.accumulate(kept, out=kept)
    inside = kept[:length].astype(np.bool_)
    if len(part.cjk_pos):
        inside[part.cjk_pos] = True
    whole = inside[:-2] & inside[1:-1]
    whole &= inside[2:]
    return whole.nonzero()[0]
