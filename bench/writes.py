"""Benchmark of durable `remember`s against the work itself and against SQLite, side by side in one run.

Every configuration writes the same ~300-byte memories (a distinct text each) on a fresh home,
without Realm (records stay pending):

* **naive LMDB** — one `sync=True` write transaction per write, one writer, putting the record and
  `RecordAdmitted` bytes a `remember` stores: the disk's pace (its fsync), stated for the run;
* **the remember pipeline alone** — one thread does what a commit of `remember`s costs, with no
  actor, caller or hand-off: shape the records, analyse and hash-embed them as one batch, commit
  them durably with their events, vectors and terms, index them; in commits of 256 (as many as
  the tasks below keep in flight) and of 40 (the threads');
* **aremember, 256 asyncio tasks** on one event loop, spread over 5 members;
* **remember_many**: one thread, 256 items a call (each item durable with its own receipt);
* **remember, 5 members x 8 blocking threads**;
* **SQLite WAL, `synchronous=FULL`**, 40 threads each with its own connection, one transaction per
  write of the same record and event bytes (shaped per write, as a `remember` is);
* **one blocking caller**: `remember` in a loop, its p50 latency against naive LMDB's, in blocks of
  a quarter second alternating with blocks of naive LMDB writes in the same process (fsync drifts
  within seconds here, so the two p50s are taken over the same minutes).

A runtime configuration's clock stops once the substrate has taken in everything written, so work
it leaves behind the acknowledgements counts. Every figure has the process's CPU time per write
(all threads) beside it. fsync on this shared machine swings over minutes, so each round runs the
configurations one after the other with the pairs a target compares next to each other, and every
target is a ratio within its round; the median over the rounds is the figure, with the spread.

Targets (issue 20): aremember from 256 tasks >= 0.80 of the pipeline alone at 256 per commit;
5x8 threads >= 0.45 of aremember from 256 tasks and >= 0.9 of SQLite from the same 40 threads;
remember_many >= 1.2 of aremember from 256 tasks and >= 0.90 of the pipeline alone at 256; one
blocking caller's p50 <= 1.5 of naive LMDB's.

    python bench/writes.py [--json] [--quick] [--seconds S] [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from resident import Runtime
from resident.benchmarks.workloads import Tally, Writer, run_batches, run_tasks, run_threads
from resident.ids import new_id
from resident.memory.embedding import HashEmbedder
from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.records import indexed_text, make_record
from resident.memory.stored_terms import encode_terms, split_terms
from resident.memory.stored_vectors import encode_vector, vector_key
from resident.memory.text import analyse, terms_of
from resident.messages.memory import Activation, MemoryRecord, RecordAdmitted
from resident.messages.store import Commit, GetWriterStatistics, WriterStatistics

if not __package__:
    # Run as `python bench/writes.py`: make the repository root importable for the sibling modules.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import store_writes
from bench.store_writes import prepared_store
from bench.timing import Stopwatch, thread_cpu

MEMBERS = ("samuel", "deven", "alice", "oliver", "victor")
THREADS_PER_MEMBER = 8
THREADS = len(MEMBERS) * THREADS_PER_MEMBER
TASKS = 256
BATCH = 256
# The one blocking caller and naive LMDB take turns in blocks this long (seconds).
BLOCK = 0.25
TIMEOUT = 60.0
SUMMARY = "staging deploys need the migration first"
BODY = (
    "Deploying to staging needs the database migration applied first; the last time we skipped it "
    "the API pods crash-looped for twenty minutes until someone ran it by hand. Run `make migrate` "
    "against staging, wait for the job to finish, then roll the deployment. Owner: deven."
)
# Each target: (name, numerator, denominator, at least / at most, bound). Throughput ratios unless
# the figure is a latency ("p50").
TARGETS: tuple[tuple[str, str, str, str, float], ...] = (
    ("asyncio vs the pipeline alone", "asyncio", "alone-256", ">=", 0.80),
    ("threads vs asyncio", "threads", "asyncio", ">=", 0.45),
    ("threads vs SQLite (40 threads)", "threads", "sqlite", ">=", 0.9),
    ("remember_many vs asyncio", "many", "asyncio", ">=", 1.2),
    ("remember_many vs the pipeline alone", "many", "alone-256", ">=", 0.90),
    ("one caller's p50 vs naive LMDB's", "single", "naive", "<=", 1.5),
)
LABELS = {
    "naive": "naive LMDB, one put+sync per write",
    "alone-256": f"the remember pipeline alone, {BATCH} per commit",
    "alone-40": f"the remember pipeline alone, {THREADS} per commit",
    "asyncio": f"aremember, {TASKS} asyncio tasks",
    "many": f"remember_many, 1 thread x {BATCH} items",
    "threads": f"remember, {len(MEMBERS)} members x {THREADS_PER_MEMBER} threads",
    "sqlite": f"SQLite WAL synchronous=FULL, {THREADS} threads",
    "single": "remember, one blocking caller",
}
# A round: the configurations each target compares run next to each other.
ROUND = ("naive", "single", "alone-256", "asyncio", "many", "threads", "sqlite", "alone-40", "naive")


def text(serial: int) -> str:
    """A ~300-byte memory, distinct per write (as real ones are)."""
    return f"{BODY} (#{serial})"


def shaped(serial: int, now: float) -> MemoryRecord:
    """A record as deven's `remember` of `text(serial)` shapes it into deven's own bank."""
    return make_record(
        record_id=new_id("mem"), owner="deven", scope="AGENT_CORE", bank="agent_core/deven", text=text(serial),
        summary=SUMMARY, kind="experience", counterpart=None, world=None, importance=0.5, importance_reason="",
        confidence=1.0, activation=Activation(), supersedes=None, canonical=False, delegated=False,
        source="manual", occurred_at=None, cites=(), now=now, author="deven",
    )


_ENCODER = msgspec.msgpack.Encoder()


def payload(serial: int) -> tuple[str, bytes, bytes]:
    """The record's key, and the record and event bytes one `remember` of `text(serial)` stores."""
    now = time.time()
    record = shaped(serial, now)
    return record.id, _ENCODER.encode(record), _ENCODER.encode(RecordAdmitted(at=now, record=record))


