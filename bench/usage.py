"""Benchmark: what reads cost a home's file, with recall usage counted in place (issue 26).

One home of `--records` memories (deven's), then `--recalls` recalls through the public API
(`rt.member("deven").recall(query, k=10)`, over `bench/recall_index.py`'s synthetic queries). Before
and after the recalls, with the runtime closed so that the last usage flush is in: the event log's
entries and bytes, and the data file's size and the blocks it occupies.

Side by side in the same run, what the log held for the same reads before usage left it: a copy
of the home taken before the recalls is given, through its writer, the `RecordsRecalled` events
the substrate used to write for the very ids served (one event a flush of 64 served ids, its flush
size), and measured the same way.

    python bench/usage.py [--records N] [--recalls N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

if not __package__:
    # Run as `python bench/usage.py`: make the repository root importable for the sibling modules.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.recall_index import synthetic_queries, synthetic_texts
from resident import Runtime
from resident.messages.memory import RecordsRecalled
from resident.messages.store import Commit
from resident.store.home import current_store_dir
from resident.store.store import Store
from resident.store.tables import EVENTS

# The substrate's flush size before usage left the log (`USAGE_BATCH` in `resident/actors/substrate.py`).
FLUSH_IDS = 64
BATCH = 1_000


def measure(home: Path) -> dict[str, int]:
    """The log's entries and bytes, and the data file's size and allocated bytes (the runtime closed)."""
    store = Store.open(home)
    try:
        with store.reader() as reader:
            entries = reader.count(EVENTS)
            log_bytes = sum(len(key) + len(value) for key, value in reader.raw_items(EVENTS))
    finally:
        store.close()
    data = current_store_dir(home) / "data.mdb"
    stat = data.stat()
    return {"log_entries": entries, "log_bytes": log_bytes, "file_bytes": stat.st_size,
            "allocated_bytes": stat.st_blocks * 512}


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in before}


def run(records: int, recalls: int, work: Path) -> dict[str, Any]:
    home, logged = work / "home", work / "logged"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        texts = synthetic_texts(records)
        for start in range(0, records, BATCH):
            items = [dict(zip(("summary", "text"), text.split("\n", 1), strict=False))
                     for text in texts[start : start + BATCH]]
            deven.remember_many(items)
        rt.memory.wait_indexed()
    shutil.copytree(home, logged)
    before = measure(home)
    queries = synthetic_queries(recalls)
    served: list[str] = []
    with Runtime.open(home, realm="none") as rt:
        deven = rt.member("deven")
        for query in queries:
            served += [hit.id for hit in deven.recall(query, k=10)]
    after = measure(home)
    # The same reads as the log used to keep them: one RecordsRecalled event a flush of 64 ids.
    logged_before = measure(logged)
    with Runtime.open(logged, realm="none") as rt:
        writer = rt._internal.wiring.writer
        at = rt._internal.clock.time()
        for start in range(0, len(served), FLUSH_IDS):
            writer.tell(Commit(events=(RecordsRecalled(at=at, ids=tuple(sorted(served[start : start + FLUSH_IDS]))),)))
        rt._internal.wiring.writer.ask(Commit(events=()))
    logged_after = measure(logged)
    return {
        "records": records, "recalls": recalls, "served_ids": len(served),
        "counted_in_place": grown(before, after), "logged_as_events": grown(logged_before, logged_after),
        "load_average": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000)
    parser.add_argument("--recalls", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="resident-usage-") as work:
        result = run(args.records, args.recalls, Path(work))
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['records']} records, {result['recalls']} recalls ({result['served_ids']} ids served); "
          f"load average {' '.join(f'{x:.2f}' for x in result['load_average'])}")
    print(f"{'growth over the recalls':32} {'log entries':>12} {'log bytes':>12} {'file bytes':>12} {'allocated':>12}")
    for name in ("counted_in_place", "logged_as_events"):
        g = result[name]
        print(f"{name:32} {g['log_entries']:>12} {g['log_bytes']:>12} {g['file_bytes']:>12} {g['allocated_bytes']:>12}")


if __name__ == "__main__":
    main()
