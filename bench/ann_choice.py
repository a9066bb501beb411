"""Which approximate-nearest-neighbour library recall's vector channel uses (issue 26), by measurement.

The same vectors for every candidate: `--rows` hash-embedder vectors (256 dimensions, unit length)
of `bench/recall_index.py`'s synthetic mix, and `--queries` of its queries. For each library, with
the same graph (HNSW, M = 16, 64 candidates while building) and 8-bit vectors where the library
offers them (the float32 vectors alone are 1 GB at a million rows):

* build rate (rows a second, on every core),
* the process's anonymous and file-backed memory the index adds (after building, and after
  loading it again from its serialised bytes; usearch can also map them instead of loading),
* one-query search p50/p99 and recall@10 against the exact cosine top 10, at two search widths,
* the same with half the rows filtered out inside the search (faiss: an `IDSelectorBitmap`;
  hnswlib: its `filter` callable; usearch has no filter in Python, so it over-fetches twice as
  many and drops the rest).

    python bench/ann_choice.py [--rows N] [--queries Q] [--only faiss usearch hnswlib] [--cache FILE]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import synthetic_queries, synthetic_texts
from resident.memory.embedding import HashEmbedder

K = 10
M = 16
EF_BUILD = 64
WIDTHS = (64, 128, 256)
Vectors = npt.NDArray[np.float32]


def memory_mib() -> tuple[float, float]:
    """This process's anonymous and file-backed RSS, in MiB (Linux)."""
    found = {"RssAnon": 0.0, "RssFile": 0.0}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in found:
            found[name] = int(value.split()[0]) / 1024
    return found["RssAnon"], found["RssFile"]


def vectors(rows: int, queries: int, cache: Path | None) -> tuple[Vectors, Vectors]:
    if cache is not None and cache.exists():
        data = np.load(cache)
        if len(data) >= rows:
            base = np.ascontiguousarray(data[:rows])
            return base, HashEmbedder().embed_queries(synthetic_queries(queries))
    embedder = HashEmbedder()
    texts = synthetic_texts(rows)
    base = np.concatenate([embedder.embed(texts[lo : lo + 20_000]) for lo in range(0, rows, 20_000)])
    if cache is not None:
        np.save(cache, base)
    return base, embedder.embed_queries(synthetic_queries(queries))


def exact_top(base: Vectors, queries: Vectors, allowed: npt.NDArray[np.bool_] | None) -> list[set[int]]:
    tops = []
    for query in queries:
        scores = base @ query
        if allowed is not None:
            scores[~allowed] = -np.inf
        tops.append(set(np.argpartition(scores, -K)[-K:].tolist()))
    return tops


def timed(search: Callable[[Vectors], Sequence[int]], queries: Vectors, truth: list[set[int]]) -> dict[str, float]:
    for query in queries[:20]:
        search(query)
    latencies, overlap = [], []
    for query, top in zip(queries, truth, strict=True):
        started = time.perf_counter()
        found = search(query)
        latencies.append(time.perf_counter() - started)
        overlap.append(len(set(found[:K]) & top) / K)
    ordered = sorted(latencies)
    return {
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "recall_at_10": float(np.mean(overlap)),
    }


def measure_faiss(base: Vectors, queries: Vectors, truth: Any, half: Any, mask: Any) -> dict[str, Any]:
    faiss: Any = importlib.import_module("faiss")  # measured one library at a time

    before = memory_mib()
    index = faiss.IndexHNSWSQ(base.shape[1], faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_BUILD
    started = time.perf_counter()
    index.train(base[: min(len(base), 100_000)])
    index.add(base)
    built = time.perf_counter() - started
    after = memory_mib()
    out: dict[str, Any] = {"build_rows_per_s": len(base) / built, "build_s": built,
                           "anon_mib_built": after[0] - before[0]}
    bitmap = np.packbits(mask, bitorder="little")
    selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap))
    for width in WIDTHS:
        params = faiss.SearchParametersHNSW(efSearch=width)
        filtered = faiss.SearchParametersHNSW(efSearch=width, sel=selector)

        def search(query: Vectors, p: Any = params, graph: Any = index) -> Sequence[int]:
            return list(graph.search(query[None, :], K, params=p)[1][0].tolist())

        def search_half(query: Vectors, p: Any = filtered, graph: Any = index) -> Sequence[int]:
            return list(graph.search(query[None, :], K, params=p)[1][0].tolist())

        out[f"ef{width}"] = timed(search, queries, truth)
        out[f"ef{width}_filtered_half"] = timed(search_half, queries, half)
        del search, search_half
    serialised = faiss.serialize_index(index)
    out["serialised_mib"] = serialised.nbytes / 2**20
    del index
    gc.collect()
    before = memory_mib()
    started = time.perf_counter()
    loaded = faiss.deserialize_index(serialised)
    out["load_s"] = time.perf_counter() - started
    out["anon_mib_loaded"] = memory_mib()[0] - before[0]
    del loaded
    return out


