"""Benchmark of the loopback API: remember and recall from 64 concurrent clients, in-process vs over the wire.

Each configuration gets its own copy of one seeded home (memory on, `--seed` records across four
members), so recall searches the same index everywhere:

* in-process — `Runtime.open` in this process; each client is a thread calling `member.remember` /
  `member.recall` (the blocking API);
* api (httpx) — a real `resident up` process; each client is a thread with its own
  `Runtime.connect(home)`, i.e. its own keep-alive connection through the product's client;
* api (minimal client) — the same server, driven by 64 asyncio tasks over 64 keep-alive connections
  with a few lines of HTTP/1.1: what the server sustains when the client costs almost nothing.

Each phase runs `--ops` operations per client (all remember, then all recall); the figures are
operations per second and per-operation latency (p50/p99), and the ratio of each API row to
in-process in the same run. Every remember is durable (fsync) in all three.

`--soak SECONDS` then keeps 64 clients busy over the API for that long (recalls, record reads and
status reads, and an event-stream subscriber that reconnects every few seconds) and samples the
server's RSS; a flat RSS shows the API holds nothing per request, connection or subscriber. The soak
writes nothing: every remembered record grows the in-memory index by design (a remember-heavy soak
of 180 s grew RSS by about 7 KB per record added), which would hide a leak in the API itself.

    python bench/api.py [--json] [--quick] [--clients N] [--ops N] [--seed N] [--soak SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgspec

from resident import Runtime
from resident.api.discovery import Discovery
from resident.api.process import read_first_line

MEMBERS = ("deven", "alice", "oliver", "victor")
TOPICS = ("deploy", "migration", "release", "database", "incident", "review", "budget", "roadmap")
START_TIMEOUT = 120.0


def text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"note {i}: the {topic} checklist changed; ask before touching the {topic} on friday (item {i * 7919})"


@dataclass
class Phase:
    """One configuration's remember or recall phase."""

    config: str
    operation: str
    clients: int
    operations: int
    seconds: float
    per_s: float
    p50_ms: float
    p99_ms: float


def summarize(config: str, operation: str, clients: int, seconds: float, latencies: list[float]) -> Phase:
    latencies.sort()
    return Phase(
        config=config, operation=operation, clients=clients, operations=len(latencies), seconds=round(seconds, 3),
        per_s=round(len(latencies) / seconds, 1), p50_ms=round(statistics.median(latencies) * 1000, 2),
        p99_ms=round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000, 2),
    )


def seed_home(home: Path, records: int) -> None:
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        members = [runtime.member(name) for name in MEMBERS]

        async def fill() -> None:
            for start in range(0, records, 256):
                await asyncio.gather(
                    *(members[i % 4].aremember(text(i)) for i in range(start, min(records, start + 256)))
                )

        asyncio.run(fill())


def run_threads(clients: int, work: Callable[[int], list[float]]) -> tuple[float, list[float]]:
    """Run `work(client)` on `clients` threads started together; wall seconds and every latency."""
    results: list[list[float]] = [[] for _ in range(clients)]
    barrier = threading.Barrier(clients + 1)

    def client(index: int) -> None:
        barrier.wait()
        results[index] = work(index)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, [latency for result in results for latency in result]


def timed(calls: int, call: Callable[[int], object]) -> list[float]:
    latencies = []
    for i in range(calls):
        started = time.perf_counter()
        call(i)
        latencies.append(time.perf_counter() - started)
    return latencies


def phases_with(config: str, members: Callable[[int], Any], clients: int, ops: int) -> list[Phase]:
    seconds, latencies = run_threads(
        clients, lambda c: timed(ops, lambda i: members(c).remember(text(c * 100_000 + i)))
    )
    remember = summarize(config, "remember", clients, seconds, latencies)
    seconds, latencies = run_threads(
        clients, lambda c: timed(ops, lambda i: members(c).recall(f"{TOPICS[(c + i) % 8]} checklist friday", k=5))
    )
    return [remember, summarize(config, "recall", clients, seconds, latencies)]


def in_process(home: Path, clients: int, ops: int) -> list[Phase]:
    with Runtime.open(home) as runtime:
        members = [runtime.member(name) for name in MEMBERS]
        return phases_with("in-process", lambda c: members[c % 4], clients, ops)


