"""Recall usage is counted in place: reads grow no log, and a home rebuilt from its log serves the same counts.

* Hundreds of recalls append no event: the log holds as many entries after them as before, while
  every served record's `recall_count` says how often it was served.
* A home rebuilt from its log alone (`resident salvage` replays the log into a new home) serves the
  very counts the live one did, and so does an export; the live home still replays to its state
  tables (the counters are not state the log rebuilds, so a replay leaves them as they are).
* A home whose log holds `RecordsRecalled` events (written before usage left the log) serves its
  old counts plus the new ones.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from resident import Runtime
from resident.messages.memory import RecordsRecalled
from resident.messages.store import Commit
from resident.store.store import Store
from resident.store.tables import EVENTS, USAGE
from tests.replication_support import open_runtime

pytestmark = pytest.mark.timeout(60)

RECALLS = 300
TEXTS = (
    "the on-call rota lives in the ops wiki",
    "the rota changes every monday at nine",
    "the wiki page of the rota lists the phone numbers",
)


def log_entries(store: Store) -> int:
    with store.reader() as reader:
        return reader.count(EVENTS)


def served_counts(runtime: Runtime, ids: list[str]) -> dict[str, int]:
    deven = runtime.member("deven")
    return {record_id: deven.get(record_id).recall_count for record_id in ids}


def recalled_home(home: Path) -> tuple[list[str], dict[str, int], int]:
    """A home of three records recalled `RECALLS` times: their ids, how often each was served, the log's length."""
    with open_runtime(home, "none") as runtime:
        deven = runtime.member("deven")
        ids = [deven.remember(text).id for text in TEXTS]
        runtime.memory.wait_indexed()
        before = log_entries(runtime._internal.store)
        served: dict[str, int] = dict.fromkeys(ids, 0)
        for _ in range(RECALLS):
            for hit in deven.recall("on-call rota wiki", k=3):
                served[hit.id] += 1
    # Closing flushes the last counts; the store is read again closed.
    store = Store.open(home)
    try:
        after = log_entries(store)
        assert store.replay() == store.state_tables()
        with store.reader() as reader:
            assert reader.count(USAGE) == 3
    finally:
        store.close()
    assert after == before, f"{after - before} log entries appended by {RECALLS} recalls"
    return ids, served, after


def test_recalls_append_nothing_to_the_log_and_count_every_time_a_record_was_served(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids, served, _ = recalled_home(home)
    assert sum(served.values()) >= RECALLS
    with open_runtime(home, "none") as runtime:
        assert served_counts(runtime, ids) == served
        assert runtime.member("deven").get(ids[0]).last_recalled_at is not None


def test_a_home_rebuilt_from_its_log_and_an_export_serve_the_counts_the_live_home_serves(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids, served, _ = recalled_home(home)
    report = Runtime.salvage(tmp_path / "rebuilt", home)
    assert report.complete, report
    with open_runtime(tmp_path / "rebuilt", "none") as rebuilt:
        assert served_counts(rebuilt, ids) == served
    with open_runtime(home, "none") as runtime:
        runtime.export_member("deven", tmp_path / "deven.json")
    exported = msgspec.json.decode((tmp_path / "deven.json").read_bytes())
    counts = {record["id"]: record["recall_count"] for record in exported["records"]}
    assert {record_id: counts[record_id] for record_id in ids} == served


def test_counts_from_usage_events_of_an_older_home_add_to_the_counted_ones(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids, served, _ = recalled_home(home)
    with open_runtime(home, "none") as runtime:
        older = RecordsRecalled(at=runtime._internal.clock.time(), ids=(ids[0], ids[0]))
        runtime._internal.wiring.writer.ask(Commit(events=(older,)))
        assert served_counts(runtime, ids)[ids[0]] == served[ids[0]] + 2  # each id as often as the event names it
        store = runtime._internal.store
        assert store.replay() == store.state_tables()