def measure_usearch(base: Vectors, queries: Vectors, truth: Any, half: Any, mask: Any) -> dict[str, Any]:
    Index: Any = importlib.import_module("usearch.index").Index  # noqa: N806 - the library's class

    before = memory_mib()
    index = Index(ndim=base.shape[1], metric="ip", dtype="i8", connectivity=M, expansion_add=EF_BUILD)
    started = time.perf_counter()
    index.add(np.arange(len(base), dtype=np.uint64), base, threads=os.cpu_count() or 1)
    built = time.perf_counter() - started
    after = memory_mib()
    out: dict[str, Any] = {"build_rows_per_s": len(base) / built, "build_s": built,
                           "anon_mib_built": after[0] - before[0]}
    for width in WIDTHS:
        index.expansion_search = width

        def search(query: Vectors, graph: Any = index) -> Sequence[int]:
            return list(graph.search(query, K, threads=1).keys.tolist())

        def search_half(query: Vectors, graph: Any = index) -> Sequence[int]:
            keys = graph.search(query, 2 * K, threads=1).keys
            return list(keys[mask[keys.astype(np.int64)]].tolist())

        out[f"ef{width}"] = timed(search, queries, truth)
        out[f"ef{width}_overfetch_half"] = timed(search_half, queries, half)
        del search, search_half
    serialised = np.frombuffer(index.save(), dtype=np.uint8)
    out["serialised_mib"] = serialised.nbytes / 2**20
    del index
    gc.collect()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "index.npy"
        np.save(path, serialised)
        del serialised
        gc.collect()
        mapped = np.load(path, mmap_mode="r")
        before = memory_mib()
        started = time.perf_counter()
        viewed = Index.restore(mapped, view=True)
        out["view_s"] = time.perf_counter() - started
        assert viewed is not None
        viewed.expansion_search = WIDTHS[-1]
        def viewed_search(query: Vectors, graph: Any = viewed) -> Sequence[int]:
            return list(graph.search(query, K, threads=1).keys.tolist())

        out["viewed"] = timed(viewed_search, queries, truth)
        now = memory_mib()
        out["anon_mib_viewed"], out["file_mib_viewed"] = now[0] - before[0], now[1] - before[1]
        del viewed
        gc.collect()
        before = memory_mib()
        started = time.perf_counter()
        loaded = Index.restore(np.asarray(mapped), view=False)
        out["load_s"] = time.perf_counter() - started
        out["anon_mib_loaded"] = memory_mib()[0] - before[0]
        del loaded, mapped
    return out


def measure_hnswlib(base: Vectors, queries: Vectors, truth: Any, half: Any, mask: Any) -> dict[str, Any]:
    hnswlib: Any = importlib.import_module("hnswlib")  # measured one library at a time

    before = memory_mib()
    index = hnswlib.Index(space="ip", dim=base.shape[1])
    index.init_index(max_elements=len(base), ef_construction=EF_BUILD, M=M)
    started = time.perf_counter()
    index.add_items(base, np.arange(len(base)), num_threads=os.cpu_count() or 1)
    built = time.perf_counter() - started
    after = memory_mib()
    out: dict[str, Any] = {"build_rows_per_s": len(base) / built, "build_s": built,
                           "anon_mib_built": after[0] - before[0]}
    allowed = mask.tolist()
    for width in WIDTHS:
        index.set_ef(width)

        def search(query: Vectors) -> Sequence[int]:
            return list(index.knn_query(query, k=K, num_threads=1)[0][0].tolist())

        def search_half(query: Vectors) -> Sequence[int]:
            return list(index.knn_query(query, k=K, num_threads=1, filter=allowed.__getitem__)[0][0].tolist())

        out[f"ef{width}"] = timed(search, queries, truth)
        out[f"ef{width}_filtered_half"] = timed(search_half, queries, half)
    return out


MEASURES = {"faiss": measure_faiss, "usearch": measure_usearch, "hnswlib": measure_hnswlib}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", nargs="+", choices=sorted(MEASURES), default=sorted(MEASURES))
    parser.add_argument("--cache", type=Path, default=None, help="keep the generated vectors in this .npy file")
    args = parser.parse_args()
    base, queries = vectors(args.rows, args.queries, args.cache)
    # Every other row visible, as in bench/scale.py (deven's and alice's memories alternate).
    mask = np.zeros(len(base), dtype=np.bool_)
    mask[::2] = True
    started = time.perf_counter()
    truth, half = exact_top(base, queries, None), exact_top(base, queries, mask)
    scan_ms = 1000 * (time.perf_counter() - started) / (2 * len(queries))
    report: dict[str, Any] = {"rows": len(base), "dim": base.shape[1], "exact_scan_mean_ms": scan_ms,
                              "load_average": os.getloadavg()}
    for name in args.only:
        gc.collect()
        report[name] = MEASURES[name](base, queries, truth, half, mask)
        print(json.dumps({name: report[name]}), file=sys.stderr, flush=True)
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