class Server:
    """A `resident up` process over one home."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.log = home.with_name(f"{home.name}.up.log")
        with self.log.open("ab") as log:
            command = [sys.executable, "-m", "resident.cli", "--home", str(home), "up"]
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log)
        assert self.proc.stdout is not None
        line = read_first_line(self.proc.stdout.fileno(), START_TIMEOUT)
        if not line:
            raise RuntimeError(f"resident up did not start; see {self.log}")
        self.discovery = msgspec.json.decode(line, type=Discovery)

    def memory_mb(self) -> dict[str, float]:
        """Resident memory in MB: all of it, the heap's part (anonymous) and mapped files' (LMDB's map)."""
        fields = {"VmRSS:": "rss", "RssAnon:": "anon", "RssFile:": "file"}
        found: dict[str, float] = {}
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            name = line.split(maxsplit=1)[0] if line else ""
            if name in fields:
                found[fields[name]] = round(int(line.split()[1]) / 1024, 1)
        return found

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def over_httpx(home: Path, clients: int, ops: int) -> list[Phase]:
    server = Server(home)
    try:
        connections = [Runtime.connect(home) for _ in range(clients)]
        members = [connection.member(MEMBERS[c % 4]) for c, connection in enumerate(connections)]
        try:
            return phases_with("api (httpx)", lambda c: members[c], clients, ops)
        finally:
            for connection in connections:
                connection.close()
    finally:
        server.stop()


class MinimalClient:
    """One keep-alive HTTP/1.1 connection: send a JSON POST, read the answer (Content-Length framed)."""

    def __init__(self, discovery: Discovery) -> None:
        self.discovery = discovery
        self.host, port = discovery.address.removeprefix("http://").rsplit(":", 1)
        self.port = int(port)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict[str, Any]) -> bytes:
        if self.reader is None or self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        payload = json.dumps(body).encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.discovery.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
        answer = await self.reader.readexactly(length)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"{path}: {head.splitlines()[0]!r} {answer[:200]!r}")
        return answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def over_minimal(home: Path, clients: int, ops: int) -> list[Phase]:
    server = Server(home)
    try:
        return asyncio.run(_minimal_phases(server.discovery, clients, ops))
    finally:
        server.stop()


async def _minimal_phases(discovery: Discovery, clients: int, ops: int) -> list[Phase]:
    connections = [MinimalClient(discovery) for _ in range(clients)]

    async def phase(operation: str, request: Callable[[int, int], tuple[str, dict[str, Any]]]) -> Phase:
        latencies: list[float] = []

        async def client(c: int) -> None:
            for i in range(ops):
                path, body = request(c, i)
                started = time.perf_counter()
                await connections[c].post(path, body)
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        return summarize("api (minimal client)", operation, clients, time.perf_counter() - started, latencies)

    try:
        remember = await phase(
            "remember", lambda c, i: (f"/v1/members/{MEMBERS[c % 4]}/remember", {"text": text(c * 100_000 + i)})
        )
        recall = await phase(
            "recall",
            lambda c, i: (
                f"/v1/members/{MEMBERS[c % 4]}/recall", {"query": f"{TOPICS[(c + i) % 8]} checklist", "k": 5}
            ),
        )
    finally:
        for connection in connections:
            connection.close()
    return [remember, recall]


def soak(home: Path, clients: int, seconds: float) -> dict[str, Any]:
    """Keep the API busy for `seconds`, sampling the server's RSS; see the module docstring."""
    server = Server(home)
    samples: list[tuple[float, dict[str, float]]] = []
    done = threading.Event()
    counts = {"get": 0, "recall": 0, "status": 0, "subscriptions": 0}
    lock = threading.Lock()

    def worker(c: int) -> None:
        with Runtime.connect(home) as runtime:
            member = runtime.member(MEMBERS[c % 4])
            known = [hit.id for hit in member.recall("checklist friday", k=20)]
            i = 0
            while not done.is_set():
                i += 1
                if i % 10 == 0 and known:
                    member.get(known[i % len(known)])
                    kind = "get"
                elif i % 10 == 5:
                    runtime.memory.status()
                    kind = "status"
                else:
                    member.recall(f"{TOPICS[(c + i) % 8]} checklist", k=5)
                    kind = "recall"
                with lock:
                    counts[kind] += 1

    async def subscribe_again_and_again() -> None:
        runtime = Runtime.connect(home)
        try:
            while not done.is_set():
                # Read the stream (from the beginning) for three seconds, then drop it and reconnect.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(_drain(runtime.aevents()), 3.0)
                with lock:
                    counts["subscriptions"] += 1
        finally:
            await runtime.aclose()

    def subscriber() -> None:
        asyncio.run(subscribe_again_and_again())

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    # Last in the list: it is joined after the server stopped, which ends the stream it waits on.
    threads.append(threading.Thread(target=subscriber))
    started = time.monotonic()
    for thread in threads:
        thread.start()
    try:
        while time.monotonic() - started < seconds:
            samples.append((round(time.monotonic() - started, 1), server.memory_mb()))
            time.sleep(min(10.0, max(1.0, seconds / 60)))
        samples.append((round(time.monotonic() - started, 1), server.memory_mb()))
    finally:
        done.set()
        for thread in threads[:-1]:
            thread.join(timeout=60)
        server.stop()
        threads[-1].join(timeout=60)
    # The first tenth is warm-up (caches, pools, connections); judge the rest.
    settled = [s for s in samples if s[0] >= seconds / 10] or samples
    report: dict[str, Any] = {"seconds": seconds, "clients": clients, "counts": counts, "samples_mb": samples}
    for kind in ("rss", "anon", "file"):
        values = [memory[kind] for _, memory in settled]
        slope = statistics.linear_regression([t for t, _ in settled], values).slope * 600 if len(values) > 1 else 0.0
        report[kind] = {"first_mb": values[0], "last_mb": values[-1], "slope_mb_per_10_min": round(slope, 2)}
    return report


