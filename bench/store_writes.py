"""Benchmark of durable writes: the group-commit writer against naive LMDB and SQLite, in one run.

Every write is one memory admission (a `RecordAdmitted` of a realistic record, ~300 B body): the
record into its table and the event into the log, in one durable transaction. Configurations:

* naive LMDB — one write transaction per write, `sync=True`, one writer (LMDB serializes writers
  anyway); run first and last, and the mean of the two is the baseline every ratio divides by;
* SQLite WAL, `synchronous=FULL` — one transaction per write, 1/8/64 threads each with its own
  connection;
* the group-commit `StoreWriter` under a supervision tree — 1/8/64 writer threads blocking on
  `ask`, and 1/8/64/1024 asyncio tasks awaiting `ask_async` on one event loop;
* the store alone — one thread builds 1024 admissions and hands them straight to `Store.commit`,
  again and again, with no actor, caller or hand-off in between: the pace of the store itself for
  these records. Every writer configuration does this work too, on the same interpreter; one
  could pass it only by overlapping the store's C work (LMDB's puts and page writes, a few µs a
  write) with its callers' Python, so at 1024 tasks it is all but a ceiling.

Each configuration runs for a bounded time on a fresh store; throughput counts acknowledged
writes, latency is per acknowledgement, writes per commit comes from `GetWriterStatistics`
deltas, and CPU per write is the process's CPU time (all threads) over the writes. fsync cost on
this shared machine varies a lot over minutes, so only ratios within one run mean anything; CPU
per write moves far less. Targets (issue 20; the ratios to naive LMDB stay as information): the
writer from 1024 tasks >= 0.85 of the store alone, and from 64 threads >= 4x SQLite WAL from 64
threads.

    python bench/store_writes.py [--json] [--quick] [--seconds S] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from resident.actors.writer import StoreWriter
from resident.benchmarks.workloads import Payload, Tally, run_sqlite
from resident.clock import SystemClock
from resident.ids import new_id
from resident.messages.memory import Bank, BankCreated, MemoryRecord, MemorySwitchedOn, RecordAdmitted
from resident.messages.store import Commit, GetWriterStatistics, WriterStatistics
from resident.store.home import HomeLock, ensure_home
from resident.store.store import Store, event_key
from resident.supervisor import Address, ChildSpec, SupervisionTree, SupervisorSpec

if not __package__:
    # Run as `python bench/store_writes.py`: make the repository root importable for the sibling module.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.timing import Stopwatch

BANK = "agent_core/deven"
BODY = (
    "Deploying to staging needs the database migration applied first; the last time we skipped it "
    "the API pods crash-looped for twenty minutes until someone ran it by hand. Run `make migrate` "
    "against staging, wait for the job to finish, then roll the deployment. Owner: deven."
)
TIMEOUT = 60.0
# Each target: its name, the figure (mode, writers), what it is compared with (mode, writers), the bound.
TARGETS: tuple[tuple[str, tuple[str, int], tuple[str, int], float], ...] = (
    ("the writer from 1024 tasks vs the store alone", ("writer, asyncio", 1024), ("store alone", 1024), 0.85),
    ("the writer from 64 threads vs SQLite WAL from 64", ("writer, threads", 64), ("sqlite wal full", 64), 4.0),
)
_ENCODER = msgspec.msgpack.Encoder()


def admission() -> RecordAdmitted:
    """A memory admission as a member makes it: a new time-ordered id, the time, a ~300 B body."""
    now = time.time()
    record = MemoryRecord(
        id=new_id("mem"),
        summary="staging deploys need the migration first",
        body=BODY,
        kind="experience",
        bank=BANK,
        scope="AGENT_CORE",
        owner="deven",
        occurred_at=now,
        recorded_at=now,
        digest=hashlib.sha256(BODY.encode()).hexdigest(),
        source="session/7f3a",
        importance=0.7,
        importance_reason="cost an outage",
    )
    return RecordAdmitted(at=now, record=record)


@dataclass
class Result:
    mode: str
    writers: int
    writes: int
    seconds: float
    p50_ms: float
    p99_ms: float
    writes_per_commit: float | None = None
    ratio: float | None = None
    cpu_us_per_write: float | None = None

    @property
    def throughput(self) -> float:
        return self.writes / self.seconds


def _result(
    mode: str, writers: int, latencies: list[float], seconds: float, per_commit: float | None, cpu_seconds: float
) -> Result:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0
    return Result(
        mode=mode,
        writers=writers,
        writes=len(ordered),
        seconds=seconds,
        p50_ms=1000 * (statistics.median(ordered) if ordered else 0.0),
        p99_ms=1000 * p99,
        writes_per_commit=per_commit,
        cpu_us_per_write=1e6 * cpu_seconds / len(ordered) if ordered else None,
    )


# -- naive LMDB ----------------------------------------------------------------------------------


def payload(_serial: int) -> tuple[str, bytes, bytes]:
    """The record's key, and the record and event bytes of one admission."""
    event = admission()
    return event.record.id, _ENCODER.encode(event.record), _ENCODER.encode(event)


