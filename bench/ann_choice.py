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

`--sweep` measures instead the settings of the graph recall ships (`resident.memory.ann.Ann`), built
the way `resident.memory.vectors` builds it (the quantizer trained on the first `BUILD_CHUNK` rows,
then rows added `BUILD_CHUNK` at a time), one child process per build so that each one's memory is
its own. For each setting (links, build width, quantizer): build rate, the anonymous memory the graph
adds, its serialised size; then for each search width and number of graph candidates, with every row
visible and with every other row filtered out inside the walk, the search p50/p99 including the exact
re-scoring of the candidates, and against the exact cosine search: recall@10 and recall@100 of the
re-scored best 100, and recall@10 of the graph's own top 10 (no re-scoring). A row counts as found
when its exact cosine reaches the k-th exact one (ties count).

    python bench/ann_choice.py --sweep --rows 1000000 --cache /tmp/hash_1m.npy \
        [--settings 16:128:8bit 32:200:fp16 ...] [--widths 512 1024] [--candidates 100 400]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import subprocess
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
from resident.memory.ann import Ann
from resident.memory.embedding import HashEmbedder
from resident.memory.vectors import BUILD_CHUNK

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


SWEEP_SETTINGS = ("16:128:8bit", "24:128:8bit", "32:128:8bit", "32:200:8bit", "24:128:fp16")
SWEEP_WIDTHS = (512, 768, 1024)
SWEEP_CANDIDATES = (100, 200, 400)
TOP = 100  # the vector channel's best rows that recall fuses with the keyword channel


def exact_scores(base: Vectors, queries: Vectors, allowed: npt.NDArray[np.bool_] | None) -> Vectors:
    """For each query, its exact cosine with every row (-inf where filtered out); rows in blocks,
    so that a mapped million rows is read once for all queries."""
    scores = np.empty((len(queries), len(base)), dtype=np.float32)
    for low in range(0, len(base), 100_000):
        scores[:, low : low + 100_000] = queries @ np.asarray(base[low : low + 100_000]).T
    if allowed is not None:
        scores[:, ~allowed] = -np.inf
    return scores


def kth_best(scores: Vectors, k: int) -> Vectors:
    """Each query's k-th highest exact cosine: a row scoring at least that is a correct answer."""
    return np.partition(scores, -k, axis=1)[:, -k].copy()


def recall_at(cosines: Vectors, kth: float, k: int) -> float:
    """Share of the k wanted rows among the first k found (`cosines`: their exact cosines, -inf
    for a row the filter hides), a row tied with the exact k-th counted as found."""
    return float(np.count_nonzero(cosines[:k] >= kth - 1e-6)) / k


def build_graph(base: Vectors, links: int, build_width: int, quantizer: str) -> tuple[Ann, float]:
    """The graph as `VectorIndex` builds it: trained on the first chunk, then a chunk at a time."""
    started = time.perf_counter()
    graph = Ann.trained(np.asarray(base[:BUILD_CHUNK]), links=links, build_width=build_width, quantizer=quantizer)
    for low in range(0, len(base), BUILD_CHUNK):
        high = min(len(base), low + BUILD_CHUNK)
        graph.add(np.arange(low, high, dtype=np.int64), np.asarray(base[low:high]))
    return graph, time.perf_counter() - started


