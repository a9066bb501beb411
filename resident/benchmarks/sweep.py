"""Throughput and latency against concurrency, for every way to write, from one run (`resident bench writes --sweep`).

Each kind of writer runs at each level of concurrency on a fresh home, one after another in this
process: blocking threads calling `remember`, asyncio tasks awaiting `aremember` on one loop,
`remember_many` with that many items a call, and the SQLite peer (WAL, `synchronous=FULL`, the
same record and event bytes a `remember` stores, one thread and connection per writer). Threads
and tasks are spread over the members in turn. A point's clock stops once the substrate has taken
in everything written (`wait_indexed`), so work left behind the writes is counted; its CPU is the
process's CPU time (every thread) over that span.

`plot()` draws the points as two panels (writes per second, and p99 acknowledgement latency,
against concurrency on log scales) into an SVG file; it needs matplotlib (`resident-runtime[bench]`).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from resident.benchmarks.workloads import Tally, Writer, run_batches, run_sqlite, run_tasks, run_threads, text_of_size
from resident.config import scratch_home, team_of
from resident.errors import InvalidInput, PlotUnavailable
from resident.ids import new_id
from resident.memory.records import MAX_BODY_CHARS, make_record
from resident.messages.events import encode_event
from resident.messages.memory import Activation, RecordAdmitted
from resident.runtime import Runtime
from resident.runtime.runtime import host_context
from resident.store.tables import RECORDS

__all__ = [
    "KINDS", "MAX_LEVEL", "SWEEP_SECONDS", "SweepPoint", "parse_levels", "plot", "pyplot", "run_sweep",
    "sqlite_payload",
]

KINDS = ("threads", "asyncio", "remember_many", "sqlite")
# Seconds each point runs unless told.
SWEEP_SECONDS = 2.0
MAX_LEVEL = 4096
_MEMBERS = 5
_LABELS = {
    "threads": "remember, blocking threads",
    "asyncio": "aremember, asyncio tasks",
    "remember_many": "remember_many, items per call",
    "sqlite": "SQLite WAL (synchronous=FULL), threads",
}


@dataclass(frozen=True)
class SweepPoint:
    """One kind of writer at one level of concurrency."""

    kind: str
    concurrency: int
    writes: int
    seconds: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_write: float
    errors: int

    @property
    def throughput(self) -> float:
        return self.writes / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "throughput": round(self.throughput, 1)}


def parse_levels(text: str) -> list[int]:
    """`1,8,64` as levels of concurrency, each from 1 to `MAX_LEVEL`."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(f"--sweep takes whole numbers and commas, like 1,8,64,256,1024; not {text!r}") from None
    if not levels or any(not 1 <= level <= MAX_LEVEL for level in levels):
        raise InvalidInput(f"--sweep levels must be 1..{MAX_LEVEL}, like 1,8,64,256,1024; not {text!r}")
    return sorted(set(levels))


def sqlite_payload(text: Callable[[int], str], member: str = "deven") -> Callable[[int], tuple[str, bytes, bytes]]:
    """What a `remember` of `text(n)` stores, for the SQLite peer: the record's key, record and event bytes."""

    def payload(number: int) -> tuple[str, bytes, bytes]:
        now = time.time()
        record = make_record(
            record_id=new_id("mem"), owner=member, scope="AGENT_CORE", bank=f"agent_core/{member}",
            text=text(number), summary=None, kind="experience", counterpart=None, world=None, importance=0.5,
            importance_reason="", confidence=1.0, activation=Activation(), supersedes=None, canonical=False,
            delegated=False, source="manual", occurred_at=None, cites=(), now=now, author=member,
        )
        return record.id, RECORDS.encode(record), encode_event(RecordAdmitted(at=now, record=record))

    return payload


