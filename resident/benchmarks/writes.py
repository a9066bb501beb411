"""`resident bench writes`: many members writing durable memories at once, measured.

N members x W writers (threads, or asyncio tasks on one loop) call `remember` until a duration or
a count is reached; each call is timed from the call to its durable receipt. The report gives
throughput, acknowledgement latency (p50/p95/p99/max), writes per commit (from the writer's own
counters), replication lag to `synced` (when a Realm takes part), errors by type and peak memory.
"""

from __future__ import annotations

import resource
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from resident.benchmarks.workloads import Tally, Writer, run_tasks, run_threads, text_of_size
from resident.config import DEFAULT_WORLD, scratch_home, team_of
from resident.errors import InvalidInput
from resident.memory.banks import parse_scope
from resident.memory.records import MAX_BODY_CHARS
from resident.messages.replication import RecordsSynced
from resident.messages.store import GetWriterStatistics, WriterStatistics
from resident.realm.process import realm_for
from resident.runtime import Runtime
from resident.runtime.memory.switch import require_memory
from resident.runtime.runtime import host_context
from resident.store.tables import RECORDS

__all__ = ["WriteBench", "WriteBenchReport", "quantiles", "run_write_bench"]


@dataclass(frozen=True)
class WriteBench:
    """What to run."""

    members: int = 5
    writers: int = 8
    mode: str = "async"
    duration: float | None = 5.0
    count: int | None = None
    size: int = 200
    scope: str = "AGENT_CORE"
    realm: str = "none"
    home: Path | None = None

    def check(self) -> None:
        if self.mode not in ("threads", "async"):
            raise InvalidInput(f"--mode must be threads or async, not {self.mode!r}")
        if not 1 <= self.members <= 1000 or not 1 <= self.writers <= 4096:
            raise InvalidInput("--members must be 1..1000 and --writers 1..4096")
        if (self.duration is None) == (self.count is None):
            raise InvalidInput("give either --duration or --count")
        if self.duration is not None and not 0 < self.duration <= 3600:
            raise InvalidInput("--duration must be more than 0 and at most 3600 seconds")
        if self.count is not None and not 1 <= self.count <= 10_000_000:
            raise InvalidInput("--count must be 1..10000000")
        if not 1 <= self.size <= MAX_BODY_CHARS:
            raise InvalidInput(f"--size must be 1..{MAX_BODY_CHARS} bytes (the memory text limit)")
        parse_scope(self.scope)


@dataclass
class WriteBenchReport:
    """The figures; `to_json()` is the machine-readable form."""

    config: WriteBench
    home: str
    writes: int
    seconds: float
    latencies_ms: dict[str, float]
    writes_per_commit: float
    commits: int
    errors: dict[str, int]
    replication_lag_ms: dict[str, float] | None
    peak_memory_mb: float
    notes: list[str] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return self.writes / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "members": self.config.members,
            "writers_per_member": self.config.writers,
            "mode": self.config.mode,
            "size": self.config.size,
            "scope": self.config.scope,
            "home": self.home,
            "writes": self.writes,
            "seconds": round(self.seconds, 3),
            "throughput": round(self.throughput, 1),
            "ack_latency_ms": self.latencies_ms,
            "writes_per_commit": round(self.writes_per_commit, 2),
            "commits": self.commits,
            "errors": self.errors,
            "replication_lag_ms": self.replication_lag_ms,
            "peak_memory_mb": round(self.peak_memory_mb, 1),
            "notes": self.notes,
        }


def quantiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/max of `samples` (seconds) in milliseconds."""
    if not samples:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)

    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1] * 1000, 3)}


def run_write_bench(bench: WriteBench, progress: Callable[[int, int | None], None] | None = None) -> WriteBenchReport:
    """Run the benchmark; `progress(done, total)` is called a few times a second."""
    bench.check()
    home = bench.home if bench.home is not None else scratch_home("resident-bench-", team_of(bench.members))
    realm_url, realm_process = realm_for(bench.realm, home / "bench-realm")
    try:
        with Runtime.open(home, realm=realm_url or "none") as runtime:
            return _measure(runtime, bench, home, realm_url, progress)
    finally:
        if realm_process is not None:
            realm_process.stop()


def _measure(
    runtime: Runtime,
    bench: WriteBench,
    home: Path,
    realm_url: str | None,
    progress: Callable[[int, int | None], None] | None,
) -> WriteBenchReport:
    if bench.home is None:
        runtime.memory.enable()
    else:
        require_memory(runtime.memory.status())
    names = host_context(runtime).config_now().member_names()[: bench.members]
    if len(names) < bench.members:
        raise InvalidInput(f"the home's roster has {len(names)} members; --members asks for {bench.members}")
    scope = parse_scope(bench.scope)
    before: WriterStatistics = host_context(runtime).writer.ask(GetWriterStatistics())
    deadline = time.monotonic() + bench.duration if bench.duration is not None else None
    tally = Tally(bench.count, deadline)
    started = time.monotonic()
    options = [_write_options(scope, name, names) for name in names]
    stop = threading.Event()
    reporter = threading.Thread(target=_report_progress, args=(tally, bench.count, progress, stop), daemon=True)
    if progress is not None:
        reporter.start()
    try:
        writers: list[Writer] = [
            (name, extra) for name, extra in zip(names, options, strict=True) for _ in range(bench.writers)
        ]
        run = run_threads if bench.mode == "threads" else run_tasks
        run(runtime, writers, text_of_size(bench.size), tally)
    finally:
        stop.set()
        if progress is not None:
            reporter.join(timeout=5.0)
    seconds = time.monotonic() - started
    after: WriterStatistics = host_context(runtime).writer.ask(GetWriterStatistics())
    commits = after.commits - before.commits
    notes: list[str] = []
    lag = _replication_lag(runtime, realm_url, notes)
    return WriteBenchReport(
        config=bench,
        home=str(home),
        writes=len(tally.latencies),
        seconds=seconds,
        latencies_ms=quantiles(tally.latencies),
        writes_per_commit=(after.writes - before.writes) / commits if commits else 0.0,
        commits=commits,
        errors=dict(tally.errors),
        replication_lag_ms=lag,
        peak_memory_mb=_peak_memory_mb(),
        notes=notes,
    )


def _write_options(scope: str, name: str, names: list[str]) -> dict[str, str]:
    if scope == "AGENT_DYADIC":
        peer = names[(names.index(name) + 1) % len(names)]
        return {"scope": scope, "counterpart": peer if peer != name else f"{name}-peer"}
    if scope == "WORLD_SHARED":
        return {"scope": scope, "world": DEFAULT_WORLD}
    return {"scope": scope}


def _report_progress(
    tally: Tally, total: int | None, progress: Callable[[int, int | None], None] | None, stop: threading.Event
) -> None:
    while progress is not None and not stop.wait(0.25):
        progress(len(tally.latencies), total)
    if progress is not None:
        progress(len(tally.latencies), total)


def _replication_lag(runtime: Runtime, realm_url: str | None, notes: list[str]) -> dict[str, float] | None:
    """Time from each record's durable write to Realm's acceptance being recorded, in ms."""
    if realm_url is None:
        notes.append("no Realm: records stay pending, no replication lag measured (use --realm auto)")
        return None
    counts = runtime.replication.sync(timeout=120.0)
    if counts.pending:
        notes.append(f"{counts.pending} records were still pending after 120 s")
    lags: list[float] = []
    with host_context(runtime).store.reader() as reader:
        for _, event in reader.events():
            if isinstance(event, RecordsSynced):
                for record_id in event.ids:
                    record = reader.get(RECORDS, record_id)
                    if record is not None:
                        lags.append(max(0.0, event.at - record.recorded_at))
    return quantiles(lags)


def _peak_memory_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
