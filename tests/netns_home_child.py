"""A home on one host of the multi-host test, driven line by line over stdin.

    python tests/netns_home_child.py HOME REALM_URL CA_FILE

Opens HOME replicating to REALM_URL (the CA in CA_FILE pinned; the token from $RESIDENT_REALM_TOKEN), turns
memory on and prints `ready`. Then, per line read:

* `write PREFIX N` — writes N records, printing `ack ID` once each `remember` returned (it is durable), then `ok`;
* `status` — prints `status JSON`: replication counts, last error, each record's id → [state, digest], and
  each unsynced record's id → [failed attempts, last error];
* `quit` — closes the runtime and prints `bye`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from resident import Runtime
from tests.replication_support import FAST, counts, local_records, record_status

# Short waits, but a request over a veth with a TLS handshake gets more than loopback's half second.
SETTINGS = dataclasses.replace(FAST, request_timeout=2.0, retry_later=0.3, wait_max=0.3)


def say(line: str) -> None:
    sys.stdout.write(f"{line}\n")
    sys.stdout.flush()


def main(home: Path, realm_url: str, ca_file: str) -> None:
    runtime = Runtime.open(home, realm=realm_url, realm_ca=ca_file, replication=SETTINGS)
    try:
        runtime.memory.enable()
        member = runtime.member("deven")
        say("ready")
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["write"]:
                for index in range(int(words[2])):
                    say(f"ack {member.remember(f'{words[1]} note {index}: the deploy checklist changed').id}")
                say("ok")
            elif words[:1] == ["status"]:
                now = counts(runtime)
                records = {r.id: [r.replication, r.digest] for r in local_records(runtime).values()}
                # For each record not synced: how many pushes of it failed, and the last failure.
                tries = {}
                for rid, (state, _) in records.items():
                    if state != "synced":
                        one = record_status(runtime, rid)
                        tries[rid] = [one.attempts, one.last_error]
                say("status " + json.dumps(
                    {"counts": now.counts, "last_error": now.last_error, "records": records, "tries": tries}
                ))
            elif words[:1] == ["quit"]:
                break
    finally:
        runtime.close()
    say("bye")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