def sweep_one(
    setting: str, rows: int, cache: Path, truth_file: Path, widths: Sequence[int], counts: Sequence[int]
) -> dict[str, Any]:
    """One setting's build and searches (run in its own process, for its memory figure)."""
    links, build_width, quantizer = setting.split(":")
    base = np.load(cache, mmap_mode="r")[:rows]
    truth = np.load(truth_file)
    queries, kinds = truth["queries"], {"all": None, "half": truth["mask"]}

    def exact(rows: npt.NDArray[np.int64], query: Vectors, allowed: npt.NDArray[np.bool_]) -> Vectors:
        cosines: Vectors = np.asarray(base[rows]) @ query
        return np.where(allowed[rows], cosines, -np.inf).astype(np.float32)
    before = memory_mib()[0]
    graph, built = build_graph(base, int(links), int(build_width), quantizer)
    out: dict[str, Any] = {"setting": setting, "build_rows_per_s": rows / built, "build_s": built,
                           "anon_mib_built": memory_mib()[0] - before,
                           "serialised_mib": graph.state().nbytes / 2**20}
    for kind, mask in kinds.items():
        allowed = np.ones(rows, dtype=np.bool_) if mask is None else mask
        bits = np.packbits(allowed, bitorder="little")
        kth10, kth100 = truth[f"kth10_{kind}"], truth[f"kth100_{kind}"]
        for width in widths:
            raw = [recall_at(exact(graph.search(q, K, bits, width=width, candidates=K), q, allowed), kth10[i], K)
                   for i, q in enumerate(queries)]
            for candidates in counts:
                latencies, at10, at100 = [], [], []
                for i, query in enumerate(queries):
                    started = time.perf_counter()
                    found = graph.search(query, TOP, bits, width=width, candidates=candidates)
                    # the caller's exact re-scoring, as `VectorIndex.nearest` does it
                    ordered_rows = np.sort(found)
                    cosines = np.asarray(base[ordered_rows]) @ query
                    best = ordered_rows[np.argsort(-cosines, kind="stable")[:TOP]]
                    latencies.append(time.perf_counter() - started)
                    scored = exact(best, query, allowed)
                    at10.append(recall_at(scored, kth10[i], K))
                    at100.append(recall_at(scored, kth100[i], TOP))
                ordered = sorted(latencies)
                out[f"{kind}_w{width}_c{candidates}"] = {
                    "p50_ms": 1000 * ordered[len(ordered) // 2],
                    "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
                    "recall_at_10": float(np.mean(at10)), "recall_at_100": float(np.mean(at100)),
                    "share_at_10_ge_0.9": float(np.mean(np.array(at10) >= 0.9)),
                    "graph_top10_recall_at_10": float(np.mean(raw)),
                }
    return out


def sweep(args: argparse.Namespace) -> None:
    """Every setting of `--settings`, each built in a child process; a table row per search."""
    if args.cache is None:
        raise SystemExit("--sweep needs --cache FILE (its children read the vectors from it)")
    base, queries = vectors(args.rows, args.queries, args.cache)
    rows = len(base)
    mask = np.zeros(rows, dtype=np.bool_)
    mask[::2] = True  # every other row visible, as in bench/scale.py
    arrays: dict[str, Any] = {"queries": queries, "mask": mask}
    for kind, allowed in (("all", None), ("half", mask)):
        scores = exact_scores(base, queries, allowed)
        arrays[f"kth10_{kind}"], arrays[f"kth100_{kind}"] = kth_best(scores, K), kth_best(scores, TOP)
        del scores
    del base
    widths, counts = args.widths or list(SWEEP_WIDTHS), args.candidates or list(SWEEP_CANDIDATES)
    report: dict[str, Any] = {"rows": rows, "queries": len(queries), "widths": widths, "candidates": counts,
                              "load_average": os.getloadavg(), "settings": []}
    with tempfile.TemporaryDirectory() as scratch:
        truth_file = Path(scratch) / "truth.npz"
        np.savez(truth_file, **arrays)
        del arrays
        for setting in args.settings:
            child = subprocess.run(
                [sys.executable, __file__, "--sweep-one", setting, "--rows", str(rows),
                 "--cache", str(args.cache), "--truth", str(truth_file),
                 "--widths", *map(str, widths), "--candidates", *map(str, counts)],
                check=True, capture_output=True, text=True,
            )
            measured = json.loads(child.stdout)
            measured["load_average"] = os.getloadavg()
            report["settings"].append(measured)
            print(json.dumps(measured), file=sys.stderr, flush=True)
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))
    print(sweep_table(report))


def sweep_table(report: dict[str, Any]) -> str:
    """The sweep as a Markdown table: one row per setting, search width and candidates."""
    lines = [
        "| links:build width:quantizer | build rows/s | graph anon MiB | width | candidates "
        "| p50 / p99 ms | r@10 | r@100 | ≥ 0.9 | graph top 10 r@10 "
        "| half: p50 / p99 ms | r@10 | r@100 | graph top 10 r@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for measured in report["settings"]:
        for width in report["widths"]:
            for candidates in report["candidates"]:
                a, h = measured[f"all_w{width}_c{candidates}"], measured[f"half_w{width}_c{candidates}"]
                lines.append(
                    f"| {measured['setting']} | {measured['build_rows_per_s']:,.0f} | {measured['anon_mib_built']:.0f} "
                    f"| {width} | {candidates} | {a['p50_ms']:.2f} / {a['p99_ms']:.2f} | {a['recall_at_10']:.3f} "
                    f"| {a['recall_at_100']:.3f} | {a['share_at_10_ge_0.9']:.1%} | {a['graph_top10_recall_at_10']:.3f} "
                    f"| {h['p50_ms']:.2f} / {h['p99_ms']:.2f} | {h['recall_at_10']:.3f} | {h['recall_at_100']:.3f} "
                    f"| {h['graph_top10_recall_at_10']:.3f} |"
                )
    return "\n".join(lines)


MEASURES = {"faiss": measure_faiss, "usearch": measure_usearch, "hnswlib": measure_hnswlib}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", nargs="+", choices=sorted(MEASURES), default=sorted(MEASURES))
    parser.add_argument("--cache", type=Path, default=None, help="keep the generated vectors in this .npy file")
    parser.add_argument("--sweep", action="store_true", help="sweep the shipped graph's settings instead")
    parser.add_argument("--settings", nargs="+", default=list(SWEEP_SETTINGS), help="links:build width:quantizer")
    parser.add_argument("--widths", nargs="+", type=int, default=None, help="search widths of the sweep")
    parser.add_argument("--candidates", nargs="+", type=int, default=None, help="graph candidates of the sweep")
    parser.add_argument("--sweep-one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--truth", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sweep_one is not None:
        widths, counts = args.widths or list(SWEEP_WIDTHS), args.candidates or list(SWEEP_CANDIDATES)
        print(json.dumps(sweep_one(args.sweep_one, args.rows, args.cache, args.truth, widths, counts)))
        return
    if args.sweep:
        sweep(args)
        return
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
