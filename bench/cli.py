"""Benchmark of the `resident` command as a whole process: `--help`, `recall` and `remember`, with a runtime
up for the home (the command is a client of `resident up`) and without (it opens the runtime itself).

Every run is a fresh process (`python -m resident.cli ...`, as the console script runs it), timed from
spawn to exit, after one run of each that is not counted; the figures are the fastest, p50 and p90
of wall time, and p50 of the process's CPU time (which the machine's other load moves less than
wall time). The modes alternate in rounds (in-process, then `resident up` started, the client runs,
and stopped), so a burst of load on a shared machine falls on both.

Modules run from bytecode, as an installed package's do: compiling the project's modules from
source on every start (what `PYTHONDONTWRITEBYTECODE=1` does to an editable install) costs about
40 ms more, so the runs keep their bytecode in a cache of their own (`PYTHONPYCACHEPREFIX`).
Beside them, in the same run: a bare interpreter (`python -c pass`), the floor every command pays,
and the client path's imports summed by package (`python -X importtime`, each module's smallest
self time over several runs): where the time goes.

The target (issue 16): with a runtime up, `recall`, `remember` and `--help` take at most 150 ms of
wall time.

    python bench/cli.py [--json] [--runs N] [--rounds N] [--seed N]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgspec

from resident import Runtime
from resident.api.discovery import Discovery
from resident.api.process import read_first_line

TARGET_MS = 150.0
START_TIMEOUT = 120.0
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "recall": ["recall", "deven", "deploy checklist friday", "-k", "5"],
    "remember": ["remember", "deven", "the deploy checklist changed again on friday"],
}


@dataclass
class Figure:
    """One command in one mode, over its runs."""

    command: str
    mode: str
    runs: int
    wall_min_ms: float
    wall_p50_ms: float
    wall_p90_ms: float
    cpu_p50_ms: float


def seed_home(home: Path, records: int) -> None:
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        deven = runtime.member("deven")
        for i in range(records):
            deven.remember(f"note {i}: the deploy checklist changed; ask before friday (item {i * 7919})")


def environment_for(home: Path) -> dict[str, str]:
    """The environment of every measured process: this home, and bytecode cached beside it."""
    environment = {**os.environ, "RESIDENT_HOME": str(home), "PYTHONPYCACHEPREFIX": str(home.with_name("pycache"))}
    for name in ("RESIDENT_GRANT_TOKEN", "PYTHONDONTWRITEBYTECODE"):
        environment.pop(name, None)
    return environment


def measure(arguments: list[str], home: Path, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `runs` whole processes running `arguments` (which must succeed), after one more."""
    environment = environment_for(home)
    subprocess.run(arguments, env=environment, capture_output=True, check=False)
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(arguments, env=environment, capture_output=True, check=False)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise RuntimeError(f"{arguments[3:]} exited {done.returncode}: {done.stderr.decode()[-300:]}")
    return walls, cpus


def figure(command: str, mode: str, walls: list[float], cpus: list[float]) -> Figure:
    walls = sorted(walls)
    return Figure(
        command=command, mode=mode, runs=len(walls), wall_min_ms=round(walls[0] * 1000, 1),
        wall_p50_ms=round(statistics.median(walls) * 1000, 1),
        wall_p90_ms=round(walls[min(len(walls) - 1, int(len(walls) * 0.9))] * 1000, 1),
        cpu_p50_ms=round(statistics.median(cpus) * 1000, 1),
    )


Samples = dict[tuple[str, str], tuple[list[float], list[float]]]


def sample(samples: Samples, key: tuple[str, str], arguments: list[str], home: Path, runs: int) -> None:
    """Add `runs` measured processes of `arguments` to `samples[key]`."""
    walls, cpus = measure(arguments, home, runs)
    found = samples.setdefault(key, ([], []))
    found[0].extend(walls)
    found[1].extend(cpus)


def commands(samples: Samples, home: Path, runs: int, mode: str) -> None:
    for name, arguments in COMMANDS.items():
        sample(samples, (name, mode), [sys.executable, "-m", "resident.cli", *arguments], home, runs)