def run_sweep(
    levels: Sequence[int],
    *,
    seconds: float,
    size: int = 200,
    kinds: Sequence[str] = KINDS,
    base: Path | None = None,
    progress: Callable[[SweepPoint], None] | None = None,
) -> list[SweepPoint]:
    """Every kind at every level, each on a fresh home under `base` (a temporary folder by default)."""
    if not 0 < seconds <= 3600:
        raise InvalidInput("--duration must be more than 0 and at most 3600 seconds")
    if not 1 <= size <= MAX_BODY_CHARS:
        raise InvalidInput(f"--size must be 1..{MAX_BODY_CHARS} characters (the memory text limit)")
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise InvalidInput(f"unknown kind {unknown[0]!r}; use {', '.join(KINDS)}")
    text = text_of_size(size)
    root = Path(tempfile.mkdtemp(prefix="resident-sweep-", dir=base))
    points: list[SweepPoint] = []
    try:
        for kind in kinds:
            for level in levels:
                point = _measure(kind, level, seconds, text, root / f"{kind}-{level}")
                points.append(point)
                if progress is not None:
                    progress(point)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return points


def _measure(kind: str, level: int, seconds: float, text: Callable[[int], str], directory: Path) -> SweepPoint:
    if kind == "sqlite":
        directory.mkdir(mode=0o700, parents=True)
        tally = Tally(None, time.monotonic() + seconds)
        cpu, wall = time.process_time(), time.perf_counter()
        run_sqlite(directory, level, sqlite_payload(text), tally)
        return _point(kind, level, tally, time.perf_counter() - wall, time.process_time() - cpu)
    directory.mkdir(mode=0o700, parents=True)
    home = scratch_home("home-", team_of(_MEMBERS), parent=directory)
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
        names = host_context(runtime).config_now().member_names()[:_MEMBERS]
        for name in names:
            runtime.member(name).remember(f"{name} starts the sweep")  # each bank exists before the clock
        writers: list[Writer] = [(names[n % len(names)], {}) for n in range(level)]
        tally = Tally(None, time.monotonic() + seconds)
        cpu, wall = time.process_time(), time.perf_counter()
        match kind:
            case "threads":
                run_threads(runtime, writers, text, tally)
            case "asyncio":
                run_tasks(runtime, writers, text, tally)
            case _:
                run_batches(runtime, writers[:1], text, tally, batch=level)
        runtime.memory.wait_indexed()
        return _point(kind, level, tally, time.perf_counter() - wall, time.process_time() - cpu)


def _point(kind: str, level: int, tally: Tally, seconds: float, cpu: float) -> SweepPoint:
    ordered = sorted(tally.latencies)

    def at(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    return SweepPoint(
        kind=kind, concurrency=level, writes=len(ordered), seconds=seconds, p50_ms=at(0.5), p99_ms=at(0.99),
        cpu_us_per_write=1e6 * cpu / len(ordered) if ordered else 0.0, errors=sum(tally.errors.values()),
    )


def pyplot() -> Any:
    """matplotlib's pyplot, drawing SVG; `PlotUnavailable` naming the extra when it is not installed.

    Called before a sweep that is to be drawn too, so the sweep is refused before it runs, not after.
    """
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra, loaded only to draw

        matplotlib.use("svg")
        from matplotlib import pyplot as drawing  # noqa: PLC0415 - loaded only when this runs
    except ImportError:
        raise PlotUnavailable("drawing the plot needs matplotlib: pip install 'resident-runtime[bench]'") from None
    return drawing


def plot(points: Sequence[SweepPoint], path: Path, title: str = "durable writes") -> Path:
    """Draw throughput and p99 latency against concurrency, one line per kind, as an SVG file."""
    drawing = pyplot()
    figure, (rate, tail) = drawing.subplots(1, 2, figsize=(11, 4.2))
    for kind in KINDS:
        mine = sorted((p for p in points if p.kind == kind and p.writes), key=lambda p: p.concurrency)
        if not mine:
            continue
        levels = [p.concurrency for p in mine]
        rate.plot(levels, [p.throughput for p in mine], marker="o", label=_LABELS[kind])
        tail.plot(levels, [p.p99_ms for p in mine], marker="o", label=_LABELS[kind])
    for axes, label in ((rate, "durable writes per second"), (tail, "p99 acknowledgement latency (ms)")):
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("concurrent writers (items per call for remember_many)")
        axes.set_ylabel(label)
        axes.grid(visible=True, which="both", alpha=0.3)
    rate.legend(fontsize="small")
    figure.suptitle(title)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="svg")
    drawing.close(figure)
    return path
