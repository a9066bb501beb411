"""Embedders: what the substrate needs from one, and the hashing embedder that needs no model.

The hashing embedder is the embedded default (no server, no download). It maps a text to signed
feature-hashing counts of its character trigrams (inside normalised non-stopword words and runs
of CJK characters), its words and its CJK characters, damps them sublinearly and normalises the
row. Texts sharing words, stems or CJK characters land close, in any of the three languages.
Everything is hashed with `resident.memory.text`'s deterministic hash, so a text embeds to the
same bits in every process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.text import Analysis, analyse, prefix_hash, span_hashes

__all__ = ["Embedder", "HashEmbedder"]

# Whole words are more specific than trigrams; a CJK character carries about as much meaning as a
# short word, so it weighs like a trigram.
_TRIGRAM_WEIGHT = 1.0
_WORD_WEIGHT = 1.5
_CJK_WEIGHT = 1.0
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
# Salts keep the feature kinds apart, so the word "ab" and the n-gram "ab" are different features.
_SALT_TRIGRAM = np.uint64(0x243F6A8885A308D3 * 3 & ((1 << 64) - 1))
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
        if dim < 1 or dim & (dim - 1):
            raise InvalidInput(f"hash embedder dim must be a positive power of two, got {dim}")
        self._dim = dim
        self._bits = dim.bit_length() - 1

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

    def embed_analysed(self, parts: Sequence[Analysis], count: int) -> npt.NDArray[np.float32]:
        """Embed `count` texts from their analysis (`resident.memory.text.analyse`), which the
        caller may also use for keyword indexing: the analysis is most of the work."""
        out = np.zeros((count, self._dim), dtype=np.float32)
        for part in parts:
            out[part.first_doc : part.first_doc + part.n_docs] = self._embed_slice(part)
        return out

    def _embed_slice(self, part: Analysis) -> npt.NDArray[np.float32]:
        # Every feature adds its signed weight to one cell (document x dimension) of a flat array;
        # one weighted bincount adds them all. Features that must not count go to an extra cell.
        dim = self._dim
        discard = part.n_docs * dim
        codepoints = part.codepoints
        # Character trigrams inside kept words and CJK runs carry stems and inflections across the
        # three languages; stopwords, spaces and punctuation contribute none.
        kept = _kept_positions(part, len(codepoints))
        whole = kept[:-2] & kept[1:-1] & kept[2:] if len(codepoints) >= 3 else kept[:0]
        starts = np.flatnonzero(whole)
        doc_of = np.cumsum(codepoints == 0, dtype=np.int64)
        trigrams = span_hashes(prefix_hash(codepoints), 3)[starts] ^ _SALT_TRIGRAM
        features = (
            (trigrams, doc_of[starts], _TRIGRAM_WEIGHT),
            (part.word_id ^ _SALT_WORD, part.word_doc.astype(np.int64) - part.first_doc, _WORD_WEIGHT),
            (part.cjk_id ^ _SALT_CJK, part.cjk_doc.astype(np.int64) - part.first_doc, _CJK_WEIGHT),
        )
        cells: list[npt.NDArray[np.int64]] = []
        weights: list[npt.NDArray[np.float32]] = []
        for hashes, docs, weight in features:
            bucket_sign = _bucket_sign(hashes, self._bits + 1)
            cells.append(docs * dim + (bucket_sign >> 1))
            weights.append(np.float32(weight) - np.float32(2 * weight) * (bucket_sign & 1).astype(np.float32))
        sums = np.bincount(np.concatenate(cells), weights=np.concatenate(weights), minlength=discard)
        signed = sums[:discard].astype(np.float32)
        # log(1 + |x|) rather than log1p: numpy vectorises float32 log but not log1p (5x faster here).
        damped = np.copysign(np.log(np.abs(signed) + np.float32(1.0)), signed).reshape(part.n_docs, dim)
        norms = np.linalg.norm(damped, axis=1, keepdims=True)
        return (damped / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def _kept_positions(part: Analysis, length: int) -> npt.NDArray[np.bool_]:
    """Which codepoints belong to a kept (non-stopword) word or are CJK characters."""
    edges = np.bincount(part.word_start, minlength=length + 1) - np.bincount(part.word_end, minlength=length + 1)
    kept: npt.NDArray[np.bool_] = np.cumsum(edges[:length]) > 0
    kept[part.cjk_pos] = True
    return kept


def _bucket_sign(hashes: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.int64]:
    """The top `bits` bits of a multiplicative hash: bucket in the high part, sign in the lowest bit."""
    return ((hashes * _MULTIPLIER) >> np.uint64(64 - bits)).astype(np.int64)
