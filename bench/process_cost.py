"""Benchmark: what a home costs before it holds anything (issue 26, "lighter process").

Each run is a fresh interpreter (so nothing is cached in the process) that measures, in order:

* `from resident import Runtime`: wall seconds, RSS (anonymous and file-backed, from
  /proc/self/status) and the modules loaded;
* `Runtime.open` of a new, empty home (no Realm): seconds and RSS;
* memory on, one remember and one recall: RSS, and which third-party packages are loaded.

With `--compare DIR` (another checkout of this repository, e.g. `git archive main | tar -x -C DIR`)
the runs alternate between this checkout and that one, so the machine's noise falls on both alike;
the report gives each figure's median over `--runs` runs of each.

    python bench/process_cost.py [--runs N] [--compare DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# Run in the child: prints one JSON object.
CHILD = r"""
import json, sys, tempfile, time, pathlib
def rss():
    found = {}
    for line in open("/proc/self/status"):
        name, _, value = line.partition(":")
        if name in ("RssAnon", "RssFile"):
            found[name] = int(value.split()[0]) / 1024
    return found
started = time.perf_counter()
from resident import Runtime
result = {"import_s": time.perf_counter() - started, "import": rss(), "modules": len(sys.modules)}
with tempfile.TemporaryDirectory() as folder:
    started = time.perf_counter()
    runtime = Runtime.open(pathlib.Path(folder) / "home", realm="none")
    result["open_s"] = time.perf_counter() - started
    result["open"] = rss()
    runtime.memory.enable()
    member = runtime.member("deven")
    member.remember("the staging deploy needs the migration first")
    member.recall("staging deploy")
    result["used"] = rss()
    result["packages"] = sorted({name.split(".")[0] for name in sys.modules if not name.startswith("_")}
                                - set(sys.stdlib_module_names) - {"resident"})
    runtime.close()
print(json.dumps(result))
"""


def one_run(checkout: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300,
                          check=True, cwd=checkout)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median(pick: Any) -> float:
        return round(float(statistics.median(pick(run) for run in runs)), 3)

    return {
        "import_s": median(lambda r: r["import_s"]),
        "import_rss_mib": median(lambda r: r["import"]["RssAnon"] + r["import"]["RssFile"]),
        "import_anon_mib": median(lambda r: r["import"]["RssAnon"]),
        "modules": median(lambda r: r["modules"]),
        "open_s": median(lambda r: r["open_s"]),
        "open_rss_mib": median(lambda r: r["open"]["RssAnon"] + r["open"]["RssFile"]),
        "used_rss_mib": median(lambda r: r["used"]["RssAnon"] + r["used"]["RssFile"]),
        "used_anon_mib": median(lambda r: r["used"]["RssAnon"]),
        "packages": runs[-1]["packages"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compare", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    checkouts = {"this": ROOT, **({"compare": args.compare.resolve()} if args.compare else {})}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in checkouts}
    for _ in range(args.runs):
        for name, checkout in checkouts.items():
            runs[name].append(one_run(checkout))
    report: dict[str, Any] = {name: summary(found) for name, found in runs.items()}
    report["load_average"] = os.getloadavg()
    if args.json:
        print(json.dumps(report))
        return
    load = " ".join(f"{x:.2f}" for x in report["load_average"])
    print(f"medians of {args.runs} alternating runs; load average {load}")
    fields = ("import_s", "import_rss_mib", "import_anon_mib", "modules", "open_s", "open_rss_mib", "used_rss_mib",
              "used_anon_mib")
    print(f"{'':10}" + "".join(f"{field:>16}" for field in fields))
    for name in checkouts:
        print(f"{name:10}" + "".join(f"{report[name][field]:>16}" for field in fields))
    for name in checkouts:
        print(f"{name}: third-party packages loaded: {', '.join(report[name]['packages'])}")


if __name__ == "__main__":
    main()
