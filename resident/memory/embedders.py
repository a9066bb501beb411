"""Choosing an embedder from its spec: `hash` (the embedded default), `local` (a model on this machine's
CPU, from the optional `embeddings` extra) or a loopback llama URL.

The spec is what `resident memory enable --embedder` takes and what the memory switch event
records. From it alone follow the name that tags the embedder's stored vectors, whether it runs
inline in the substrate (the hash embedder: microseconds per text, and sharing its text analysis
with keyword indexing) or in the embedding worker (anything that may be slow or on the network),
and how much its cosine counts in recall beside keyword matches.
"""

from __future__ import annotations

from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.index import DEFAULT_SEMANTIC_WEIGHT
from resident.memory.local import LocalEmbedder, check_installed

__all__ = ["LOCAL", "check_embedder_spec", "embedder_name", "make_embedder", "runs_inline", "semantic_weight"]

HASH = "hash"
LOCAL = "local"
# A real embedding model's cosine, min-max scaled over the candidates, beside keyword's 1: measured
# with multilingual-e5-small on the LoCoMo development conversations (0.5 / 0.75 / 1.0 gave recall@5
# 0.63 / 0.65 / 0.64). A llama.cpp model is assumed to be as informative.
MODEL_SEMANTIC_WEIGHT = 0.75


def check_embedder_spec(spec: str) -> str:
    """`hash`, `local` (if its model package is installed), or the normalised loopback URL of an
    OpenAI-compatible embeddings server."""
    word = spec.strip().lower()
    if word == HASH:
        return HASH
    if word == LOCAL:
        check_installed()
        return LOCAL
    return _loopback_url(spec.strip())


# The llama loopback client (`resident.memory.llama`) is loaded only for a llama spec: it brings
# httpx (about 15 MB and a quarter second at import), which a home on `hash` or `local` never needs.


def _loopback_url(spec: str) -> str:
    from resident.memory.llama import validate_loopback_url  # noqa: PLC0415 - loaded on first use, see above

    return validate_loopback_url(spec)


def _llama_embedder(url: str) -> Embedder:
    from resident.memory.llama import LlamaEmbedder  # noqa: PLC0415 - loaded on first use, see above

    return LlamaEmbedder(url)


def make_embedder(spec: str) -> Embedder:
    """The embedder a (checked) spec names."""
    if spec == HASH:
        return HashEmbedder()
    if spec == LOCAL:
        return LocalEmbedder()
    return _llama_embedder(_loopback_url(spec))


def embedder_name(spec: str) -> str:
    """The name a (checked) spec's embedder tags its vectors with (its `name`)."""
    if spec == HASH:
        return HashEmbedder().name
    if spec == LOCAL:
        return LocalEmbedder.name
    return "llama:" + _loopback_url(spec)


def runs_inline(spec: str) -> bool:
    """Whether the substrate embeds with it itself; every other embedder runs in the embedding worker."""
    return spec == HASH


def semantic_weight(spec: str) -> float:
    """How much the embedder's cosine counts in recall beside keyword matches."""
    return DEFAULT_SEMANTIC_WEIGHT if spec == HASH else MODEL_SEMANTIC_WEIGHT
