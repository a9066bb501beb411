"""Benchmark of knowledge: ingest and search beside SQLite FTS5, context preparation, and the engines.

* **ingest** — a folder of Markdown files (25 pages each, ~800 characters a page, a third each
  English, Spanish and Chinese: `bench/recall_index.py`'s synthetic vocabularies) is ingested into a
  fresh home with `rt.knowledge.ingest`: read, split, gated, written durably (one write per file,
  group-committed), and indexed; the clock stops when the call returns, i.e. when every page is
  searchable. The peer is what a user would reach for: SQLite FTS5 with the trigram tokenizer, fed
  the same files through the same splitter, a transaction per 64 files, WAL with
  `synchronous=FULL` (durable commits, as ours are). Both report pages per second.
* **search** — the same synthetic queries (one to five words in one of the three languages) run
  against both, interleaved query by query so the machine's load falls on both alike. Ours is the
  whole `rt.knowledge.search` (index catch-up check, BM25 top 10, LMDB re-read of every hit, a
  snippet each); FTS5's is `MATCH` on the query's words of three characters or more, ranked by
  `bm25()`, top 10, with `snippet()`.
* **context** — `rt.knowledge.context` for a member with 20 verified entries (made by real
  implementation, review, audit and acceptance records), once within the TTL (no probe) and once
  with every entry's source file probed and its check written (TTL 0).
* **opening** — the last round's home is opened again: until `Runtime.open` returns and until its
  first search is answered; then with its index deleted, until `Runtime.open` returns (the index is
  rebuilt in the background, so this must not grow with the pages) and until the index is ready.
* **engines** (`--engines`) — the comparison that chose the index engine, at the first size: the
  bare index of each candidate over the same pages fed memory's analysis (tantivy, SQLite FTS5 as
  a derived file, an inverted index of (term, page) keys in LMDB, and memory's in-memory numpy BM25,
  which a runtime would have to rebuild at every open).

Targets: search p99 <= 20 ms at 100k pages and <= FTS5's; ingest >= 2,000 pages/s and >= FTS5's.
Each size reports both ratios against the peer: pages/s (wall clock, which the machine's load
moves) and CPU per page (the work itself), with the load average before the size's first round.

    python bench/knowledge.py [--json] [--sizes 10000,100000] [--searches 300] [--rounds 3]
                              [--large-rounds 1] [--engines] [--dir DIR] [--no-peer]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lmdb
import numpy as np

from resident import Runtime
from resident.knowledge.pages import split_document
from resident.knowledge.search_index import INDEX_DIR, IndexedPage, SearchIndex
from resident.knowledge.tokens import query_tokens, token_texts
from resident.memory.keyword import KeywordIndex
from resident.memory.stored_terms import split_terms
from resident.memory.text import term_ids, term_ids_batch
from resident.messages.coordination import WorkItem
from resident.store.home import current_store_dir

if not __package__:
    # Run as `python bench/knowledge.py`: make the repository root importable for the sibling module.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import _percentile, synthetic_queries, synthetic_texts
from bench.timing import Stopwatch
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context

PAGES_PER_FILE = 25
FTS_WINDOW = 64
TARGETS = {"search_p99_ms_100k": 20.0, "ingest_pages_per_s": 2000.0}
KNOWLEDGE_ON = "[knowledge]\nenabled = true\n"


# -- the corpus ----------------------------------------------------------------------------------


def page_texts(count: int) -> list[str]:
    """`count` pages of about 800 characters: four synthetic records of one language each."""
    base = synthetic_texts(count * 4)
    return ["\n".join(base[i * 4 : i * 4 + 4]) for i in range(count)]


def write_corpus(folder: Path, texts: Sequence[str]) -> None:
    folder.mkdir(parents=True)
    for start in range(0, len(texts), PAGES_PER_FILE):
        sections = [
            f"## {' '.join(text.split()[:4]) or text[:8]} {start + offset}\n\n{text}\n"
            for offset, text in enumerate(texts[start : start + PAGES_PER_FILE])
        ]
        (folder / f"doc{start // PAGES_PER_FILE:05d}.md").write_text("\n".join(sections), encoding="utf-8")


def trigram_query(query: str) -> str | None:
    """An FTS5 trigram MATCH for the query's words of three characters or more (None if it has none)."""
    words = [word.replace('"', "") for word in query.split() if len(word) >= 3]
    return " OR ".join(f'"{word}"' for word in words) or None


