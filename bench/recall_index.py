"""Benchmark of the recall core: build time and search latency of `RecallIndex` at 1k, 10k, 100k.

Records are synthetic and mixed: a third English, a third Spanish (with accents), a third Chinese,
with Zipf-distributed words from a few thousand made-up words per language; English and Spanish
ones have 18-40 words, Chinese ones 60-110 characters (about the same content), about 195
characters on average. Vectors come from the hash embedder, computed before the clock starts, as
the substrate reads them from LMDB. A search asks for every bank with domain "work" (so most rows
pass the filters, the slow case) and times `RecallIndex.search` alone; embedding is timed apart,
for one query and for a batch of 256 texts.

    python bench/recall_index.py [--json] [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence

import numpy as np

from resident.memory.embedding import HashEmbedder
from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.text import term_ids_batch
from resident.messages.memory import Activation

NOW = 1_790_000_000.0
BANKS = [f"agent_core/m{i}" for i in range(40)] + [f"world_shared/w{i}" for i in range(10)]
SEARCHES = 300


def _vocabulary(rng: random.Random, syllables: Sequence[str], size: int, parts: tuple[int, int]) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(*parts))))
    return sorted(words)


def _languages(rng: random.Random) -> dict[str, tuple[list[str], str]]:
    english = ["ka", "de", "ploy", "ment", "sta", "ging", "re", "lease", "test", "ing", "da", "ta", "base"]
    english += ["mi", "gra", "tion", "trade", "or", "der", "team", "work", "ops", "log", "in", "cident"]
    spanish = ["ción", "des", "plie", "gue", "ba", "se", "da", "tos", "prue", "ba", "e", "qui", "po"]
    spanish += ["ór", "de", "nes", "mer", "ca", "do", "re", "u", "nión", "fa", "llo", "pro", "duc"]
    han = [chr(cp) for cp in rng.sample(range(0x4E00, 0x9FA5), 1500)]
    return {
        "en": (_vocabulary(rng, english, 4000, (1, 4)), " "),
        "es": (_vocabulary(rng, spanish, 4000, (1, 4)), " "),
        "zh": (_vocabulary(rng, han, 6000, (2, 2)), ""),
    }


def synthetic_texts(count: int, seed: int = 7) -> list[str]:
    """`count` mixed-language records, summary and body separated by a newline."""
    rng = random.Random(seed)
    generator = np.random.default_rng(seed)
    languages = _languages(rng)
    texts = []
    names = list(languages)
    for i in range(count):
        words, joiner = languages[names[i % 3]]
        length = int(generator.integers(18, 40)) if joiner else int(generator.integers(30, 55))
        picks = np.minimum(generator.zipf(1.3, length) - 1, len(words) - 1)
        chosen = [words[p] for p in picks]
        texts.append(joiner.join(chosen[:6]) + "\n" + joiner.join(chosen[6:]))
    return texts


def synthetic_queries(count: int, seed: int = 11) -> list[str]:
    """Short queries drawn from the same vocabularies (some with a time phrase)."""
    rng = random.Random(seed)
    languages = _languages(random.Random(7))
    times = ["", "", "", " yesterday", " la semana pasada", " 上个月"]
    queries = []
    for i in range(count):
        words, joiner = languages[list(languages)[i % 3]]
        picks = [words[min(int(rng.paretovariate(0.6)) - 1, len(words) - 1)] for _ in range(rng.randint(2, 5))]
        queries.append(joiner.join(picks) + rng.choice(times))
    return queries


def _entries(texts: Sequence[str]) -> list[IndexEntry]:
    rng = random.Random(3)
    return [
        IndexEntry(
            id=f"rec-{i:07d}",
            bank=BANKS[i % len(BANKS)],
            lifecycle="active" if i % 17 else "superseded",
            replication="synced" if i % 29 else "conflict",
            activation=Activation(domain=(None, "work", "personal")[i % 3], project=None if i % 4 else f"p{i % 7}"),
            occurred_at=NOW - rng.random() * 400 * 86_400,
            recorded_at=NOW - rng.random() * 400 * 86_400,
            text=text,
        )
        for i, text in enumerate(texts)
    ]


def _percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run_size(size: int, embedder: HashEmbedder) -> dict[str, float]:
    """Build an index of `size` records and time searches over it."""
    texts = synthetic_texts(size)
    vectors = np.concatenate([embedder.embed(texts[i : i + 4096]) for i in range(0, size, 4096)])
    entries = _entries(texts)

    started = time.perf_counter()
    term_ids_batch(texts)
    term_seconds = time.perf_counter() - started

    started = time.perf_counter()
    index = RecallIndex()
    index.add(entries, vectors)
    build_seconds = time.perf_counter() - started

    queries = synthetic_queries(SEARCHES)
    query_vectors = embedder.embed(queries)
    latencies = []
    for query, vector in zip(queries, query_vectors, strict=True):
        started = time.perf_counter()
        index.search(query, vector, BANKS, "work", None, NOW, k=10)
        latencies.append(time.perf_counter() - started)
    return {
        "records": size,
        "mean_chars": statistics.fmean(map(len, texts)),
        "term_ids_s": term_seconds,
        "build_s": build_seconds,
        "search_p50_ms": _percentile(latencies, 0.50) * 1000,
        "search_p99_ms": _percentile(latencies, 0.99) * 1000,
        "search_max_ms": max(latencies) * 1000,
    }


def embed_ms(embedder: HashEmbedder, batch: int = 256, rounds: int = 50) -> dict[str, float]:
    """Time embedding one query, and one batch of ~200-character texts (what a substrate flush does)."""
    texts = [text[:200] for text in synthetic_texts(batch, seed=5)]
    queries = synthetic_queries(rounds, seed=13)
    embedder.embed(texts)
    batches, singles = [], []
    for query in queries:
        started = time.perf_counter()
        embedder.embed(texts)
        batches.append(time.perf_counter() - started)
        started = time.perf_counter()
        embedder.embed([query])
        singles.append(time.perf_counter() - started)
    return {
        "batch": batch,
        "mean_chars": statistics.fmean(map(len, texts)),
        "batch_p50_ms": _percentile(batches, 0.5) * 1000,
        "batch_p99_ms": _percentile(batches, 0.99) * 1000,
        "query_p50_ms": _percentile(singles, 0.5) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated record counts")
    args = parser.parse_args()
    embedder = HashEmbedder()
    sizes = [run_size(int(size), embedder) for size in args.sizes.split(",")]
    embed = embed_ms(embedder)
    if args.json:
        print(json.dumps({"sizes": sizes, "embed": embed}, indent=2))
        return
    print(f"{'records':>8} {'chars':>6} {'term ids s':>10} {'build s':>8} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    for row in sizes:
        print(
            f"{row['records']:>8.0f} {row['mean_chars']:>6.0f} {row['term_ids_s']:>10.3f} {row['build_s']:>8.3f} "
            f"{row['search_p50_ms']:>7.2f} {row['search_p99_ms']:>7.2f} {row['search_max_ms']:>7.2f}"
        )
    print(
        f"embed {embed['batch']:.0f} texts of ~{embed['mean_chars']:.0f} chars: "
        f"p50 {embed['batch_p50_ms']:.2f} ms, p99 {embed['batch_p99_ms']:.2f} ms; "
        f"one query: p50 {embed['query_p50_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()