async def _drain(stream: AsyncIterator[Any]) -> None:
    async for _ in stream:
        pass


def run(args: argparse.Namespace) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="resident-bench-api-", dir=args.dir))
    try:
        template = base / "template"
        seed_home(template, args.seed)
        phases: list[Phase] = []
        for name, runner in (("inproc", in_process), ("httpx", over_httpx), ("minimal", over_minimal)):
            home = base / name
            shutil.copytree(template, home)
            phases += runner(home, args.clients, args.ops)
        base_rate = {p.operation: p.per_s for p in phases if p.config == "in-process"}
        report: dict[str, Any] = {
            "benchmark": "api",
            "seed_records": args.seed,
            "clients": args.clients,
            "ops_per_client": args.ops,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.system()},
            "phases": [asdict(p) for p in phases],
            "ratios_to_in_process": {
                f"{p.config} {p.operation}": round(p.per_s / base_rate[p.operation], 2)
                for p in phases if p.config != "in-process"
            },
        }
        if args.soak:
            home = base / "soak"
            shutil.copytree(template, home)
            report["soak"] = soak(home, args.clients, args.soak)
        return report
    finally:
        shutil.rmtree(base, ignore_errors=True)


def print_table(report: dict[str, Any]) -> None:
    print(
        f"{report['clients']} clients x {report['ops_per_client']} operations, "
        f"{report['seed_records']} seeded records\n"
    )
    print(f"{'config':<24}{'op':<10}{'ops/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'vs in-process':>15}")
    for phase in report["phases"]:
        ratio = report["ratios_to_in_process"].get(f"{phase['config']} {phase['operation']}", 1.0)
        print(
            f"{phase['config']:<24}{phase['operation']:<10}{phase['per_s']:>10.0f}{phase['p50_ms']:>9.2f}"
            f"{phase['p99_ms']:>9.2f}{ratio:>14.2f}x"
        )
    if "soak" in report:
        soak_report = report["soak"]
        print(f"\nsoak {soak_report['seconds']:g} s: {soak_report['counts']}; server memory after warm-up:")
        for kind, label in (("rss", "resident"), ("anon", "heap (anonymous)"), ("file", "mapped files (LMDB)")):
            figure = soak_report[kind]
            print(
                f"  {label:<22}{figure['first_mb']:>8} → {figure['last_mb']} MB, "
                f"slope {figure['slope_mb_per_10_min']} MB / 10 min"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="20 operations per client and 1,000 seeded records")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients")
    parser.add_argument("--ops", type=int, help="operations per client per phase (default 100; 20 with --quick)")
    parser.add_argument("--seed", type=int, help="records in the home before the run (default 5,000)")
    parser.add_argument("--soak", type=float, default=0.0, help="then keep the API busy this many seconds")
    parser.add_argument("--dir", type=Path, help="where the temporary homes go")
    args = parser.parse_args()
    args.ops = args.ops or (20 if args.quick else 100)
    args.seed = args.seed if args.seed is not None else (1_000 if args.quick else 5_000)
    if args.clients < 1 or args.ops < 1 or args.seed < 0 or args.soak < 0:
        parser.error("--clients and --ops must be positive, --seed and --soak not negative")
    report = run(args)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
