"""The processes `bench/kill9.py` kills, and the one that checks after each kill.

    python bench/kill9_child.py --serve

Imports the runtime once, prints `serving`, then for each command line on stdin forks a process
that runs it, printing `pid N` for it and `exited STATUS` once it is gone (forking from this
single-threaded server takes milliseconds, so a soak can afford hundreds of kills):

* `remember HOME WORKERS` — opens HOME, then WORKERS threads remember notes forever; each
  `ack ID` line is printed only after `remember` returned (the write is durable);
* `replicate HOME REALM_URL TOKEN` — the same with one writer, replicating to Realm (with the
  home's Realm token) as records land;
* `import HOME EXPORT...` — imports each member export in turn: `importing PATH`, then
  `ack import PATH` once `import_member` returned;
* `check HOME ACKS` — opens HOME right after a kill and reads back every acknowledged record
  (one `get` each, no retry) and every import; prints one `checked {...}` JSON line.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from resident import Runtime
from resident.actors.replication import ReplicationSettings
from resident.errors import ActorUnavailable, RecordNotFound
from resident.memory.portability import parse_export
from resident.store.tables import RECORDS
from tests.fork_server import say, serve

# Quick retries: a replicating child lives for a fraction of a second before it is killed.
REPLICATION = ReplicationSettings(
    wait_initial=0.05, wait_max=0.2, jitter=0.05, retry_later=0.5, poll_interval=0.2, request_timeout=2.0
)
def remember(home: Path, workers: int) -> None:
    runtime = Runtime.open(home, realm="none")
    runtime.memory.enable()
    say("ready")
    member = runtime.member("deven")

    def write(worker: int) -> None:
        index = 0
        while True:
            receipt = member.remember(f"soak note {worker}-{index}: the staging deploy needs the migration first")
            say(f"ack {receipt.id}")
            index += 1

    threads = [threading.Thread(target=write, args=(worker,), daemon=True) for worker in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def replicate(home: Path, realm_url: str, realm_token: str) -> None:
    runtime = Runtime.open(home, realm=realm_url, realm_token=realm_token, replication=REPLICATION)
    runtime.memory.enable()
    say("ready")
    member = runtime.member("deven")
    index = 0
    while True:
        receipt = member.remember(f"replicated note {index}: the release train leaves on Thursdays")
        say(f"ack {receipt.id}")
        index += 1


def import_all(home: Path, exports: list[str]) -> None:
    runtime = Runtime.open(home, realm="none")
    runtime.memory.enable()
    say("ready")
    for path in exports:
        say(f"importing {path}")
        runtime.import_member(path)
        say(f"ack import {path}")


def check(home: Path, acks_file: Path) -> None:
    """Read back what was acknowledged, right after the open: any failure is counted, none retried."""
    records: list[str] = []
    imported: list[str] = []
    attempted: list[str] = []
    for line in acks_file.read_text().splitlines():
        kind, _, value = line.partition(" ")
        {"record": records, "import": imported, "attempt": attempted}[kind].append(value)
    exports = {
        path: [record.id for record in parse_export(Path(path).read_bytes(), path, now=time.time()).records]
        for path in {*imported, *attempted}
    }
    # The records of an acknowledged import are acknowledged records too.
    records += [record_id for path in imported for record_id in exports[path]]
    counts = {"records": len(records), "missing": 0, "transient": 0, "imports": len(imported), "partial": 0}
    with Runtime.open(home, realm="none") as runtime:
        member = runtime.member("deven")
        for record_id in records:
            try:
                member.get(record_id)
            except RecordNotFound:
                counts["missing"] += 1
            except ActorUnavailable:
                counts["transient"] += 1
        with runtime._internal.store.reader() as reader:
            for path, ids in exports.items():
                present = sum(1 for record_id in ids if reader.get(RECORDS, record_id) is not None)
                # An acknowledged import is whole; one cut by the kill is whole or absent, never part.
                if present != len(ids) and (path in imported or present):
                    counts["partial"] += 1
    say(f"checked {json.dumps(counts)}")


def run(command: str, arguments: list[str]) -> None:
    match command:
        case "remember":
            remember(Path(arguments[0]), int(arguments[1]))
        case "replicate":
            replicate(Path(arguments[0]), arguments[1], arguments[2])
        case "import":
            import_all(Path(arguments[0]), arguments[1:])
        case "check":
            check(Path(arguments[0]), Path(arguments[1]))
        case _:
            raise ValueError(f"unknown command {command!r}")


if __name__ == "__main__":
    serve(run)
