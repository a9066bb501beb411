"""The approximate-nearest-neighbour graph of recall's vector channel: faiss HNSW over 8-bit vectors.

Chosen by measurement (`bench/ann_choice.py`, bench/RESULTS.md) among hnswlib, usearch and faiss,
at a million hash vectors: faiss built fastest (14k rows/s against 8k), searched as fast, and is the
one of the three whose Python API filters *inside* the graph walk at no cost (an `IDSelectorBitmap`
of the rows a caller may see); its 8-bit scalar quantizer kept the graph to 370 MB (522 MiB with the
32 links chosen since) instead of the 1.2 GB of hnswlib's float32 (usearch maps its file, but in
Python can only filter after the search).

Labels are row numbers (an `IndexIDMap`), so rows can be added in any order: rows that had no
vector when their turn came are added when their vector arrives. The graph only ranks: callers
score its rows again with the exact vectors, so the quantizer's error never reaches a score.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput

__all__ = ["Ann"]

# HNSW links per node, candidate width while building and while searching, and how many rows a search
# returns for the caller to score exactly. The graph grows in batches (a home grows), which costs
# faiss's graph recall, and the hash vectors are hard for any graph (a query's best 100 cosines lie
# within about a tenth at 100k). Measured at 1M of them added 10,000 at a time as `VectorIndex` adds them
# (`bench/ann_choice.py --sweep`, bench/RESULTS.md "Agreement of the vector graph at a million"), 200
# candidates re-scored exactly at width 1024, share of the exact top 10 / top 100 found: links 16 at
# build width 128 (before) 0.79 / 0.76; 16 at 200, 0.86 / 0.85; 32 at 128, 0.88 / 0.85; 32 at 200,
# 0.94 / 0.92 (half the rows filtered out: 0.94 / 0.91), p50 / p99 3.5 / 6.7 ms with the re-scoring at
# load average 3 on 2 shared cores, the graph 522 MiB against 400, built at 1,900 rows/s against 4,500.
# Width 768 loses 0.01; 400 candidates gain 0.005 of the top 100. Fused with keywords, recall's top 10
# then agreed with the exact search's at 0.985 (99% of queries at >= 0.9; 0.956 before) at 1M in
# `bench/scale.py`, the channel 6.7 / 9.0 ms p50 / p99, the graph caught up 6 min after the load.
LINKS = 32
BUILD_WIDTH = 200
SEARCH_WIDTH = 1024
CANDIDATES = 200
# How the graph stores its vectors (faiss's scalar quantizers): 1 byte a dimension, or 2 (fp16, 256 MB
# more at 1M, was not measured there).
QUANTIZERS = {"8bit": "QT_8bit", "fp16": "QT_fp16"}
QUANTIZER = "8bit"


def _faiss() -> Any:
    # Imported at first use: a home too small for a graph never pays faiss's import (tens of MB).
    import faiss  # noqa: PLC0415

    return faiss


class Ann:
    """An HNSW graph of unit vectors labelled by row; inner product is cosine."""

    def __init__(self, index: Any) -> None:
        self._index = index

    @classmethod
    def trained(
        cls,
        sample: npt.NDArray[np.float32],
        *,
        links: int = LINKS,
        build_width: int = BUILD_WIDTH,
        quantizer: str = QUANTIZER,
    ) -> Ann:
        """An empty graph whose quantizer learned each dimension's range from `sample`.

        The keywords default to the chosen constants; `bench/ann_choice.py --sweep` varies them."""
        faiss = _faiss()
        if quantizer not in QUANTIZERS:
            raise InvalidInput(f"unknown vector quantizer {quantizer!r}: one of {', '.join(QUANTIZERS)}")
        if links < 2 or build_width < 1:
            raise InvalidInput(f"a graph needs links >= 2 and build width >= 1, not {links} and {build_width}")
        kind = getattr(faiss.ScalarQuantizer, QUANTIZERS[quantizer])
        graph = faiss.IndexHNSWSQ(sample.shape[1], kind, links, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = build_width
        graph.train(np.ascontiguousarray(sample, dtype=np.float32))
        return cls(faiss.IndexIDMap(graph))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, rows: npt.NDArray[np.int64], vectors: npt.NDArray[np.float32]) -> None:
        """Add `vectors` (unit rows) labelled `rows`; faiss lets go of the interpreter lock meanwhile."""
        if len(rows):
            self._index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), rows.astype(np.int64))

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        allowed_bits: npt.NDArray[np.uint8],
        *,
        width: int = SEARCH_WIDTH,
        candidates: int = CANDIDATES,
    ) -> npt.NDArray[np.int64]:
        """Rows near `query` (a unit vector) among those whose bit is set in `allowed_bits` (row r
        is bit r % 8 of byte r // 8; the filter is applied inside the walk), best first by the
        graph's quantised score: up to `max(limit, candidates)` of them, for the caller to score
        exactly and keep its best `limit`."""
        faiss = _faiss()
        if limit <= 0 or not len(self):
            return np.zeros(0, dtype=np.int64)
        wanted = max(limit, candidates)
        selector = faiss.IDSelectorBitmap(len(allowed_bits), faiss.swig_ptr(allowed_bits))
        params = faiss.SearchParametersHNSW(efSearch=max(width, wanted), sel=selector)
        _, labels = self._index.search(query.reshape(1, -1).astype(np.float32, copy=False), wanted, params=params)
        found: npt.NDArray[np.int64] = labels[0]
        return found[found >= 0]

    def state(self) -> npt.NDArray[np.uint8]:
        """The graph as bytes, for `from_state`."""
        serialised: npt.NDArray[np.uint8] = _faiss().serialize_index(self._index)
        return serialised

    @classmethod
    def from_state(cls, serialised: npt.NDArray[np.uint8]) -> Ann:
        """The graph `state` returned (read into memory: faiss cannot walk a mapped HNSW); InvalidInput
        if faiss cannot read it (a torn file)."""
        try:
            return cls(_faiss().deserialize_index(np.ascontiguousarray(serialised, dtype=np.uint8)))
        except RuntimeError as error:
            raise InvalidInput(f"a persisted vector graph does not load: {str(error).strip()[:200]}") from None