class NaiveLmdb:
    """One durable write transaction per write (`sync=True`): the record into its table, the event into the log."""

    def __init__(self, directory: Path, shaped: Payload = payload) -> None:
        self._env = lmdb.open(str(directory), map_size=1 << 30, max_dbs=4, sync=True, metasync=True)
        self._records, self._events = self._env.open_db(b"records"), self._env.open_db(b"events")
        self._shaped = shaped
        self.writes = 0

    def write(self) -> None:
        key, record, event = self._shaped(self.writes)
        self.writes += 1
        with self._env.begin(write=True) as txn:
            txn.put(key.encode(), record, db=self._records)
            txn.put(event_key(self.writes), event, db=self._events, append=True)

    def close(self) -> None:
        self._env.close()


def naive_lmdb(directory: Path, seconds: float, shaped: Payload = payload) -> Result:
    """Naive LMDB writes for `seconds`: the disk's pace, one fsync a write."""
    naive = NaiveLmdb(directory, shaped)
    latencies: list[float] = []
    watch = Stopwatch()
    deadline = watch.started + seconds
    try:
        while (now := time.perf_counter()) < deadline:
            naive.write()
            latencies.append(time.perf_counter() - now)
    finally:
        elapsed, cpu = watch.stop()
        naive.close()
    return _result("naive lmdb", 1, latencies, elapsed, 1.0, cpu)


# -- SQLite --------------------------------------------------------------------------------------


def sqlite_wal(directory: Path, writers: int, seconds: float, shaped: Payload = payload) -> Result:
    """`writers` threads, each with its own connection, one WAL transaction (synchronous=FULL) per write."""
    tally = Tally(None, time.monotonic() + seconds)
    watch = Stopwatch()
    run_sqlite(directory, writers, shaped, tally)
    elapsed, cpu = watch.stop()
    assert not tally.errors, tally.errors
    return _result("sqlite wal full", writers, tally.latencies, elapsed, 1.0, cpu)


# -- the group-commit writer ---------------------------------------------------------------------


@contextmanager
def prepared_store(directory: Path) -> Iterator[Store]:
    """A fresh home's store, locked, with memory on and the bank every admission goes to."""
    home = ensure_home(directory / "home")
    lock = HomeLock(home)
    lock.acquire()
    store = Store.open(home)
    try:
        now = time.time()
        setup = Commit(
            events=(
                MemorySwitchedOn(at=now, provider="hindsight", embedder="hash"),
                BankCreated(at=now, bank=Bank(name=BANK, scope="AGENT_CORE", owner="deven", created_at=now)),
            )
        )
        for _, error, _ in store.commit([setup]):
            assert error is None, error
        yield store
    finally:
        store.close()
        lock.release()


@contextmanager
def running_writer(directory: Path) -> Iterator[Address]:
    with prepared_store(directory) as store:
        address = Address("writer", capacity=100_000)
        clock = SystemClock()
        tree = SupervisionTree(
            SupervisorSpec("root", [ChildSpec(address, StoreWriter, kwargs={"store": store})]),
            clock,
            lambda reason: print(f"the writer's supervisor gave up: {reason}"),
        )
        tree.start()
        try:
            yield address
        finally:
            tree.stop()
            clock.close()


STORE_ALONE_BATCH = 1024


def store_alone(directory: Path, seconds: float) -> Result:
    """The store's own pace: admissions built and committed in batches of 1024 by one thread, nothing between.

    Latency is per batch (build and commit), and means little; the throughput is the point.
    """
    with prepared_store(directory) as store:
        latencies: list[float] = []
        watch = Stopwatch()
        deadline = watch.started + seconds
        while (now := time.perf_counter()) < deadline:
            batch = [Commit(events=(admission(),)) for _ in range(STORE_ALONE_BATCH)]
            for _, error, _ in store.commit(batch):
                assert error is None, error
            latencies += [time.perf_counter() - now] * STORE_ALONE_BATCH
        elapsed, cpu = watch.stop()
    return _result("store alone", STORE_ALONE_BATCH, latencies, elapsed, float(STORE_ALONE_BATCH), cpu)


def _statistics(address: Address) -> WriterStatistics:
    result = address.ask(GetWriterStatistics(), TIMEOUT)
    assert isinstance(result, WriterStatistics)
    return result


def writer_threads(directory: Path, writers: int, seconds: float) -> Result:
    with running_writer(directory) as address:
        latencies: list[list[float]] = [[] for _ in range(writers)]
        start = threading.Barrier(writers + 1)
        deadline = 0.0

        def write(worker: int) -> None:
            mine = latencies[worker]
            start.wait()
            while (now := time.perf_counter()) < deadline:
                message = Commit(events=(admission(),))
                address.ask(message, TIMEOUT)
                mine.append(time.perf_counter() - now)

        threads = [threading.Thread(target=write, args=(worker,)) for worker in range(writers)]
        for thread in threads:
            thread.start()
        before = _statistics(address)
        watch = Stopwatch()
        deadline = watch.started + seconds
        start.wait()
        for thread in threads:
            thread.join()
        elapsed, cpu = watch.stop()
        after = _statistics(address)
    per_commit = (after.writes - before.writes) / max(1, after.commits - before.commits)
    flat = [x for mine in latencies for x in mine]
    return _result("writer, threads", writers, flat, elapsed, per_commit, cpu)


