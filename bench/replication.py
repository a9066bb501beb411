"""Benchmark of replication to a loopback Realm: batched pushes against one request per record.

Both configurations replicate the same records: a template home is filled once with N pending
records (Realm unset), then each configuration gets its own copy of that home and its own fresh
Realm process and data directory. The runtime is opened first, against a Realm that is not yet
listening (its pushes fail and it rests), so its start-up and index rebuild are not timed; then
Realm starts, and the clock runs from `rt.replication.sync()` until it reports nothing pending.

* batched — the actor's default settings (`ReplicationSettings()`: up to 200 records a request);
* one per request — `ReplicationSettings(batch_records=1)`.

Each request is durable on both sides: Realm commits its verdicts with fsync before answering,
and the runtime commits them (group commit) before it pushes the next batch. fsync cost on this
shared machine varies, so the ratio within one run is the figure to read.

    python bench/replication.py [--json] [--quick] [--records N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import shutil
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from resident import Runtime
from resident.actors.replication import ReplicationSettings
from resident.messages.replication import ReplicationCounts
from resident.realm.process import RealmProcess

MEMBERS = ("deven", "alice", "oliver", "victor")
BODY = (
    "Deploying to staging needs the database migration applied first; the last time we skipped it "
    "the API pods crash-looped for twenty minutes until someone ran it by hand. Run `make migrate` "
    "against staging, wait for the job to finish, then roll the deployment."
)
SYNC_TIMEOUT = 600.0
CONFIGS: dict[str, ReplicationSettings] = {
    "batched": ReplicationSettings(),
    "one_per_request": ReplicationSettings(batch_records=1),
}


@dataclass
class Result:
    """One configuration's run."""

    config: str
    batch_records: int
    records: int
    seconds: float
    records_per_s: float
    requests: int
    records_per_request: float


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def _fill(runtime: Runtime, n: int) -> None:
    chunk = 100
    for start in range(0, n, chunk):
        await asyncio.gather(
            *(
                runtime.member(MEMBERS[i % len(MEMBERS)]).aremember(f"note {i}: {BODY}")
                for i in range(start, min(n, start + chunk))
            )
        )


def make_template(home: Path, n: int) -> None:
    """A home holding `n` pending records (memory on, no Realm)."""
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
        asyncio.run(_fill(runtime, n))
        counts = _status(runtime)
        assert counts.pending == n, counts


def _status(runtime: Runtime) -> ReplicationCounts:
    counts = runtime.replication.status()
    assert isinstance(counts, ReplicationCounts)
    return counts


def _wait_for_rest(runtime: Runtime, settings: ReplicationSettings) -> ReplicationCounts:
    deadline = time.monotonic() + 60.0
    while (counts := _status(runtime)).requests < settings.max_attempts:
        if time.monotonic() > deadline:
            raise RuntimeError(f"replication made {counts.requests} attempts in 60 s against a Realm that is down")
        time.sleep(0.05)
    return counts


def run_config(name: str, settings: ReplicationSettings, template: Path, work: Path, n: int) -> Result:
    home = work / f"home-{name}"
    shutil.copytree(template, home)
    realm = RealmProcess(work / f"realm-{name}", port=_free_port())
    # Realm serves enrolled homes only: this one gets its token before the server first starts.
    token = realm.enroll("bench", rotate=True)
    with Runtime.open(home, realm=realm.url, realm_token=token, replication=settings) as runtime:
        # Realm starts once the first push has run out of attempts, so replication is resting
        # (`retry_later`, 10 s by default) and nothing is replicated before the clock starts.
        before = _wait_for_rest(runtime, settings)
        realm.start()
        try:
            started = time.perf_counter()
            counts = runtime.replication.sync(timeout=SYNC_TIMEOUT)
            seconds = time.perf_counter() - started
        finally:
            realm.stop()
    if counts.pending or counts.counts["synced"] != n:
        raise RuntimeError(f"{name}: replication did not settle: {counts}")
    requests = counts.requests - before.requests
    return Result(
        config=name,
        batch_records=settings.batch_records,
        records=n,
        seconds=round(seconds, 3),
        records_per_s=round(n / seconds, 1),
        requests=requests,
        records_per_request=round(n / max(1, requests), 1),
    )


def run(n: int, directory: Path | None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-replication-", dir=directory))
    try:
        template = work / "template"
        make_template(template, n)
        results = {name: run_config(name, settings, template, work, n) for name, settings in CONFIGS.items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    batched, single = results["batched"], results["one_per_request"]
    return {
        "benchmark": "replication",
        "records": n,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "system": platform.system()},
        "results": {name: asdict(result) for name, result in results.items()},
        "batched_over_one_per_request": round(batched.records_per_s / single.records_per_s, 1),
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"replication of {report['records']} records to a loopback Realm (fresh home and Realm per row)\n")
    print(f"{'config':<18}{'batch':>7}{'seconds':>10}{'records/s':>12}{'requests':>10}{'records/req':>13}")
    for result in report["results"].values():
        print(
            f"{result['config']:<18}{result['batch_records']:>7}{result['seconds']:>10.3f}"
            f"{result['records_per_s']:>12.1f}{result['requests']:>10}{result['records_per_request']:>13.1f}"
        )
    print(f"\nbatched / one per request: {report['batched_over_one_per_request']}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--quick", action="store_true", help="300 records instead of 3000")
    parser.add_argument("--records", type=int, help="how many records to replicate (overrides --quick)")
    parser.add_argument("--dir", type=Path, help="where the temporary homes and Realm stores go")
    args = parser.parse_args()
    # The pushes that fail on purpose while Realm is not up yet would each log a warning.
    logging.getLogger("resident.actors.replication").setLevel(logging.ERROR)
    n = args.records or (300 if args.quick else 3000)
    if n < 1:
        parser.error("--records must be positive")
    report = run(n, args.dir)
    if args.json:
        print(json.dumps(report))
    else:
        print_table(report)


if __name__ == "__main__":
    main()
