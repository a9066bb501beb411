"""Choosing an embedder from its spec: `hash` (the embedded default) or a loopback llama URL."""

from __future__ import annotations

from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.llama import LlamaEmbedder, validate_loopback_url

__all__ = ["check_embedder_spec", "make_embedder"]


def check_embedder_spec(spec: str) -> str:
    """`hash`, or the normalised loopback URL of an OpenAI-compatible embeddings server."""
    if spec.strip().lower() == "hash":
        return "hash"
    return validate_loopback_url(spec.strip())


def make_embedder(spec: str) -> Embedder:
    """The embedder a (checked) spec names."""
    if spec == "hash":
        return HashEmbedder()
    return LlamaEmbedder(validate_loopback_url(spec))