def writer_tasks(directory: Path, writers: int, seconds: float) -> Result:
    with running_writer(directory) as address:
        latencies: list[float] = []

        async def write(deadline: float) -> None:
            while (now := time.perf_counter()) < deadline:
                message = Commit(events=(admission(),))
                await address.ask_async(message, TIMEOUT)
                latencies.append(time.perf_counter() - now)

        async def run() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(write(started + seconds) for _ in range(writers)))
            return time.perf_counter() - started

        before = _statistics(address)
        watch = Stopwatch()
        elapsed = asyncio.run(run())
        _, cpu = watch.stop()
        after = _statistics(address)
    per_commit = (after.writes - before.writes) / max(1, after.commits - before.commits)
    return _result("writer, asyncio", writers, latencies, elapsed, per_commit, cpu)


# -- the run -------------------------------------------------------------------------------------


def plan(seconds: float) -> list[Callable[[Path], Result]]:
    def naive(directory: Path) -> Result:
        return naive_lmdb(directory, seconds)

    def sqlite(writers: int) -> Callable[[Path], Result]:
        return lambda directory: sqlite_wal(directory, writers, seconds)

    def threads(writers: int) -> Callable[[Path], Result]:
        return lambda directory: writer_threads(directory, writers, seconds)

    def tasks(writers: int) -> Callable[[Path], Result]:
        return lambda directory: writer_tasks(directory, writers, seconds)

    return [
        naive,
        *(sqlite(writers) for writers in (1, 8, 64)),
        *(threads(writers) for writers in (1, 8, 64)),
        *(tasks(writers) for writers in (1, 8, 64, 1024)),
        lambda directory: store_alone(directory, seconds),
        naive,
    ]


def run(seconds: float, base: Path | None) -> dict[str, Any]:
    results: list[Result] = []
    for step in plan(seconds):
        directory = Path(tempfile.mkdtemp(prefix="resident-bench-", dir=base))
        try:
            results.append(step(directory))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    naive = [result.throughput for result in results if result.mode == "naive lmdb"]
    baseline = statistics.mean(naive)
    for result in results:
        result.ratio = result.throughput / baseline
    alone = next(result.ratio for result in results if result.mode == "store alone")
    targets = []
    for name, (mode, writers), (against, against_writers), wanted in TARGETS:
        measured = _find(results, mode, writers)
        peer = _find(results, against, against_writers)
        got = measured.throughput / peer.throughput if peer.throughput else 0.0
        targets.append({
            "name": name, "writers": writers, "mode": mode, "against": against, "target": wanted, "ratio": got,
            "met": got >= wanted, "cpu_us_per_write": measured.cpu_us_per_write,
            "against_cpu_us_per_write": peer.cpu_us_per_write,
        })
    return {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "lmdb": lmdb.version()},
        "seconds_per_configuration": seconds,
        "naive_lmdb_baseline_writes_per_s": baseline,
        "naive_lmdb_runs": naive,
        "store_alone_ratio": alone,
        "results": [{**asdict(result), "throughput": result.throughput} for result in results],
        "targets": targets,
    }


def _find(results: list[Result], mode: str, writers: int) -> Result:
    return next(result for result in results if result.mode == mode and result.writers == writers)


def print_table(report: dict[str, Any]) -> None:
    print(
        f"{'writers':>7}  {'mode':<16} {'writes/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'per commit':>10} "
        f"{'cpu µs/w':>8} {'x naive':>8}"
    )
    for row in report["results"]:
        per_commit = row["writes_per_commit"]
        cpu = row["cpu_us_per_write"]
        print(
            f"{row['writers']:>7}  {row['mode']:<16} {row['throughput']:>10.0f} {row['p50_ms']:>8.2f} "
            f"{row['p99_ms']:>8.2f} {per_commit if per_commit is None else round(per_commit, 1):>10} "
            f"{'-' if cpu is None else f'{cpu:.1f}':>8} {row['ratio']:>7.1f}x"
        )
    runs = ", ".join(f"{value:.0f}" for value in report["naive_lmdb_runs"])
    print(f"\nbaseline: naive LMDB {report['naive_lmdb_baseline_writes_per_s']:.0f} writes/s (runs: {runs})")
    for target in report["targets"]:
        verdict = "met" if target["met"] else "NOT met"
        print(
            f"{target['name']}: {target['ratio']:.2f}, target >= {target['target']:g} — {verdict} "
            f"({target['cpu_us_per_write']:.1f} vs {target['against_cpu_us_per_write']:.1f} µs CPU per write)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="0.7 s per configuration instead of 2.5 s")
    parser.add_argument("--seconds", type=float, default=None, help="seconds per configuration")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores are created (default: temp dir)")
    arguments = parser.parse_args()
    seconds = arguments.seconds or (0.7 if arguments.quick else 2.5)
    report = run(seconds, arguments.dir)
    if arguments.json:
        print(json.dumps(report))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