# -- ours and the peer ---------------------------------------------------------------------------


def ingest_resident(home: Path, folder: Path) -> tuple[Runtime, Ingest]:
    home.mkdir(parents=True)
    (home / "resident.toml").write_text(KNOWLEDGE_ON, encoding="utf-8")
    runtime = Runtime.open(home, realm="none")
    runtime.knowledge.create_bank("bench")
    watch = Stopwatch()
    report = runtime.knowledge.ingest("bench", [folder])
    return runtime, Ingest(report.admitted, *watch.stop())


def ingest_fts5(path: Path, folder: Path) -> tuple[sqlite3.Connection, Ingest]:
    database = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    database.execute("PRAGMA journal_mode=WAL")
    database.execute("PRAGMA synchronous=FULL")
    database.execute("CREATE VIRTUAL TABLE pages USING fts5(title, body, source UNINDEXED, tokenize='trigram')")
    files = sorted(folder.iterdir())
    watch = Stopwatch()
    count = 0
    for window in range(0, len(files), FTS_WINDOW):
        rows = [
            (draft.title, draft.body, str(file))
            for file in files[window : window + FTS_WINDOW]
            for draft in split_document(file.read_bytes().decode("utf-8"), "markdown", file.stem)
        ]
        database.execute("BEGIN")
        database.executemany("INSERT INTO pages (title, body, source) VALUES (?, ?, ?)", rows)
        database.execute("COMMIT")
        count += len(rows)
    return database, Ingest(count, *watch.stop())


def search_both(runtime: Runtime, database: sqlite3.Connection | None, queries: Sequence[str]) -> dict[str, Any]:
    """Both engines, query by query, interleaved; latency percentiles and how often each found something.

    Without a `database` (`--no-peer`), ours alone."""
    ours: list[float] = []
    theirs: list[float] = []
    found = {"resident": 0, "fts5": 0}
    sql = "SELECT title, source, bm25(pages), snippet(pages, 1, '', '', '…', 16) FROM pages " \
          "WHERE pages MATCH ? ORDER BY bm25(pages) LIMIT 10"
    for query in queries:
        started = time.perf_counter()
        hits = runtime.knowledge.search("bench", query, 10)
        ours.append(time.perf_counter() - started)
        found["resident"] += bool(hits)
        if database is None:
            continue
        started = time.perf_counter()
        match = trigram_query(query)
        rows = database.execute(sql, (match,)).fetchall() if match else []
        theirs.append(time.perf_counter() - started)
        found["fts5"] += bool(rows)
    return {
        "resident": {"p50_ms": _percentile(ours, 0.5) * 1000, "p99_ms": _percentile(ours, 0.99) * 1000},
        "fts5": {"p50_ms": _percentile(theirs, 0.5) * 1000, "p99_ms": _percentile(theirs, 0.99) * 1000}
        if theirs else {},
        "queries_with_hits": found,
    }


def opening(home: Path, query: str) -> dict[str, float]:
    """What opening a grown home costs: with its index (until `Runtime.open` returns, until the first
    search is answered), and with its index gone (until open returns, until the index is ready)."""
    started = time.perf_counter()
    with Runtime.open(home, realm="none") as runtime:
        opened = time.perf_counter() - started
        runtime.knowledge.search("bench", query, 10)
        first = time.perf_counter() - started
    shutil.rmtree(current_store_dir(home) / INDEX_DIR)
    started = time.perf_counter()
    with Runtime.open(home, realm="none") as runtime:
        opened_bare = time.perf_counter() - started
        # A poll of the status, only to see when the background rebuild is done.
        while runtime.knowledge.index_status().state != "ready":
            time.sleep(0.05)
        ready = time.perf_counter() - started
    return {"open_s": opened, "first_search_s": first, "open_without_index_s": opened_bare,
            "index_ready_s": ready}


@dataclass(frozen=True)
class Ingest:
    """One ingest run: pages taken in, wall seconds, and CPU seconds of the whole process."""

    pages: int
    seconds: float
    cpu: float

    @property
    def rate(self) -> float:
        return self.pages / self.seconds


