"""A runtime that writes and replicates until it is killed: the child of the replication `kill -9` test.

    python tests/replication_crash_child.py HOME REALM_URL PREFIX COUNT

Opens HOME replicating to REALM_URL, turns memory on, prints `ready`, then writes COUNT records
one at a time; each line `ack ID` is printed only once `remember` returned (the write is durable).
Every fifth record asks to be canonical through a delegated path, which Realm puts in conflict.
Replication runs on its own in the background (every write is pushed as it lands). After every
`SYNC_EVERY` records the child also waits for a sync: the parent holds the answer to one of the
first three replicate requests, and on a fast machine background pushes may carry all the records
in fewer requests than that, so the syncs guarantee one request per group of records. After the
last write the child prints `synced N` (N still pending) and waits to be killed.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from resident import Runtime
from tests.replication_support import FAST, DelegatedWriter

# A held answer must not time out before the parent decides when to kill.
SETTINGS = dataclasses.replace(FAST, request_timeout=10.0)
IDLE_LIMIT = 60.0
# Records written before each wait for a sync (so COUNT records make at least COUNT / SYNC_EVERY requests).
SYNC_EVERY = 10


def say(line: str) -> None:
    # One write per line, so a kill can cut the stream between lines but not inside one.
    sys.stdout.write(f"{line}\n")
    sys.stdout.flush()


def main(home: Path, realm_url: str, prefix: str, count: int) -> None:
    runtime = Runtime.open(home, realm=realm_url, replication=SETTINGS)
    runtime.memory.enable()
    say("ready")
    member = runtime.member("deven")
    session = DelegatedWriter(runtime, "deven")
    for index in range(count):
        text = f"{prefix} note {index}: the deploy checklist changed"
        # The conflicting ones go through a member session, so the runtime marks them delegated.
        receipt = session.remember(text, canonical=True) if index % 5 == 4 else member.remember(text)
        say(f"ack {receipt.id}")
        if (index + 1) % SYNC_EVERY == 0 and index + 1 < count:
            runtime.replication.sync(timeout=20.0)
    result = runtime.replication.sync(timeout=20.0)
    say(f"synced {result.pending}")
    # Bounded: a parent that never kills us does not leave a process behind for long.
    time.sleep(IDLE_LIMIT)
    runtime.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]))
