"""The writers a write benchmark runs: blocking threads, asyncio tasks, `remember_many` batches, and SQLite.

Every workload claims write numbers from one `Tally` until it says the run is over (a count or a
deadline), times each write from the call to its durable acknowledgement, and records it there.
A `remember_many` of B items is B writes, each acknowledged after the batch's latency. The SQLite
peer writes the same bytes a `remember` stores (the record and its `RecordAdmitted` event, in two
tables, one transaction per write, WAL with `synchronous=FULL`) from its own threads, each with its
own connection: what a user would otherwise reach for.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from resident.errors import ResidentError
from resident.runtime import Runtime

__all__ = ["SQLITE_TIMEOUT", "Payload", "Tally", "Writer", "run_batches", "run_sqlite", "run_tasks", "run_threads",
           "text_of_size"]

# A writer: the member it writes as, and the options of its remembers (scope, counterpart, world).
Writer = tuple[str, dict[str, str]]
# What the SQLite peer stores for write n: the record's key, the record's bytes and the event's bytes.
Payload = Callable[[int], tuple[str, bytes, bytes]]
# SQLite waits this long for its write lock before it gives up (busy writers queue on it).
SQLITE_TIMEOUT = 60.0


class Tally:
    """Counts shared by every writer of a run (threads record under a lock; asyncio needs none)."""

    def __init__(self, limit: int | None, deadline: float | None) -> None:
        self.limit = limit
        self.deadline = deadline
        self.latencies: list[float] = []
        self.errors: Counter[str] = Counter()
        self.started = 0
        self.lock = threading.Lock()

    def claim(self, count: int = 1) -> int:
        """How many of the next `count` writes to make (0 when the run is over)."""
        with self.lock:
            if self.deadline is not None and time.monotonic() >= self.deadline:
                return 0
            if self.limit is not None:
                count = min(count, self.limit - self.started)
            self.started += max(0, count)
            return max(0, count)

    def record(self, latency: float, count: int = 1) -> None:
        with self.lock:
            self.latencies.extend([latency] * count)

    def refused(self, error: BaseException, count: int = 1) -> None:
        with self.lock:
            self.errors[type(error).__name__] += count


def _each(writers: Sequence[Writer], target: Callable[[str, dict[str, str]], None], name: str) -> None:
    threads = [
        threading.Thread(target=target, args=(member, options), name=f"{name}-{member}-{n}", daemon=True)
        for n, (member, options) in enumerate(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_threads(runtime: Runtime, writers: Sequence[Writer], text: Callable[[int], str], tally: Tally) -> None:
    """One blocking thread per writer, each calling `remember` until the tally says stop."""
    serial = _Serial()

    def write(member: str, options: dict[str, str]) -> None:
        handle = runtime.member(member)
        while tally.claim():
            began = time.perf_counter()
            try:
                handle.remember(text(serial.next()), **options)  # type: ignore[arg-type]
            except ResidentError as error:
                tally.refused(error)
            else:
                tally.record(time.perf_counter() - began)

    _each(writers, write, "bench-thread")


def run_tasks(runtime: Runtime, writers: Sequence[Writer], text: Callable[[int], str], tally: Tally) -> None:
    """One asyncio task per writer on one event loop, each awaiting `aremember` until the tally says stop."""
    serial = _Serial()

    async def write(member: str, options: dict[str, str]) -> None:
        handle = runtime.member(member)
        while tally.claim():
            began = time.perf_counter()
            try:
                await handle.aremember(text(serial.next()), **options)  # type: ignore[arg-type]
            except ResidentError as error:
                tally.refused(error)
            else:
                tally.record(time.perf_counter() - began)

    async def run() -> None:
        await asyncio.gather(*(write(member, options) for member, options in writers))

    asyncio.run(run())


def run_batches(
    runtime: Runtime, writers: Sequence[Writer], text: Callable[[int], str], tally: Tally, batch: int
) -> None:
    """One blocking thread per writer, each calling `remember_many` with `batch` items at a time."""
    serial = _Serial()

    def write(member: str, options: dict[str, str]) -> None:
        handle = runtime.member(member)
        while count := tally.claim(batch):
            items = [{"text": text(serial.next()), **options} for _ in range(count)]
            began = time.perf_counter()
            try:
                outcomes = handle.remember_many(items)
            except ResidentError as error:
                tally.refused(error, count)
                continue
            latency = time.perf_counter() - began
            refused = [outcome for outcome in outcomes if isinstance(outcome, ResidentError)]
            for refusal in refused:
                tally.refused(refusal)
            tally.record(latency, count - len(refused))

    _each(writers, write, "bench-batch")


def run_sqlite(directory: Path, threads: int, payload: Payload, tally: Tally) -> None:
    """`threads` threads, each with its own connection, inserting `payload`s one transaction each."""
    path = directory / "peer.sqlite"
    setup = sqlite3.connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE IF NOT EXISTS records (id TEXT PRIMARY KEY, value BLOB NOT NULL)")
    setup.execute("CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, value BLOB NOT NULL)")
    setup.commit()
    setup.close()
    serial = _Serial()

    def write(_member: str, _options: dict[str, str]) -> None:
        connection = sqlite3.connect(path, timeout=SQLITE_TIMEOUT, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA synchronous=FULL")
        try:
            while tally.claim():
                # The clock starts before the record is shaped, as a `remember`'s does.
                began = time.perf_counter()
                key, record, event = payload(serial.next())
                try:
                    connection.execute("BEGIN IMMEDIATE")
                    connection.execute("INSERT INTO records VALUES (?, ?)", (key, record))
                    connection.execute("INSERT INTO events (value) VALUES (?)", (event,))
                    connection.execute("COMMIT")
                except sqlite3.Error as error:
                    tally.refused(error)
                else:
                    tally.record(time.perf_counter() - began)
        finally:
            connection.close()

    _each([("sqlite", {})] * threads, write, "bench-sqlite")


def text_of_size(size: int) -> Callable[[int], str]:
    """Distinct memory texts of `size` characters (the write's number first)."""
    filler = "the quick brown fox jumps over the lazy dog " * (size // 44 + 1)

    def text(number: int) -> str:
        return (f"bench write {number}: " + filler)[:size]

    return text


class _Serial:
    """Distinct write numbers across threads (each memory's text differs, as real ones do)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0

    def next(self) -> int:
        with self._lock:
            self._next += 1
            return self._next