def _figures(mode: str, latencies: list[float], seconds: float, cpu: float, per_commit: float | None) -> dict[str, Any]:
    ordered = sorted(latencies)

    def at(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    return {
        "mode": mode,
        "label": LABELS[mode],
        "writes": len(ordered),
        "seconds": seconds,
        "per_s": len(ordered) / seconds if seconds else 0.0,
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
        "writes_per_commit": per_commit,
        "cpu_us_per_write": 1e6 * cpu / len(ordered) if ordered else None,
    }


# -- the disk and the work itself ----------------------------------------------------------------


def naive_lmdb(directory: Path, seconds: float) -> dict[str, Any]:
    """One durable write transaction per write of what a `remember` stores: the disk's pace."""
    directory.mkdir(mode=0o700)
    return _of(store_writes.naive_lmdb(directory, seconds, payload), "naive")


def _of(result: store_writes.Result, mode: str) -> dict[str, Any]:
    return {
        "mode": mode, "label": LABELS[mode], "writes": result.writes, "seconds": result.seconds,
        "per_s": result.throughput, "p50_ms": result.p50_ms, "p99_ms": result.p99_ms,
        "writes_per_commit": result.writes_per_commit, "cpu_us_per_write": result.cpu_us_per_write,
    }


def remember_alone(directory: Path, seconds: float, batch: int) -> dict[str, Any]:
    """A `remember`'s work done by one thread, `batch` writes at a time, with nothing in between.

    Each batch is shaped into records, analysed and hash-embedded as one batch, committed durably
    with its events, vectors and terms through `Store.commit`, and added to a recall index: what a
    commit of `remember`s costs without actors, callers or hand-offs. Latency is per batch.
    """
    embedder = HashEmbedder()
    index = RecallIndex()
    latencies: list[float] = []
    with prepared_store(directory) as store:
        watch = Stopwatch()
        deadline = watch.started + seconds
        while (now := time.perf_counter()) < deadline:
            records = [shaped(len(latencies) + i, time.time()) for i in range(batch)]
            texts = [indexed_text(record) for record in records]
            parts = list(analyse(texts))
            vectors = embedder.embed_analysed(parts, batch)
            terms = terms_of(parts)
            per_record = split_terms(terms, batch)
            writes = [
                Commit(
                    events=(RecordAdmitted(at=record.recorded_at, record=record),),
                    vectors=((vector_key(embedder.name, record.id), encode_vector(embedder.name, vectors[i])),),
                    terms=((record.id, encode_terms(per_record[i])),),
                )
                for i, record in enumerate(records)
            ]
            for _, error, _ in store.commit(writes):
                assert error is None, error
            index.add(
                [
                    IndexEntry(id=r.id, bank=r.bank, lifecycle=r.lifecycle, replication=r.replication,
                               activation=r.activation, occurred_at=r.occurred_at, recorded_at=r.recorded_at,
                               text=texts[i])
                    for i, r in enumerate(records)
                ],
                vectors,
                None,
                terms,
            )
            latencies += [time.perf_counter() - now] * batch
        elapsed, cpu = watch.stop()
    return _figures(f"alone-{batch}", latencies, elapsed, cpu, float(batch))


# -- the runtime and its peer --------------------------------------------------------------------


def _writer_statistics(rt: Runtime) -> WriterStatistics:
    stats: WriterStatistics = rt._internal.wiring.writer.ask(GetWriterStatistics(), TIMEOUT)
    return stats


def through_runtime(directory: Path, seconds: float, mode: str) -> dict[str, Any]:
    """`mode`'s writers against a fresh home; the clock stops once the substrate has taken everything in."""
    with Runtime.open(directory, realm="none") as rt:
        rt.memory.enable()
        for name in MEMBERS:
            rt.member(name).remember(BODY, summary=SUMMARY)  # each bank exists before the clock starts
        before = _writer_statistics(rt)
        tally = Tally(None, time.monotonic() + seconds)
        summary: Callable[[int], str] = text
        threads_before = thread_cpu()
        watch = Stopwatch()
        match mode:
            case "asyncio":
                run_tasks(rt, _spread(TASKS), summary, tally)
            case "many":
                run_batches(rt, _spread(1), summary, tally, batch=BATCH)
            case "threads":
                run_threads(rt, _spread(THREADS), summary, tally)
        rt.memory.wait_indexed(TIMEOUT)
        elapsed, cpu = watch.stop()
        threads_after = thread_cpu()
        after = _writer_statistics(rt)
    assert not tally.errors, tally.errors
    commits = after.commits - before.commits
    per_commit = (after.writes - before.writes) / commits if commits else None
    figures = _figures(mode, tally.latencies, elapsed, cpu, per_commit)
    figures["cpu_us_per_write_by_thread"] = _by_thread(threads_before, threads_after, cpu, len(tally.latencies))
    return figures


def _by_thread(before: dict[str, float], after: dict[str, float], cpu: float, writes: int) -> dict[str, float]:
    """Where a write's CPU went: each live thread's share (µs per write); the callers' threads, which
    have ended by now, are the rest of the process's CPU."""
    if not writes or not after:
        return {}
    shares = {name: 1e6 * (seconds - before.get(name, 0.0)) / writes for name, seconds in after.items()}
    shares = {name: share for name, share in shares.items() if share >= 0.5}
    shares["callers' threads (ended)"] = max(0.0, 1e6 * cpu / writes - sum(shares.values()))
    return dict(sorted(shares.items(), key=lambda item: -item[1]))


def single_beside_naive(directory: Path, seconds: float) -> dict[str, Any]:
    """One blocking caller's `remember`s and naive LMDB's put+syncs, in alternating blocks of `BLOCK` s."""
    directory.mkdir(mode=0o700)
    naive = store_writes.NaiveLmdb(directory / "naive", payload)
    ours: list[float] = []
    theirs: list[float] = []
    cpu = 0.0
    try:
        with Runtime.open(directory / "home", realm="none") as rt:
            rt.memory.enable()
            deven = rt.member("deven")
            deven.remember(BODY, summary=SUMMARY)  # the bank exists before the clock starts
            watch = Stopwatch()
            while time.perf_counter() < watch.started + seconds:
                block = time.perf_counter() + BLOCK
                while (now := time.perf_counter()) < block:
                    naive.write()
                    theirs.append(time.perf_counter() - now)
                block, cpu_started = time.perf_counter() + BLOCK, time.process_time()
                while (now := time.perf_counter()) < block:
                    deven.remember(text(len(ours)), summary=SUMMARY, timeout=TIMEOUT)
                    ours.append(time.perf_counter() - now)
                cpu += time.process_time() - cpu_started
            rt.memory.wait_indexed(TIMEOUT)
            elapsed, _ = watch.stop()
    finally:
        naive.close()
    figures = _figures("single", ours, elapsed / 2, cpu, 1.0)
    figures["beside_naive_p50_ms"] = 1000 * statistics.median(theirs) if theirs else 0.0
    return figures


def _spread(count: int) -> list[Writer]:
    return [(MEMBERS[n % len(MEMBERS)], {}) for n in range(count)]


def sqlite_peer(directory: Path, seconds: float) -> dict[str, Any]:
    directory.mkdir(mode=0o700)
    return _of(store_writes.sqlite_wal(directory, THREADS, seconds, payload), "sqlite")


# -- the run -------------------------------------------------------------------------------------


def configurations(seconds: float) -> dict[str, Callable[[Path], dict[str, Any]]]:
    return {
        "naive": lambda d: naive_lmdb(d, seconds),
        "alone-256": lambda d: remember_alone(d, seconds, BATCH),
        "alone-40": lambda d: remember_alone(d, seconds, THREADS),
        "asyncio": lambda d: through_runtime(d, seconds, "asyncio"),
        "many": lambda d: through_runtime(d, seconds, "many"),
        "threads": lambda d: through_runtime(d, seconds, "threads"),
        "sqlite": lambda d: sqlite_peer(d, seconds),
        "single": lambda d: single_beside_naive(d, seconds),
    }


def one_round(base: Path, seconds: float, number: int) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {}
    naive: list[dict[str, Any]] = []
    steps = configurations(seconds)
    for step, mode in enumerate(ROUND):
        directory = base / f"round{number}-{step}-{mode}"
        try:
            result = steps[mode](directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        result["load"] = os.getloadavg()[0]
        if mode == "naive":
            naive.append(result)
        else:
            runs[mode] = result
    runs["naive"] = {
        **naive[0],
        "per_s": statistics.fmean(r["per_s"] for r in naive),
        "p50_ms": statistics.fmean(r["p50_ms"] for r in naive),
        "runs_per_s": [r["per_s"] for r in naive],
    }
    ratios = {}
    for name, top, bottom, _, _ in TARGETS:
        if top == "single":
            # Against the naive writes of the alternating blocks, not the round's separate naive runs.
            ratios[name] = runs[top]["p50_ms"] / runs[top]["beside_naive_p50_ms"]
        else:
            ratios[name] = runs[top]["per_s"] / runs[bottom]["per_s"]
    return {"round": number, "runs": runs, "ratios": ratios}


def run(seconds: float, rounds: int, base: Path | None) -> dict[str, Any]:
    directory = Path(tempfile.mkdtemp(prefix="resident-bench-writes-", dir=base))
    try:
        played = [one_round(directory, seconds, number) for number in range(rounds)]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    targets = []
    for name, top, bottom, sense, bound in TARGETS:
        values = [r["ratios"][name] for r in played]
        median = statistics.median(values)
        targets.append({
            "name": name, "figure": top, "against": bottom, "sense": sense, "target": bound, "ratio": median,
            "spread": [min(values), max(values)], "met": median >= bound if sense == ">=" else median <= bound,
            "cpu_us_per_write": statistics.median(r["runs"][top]["cpu_us_per_write"] for r in played),
            "against_cpu_us_per_write": statistics.median(r["runs"][bottom]["cpu_us_per_write"] for r in played),
        })
    medians = {
        mode: {
            "label": LABELS[mode],
            "per_s": statistics.median(r["runs"][mode]["per_s"] for r in played),
            "p50_ms": statistics.median(r["runs"][mode]["p50_ms"] for r in played),
            "p99_ms": statistics.median(r["runs"][mode]["p99_ms"] for r in played),
            "cpu_us_per_write": statistics.median(r["runs"][mode]["cpu_us_per_write"] for r in played),
            "writes_per_commit": played[-1]["runs"][mode]["writes_per_commit"],
            "cpu_us_per_write_by_thread": played[-1]["runs"][mode].get("cpu_us_per_write_by_thread", {}),
        }
        for mode in LABELS
    }
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "seconds_per_configuration": seconds,
        "naive_lmdb_per_s": [rate for r in played for rate in r["runs"]["naive"]["runs_per_s"]],
        "rounds": played,
        "medians": medians,
        "targets": targets,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"{'round':>5} {'configuration':<46} {'writes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'w/commit':>8} "
          f"{'cpu µs/w':>8} {'load':>5}")
    for played in report["rounds"]:
        for mode, item in played["runs"].items():
            per_commit = f"{item['writes_per_commit']:.1f}" if item["writes_per_commit"] else "-"
            cpu = f"{item['cpu_us_per_write']:.1f}" if item["cpu_us_per_write"] else "-"
            print(f"{played['round']:>5} {LABELS[mode]:<46} {item['per_s']:>9.0f} {item['p50_ms']:>8.2f} "
                  f"{item['p99_ms']:>8.2f} {per_commit:>8} {cpu:>8} {item['load']:>5.1f}")
    for played in report["rounds"]:
        for mode, item in played["runs"].items():
            shares = item.get("cpu_us_per_write_by_thread")
            if shares:
                where = ", ".join(f"{name} {share:.0f}" for name, share in shares.items())
                print(f"{played['round']:>5} CPU µs per write by thread, {LABELS[mode]}: {where}")
    naive = ", ".join(f"{rate:.0f}" for rate in report["naive_lmdb_per_s"])
    print(f"\nthe disk: naive LMDB {naive} writes/s (one put+sync each)")
    for target in report["targets"]:
        low, high = target["spread"]
        print(
            f"{target['name']:<38} {target['ratio']:.2f} (rounds {low:.2f}-{high:.2f}), target {target['sense']} "
            f"{target['target']:g}: {'met' if target['met'] else 'NOT met'}; CPU {target['cpu_us_per_write']:.0f} "
            f"vs {target['against_cpu_us_per_write']:.0f} µs/write"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s configurations")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per configuration (default 3)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3, quick 1)")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the temporary homes")
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None else (1.5 if args.quick else 3.0)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    report = run(seconds, rounds, args.dir)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
