"""Benchmark of memory through the real runtime: recall latency and index rebuild.

Everything runs through `Runtime.open` on fresh homes, without Realm (records stay pending):

* **recall** — records are committed through the runtime's writer as batches of `RecordAdmitted`
  events with their hash-embedder vectors and keyword terms (what `remember` stores, minus the
  per-call hops, so 100k records load in seconds), the substrate indexes them from the published
  events, and then `rt.member("deven").recall(query)` is timed from the caller's thread: member
  actor → substrate (query embedding, filtered fused search) → LMDB re-read of each hit → caller.
  Half the records are deven's own (`agent_core/deven`), half the team's (`world_shared/team`):
  every row passes the visibility filter, the worst case. Texts and queries are
  `bench/recall_index.py`'s synthetic mix of English, Spanish and Chinese. Sizes grow in place:
  1k, then 10k, then 100k.
* **rebuild** — at 100k: crash the substrate and time until a recall sent right behind the crash
  is answered (the next incarnation rebuilds its index from LMDB first), and reopen the home and
  time `Runtime.open` plus the first recall. The substrate's own `rebuild_seconds` is reported.

Durable `remember` throughput, beside the pipeline alone and its peers, is `bench/writes.py`.

Targets: recall p99 <= 25 ms at 100k; rebuild <= 3 s at 100k.

    python bench/recall.py [--json] [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident import Runtime
from resident.ids import new_id
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.records import indexed_text, make_record
from resident.memory.stored_terms import encode_terms, split_terms
from resident.memory.stored_vectors import encode_vector, vector_key
from resident.memory.text import term_ids_batch
from resident.messages.memory import (
    Activation,
    Bank,
    BankCreated,
    GetSubstrateStatus,
    MemoryRecord,
    RecordAdmitted,
    SubstrateStatus,
)
from resident.messages.store import Commit

if not __package__:
    # Run as `python bench/recall.py`: make the repository root importable for the sibling module.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import synthetic_queries, synthetic_texts

SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
QUERIES = 400
LOAD_BATCH = 2_000
TIMEOUT = 60.0
TARGETS = {
    "recall_p99_ms_100k": 25.0,
    "rebuild_s_100k": 3.0,
}
_ENCODER = msgspec.msgpack.Encoder()


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


@contextmanager
def _home(base: Path, name: str) -> Iterator[Path]:
    path = base / name
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _substrate_status(rt: Runtime) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), TIMEOUT)
    return status


# -- recall at size ------------------------------------------------------------------------------


def _records(texts: Sequence[str], start: int, now: float) -> list[MemoryRecord]:
    records = []
    for offset, text in enumerate(texts):
        summary, _, body = text.partition("\n")
        number = start + offset
        shared = number % 2 == 1
        records.append(
            make_record(
                record_id=new_id("mem"),
                owner="deven",
                scope="WORLD_SHARED" if shared else "AGENT_CORE",
                bank="world_shared/team" if shared else "agent_core/deven",
                text=body or summary,
                summary=summary,
                kind="experience",
                counterpart=None,
                world="team" if shared else None,
                importance=0.5,
                importance_reason="",
                confidence=1.0,
                activation=Activation(),
                supersedes=None,
                canonical=False,
                delegated=False,
                source="bench",
                # Spread over a year, so the temporal channel has something to order.
                occurred_at=now - (number % 365) * 86_400.0,
                cites=(),
                now=now,
                author="deven",
            )
        )
    return records


def load(rt: Runtime, texts: Sequence[str], start: int, embedder: Embedder) -> float:
    """Commit `texts` as records with their vectors, in batches; seconds until all are indexed."""
    started = time.perf_counter()
    now = time.time()
    for first in range(0, len(texts), LOAD_BATCH):
        chunk = texts[first : first + LOAD_BATCH]
        records = _records(chunk, start + first, now)
        record_texts = [indexed_text(r) for r in records]
        vectors: npt.NDArray[np.float32] = embedder.embed(record_texts)
        terms = split_terms(term_ids_batch(record_texts), len(records))
        rt._internal.write(
            Commit(
                events=tuple(RecordAdmitted(at=now, record=r) for r in records),
                vectors=tuple(
                    (vector_key(embedder.name, r.id), encode_vector(embedder.name, vectors[i]))
                    for i, r in enumerate(records)
                ),
                terms=tuple((r.id, encode_terms(terms[i])) for i, r in enumerate(records)),
            ),
            TIMEOUT,
        )
    rt.memory.wait_indexed(TIMEOUT)
    return time.perf_counter() - started


def time_recalls(rt: Runtime, queries: Sequence[str]) -> dict[str, float]:
    deven = rt.member("deven")
    for query in queries[:20]:
        deven.recall(query)
    latencies = []
    hits = 0
    for query in queries:
        started = time.perf_counter()
        hits += len(deven.recall(query, k=10, timeout=TIMEOUT))
        latencies.append(time.perf_counter() - started)
    return {
        "queries": len(queries),
        "mean_hits": hits / len(queries),
        "recall_p50_ms": 1000 * _percentile(latencies, 0.5),
        "recall_p99_ms": 1000 * _percentile(latencies, 0.99),
        "recall_max_ms": 1000 * max(latencies),
    }


def recall_and_rebuild(base: Path, sizes: Sequence[int]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    embedder = HashEmbedder()
    texts = synthetic_texts(max(sizes))
    queries = synthetic_queries(QUERIES)
    rows: list[dict[str, Any]] = []
    rebuild: dict[str, Any] = {}
    with _home(base, "recall") as home:
        rt = Runtime.open(home, realm="none")
        try:
            rt.memory.enable()
            rt._internal.write(Commit(events=(
                BankCreated(at=time.time(), bank=Bank(name="agent_core/deven", scope="AGENT_CORE", owner="deven")),
                BankCreated(at=time.time(), bank=Bank(
                    name="world_shared/team", scope="WORLD_SHARED", owner="team", world="team"
                )),
            )))
            loaded = 0
            for size in sizes:
                seconds = load(rt, texts[loaded:size], loaded, embedder)
                loaded = size
                status = _substrate_status(rt)
                row = {"records": status.records, "load_s": seconds, **time_recalls(rt, queries)}
                rows.append(row)
            rebuild["records"] = loaded
            rebuild.update(_crash_rebuild(rt, queries[0]))
        finally:
            rt.close()
        rebuild.update(_reopen(home, queries[0]))
    return rows, rebuild


def _crash_rebuild(rt: Runtime, query: str) -> dict[str, float]:
    deven = rt.member("deven")
    started = time.perf_counter()
    rt._internal.chaos.crash("substrate", reason="bench: rebuild")
    deven.recall(query, timeout=TIMEOUT)
    answered = time.perf_counter() - started
    status = _substrate_status(rt)
    assert rt.statistics().child("substrate").incarnation == 2, "the substrate did not restart"
    assert status.records == rt.memory.status().records
    return {"crash_to_recall_s": answered, "substrate_rebuild_s": status.rebuild_seconds}


def _reopen(home: Path, query: str) -> dict[str, float]:
    started = time.perf_counter()
    rt = Runtime.open(home, realm="none")
    try:
        opened = time.perf_counter() - started
        rt.member("deven").recall(query, timeout=TIMEOUT)
        first = time.perf_counter() - started
        rebuilt = _substrate_status(rt).rebuild_seconds
    finally:
        rt.close()
    return {"reopen_s": opened, "reopen_to_recall_s": first, "reopen_rebuild_s": rebuilt}


# -- report ----------------------------------------------------------------------------------------


def run(*, quick: bool, base: Path | None) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="resident-bench-recall-", dir=base))
    try:
        sizes = QUICK_SIZES if quick else SIZES
        recall, rebuild = recall_and_rebuild(directory, sizes)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    largest = recall[-1]
    checks: dict[str, bool] = {}
    if largest["records"] >= 100_000:
        checks["recall_p99_ms_100k"] = largest["recall_p99_ms"] <= TARGETS["recall_p99_ms_100k"]
        checks["rebuild_s_100k"] = rebuild["crash_to_recall_s"] <= TARGETS["rebuild_s_100k"]
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "quick": quick,
        "recall": recall,
        "rebuild": rebuild,
        "targets": TARGETS,
        "met": checks,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"{'records':>8} {'load s':>7} {'hits':>5} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}")
    for row in report["recall"]:
        print(
            f"{row['records']:>8} {row['load_s']:>7.2f} {row['mean_hits']:>5.1f} {row['recall_p50_ms']:>7.2f} "
            f"{row['recall_p99_ms']:>7.2f} {row['recall_max_ms']:>7.2f}"
        )
    rebuild = report["rebuild"]
    print(
        f"rebuild at {rebuild['records']}: crash -> recall answered {rebuild['crash_to_recall_s']:.2f} s "
        f"(substrate rebuild {rebuild['substrate_rebuild_s']:.2f} s); reopen {rebuild['reopen_s']:.2f} s, "
        f"-> first recall {rebuild['reopen_to_recall_s']:.2f} s"
    )
    print("\ntargets: " + ", ".join(f"{name} {'met' if ok else 'MISSED'}" for name, ok in report["met"].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="sizes 1k and 10k only")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the temporary homes")
    args = parser.parse_args()
    report = run(quick=args.quick, base=args.dir)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