def _summary(runs: Sequence[Ingest]) -> dict[str, float]:
    """The median run's pages/s and CPU per page over alternating rounds (the load moves between them)."""
    return {
        "ingest_pages_per_s": statistics.median(run.rate for run in runs),
        "ingest_cpu_us_per_page": statistics.median(run.cpu / run.pages * 1e6 for run in runs),
        "pages": runs[0].pages,
    }


def run_size(size: int, workdir: Path, queries: Sequence[str], rounds: int, *, peer: bool = True) -> dict[str, Any]:
    """Ingest rounds, ours and the peer's alternating on fresh stores, then searches on the last of each.

    Without the `peer`, ours alone (FTS5's searches take seconds each from a few 100k pages on)."""
    folder = workdir / f"corpus-{size}"
    write_corpus(folder, page_texts(size))
    load = os.getloadavg()[0]
    ours: list[Ingest] = []
    theirs: list[Ingest] = []
    runtime: Runtime | None = None
    database: sqlite3.Connection | None = None
    try:
        for round_number in range(rounds):
            for closable in (runtime, database):
                if closable is not None:
                    closable.close()
            runtime, ingest = ingest_resident(workdir / f"home-{size}-{round_number}", folder)
            ours.append(ingest)
            if peer:
                database, ingest = ingest_fts5(workdir / f"fts5-{size}-{round_number}.db", folder)
                theirs.append(ingest)
        assert runtime is not None
        search = search_both(runtime, database, queries)
        runtime.close()
        opened = opening(workdir / f"home-{size}-{rounds - 1}", queries[0])
    finally:
        for closable in (runtime, database):
            if closable is not None:
                closable.close()
    mine = _summary(ours)
    entry: dict[str, Any] = {
        "opening": opened,
        "pages": size,
        "rounds": rounds,
        "load_average": load,
        "resident": {**mine, **search["resident"]},
        "queries_with_hits": search["queries_with_hits"],
    }
    if theirs:
        theirs_summary = _summary(theirs)
        entry["fts5"] = {**theirs_summary, **search["fts5"]}
        entry["ingest_ratio"] = mine["ingest_pages_per_s"] / theirs_summary["ingest_pages_per_s"]
        entry["cpu_ratio"] = mine["ingest_cpu_us_per_page"] / theirs_summary["ingest_cpu_us_per_page"]
    return entry


# -- context preparation -------------------------------------------------------------------------


def context_latency(workdir: Path, calls: int = 50) -> dict[str, Any]:
    home = workdir / "home-context"
    home.mkdir(parents=True)
    (home / "resident.toml").write_text(KNOWLEDGE_ON, encoding="utf-8")
    tree = workdir / "repo"
    tree.mkdir()
    with Runtime.open(home, realm="none") as runtime:
        runtime.knowledge.register_repository("bench", tree, members=["deven", "alice", "oliver"])
        grant = runtime.coordinator.issue_grant(
            actions={"remember", "recall", "review", "push", "write_back", "forget", "supersede", "reconcile"}
        )
        for number in range(20):
            (tree / f"module{number}.py").write_text(f"VALUE = {number}\n", encoding="utf-8")
            work = WorkItem(project="bench", repository="bench", item=f"item-{number}", tree="t", model="m", scope="s")
            step = dispatch_session(
                host_context(runtime), "work", "deven", role="implement", parent_grant=grant, work=work)
            done = step.finish("succeeded", result="complete", files=[f"module{number}.py"], knowledge_candidate={
                "kind": "fact", "title": f"Module {number} holds its value", "visibility": "project",
                "body": f"module{number}.py sets VALUE to {number}; nothing else writes it.",
            })
            for role, member in (("review", "alice"), ("audit", "oliver")):
                examination = dispatch_session(host_context(runtime), role, member, role=role, parent_grant=grant,
                                                           reviews=done.id)
                examination.finish("succeeded", result="complete", verdict="approved")
            runtime.coordinator.accept(done.id)
        verified = len(runtime.knowledge.entries(state="verified"))
        figures: dict[str, Any] = {"entries": verified}
        for label, ttl in (("fresh", 3600.0), ("revalidating", 0.0)):
            runtime._services.revalidation.ttl = ttl
            samples = []
            for _ in range(calls):
                started = time.perf_counter()
                served = runtime.knowledge.context("alice", "bench", "bench")
                samples.append(time.perf_counter() - started)
                assert len(served) == verified, (label, len(served))
            figures[label] = {"p50_ms": _percentile(samples, 0.5) * 1000, "p99_ms": _percentile(samples, 0.99) * 1000}
    return figures


