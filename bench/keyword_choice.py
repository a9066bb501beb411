"""Recall's keyword channel: its numpy postings against tantivy, at the same size, by measurement (issue 26).

`--rows` memories of `bench/recall_index.py`'s synthetic mix, every other one in the asking
member's bank, and `--queries` of its queries, each asked for its best 100 rows of that bank:

* **postings** — `resident.memory.keyword.KeywordIndex` (what recall uses), with the bank as a
  mask of rows, with and without relevance feedback (recall asks with it): its pruned search
  (MaxScore, what `search` does) and, beside it, every posting scored (what it did before), with
  the postings each read per query (median);
* **tantivy** — the knowledge index's way (`resident.knowledge.search_index`): the same analysis
  (its whitespace-joined terms), the bank a zero-scored filter clause inside the query, the best
  100 documents and each one's row read back (recall needs rows).

Build time, and one-query p50/p99 of each, wall and CPU time, in one process: the searches take
turns on each query, so that other work on the machine slows them alike. No feedback on tantivy:
it would need each hit's terms read back and a second query, at least doubling its figure.

    python bench/keyword_choice.py [--rows N] [--queries Q]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import synthetic_queries, synthetic_texts
from resident.knowledge.tokens import query_tokens, token_texts
from resident.memory import keyword
from resident.memory.keyword import KeywordIndex

LIMIT = 100
BATCH = 50_000


Searcher = Callable[[str], object]


def timed_together(searches: dict[str, Searcher], queries: list[str]) -> dict[str, dict[str, float]]:
    """p50 / p99 of each search, wall and CPU time, the searches taking turns on each query (so a
    machine shared with other work slows them alike)."""
    for search in searches.values():
        for query in queries[:20]:
            search(query)
    wall: dict[str, list[float]] = {name: [] for name in searches}
    cpu: dict[str, list[float]] = {name: [] for name in searches}
    for query in queries:
        for name, search in searches.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            search(query)
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - started_cpu)
    return {name: {**_percentiles(wall[name], "ms"), **_percentiles(cpu[name], "cpu_ms")} for name in searches}


def _percentiles(latencies: list[float], unit: str) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        f"p50_{unit}": 1000 * ordered[len(ordered) // 2],
        f"p99_{unit}": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def postings(texts: list[str]) -> tuple[KeywordIndex, float]:
    started = time.perf_counter()
    index = KeywordIndex()
    for first in range(0, len(texts), BATCH):
        index.add(texts[first : first + BATCH])
    return index, time.perf_counter() - started


def postings_searches(index: KeywordIndex, mask: np.ndarray) -> dict[str, Searcher]:
    """The index's search pruned (what `search` does at this size) and with every posting scored
    (what it did before), each without and with feedback."""
    searches: dict[str, Searcher] = {}
    # `_PRUNED_FROM` 0 prunes every query; past any query's postings, none is pruned.
    for name, pruned_from in (("pruned", 0), ("exhaustive", 1 << 62)):
        for way, feedback in (("plain", False), ("feedback", True)):
            searches[f"{name}_{way}"] = functools.partial(
                _search_with, index, mask, pruned_from=pruned_from, feedback=feedback
            )
    return searches


def _search_with(
    index: KeywordIndex, mask: np.ndarray, query: str, *, pruned_from: int, feedback: bool
) -> tuple[np.ndarray, np.ndarray]:
    saved = keyword._PRUNED_FROM
    keyword._PRUNED_FROM = pruned_from
    try:
        return index.search(query, mask, LIMIT, feedback=feedback)
    finally:
        keyword._PRUNED_FROM = saved


def read_per_query(search: Searcher, index: KeywordIndex, queries: list[str]) -> int:
    """The median number of postings one query reads (whole, or by a binary search)."""
    counts = []
    for query in queries:
        before = index._postings_read
        search(query)
        counts.append(index._postings_read - before)
    return sorted(counts)[len(counts) // 2]


def with_tantivy(texts: list[str], directory: Path) -> tuple[Searcher, float]:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("bank", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("tokens", tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("row", stored=True)
    schema = builder.build()
    started = time.perf_counter()
    index = tantivy.Index(schema, path=str(directory))
    writer = index.writer(256_000_000, os.cpu_count() or 1)
    for first in range(0, len(texts), BATCH):
        chunk = texts[first : first + BATCH]
        for row, tokens in enumerate(token_texts(chunk), start=first):
            document = tantivy.Document()
            document.add_text("bank", "mine" if row % 2 == 0 else "theirs")
            document.add_text("tokens", tokens)
            document.add_unsigned("row", row)
            writer.add_document(document)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    built = time.perf_counter() - started
    searcher = index.searcher()
    query_type, occur = tantivy.Query, tantivy.Occur
    in_bank = query_type.const_score_query(query_type.term_query(schema, "bank", "mine"), 0.0)

    def search(query: str) -> list[int]:
        tokens = query_tokens(query)
        if not tokens:
            return []
        terms = query_type.boolean_query([(occur.Should, query_type.term_query(schema, "tokens", t)) for t in tokens])
        filtered = query_type.boolean_query([(occur.Must, terms), (occur.Must, in_bank)])
        return [searcher.doc(address)["row"][0] for _, address in searcher.search(filtered, LIMIT, count=False).hits]

    return search, built


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts = synthetic_texts(args.rows)
    queries = synthetic_queries(args.queries)
    report: dict[str, Any] = {"rows": args.rows, "load_average": os.getloadavg()}
    index, report["postings_build_s"] = postings(texts)
    mask = np.zeros(len(texts), dtype=np.bool_)
    mask[::2] = True
    searches = postings_searches(index, mask)
    report["postings_read_p50"] = {name: read_per_query(search, index, queries) for name, search in searches.items()}
    with tempfile.TemporaryDirectory(prefix="resident-bench-keyword-") as scratch:
        searches["tantivy_plain"], report["tantivy_build_s"] = with_tantivy(texts, Path(scratch))
        report["load_average_searches"] = os.getloadavg()
        report["latency"] = timed_together(searches, queries)
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
