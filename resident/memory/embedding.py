"""Embedders: what the substrate needs from one, and the hashing embedder that needs no model.

The hashing embedder is the embedded default (no server, no download). It maps a text to signed
feature-hashing counts of its character n-grams (2 to 4, over normalised words padded with a
boundary mark, and over runs of CJK characters likewise), its words and its CJK characters,
damps them sublinearly and normalises the row. Texts sharing words, stems or CJK characters land
close, in any of the three languages. Everything is hashed with `resident.memory.text`'s
deterministic hash, so a text embeds to the same bits in every process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.text import Analysis, analyse, prefix_hash, span_hashes

__all__ = ["Embedder", "HashEmbedder"]

_BOUNDARY = 0x20
# Longer n-grams and whole words are more specific than bigrams; a CJK character carries about as
# much meaning as a short word, so it weighs like a trigram.
_NGRAM_WEIGHTS = {2: 0.5, 3: 1.0, 4: 1.0}
_WORD_WEIGHT = 1.5
_CJK_WEIGHT = 1.0
_SIGNED = np.array([1.0, -1.0])
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MASK64 = (1 << 64) - 1
# Salts keep the feature kinds apart, so the word "ab" and the n-gram "ab" are different features.
_SALT_NGRAM = 0x243F6A8885A308D3
_SALT_WORD = np.uint64(0x13198A2E03707344)
_SALT_CJK = np.uint64(0xA4093822299F31D0)


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


class HashEmbedder:
    """Deterministic feature-hashing embedder over character n-grams; needs no model or server."""

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise InvalidInput(f"hash embedder dim must be a positive integer, got {dim}")
        self._dim = dim

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
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for part in analyse(texts):
            out[part.first_doc : part.first_doc + part.n_docs] = self._embed_slice(part)
        return out

    def _embed_slice(self, part: Analysis) -> npt.NDArray[np.float32]:
        # Every feature adds its signed weight to one cell (document x dimension) of a flat array;
        # one weighted bincount adds them all. The extra last cell takes the n-grams that do not
        # count, which is cheaper than cutting them out.
        discard = part.n_docs * self._dim
        cells: list[npt.NDArray[np.int64]] = []
        weights: list[npt.NDArray[np.float64]] = []

        def add(hashes: npt.NDArray[np.uint64], doc_base: npt.NDArray[np.int64], weight: float) -> None:
            bucket_sign = _bucket_sign(hashes, 2 * self._dim)
            cells.append(doc_base + (bucket_sign >> 1))
            weights.append(_SIGNED[bucket_sign & 1] * weight)

        for ids, docs, weight in (
            (part.word_id ^ _SALT_WORD, part.word_doc, _WORD_WEIGHT),
            (part.cjk_id ^ _SALT_CJK, part.cjk_doc, _CJK_WEIGHT),
        ):
            add(ids, (docs.astype(np.int64) - part.first_doc) * self._dim, weight)
        stream, stream_doc = _padded_stream(part)
        prefix = prefix_hash(stream)
        doc_base = stream_doc * self._dim
        is_mark = stream == _BOUNDARY
        for n, weight in _NGRAM_WEIGHTS.items():
            starts = max(len(stream) + 1 - n, 0)
            add(span_hashes(prefix, n) ^ np.uint64((_SALT_NGRAM * n) & _MASK64), doc_base[:starts], weight)
            # An n-gram may begin or end on a boundary mark but must not have one inside.
            for k in range(1, n - 1):
                cells[-1][is_mark[k : k + starts]] = discard
        sums = np.bincount(np.concatenate(cells), weights=np.concatenate(weights), minlength=discard + 1)
        signed = sums[:discard].astype(np.float32)
        # log(1 + |x|) rather than log1p: numpy vectorises float32 log but not log1p (5x faster here).
        damped = np.copysign(np.log(np.abs(signed) + np.float32(1.0)), signed).reshape(part.n_docs, self._dim)
        norms = np.linalg.norm(damped, axis=1, keepdims=True)
        return (damped / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def _bucket_sign(hashes: npt.NDArray[np.uint64], width: int) -> npt.NDArray[np.int64]:
    """Map hashes evenly onto `[0, width)` by multiply-shift; the caller splits bucket and sign."""
    product = hashes * _MULTIPLIER
    return (((product >> np.uint64(32)) * np.uint64(width)) >> np.uint64(32)).astype(np.int64)


def _padded_stream(part: Analysis) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """The slice's kept words and CJK runs, each after a boundary mark, with one closing mark.

    Returns the stream and, for each of its positions, the slice-local document it belongs to (a
    leading mark belongs to the segment after it).
    """
    run_start, run_len, run_doc = _cjk_runs(part)
    seg_start = np.concatenate((part.word_start, run_start))
    seg_len = np.concatenate((part.word_end - part.word_start, run_len))
    seg_doc = np.concatenate((part.word_doc, run_doc)).astype(np.int64) - part.first_doc
    offset = np.cumsum(seg_len + 1) - (seg_len + 1)
    stream = np.full(int(seg_len.sum()) + len(seg_len) + 1, _BOUNDARY, dtype=np.uint32)
    within = _expand(np.zeros_like(seg_len), seg_len)
    segment = np.repeat(np.arange(len(seg_len)), seg_len)
    stream[offset[segment] + 1 + within] = part.codepoints[seg_start[segment] + within]
    stream_doc = np.repeat(seg_doc, seg_len + 1)
    return stream, np.append(stream_doc, stream_doc[-1] if len(stream_doc) else 0)


def _cjk_runs(
    part: Analysis,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.int32]]:
    """Maximal runs of adjacent CJK characters as (start, length, document)."""
    positions = part.cjk_pos
    if not len(positions):
        return positions, positions, part.cjk_doc
    first = np.flatnonzero(np.diff(positions, prepend=positions[0] - 2) != 1)
    lengths = np.diff(first, append=len(positions))
    return positions[first], lengths, part.cjk_doc[first]


def _expand(base: npt.NDArray[np.intp], count: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """`base[k] + j` for every k and every j < count[k], concatenated."""
    total = int(count.sum())
    ends = np.cumsum(count)
    return np.repeat(base - (ends - count), count) + np.arange(total)
