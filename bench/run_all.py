"""Run every benchmark briefly and write one Markdown table of the figures (`bench/RESULTS.md`).

    python -m bench [--out FILE] [--full]

Each benchmark runs in its own process with `--json` (and its quick settings unless `--full`),
so one benchmark's threads and caches never colour another's figures. Every figure that has a
target is shown with it; ratios compare the runtime with its baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Row = tuple[str, str, str, str]  # benchmark, figure, value, target (with met / NOT met)


def _target(value: float, target: float, *, at_least: bool) -> str:
    met = value >= target if at_least else value <= target
    sign = ">=" if at_least else "<="
    return f"{sign} {target:g} — {'met' if met else 'NOT met'}"


def _store_writes(report: dict[str, Any]) -> list[Row]:
    rows: list[Row] = [
        ("store writes", "naive LMDB baseline", f"{report['naive_lmdb_baseline_writes_per_s']:.0f} writes/s", "")
    ]
    for result in report["results"]:
        if result["mode"] == "naive lmdb":
            continue
        if result["mode"] == "store alone":
            figure = f"the store alone: one thread commits batches of {result['writers']}, no actors or callers"
        else:
            figure = f"{result['mode']}, {result['writers']} writers"
        value = (
            f"{result['throughput']:.0f}/s ({result['ratio']:.1f}x), p99 {result['p99_ms']:.1f} ms, "
            f"{result['cpu_us_per_write']:.0f} µs CPU/write"
        )
        target = next(
            (t for t in report["targets"] if t["mode"] == result["mode"] and t["writers"] == result["writers"]), None
        )
        rows.append(("store writes", figure, value, _target(result["ratio"], target["target"], at_least=True)
                     if target else ""))
    return rows


def _actors(report: dict[str, Any]) -> list[Row]:
    ask, restart = report["ask"], report["restart"]
    return [
        ("actors", "ask via stable address vs raw pykka (p50)",
         f"{ask['address']['p50_us']:.0f} µs vs {ask['raw_pykka']['p50_us']:.0f} µs ({ask['overhead_p50']:.2f}x)",
         _target(ask["overhead_p50"], ask["overhead_target"], at_least=False)),
        ("actors", "crash → answering again", f"p50 {restart['p50_ms']:.2f} ms, p99 {restart['p99_ms']:.2f} ms",
         _target(restart["p99_ms"], restart["p99_target_ms"], at_least=False)),
    ]


def _recall_index(report: dict[str, Any]) -> list[Row]:
    return [
        ("recall index", f"{size['records']:,} records: build, search p50/p99",
         f"{size['build_s']:.2f} s, {size['search_p50_ms']:.1f} / {size['search_p99_ms']:.1f} ms", "")
        for size in report["sizes"]
    ]


def _recall(report: dict[str, Any]) -> list[Row]:
    targets = report["targets"]
    rows: list[Row] = []
    for entry in report["recall"]:
        big = entry["records"] >= 100_000
        target = _target(entry["recall_p99_ms"], targets["recall_p99_ms_100k"], at_least=False) if big else ""
        rows.append(("memory", f"recall at {entry['records']:,} records (p50 / p99)",
                     f"{entry['recall_p50_ms']:.1f} / {entry['recall_p99_ms']:.1f} ms", target))
    rebuild = report["rebuild"]
    big = rebuild["records"] >= 100_000
    rows.append(("memory", f"index rebuild at {rebuild['records']:,} records (crash → recall answered)",
                 f"{rebuild['crash_to_recall_s']:.2f} s (substrate {rebuild['substrate_rebuild_s']:.2f} s)",
                 _target(rebuild["substrate_rebuild_s"], targets["rebuild_s_100k"], at_least=False) if big else ""))
    remember = report["remember"]
    for mode, ratio in remember["ratios"].items():
        value = (
            f"{ratio:.1f}x naive LMDB; {remember['cpu_us_per_write'][mode]:.0f} µs CPU/write "
            f"(the target's budget: {remember['cpu_budget_us'][mode]:.0f} µs)"
        )
        batch = remember["alone_batches"].get(mode)
        if batch is None:
            kind = "threads" if "threads" in mode else "asyncio"
            rows.append(("memory", f"durable {mode} (5 members)", value,
                         _target(ratio, targets[f"{kind}_ratio"], at_least=True)))
        else:
            rows.append(("memory", f"the remember pipeline alone: one thread, {batch} per commit, no actors or callers",
                         value, ""))
    return rows


def _replication(report: dict[str, Any]) -> list[Row]:
    results = report["results"]
    return [
        ("replication", f"{name.replace('_', ' ')} ({report['records']} records)",
         f"{result['records_per_s']:.0f} records/s, {result['requests']} requests", "")
        for name, result in results.items()
    ] + [("replication", "batched / one per request", f"{report['batched_over_one_per_request']}x", "")]


def _skills(report: dict[str, Any]) -> list[Row]:
    def figures(entry: dict[str, Any]) -> str:
        return (f"wall p50 {entry['p50_ms']:.2f} / p99 {entry['p99_ms']:.2f} ms, "
                f"CPU p99 {entry['cpu_p99_ms']:.2f} ms")

    pure, runtime = report["pure"], report["runtime"]
    actors = runtime["member_and_library_actors"]
    return [
        ("skills", f"projection choice, {report['library']:,} team skills: keyword search alone (40 held)",
         figures(pure["search_alone_40"]), ""),
        ("skills", "projection choice alone (40 held; all 1,000 held)",
         f"{figures(pure['choose_40'])}; {figures(pure['choose_1000'])}", ""),
        ("skills", "projection choice through the member and library actors", figures(actors),
         _target(actors["p99_ms"], report["target_p99_ms"], at_least=False)),
        ("skills", "rt.skills.choose (also re-reads soul.md)", figures(runtime["rt_skills_choose"]), ""),
    ]


def _api(report: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for phase in report["phases"]:
        ratio = report["ratios_to_in_process"].get(f"{phase['config']} {phase['operation']}")
        versus = f" ({ratio:.2f}x in-process)" if ratio is not None else ""
        rows.append((
            "api", f"{phase['operation']}, {phase['clients']} clients, {phase['config']}",
            f"{phase['per_s']:.0f}/s{versus}, p50 {phase['p50_ms']:.1f} ms, p99 {phase['p99_ms']:.1f} ms", "",
        ))
    return rows


def _knowledge(report: dict[str, Any]) -> list[Row]:
    targets = report["targets"]
    rows: list[Row] = []
    for entry in report["sizes"]:
        ours, theirs = entry["resident"], entry["fts5"]
        big = entry["pages"] >= 100_000
        ingest_target = _target(ours["ingest_pages_per_s"], max(targets["ingest_pages_per_s"],
                                                                 theirs["ingest_pages_per_s"]), at_least=True)
        rows.append(("knowledge", f"ingest {entry['pages']:,} pages (files → searchable) vs SQLite FTS5 trigram",
                     f"{ours['ingest_pages_per_s']:.0f} vs {theirs['ingest_pages_per_s']:.0f} pages/s "
                     f"({entry['ingest_ratio']:.2f}x), CPU {ours['ingest_cpu_us_per_page']:.0f} vs "
                     f"{theirs['ingest_cpu_us_per_page']:.0f} µs/page", ingest_target))
        search_target = (
            _target(ours["p99_ms"], min(targets["search_p99_ms_100k"], theirs["p99_ms"]), at_least=False) if big else ""
        )
        latency = f"{ours['p50_ms']:.1f} / {ours['p99_ms']:.1f} vs {theirs['p50_ms']:.1f} / {theirs['p99_ms']:.1f} ms"
        rows.append(("knowledge", f"search p50 / p99 at {entry['pages']:,} pages vs SQLite FTS5 trigram", latency,
                     search_target))
    context = report["context"]
    rows += [
        ("knowledge", f"context, {context['entries']} verified entries, {label} (p50 / p99)",
         f"{context[label]['p50_ms']:.1f} / {context[label]['p99_ms']:.1f} ms", "")
        for label in ("fresh", "revalidating")
    ]
    return rows


BENCHMARKS: list[tuple[str, list[str], list[str], Callable[[dict[str, Any]], list[Row]]]] = [
    # script, quick arguments, full arguments, summary
    ("store_writes.py", ["--quick"], [], _store_writes),
    ("actors.py", ["--asks", "5000", "--crashes", "100"], [], _actors),
    ("recall_index.py", ["--sizes", "1000,10000"], [], _recall_index),
    ("recall.py", ["--quick"], [], _recall),
    ("replication.py", ["--quick"], [], _replication),
    ("skills.py", ["--tasks", "200"], [], _skills),
    ("api.py", ["--quick"], [], _api),
    ("knowledge.py", ["--sizes", "10000", "--searches", "200", "--rounds", "2"], [], _knowledge),
]


def run_one(script: str, arguments: list[str]) -> dict[str, Any]:
    command = [sys.executable, str(HERE / script), "--json", *arguments]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{script} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def render(rows: list[Row], seconds: float, *, full: bool) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"`python -m bench{' --full' if full else ''}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"Python {platform.python_version()}, {platform.machine()}, {seconds:.0f} s in all. "
        "Ratios compare with a baseline measured in the same run; absolute figures move with the machine's load.",
        "",
        "| benchmark | figure | value | target |",
        "|---|---|---|---|",
    ]
    lines += [f"| {b} | {f} | {v} | {t} |" for b, f, v, t in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="where to write the table")
    parser.add_argument("--full", action="store_true", help="each benchmark's full settings (slow)")
    parser.add_argument("--only", action="append", help="run only these scripts (e.g. actors.py)")
    args = parser.parse_args()
    started = time.monotonic()
    rows: list[Row] = []
    for script, quick, full, summarize in BENCHMARKS:
        if args.only and script not in args.only:
            continue
        print(f"running {script} ...", file=sys.stderr, flush=True)
        try:
            rows += summarize(run_one(script, full if args.full else quick))
        except (RuntimeError, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError) as error:
            rows.append((script, "failed", str(error), ""))
    table = render(rows, time.monotonic() - started, full=args.full)
    args.out.write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