# -- the engine comparison -----------------------------------------------------------------------


def _time_searches(queries: Sequence[str], search: Callable[[str], object]) -> dict[str, float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        search(query)
        samples.append(time.perf_counter() - started)
    return {"p50_ms": _percentile(samples, 0.5) * 1000, "p99_ms": _percentile(samples, 0.99) * 1000}


@contextmanager
def _scratch(workdir: Path, name: str) -> Iterator[Path]:
    path = workdir / name
    path.mkdir()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def engines(texts: Sequence[str], queries: Sequence[str], workdir: Path) -> dict[str, Any]:
    """Each candidate engine's bare index over the same analysed pages: build rate, search latency."""
    batch = 1000
    found: dict[str, Any] = {}
    with _scratch(workdir, "tantivy") as path:
        index = SearchIndex.create(path / "index")
        pages = [IndexedPage(id=f"p{i}", bank="b", state="active", text=text) for i, text in enumerate(texts)]
        started = time.perf_counter()
        for start in range(0, len(pages), batch):
            index.apply((), pages[start : start + batch], None)
        found["tantivy"] = {"build_pages_per_s": len(pages) / (time.perf_counter() - started),
                            **_time_searches(queries, lambda q: index.search("b", q, ("active",), 10))}
        index.close()
    started = time.perf_counter()
    keyword = KeywordIndex()
    for start in range(0, len(texts), batch):
        keyword.add(texts[start : start + batch])
    build = time.perf_counter() - started
    found["numpy in memory (rebuilt at every open)"] = {
        "build_pages_per_s": len(texts) / build, "rebuild_at_open_s": build,
        **_time_searches(queries, lambda q: keyword.search(q, None, 10)),
    }
    with _scratch(workdir, "fts5-ours") as path:
        database = sqlite3.connect(path / "fts.db", isolation_level=None)
        database.execute("PRAGMA journal_mode=WAL")
        database.execute("CREATE VIRTUAL TABLE pages USING fts5(tokens, tokenize='unicode61')")
        started = time.perf_counter()
        for start in range(0, len(texts), batch):
            rows = [(text,) for text in token_texts(texts[start : start + batch])]
            database.execute("BEGIN")
            database.executemany("INSERT INTO pages (tokens) VALUES (?)", rows)
            database.execute("COMMIT")
        built = time.perf_counter() - started

        def fts_search(query: str) -> object:
            tokens = query_tokens(query)
            match = " OR ".join(f'"{token}"' for token in tokens)
            sql = "SELECT rowid FROM pages WHERE pages MATCH ? ORDER BY bm25(pages) LIMIT 10"
            return database.execute(sql, (match,)).fetchall() if tokens else []

        found["sqlite fts5 file (our analysis)"] = {"build_pages_per_s": len(texts) / built,
                                                    **_time_searches(queries, fts_search)}
        database.close()
    with _scratch(workdir, "lmdb") as path:
        found["lmdb (term, page) keys"] = _lmdb_postings(path, texts, queries, batch)
    return found


def _lmdb_postings(path: Path, texts: Sequence[str], queries: Sequence[str], batch: int) -> dict[str, float]:
    env = lmdb.open(str(path), map_size=16 << 30, max_dbs=2, sync=True)
    postings = env.open_db(b"postings")
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        chunk = texts[start : start + batch]
        with env.begin(write=True) as txn:
            for offset, ids in enumerate(split_terms(term_ids_batch(chunk), len(chunk))):
                row = (start + offset).to_bytes(4, "big")
                terms, counts = np.unique(ids, return_counts=True)
                for term, count in zip(terms.tolist(), counts.tolist(), strict=True):
                    txn.put(term.to_bytes(8, "big") + row, count.to_bytes(2, "little"), db=postings)
    built = time.perf_counter() - started
    total = len(texts)

    def search(query: str) -> object:
        scores: dict[int, float] = {}
        with env.begin() as txn, txn.cursor(db=postings) as cursor:
            for term in set(term_ids(query).tolist()):
                prefix = term.to_bytes(8, "big")
                rows = []
                if cursor.set_range(prefix):
                    for key in cursor.iternext(keys=True, values=False):
                        if not key.startswith(prefix):
                            break
                        rows.append(int.from_bytes(key[8:], "big"))
                weight = float(np.log1p((total - len(rows) + 0.5) / (len(rows) + 0.5)))
                for row in rows:
                    scores[row] = scores.get(row, 0.0) + weight
        return sorted(scores, key=scores.__getitem__, reverse=True)[:10]

    figures = {"build_pages_per_s": total / built, **_time_searches(queries, search)}
    env.close()
    return figures


# -- main ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--sizes", default="10000,100000", help="page counts, comma-separated")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="ingest rounds per size up to 20k pages")
    parser.add_argument("--large-rounds", type=int, default=1, help="ingest rounds per size above 20k pages")
    parser.add_argument("--engines", action="store_true", help="also compare the candidate index engines")
    parser.add_argument("--dir", type=Path, default=None, help="where to work (default: a temporary directory)")
    parser.add_argument("--no-peer", action="store_true",
                        help="ours alone, without SQLite FTS5 (whose searches take seconds each at large sizes)")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    queries = synthetic_queries(args.searches)
    workdir = Path(tempfile.mkdtemp(prefix="resident-bench-knowledge-", dir=args.dir))
    try:
        report: dict[str, Any] = {"targets": TARGETS, "sizes": [], "searches": len(queries)}
        for size in sizes:
            print(f"knowledge: {size} pages ...", file=sys.stderr, flush=True)
            rounds = args.rounds if size <= 20_000 else args.large_rounds
            report["sizes"].append(run_size(size, workdir, queries, rounds, peer=not args.no_peer))
            print(json.dumps(report["sizes"][-1]), file=sys.stderr, flush=True)
        report["context"] = context_latency(workdir)
        if args.engines:
            report["engines"] = {"pages": sizes[0], **engines(page_texts(sizes[0]), queries, workdir)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
        return
    for entry in report["sizes"]:
        ours, theirs = entry["resident"], entry.get("fts5")
        head = f"{entry['pages']:>7} pages (load {entry['load_average']:.1f}, {entry['rounds']} rounds)  ingest "
        if theirs is None:
            print(f"{head}{ours['ingest_pages_per_s']:6.0f} pages/s (CPU {ours['ingest_cpu_us_per_page']:.0f} "
                  f"µs/page)   search p50/p99 {ours['p50_ms']:.1f}/{ours['p99_ms']:.1f} ms   "
                  f"hits {entry['queries_with_hits']['resident']}")
        else:
            print(f"{head}{ours['ingest_pages_per_s']:6.0f} vs fts5 {theirs['ingest_pages_per_s']:6.0f} pages/s "
                  f"({entry['ingest_ratio']:.2f}x; CPU {ours['ingest_cpu_us_per_page']:.0f} vs "
                  f"{theirs['ingest_cpu_us_per_page']:.0f} µs/page, {entry['cpu_ratio']:.2f}x)   "
                  f"search p50/p99 {ours['p50_ms']:.1f}/{ours['p99_ms']:.1f} vs fts5 "
                  f"{theirs['p50_ms']:.1f}/{theirs['p99_ms']:.1f} ms   hits {entry['queries_with_hits']}")
        opened = entry["opening"]
        print(f"{'':>7} opening: open {opened['open_s']:.2f} s, first search {opened['first_search_s']:.2f} s; "
              f"index gone: open {opened['open_without_index_s']:.2f} s, index ready "
              f"{opened['index_ready_s']:.1f} s")
    context = report["context"]
    print(f"context, {context['entries']} verified entries: fresh p50/p99 {context['fresh']['p50_ms']:.1f}/"
          f"{context['fresh']['p99_ms']:.1f} ms, revalidating {context['revalidating']['p50_ms']:.1f}/"
          f"{context['revalidating']['p99_ms']:.1f} ms")
    for name, figures in report.get("engines", {}).items():
        if isinstance(figures, dict):
            print(f"engine {name}: " + ", ".join(f"{key} {value:.1f}" for key, value in figures.items()))
    print(f"(mean page {statistics.fmean(map(len, page_texts(100))):.0f} characters)")


if __name__ == "__main__":
    main()
