"""One scale for hits of different sources.

Each source ranks its own hits by its own measure (memory by reciprocal rank fusion of semantic, keyword and
time; knowledge pages and verified entries by BM25; a bridged service by its own final score). Those numbers
are not comparable, so none of them is compared: a hit is placed by its *rank within its source*,

    score = (C + 1) / (C + rank)          C = 60, rank 1 for the source's best hit

which is 1.0 for every source's best hit and falls slowly (rank 2: 0.984, rank 10: 0.877). Hits are taken best
score first; equal scores (the same rank in different sources) in the order of `SOURCE_ORDER`, the runtime's
own sources before the bridged one. Each hit keeps its own source's scores in its own fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from resident.messages.cognition import Source

__all__ = ["RANK_CONSTANT", "SOURCE_ORDER", "Placed", "place", "scale"]

T = TypeVar("T")

# The reciprocal rank fusion constant memory's own recall uses (Cormack et al.): a small rank difference counts
# for little, so one source's second hit is not pushed far below another's first.
RANK_CONSTANT = 60
# Ties on the scale go to the runtime's own sources first: what the runtime governs before what it consumes.
SOURCE_ORDER: tuple[Source, ...] = ("memory", "verified_entry", "knowledge_page", "bridge")


@dataclass(frozen=True, slots=True)
class Placed(Generic[T]):
    """One hit placed on the common scale."""

    source: Source
    rank: int
    score: float
    item: T


def scale(rank: int) -> float:
    """The common scale's value for the hit of rank `rank` (1 is the best) within its source."""
    if rank < 1:
        raise ValueError(f"a rank starts at 1, not {rank}")
    return (RANK_CONSTANT + 1) / (RANK_CONSTANT + rank)


def place(ranked: Mapping[Source, Sequence[T]], k: int) -> list[Placed[T]]:
    """The best `k` hits of every source together, each source's list best first, on the common scale."""
    placed = [
        Placed(source=source, rank=rank, score=scale(rank), item=item)
        for source in SOURCE_ORDER
        for rank, item in enumerate(ranked.get(source, ()), start=1)
    ]
    placed.sort(key=lambda hit: (-hit.score, SOURCE_ORDER.index(hit.source)))
    return placed[:k]