class Server:
    """A `resident up` process over one home, stopped by SIGTERM."""

    def __init__(self, home: Path) -> None:
        log = home.with_name(f"{home.name}.up.log")
        with log.open("ab") as stream:
            command = [sys.executable, "-m", "resident.cli", "--home", str(home), "up"]
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stream)
        assert self.proc.stdout is not None
        line = read_first_line(self.proc.stdout.fileno(), START_TIMEOUT)
        if not line:
            raise RuntimeError(f"resident up did not start; see {log}")
        self.discovery = msgspec.json.decode(line, type=Discovery)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def import_breakdown(home: Path, arguments: list[str], runs: int) -> dict[str, float]:
    """Milliseconds of imports by package for one command: each module's smallest self time over `runs`."""
    environment = environment_for(home)
    smallest: dict[str, int] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "resident.cli", *arguments], env=environment,
            capture_output=True, text=True, check=False,
        )
        for line in done.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
            if match:
                name = match.group(2)
                smallest[name] = min(smallest.get(name, 1 << 62), int(match.group(1)))
    packages: collections.Counter[str] = collections.Counter()
    for name, microseconds in smallest.items():
        parts = name.split(".")
        packages[".".join(parts[:2]) if parts[0] == "resident" else parts[0]] += microseconds
    return {name: round(us / 1000, 1) for name, us in packages.most_common()}


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="resident-bench-cli-", dir=args.dir))
    load_before = os.getloadavg()
    try:
        home = base / "home"
        seed_home(home, args.seed)
        samples: Samples = {}
        per_round = max(1, args.runs // args.rounds)
        for _ in range(args.rounds):
            sample(samples, ("python -c pass", "interpreter"), [sys.executable, "-c", "pass"], home, per_round)
            commands(samples, home, per_round, "in-process")
            server = Server(home)
            try:
                commands(samples, home, per_round, "client of resident up")
            finally:
                server.stop()
        server = Server(home)
        try:
            imports = import_breakdown(home, COMMANDS["recall"], max(3, args.runs // 4))
        finally:
            server.stop()
        figures = [figure(command, mode, walls, cpus) for (command, mode), (walls, cpus) in samples.items()]
        client = {f.command: f for f in figures if f.mode == "client of resident up"}
        local = {f.command: f for f in figures if f.mode == "in-process"}
        return {
            "benchmark": "cli",
            "runs": args.runs,
            "rounds": args.rounds,
            "seed_records": args.seed,
            "machine": {
                "python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.system(),
                "load_before": [round(x, 2) for x in load_before],
                "load_after": [round(x, 2) for x in os.getloadavg()],
            },
            "figures": [asdict(f) for f in figures],
            "client_over_in_process": {
                name: round(client[name].wall_p50_ms / local[name].wall_p50_ms, 2) for name in COMMANDS
            },
            "target_ms": TARGET_MS,
            "target_met": {name: client[name].wall_p50_ms <= TARGET_MS for name in COMMANDS},
            "recall_client_imports_ms": imports,
            "recall_client_imports_total_ms": round(sum(imports.values()), 1),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def print_table(report: dict[str, Any]) -> None:
    machine = report["machine"]
    print(
        f"{report['runs']} processes each in {report['rounds']} rounds, {report['seed_records']} records in the home; "
        f"load average {machine['load_before'][0]} → {machine['load_after'][0]} on {machine['cpus']} CPUs\n"
    )
    print(f"{'command':<16}{'mode':<24}{'wall min':>10}{'wall p50':>10}{'wall p90':>10}{'CPU p50':>10}")
    for row in report["figures"]:
        print(
            f"{row['command']:<16}{row['mode']:<24}{row['wall_min_ms']:>8.0f}ms{row['wall_p50_ms']:>8.0f}ms"
            f"{row['wall_p90_ms']:>8.0f}ms{row['cpu_p50_ms']:>8.0f}ms"
        )
    print("\nclient / in-process (wall p50): " + ", ".join(
        f"{name} {ratio:.2f}x" for name, ratio in report["client_over_in_process"].items()
    ))
    print(f"target {report['target_ms']:g} ms with a runtime up: " + ", ".join(
        f"{name} {'met' if met else 'NOT met'}" for name, met in report["target_met"].items()
    ))
    imports = report["recall_client_imports_ms"]
    top = ", ".join(f"{name} {ms:g}" for name, ms in list(imports.items())[:12])
    print(f"\nrecall as a client, imports {report['recall_client_imports_total_ms']:g} ms: {top}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--runs", type=int, default=40, help="processes per command and mode")
    parser.add_argument("--rounds", type=int, default=4, help="rounds the runs are spread over")
    parser.add_argument("--seed", type=int, default=500, help="records in the home before the run")
    parser.add_argument("--dir", type=Path, help="where the temporary home goes")
    args = parser.parse_args()
    if args.runs < 1 or args.rounds < 1 or args.seed < 0:
        parser.error("--runs and --rounds must be positive and --seed not negative")
    report = run(args)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
