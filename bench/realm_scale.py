"""Realm at scale: many homes pushing at once, against the LMDB Realm and Realm on PostgreSQL.

16 homes (threads of this process, each with its own `RealmClient` and token) push 2,000 records each, in
batches, and poll their invalidation feed after every push, all at once, against three set-ups, one after
the other in one run:

* lmdb — one `realm serve --data` process (LMDB, the default);
* pg_1 — one `realm serve --database` process on PostgreSQL (pgserver, or `$RESIDENT_TEST_POSTGRES`);
* pg_2 — two such processes on the same database, the homes split between them.

Reported per set-up: accepted records per second (wall clock, first push to last answer), push latency
p50/p99, and CPU per record: the CPU time the Realm processes (and, for PostgreSQL, every process of the
server) spent, divided by the records. Each set-up gets a fresh store. The machine is shared and noisy:
read the ratios within one run.

    python bench/realm_scale.py [--json] [--quick] [--homes N] [--records N] [--batch N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from resident.messages.digest import content_digest
from resident.messages.realm import RealmRecord
from resident.realm.client import RealmClient
from resident.realm.process import RealmProcess

SETUPS = ("lmdb", "pg_1", "pg_2")
_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Result:
    """One set-up's run."""

    setup: str
    realm_processes: int
    records: int
    seconds: float
    records_per_second: float
    push_p50_ms: float
    push_p99_ms: float
    cpu_ms_per_record: float


def _record(home: str, index: int) -> RealmRecord:
    record_id = f"{home}-{index:05d}"
    body = f"{home} noted that step {index} of the rollout needs the migration applied before the pods restart"
    digest = content_digest(
        record_id=record_id, summary="rollout note", body=body, kind="experience", bank="agent_core/deven",
        canonical=False, delegated=False, supersedes=None,
    )
    return RealmRecord(
        id=record_id, digest=digest, owner="deven", bank="agent_core/deven", scope="AGENT_CORE", kind="experience",
        summary="rollout note", body=body, canonical=False, delegated=False, recorded_at=1_780_000_000.0,
    )


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (Linux /proc), skipping any that have gone."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime and stime, in clock ticks
    return total / _TICKS


def _children_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


@contextmanager
def _postgres(workdir: Path) -> Iterator[tuple[str, Callable[[], list[int]]]]:
    """A PostgreSQL server URL and a function listing its processes' pids (none for an outside server)."""
    named = os.environ.get("RESIDENT_TEST_POSTGRES")
    if named:
        yield named, list
        return
    from pgserver.postgres_server import get_server  # noqa: PLC0415 - dev extra: only where PostgreSQL is measured

    server = get_server(workdir / "pgdata", cleanup_mode="delete")
    try:
        postmaster = server.get_pid()
        assert postmaster is not None
        yield server.get_uri(), lambda: [postmaster, *_children_of(postmaster)]
    finally:
        server.cleanup()


def _fresh_database(server_url: str, name: str) -> str:
    import urllib.parse  # noqa: PLC0415 - beside its one use

    import psycopg  # noqa: PLC0415 - only where PostgreSQL is measured

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}".encode())
        conn.execute(f"CREATE DATABASE {name}".encode())
    return urllib.parse.urlunsplit(urllib.parse.urlsplit(server_url)._replace(path=f"/{name}"))


