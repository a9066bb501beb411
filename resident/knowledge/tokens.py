"""The tokens the keyword index of pages is fed: memory's own analysis, spelled as index terms.

Pages and queries are analysed by `resident.memory.text` — the same normalisation (NFKC, case and
accent folding), stopwords and Chinese one- and two-character grams that memory recall uses — so
both stores agree on what a word is. The index engine only ever sees the analysis's 64-bit term
ids, each written as 16 hex digits and separated by spaces; its whitespace tokenizer then reads
back exactly those terms, one per token occurrence (so term frequencies survive).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from resident.memory.text import term_ids, term_ids_batch

__all__ = ["TOKEN_CHARS", "query_tokens", "token_texts"]

TOKEN_CHARS = 16
_SPACE = np.uint8(ord(" "))


def token_texts(texts: Sequence[str]) -> list[str]:
    """Each text's term ids as one space-separated string of hex tokens (what the index stores)."""
    if not texts:
        return []
    docs, ids = term_ids_batch(texts)
    order = np.argsort(docs, kind="stable")
    # All hex digits of the batch at once, then a space after each token: no per-token Python work.
    hexed = np.frombuffer(ids[order].astype(">u8").tobytes().hex().encode("ascii"), dtype=np.uint8)
    spaced = np.empty((len(ids), TOKEN_CHARS + 1), dtype=np.uint8)
    spaced[:, :TOKEN_CHARS] = hexed.reshape(-1, TOKEN_CHARS)
    spaced[:, TOKEN_CHARS] = _SPACE
    joined = spaced.tobytes().decode("ascii")
    bounds = (np.searchsorted(docs[order], np.arange(len(texts) + 1)) * (TOKEN_CHARS + 1)).tolist()
    return [joined[bounds[i] : bounds[i + 1]] for i in range(len(texts))]


def query_tokens(query: str) -> list[str]:
    """The distinct terms of a query as index tokens (empty when it holds only stopwords)."""
    return [f"{term:016x}" for term in sorted(set(term_ids(query).tolist()))]
