"""`resident bench writes`: the concurrent durable-write benchmark users run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from resident.cli.common import CliState, emit_json, json_option, pass_state, stdout
from resident.cli.target import require_closed

__all__ = ["COMMANDS"]


@click.group()
def bench() -> None:
    """Measure the runtime on this machine."""


@bench.command()
@click.option("--members", type=click.IntRange(1, 1000), default=5, show_default=True, help="Members writing.")
@click.option("--writers", type=click.IntRange(1, 4096), default=8, show_default=True, help="Writers per member.")
@click.option("--mode", type=click.Choice(["threads", "async"]), default="async", show_default=True,
              help="Writers as threads or as asyncio tasks on one event loop.")
@click.option("--duration", type=click.FloatRange(min=0.1, max=3600), help="Seconds to run (default 5).")
@click.option("--count", type=click.IntRange(1, 10_000_000), help="Stop after this many writes instead.")
@click.option("--size", type=click.IntRange(1, 16_000), default=200, show_default=True, help="Bytes of text each.")
@click.option("--scope", default="AGENT_CORE", show_default=True, help="Memory scope written.")
@click.option("--realm", default="none", show_default=True, metavar="auto|URL|none",
              help="auto: start a loopback Realm and measure replication lag; URL: use one; none: no Realm.")
@click.option("--home", "bench_home", type=click.Path(file_okay=False, path_type=Path),
              help="Benchmark this home (memory must be on) instead of a fresh one.")
@click.option("--sweep", "levels", metavar="N,N,...",
              help="Instead: throughput and p99 latency at each level of concurrency (e.g. 1,8,64,256,1024) for "
                   "threads, asyncio tasks, remember_many and SQLite, each on a fresh home (--duration each).")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.svg",
              help="With --sweep: also draw it as an SVG (needs matplotlib: resident-runtime[bench]).")
@json_option
@pass_state
def writes(
    state: CliState, members: int, writers: int, mode: str, duration: float | None, count: int | None, size: int,
    scope: str, realm: str, bench_home: Path | None, levels: str | None, plot: Path | None, as_json: bool,
) -> None:
    """Durable `remember` throughput and latency from MEMBERS x WRITERS concurrent writers.

    Runs against a fresh home unless --home (or the global --home) names one; a home that another
    process has open is refused. With --sweep, every kind of writer at every level instead.
    """
    if levels is not None:
        _sweep(levels, duration, size, plot, as_json)
        return
    if plot is not None:
        raise click.UsageError("--plot draws a sweep: give --sweep LEVELS with it")
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: PLC0415 - loaded only when this runs
    from rich.table import Table  # noqa: PLC0415 - loaded only when this runs

    from resident.benchmarks.writes import WriteBench, run_write_bench  # noqa: PLC0415 - loaded only when this runs

    named = bench_home if bench_home is not None else state.home
    home = None if named is None else require_closed(named)
    config = WriteBench(
        members=members, writers=writers, mode=mode, duration=duration if count is None else None,
        count=count, size=size, scope=scope, realm=realm, home=home,
    )
    if config.duration is None and config.count is None:
        config = WriteBench(**{**config.__dict__, "duration": 5.0})
    if as_json:
        report = run_write_bench(config)
        emit_json(report.to_json())
        return
    with Progress(
        TextColumn("[bold]writing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=stdout.console,
        transient=True,
    ) as bar:
        task = bar.add_task("writes", total=config.count)

        def advance(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        report = run_write_bench(config, advance)
    table = Table(title=f"{members} members x {writers} writers ({mode}), {size} B, {scope}", title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("value", no_wrap=True)
    table.add_row("writes", f"{report.writes} in {report.seconds:.2f} s")
    table.add_row("throughput", f"{report.throughput:,.0f} writes/s")
    latency = report.latencies_ms
    table.add_row("ack latency", f"p50 {latency['p50']} ms  p95 {latency['p95']} ms  p99 {latency['p99']} ms  "
                                 f"max {latency['max']} ms")
    table.add_row("writes per commit", f"{report.writes_per_commit:.1f} ({report.commits} commits)")
    lag = report.replication_lag_ms
    lag_text = "-" if lag is None else f"p50 {lag['p50']} ms  p99 {lag['p99']} ms  max {lag['max']} ms"
    table.add_row("replication lag", lag_text)
    table.add_row("errors", ", ".join(f"{k} {v}" for k, v in report.errors.items()) or "none")
    table.add_row("peak memory", f"{report.peak_memory_mb:.0f} MB")
    stdout.print(table)
    for note in report.notes:
        stdout.print(f"note: {note}")


def _sweep(levels: str, duration: float | None, size: int, plot: Path | None, as_json: bool) -> None:
    from resident.benchmarks.sweep import SWEEP_SECONDS, parse_levels, pyplot, run_sweep  # noqa: PLC0415 - loaded only when this runs
    from resident.benchmarks.sweep import plot as draw  # noqa: PLC0415 - loaded only when this runs

    chosen = parse_levels(levels)
    if plot is not None:
        pyplot()  # without matplotlib, refused before the run rather than after it
    progress = None if as_json else (lambda point: stdout.line(_point_line(point)))
    if not as_json:
        stdout.line(f"{'kind':<14} {'writers':>7} {'writes/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu µs/w':>8}")
    points = run_sweep(chosen, seconds=duration if duration is not None else SWEEP_SECONDS, size=size,
                       progress=progress)
    drawn = None if plot is None else draw(points, plot)
    if as_json:
        emit_json({"points": [point.to_json() for point in points], "plot": None if drawn is None else str(drawn)})
    elif drawn is not None:
        stdout.line(f"plot: {drawn}")


def _point_line(point: Any) -> str:
    return (f"{point.kind:<14} {point.concurrency:>7} {point.throughput:>9.0f} {point.p50_ms:>8.2f} "
            f"{point.p99_ms:>8.2f} {point.cpu_us_per_write:>8.0f}")


COMMANDS = (bench,)
