"""The tokens the keyword index of pages is fed: memory's own analysis, spelled as index terms.

Pages and queries are analysed by `resident.memory.text` — the same normalisation (NFKC, case and
accent folding), stopwords and Chinese one- and two-character grams that memory recall uses — so
both stores agree on what a word is. The index engine only ever sees the analysis's 64-bit term
ids, each written as 12 base64 characters (a zero byte, then the id's 8 bytes: 9 bytes encode to
12 characters exactly, so a whole batch is encoded in one call) and separated by spaces;
its whitespace tokenizer then reads back exactly those terms, one per token occurrence (so term
frequencies survive). Against 16 hex digits, the shorter tokens cut indexing time by about a
fifth (`bench/knowledge.py`, 10k pages).

A batch is analysed and encoded in chunks of about `CHUNK_CHARS` characters. A chunk's temporary
arrays (a few hundred kilobytes) are recycled by the allocator and stay in the CPU's caches; a
whole 1,600-page batch's (tens of megabytes) were mapped fresh, page-faulted in and unmapped
again for every batch, which cost the indexer a third of its CPU time in the kernel.
"""

from __future__ import annotations

import binascii
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from resident.memory.text import term_ids, term_ids_batch

__all__ = ["CHUNK_CHARS", "TOKEN_CHARS", "query_tokens", "token_texts"]

TOKEN_CHARS = 12
# Characters of text analysed together (about 125 pages of 800 characters; see the module docstring).
CHUNK_CHARS = 100_000
_ID_BYTES = 8
_SPACE = np.uint8(ord(" "))


def _encoded(ids: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Every id's token, one row of `TOKEN_CHARS` ASCII bytes each, in one base64 call."""
    padded = np.zeros((len(ids), _ID_BYTES + 1), dtype=np.uint8)
    padded[:, 1:] = ids.astype(">u8").view(np.uint8).reshape(-1, _ID_BYTES)
    # Standard base64 (`+` and `/` are not whitespace): the URL-safe variant costs a second pass.
    encoded = binascii.b2a_base64(padded.tobytes(), newline=False)
    return np.frombuffer(encoded, dtype=np.uint8).reshape(-1, TOKEN_CHARS)


def token_texts(texts: Sequence[str]) -> list[str]:
    """Each text's term ids as one space-separated string of tokens (what the index stores)."""
    tokens: list[str] = []
    start = 0
    while start < len(texts):
        end, chars = start + 1, len(texts[start])
        while end < len(texts) and chars + len(texts[end]) <= CHUNK_CHARS:
            chars += len(texts[end])
            end += 1
        tokens += _chunk_token_texts(texts[start:end])
        start = end
    return tokens


def _chunk_token_texts(texts: Sequence[str]) -> list[str]:
    """`token_texts` of one chunk of texts."""
    docs, ids = term_ids_batch(texts)
    order = np.argsort(docs, kind="stable")
    # Every token of the chunk at once, a space after each: no per-token Python work.
    spaced = np.empty((len(ids), TOKEN_CHARS + 1), dtype=np.uint8)
    spaced[:, :TOKEN_CHARS] = _encoded(ids[order])
    spaced[:, TOKEN_CHARS] = _SPACE
    joined = spaced.tobytes().decode("ascii")
    bounds = (np.searchsorted(docs[order], np.arange(len(texts) + 1)) * (TOKEN_CHARS + 1)).tolist()
    return [joined[bounds[i] : bounds[i + 1]] for i in range(len(texts))]


def query_tokens(query: str) -> list[str]:
    """The distinct terms of a query as index tokens (empty when it holds only stopwords)."""
    ids = np.unique(term_ids(query))
    return [row.tobytes().decode("ascii") for row in _encoded(ids)] if len(ids) else []