def _drive(realms: list[RealmProcess], homes: int, records: int, batch: int) -> tuple[float, list[float], int]:
    """Every home pushes its records and polls after each push; (seconds, push latencies, accepted)."""
    tokens = [realms[0].enroll(f"home{n:02d}") for n in range(homes)]
    latencies: list[float] = []
    accepted = [0] * homes
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(homes + 1)

    def home(index: int) -> None:
        name = f"home{index:02d}"
        mine: list[float] = []
        try:
            with RealmClient(realms[index % len(realms)].url, timeout=60.0, token=tokens[index]) as client:
                items = [_record(name, n) for n in range(records)]
                cursor = 0
                start.wait()
                for offset in range(0, records, batch):
                    began = time.perf_counter()
                    results = client.replicate(items[offset : offset + batch])
                    mine.append(time.perf_counter() - began)
                    accepted[index] += sum(r.status == "accepted" for r in results)
                    cursor = client.invalidations(cursor).cursor
        except BaseException as exc:
            errors.append(exc)
            raise
        finally:
            with lock:
                latencies.extend(mine)

    threads = [threading.Thread(target=home, args=(n,), daemon=True) for n in range(homes)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    if errors:
        raise RuntimeError(f"a home failed: {errors[0]!r}") from errors[0]
    return seconds, latencies, sum(accepted)


def _measure(
    setup: str, workdir: Path, homes: int, records: int, batch: int,
    postgres: tuple[str, Callable[[], list[int]]] | None,
) -> Result:
    count = 2 if setup == "pg_2" else 1
    database = None if postgres is None else _fresh_database(postgres[0], f"realm_scale_{setup}")
    (workdir / setup).mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if database is not None:
            from resident.realm.pg_setup import migrate_database  # noqa: PLC0415 - only where PostgreSQL is measured

            migrate_database(database, workdir / setup / "realm0")
        realms = []
        for n in range(count):
            realm = stack.enter_context(RealmProcess(workdir / setup / f"realm{n}", database=database))
            realm.start()
            realms.append(realm)

        def pids() -> list[int]:
            return [realm.pid for realm in realms] + ([] if postgres is None else postgres[1]())

        cpu_before = _cpu_seconds(pids())
        seconds, latencies, accepted = _drive(realms, homes, records, batch)
        cpu = _cpu_seconds(pids()) - cpu_before
    if accepted != homes * records:
        raise RuntimeError(f"{setup}: {accepted} of {homes * records} records accepted")
    ordered = sorted(latencies)
    return Result(
        setup=setup, realm_processes=count, records=accepted, seconds=round(seconds, 3),
        records_per_second=round(accepted / seconds, 1),
        push_p50_ms=round(statistics.median(ordered) * 1000, 2),
        push_p99_ms=round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        cpu_ms_per_record=round(cpu * 1000 / accepted, 4),
    )


def run(homes: int, records: int, batch: int, workdir: Path) -> dict[str, Any]:
    """Measure every set-up in `workdir`; the report with each result and the ratios the targets name."""
    results: dict[str, Result] = {}
    with _postgres(workdir) as postgres:
        for setup in SETUPS:
            results[setup] = _measure(setup, workdir, homes, records, batch, None if setup == "lmdb" else postgres)
    rate = {name: result.records_per_second for name, result in results.items()}
    return {
        "homes": homes, "records_per_home": records, "batch": batch, "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()], "python": platform.python_version(),
        "results": {name: asdict(result) for name, result in results.items()},
        "pg_1_over_lmdb": round(rate["pg_1"] / rate["lmdb"], 2),
        "pg_2_over_pg_1": round(rate["pg_2"] / rate["pg_1"], 2),
    }


def _table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['homes']} homes x {report['records_per_home']} records (batches of {report['batch']}), "
        f"{report['cpus']} CPUs, load average {report['load_average']}",
        "| set-up | Realm processes | accepted records/s | push p50 ms | push p99 ms | CPU ms/record |",
        "|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {result['setup']} | {result['realm_processes']} | {result['records_per_second']} | "
        f"{result['push_p50_ms']} | {result['push_p99_ms']} | {result['cpu_ms_per_record']} |"
        for result in report["results"].values()
    )
    lines.append(f"PostgreSQL, one process / LMDB: {report['pg_1_over_lmdb']}x (target >= 0.5x)")
    lines.append(f"PostgreSQL, two processes / one: {report['pg_2_over_pg_1']}x (target >= 1.3x where cores allow)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--homes", type=int, default=16)
    parser.add_argument("--records", type=int, default=2000, help="records each home pushes")
    parser.add_argument("--batch", type=int, default=50, help="records a push carries")
    parser.add_argument("--quick", action="store_true", help="4 homes x 100 records: a smoke run")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", type=Path, help="work directory (default: a temporary one, removed after)")
    args = parser.parse_args()
    homes, records = (4, 100) if args.quick else (args.homes, args.records)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="realm-scale-"))
    try:
        report = run(homes, records, args.batch, workdir)
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else _table(report))


if __name__ == "__main__":
    main()
