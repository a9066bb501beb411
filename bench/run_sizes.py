"""`resident run` at every size `--writes` allows: its time, throughput and memory, side by side.

    python -m bench.run_sizes [--sizes 30,300,3000,10000] [--json]

Each size runs as a user runs it (`python -m resident.cli run --writes N --json`, a fresh scratch
home and a loopback Realm), one after another in separate processes. The figure to compare is
the time per 1,000 writes against the same figure at the smallest size of the run: the plan's
fixed part (starting a Realm, the outage, the crashes, the final sync) weighs on small runs, so
the ratio falls as the bulk writes take over, and a ratio that rose with size would show work
that grows faster than the writes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

DEFAULT_SIZES = (30, 300, 3_000, 10_000)


def run_once(writes: int) -> dict[str, Any]:
    """One `resident run --writes N --json` in a fresh temporary folder; its report and its costs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="bench-run-") as folder:
        env = {k: v for k, v in os.environ.items() if k != "RESIDENT_HOME"}
        env["TMPDIR"] = folder
        started = time.perf_counter()
        completed = subprocess.run(
            [sys.executable, "-m", "resident.cli", "run", "--writes", str(writes), "--json"],
            capture_output=True, text=True, env=env, timeout=900, check=False,
        )
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        raise SystemExit(f"resident run --writes {writes} failed: {completed.stdout[-500:]} {completed.stderr[-500:]}")
    report = json.loads(completed.stdout)
    return {
        "writes_option": writes,
        "ok": report["ok"],
        "writes": report["writes"],
        "run_seconds": report["seconds"],
        "process_seconds": round(wall, 2),
        "writes_per_second": report["writes_per_second"],
        "ack_ms": report["ack_ms"],
        "cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        # ru_maxrss of children is the largest of them (the run itself; its Realm is smaller), in KiB.
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run_sizes", description=__doc__)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated --writes values")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    results = [run_once(int(size)) for size in args.sizes.split(",")]
    base = results[0]["run_seconds"] / results[0]["writes"] * 1000
    for result in results:
        result["seconds_per_1000_writes"] = round(result["run_seconds"] / result["writes"] * 1000, 3)
        result["vs_smallest"] = round(result["seconds_per_1000_writes"] / base, 2)
    if args.json:
        print(json.dumps({"results": results}))
        return
    columns = ("--writes", "writes", "run", "process", "writes/s", "ack p50 / p99", "CPU", "peak RSS",
               "s per 1,000 writes (vs smallest)")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for r in results:
        print(
            f"| {r['writes_option']:,} | {r['writes']:,} | {r['run_seconds']:.1f} s | {r['process_seconds']:.1f} s "
            f"| {r['writes_per_second']:.0f} | {r['ack_ms']['p50']:.1f} / {r['ack_ms']['p99']:.1f} ms "
            f"| {r['cpu_seconds']:.1f} s | {r['peak_rss_mb']:.0f} MB | {r['seconds_per_1000_writes']:.3f} "
            f"({r['vs_smallest']:.2f}x) |"
        )


if __name__ == "__main__":
    main()
