"""A runtime that writes until it is killed: the child process of the `kill -9` durability tests.

    python tests/store_durability_child.py HOME threads|asyncio PREFIX WORKERS
    python tests/store_durability_child.py --serve

The first form opens HOME, starts the group-commit writer, prints `ready`, then writes
multi-event commits from WORKERS threads or asyncio tasks, forever. Each line `ack ID` is
printed only after the writer acknowledged that write (the commit is durable), so every id the
parent read must be in the store after the kill.

* threads: each write is one Commit of a new bank plus a record in it (BankCreated + RecordAdmitted);
* asyncio: each task admits a record A alone, then commits a record B that supersedes A together
  with A's supersession (RecordAdmitted + RecordSuperseded).

`--serve` imports everything once and then, for each line on stdin, forks a process that runs
it (printing `pid N` for it, and `exited STATUS` once it is gone):

* `write HOME MODE PREFIX WORKERS` — the writer above;
* `restore SRC HOME` — prints `started`, restores the backup SRC into HOME, prints `restored`.

Starting the interpreter and importing the runtime takes about a second here; forking from this
single-threaded server takes milliseconds, so a test can afford many kills.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from resident.messages.memory import BankCreated, RecordAdmitted, RecordSuperseded
from resident.messages.store import Commit
from resident.store.backup import restore
from resident.store.home import HomeLock, ensure_home
from resident.store.store import Store
from resident.supervisor import Address
from tests.fork_server import say, serve
from tests.store_helpers import admitted, bank, memory_on, record, running_writer

BASE_BANK = "agent_core/deven"
def thread_writer(writer: Address, prefix: str, worker: int) -> None:
    index = 0
    while True:
        record_id = f"{prefix}-{worker}-{index}"
        bank_name = f"dur/{record_id}"
        events = (BankCreated(at=1.0, bank=bank(bank_name)), admitted(record_id, bank_name))
        writer.ask(Commit(events=events), 30)
        say(f"ack {record_id}")
        index += 1


async def task_writer(writer: Address, prefix: str, worker: int) -> None:
    index = 0
    while True:
        old = f"{prefix}-{worker}-{index}-a"
        new = f"{prefix}-{worker}-{index}-b"
        await writer.ask_async(Commit(events=(admitted(old, BASE_BANK),)), 30)
        say(f"ack {old}")
        events = (
            RecordAdmitted(at=3.0, record=record(new, BASE_BANK, at=3.0, supersedes=old)),
            RecordSuperseded(at=3.0, id=old, by=new),
        )
        await writer.ask_async(Commit(events=events), 30)
        say(f"ack {new}")
        index += 1


async def run_tasks(writer: Address, prefix: str, workers: int) -> None:
    await asyncio.gather(*(task_writer(writer, prefix, worker) for worker in range(workers)))


def write_forever(home: Path, mode: str, prefix: str, workers: int) -> None:
    ensure_home(home)
    lock = HomeLock(home)
    lock.acquire()
    store = Store.open(home, map_size=64 << 20)
    with running_writer(store) as writer:
        writer.ask(Commit(events=(memory_on(), BankCreated(at=1.0, bank=bank(BASE_BANK)))), 30)
        say("ready")
        if mode == "threads":
            threads = [
                threading.Thread(target=thread_writer, args=(writer, prefix, worker), daemon=True)
                for worker in range(workers)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        else:
            asyncio.run(run_tasks(writer, prefix, workers))


def run(command: str, arguments: list[str]) -> None:
    if command == "write":
        home, mode, prefix, workers = arguments
        write_forever(Path(home), mode, prefix, int(workers))
    else:
        say("started")
        restore(Path(arguments[0]), Path(arguments[1]))
        say("restored")


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve(run)
    else:
        write_forever(Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]))
