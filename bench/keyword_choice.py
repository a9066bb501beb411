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

Build time, and one-query p50/p99 of each, in one process. No feedback on tantivy: it would need
each hit's terms read back and a second query, at least doubling its figure.

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
from unittest import mock

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


def timed(search: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    for query in queries[:20]:
        search(query)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        search(query)
        latencies.append(time.perf_counter() - started)
    ordered = sorted(latencies)
    return {
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def postings(texts: list[str], queries: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    index = KeywordIndex()
    for first in range(0, len(texts), BATCH):
        index.add(texts[first : first + BATCH])
    built = time.perf_counter() - started
    mask = np.zeros(len(texts), dtype=np.bool_)
    mask[::2] = True
    report: dict[str, Any] = {"build_s": built}
    # `_PRUNED_FROM` 0 prunes every query; past any query's postings, none is pruned.
    for name, pruned_from in (("pruned", 0), ("exhaustive", 1 << 62)):
        with mock.patch.object(keyword, "_PRUNED_FROM", pruned_from):
            for way, feedback in (("plain", False), ("feedback", True)):
                search = functools.partial(index.search, mask=mask, limit=LIMIT, feedback=feedback)
                report[f"{name}_{way}"] = timed(search, queries)
                report[f"{name}_{way}"]["postings_read_p50"] = read_per_query(index, mask, queries, feedback=feedback)
    return report


def read_per_query(index: KeywordIndex, mask: np.ndarray, queries: list[str], *, feedback: bool) -> int:
    """The median number of postings one query reads (whole, or by a binary search)."""
    counts = []
    for query in queries:
        before = index._postings_read
        index.search(query, mask, LIMIT, feedback=feedback)
        counts.append(index._postings_read - before)
    return sorted(counts)[len(counts) // 2]


def with_tantivy(texts: list[str], queries: list[str], directory: Path) -> dict[str, Any]:
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

    return {"build_s": built, "plain": timed(search, queries)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    texts = synthetic_texts(args.rows)
    queries = synthetic_queries(args.queries)
    report: dict[str, Any] = {"rows": args.rows, "load_average": os.getloadavg()}
    report["postings"] = postings(texts, queries)
    with tempfile.TemporaryDirectory(prefix="resident-bench-keyword-") as scratch:
        report["tantivy"] = with_tantivy(texts, queries, Path(scratch))
    report["load_average_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
