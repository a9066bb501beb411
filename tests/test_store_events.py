"""The event log: append-only, in sequence order, written with its state change, and enough to rebuild state."""

from __future__ import annotations

import inspect
import itertools
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import lmdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident.errors import MemoryDisabled, StoreFailed, UnknownBank
from resident.messages.events import AnyEvent
from resident.messages.memory import (
    BankCreated,
    MemberImported,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordsRecalled,
    RecordSuperseded,
)
from resident.messages.store import Commit, Committed
from resident.store.environment import MAX_DBS
from resident.store.projection_table import project
from resident.store.store import Reader, Store, check_schema
from resident.store.tables import BANKS, EVENTS, MEMORY_CONFIG, RECORDS, STATE_TABLES, TABLES
from resident.store.view import DictView, TxnView
from tests.store_helpers import admitted, bank, bank_created, commit, memory_on, open_home, prepare, record


def _event_keys(store: Store) -> list[int]:
    with store.reader() as reader:
        return [seq for seq, _ in reader.events()]


def _snapshot(store: Store) -> tuple[dict[str, list[tuple[bytes, bytes]]], dict[str, list[tuple[bytes, bytes]]]]:
    """Live state and state replayed from the log, both from ONE read transaction."""
    view = DictView()
    with store.reader() as reader:
        for _, event in reader.events():
            project(view, event)
        live = {table.name: list(reader.raw_items(table)) for table in STATE_TABLES}
    return live, {table.name: list(view.items(table)) for table in STATE_TABLES}


# -- order ---------------------------------------------------------------------------------------


def test_event_keys_increase_strictly_across_commits_and_reopen(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_home(home) as store:
        prepare(store)
        for batch in range(3):
            store.commit([commit(admitted(f"r{batch}-{i}")) for i in range(5)])
        first = _event_keys(store)
    with open_home(home) as store:
        store.commit([commit(admitted(f"after-{i}")) for i in range(4)])
        keys = _event_keys(store)
    assert keys[: len(first)] == first
    assert len(keys) == len(first) + 4
    assert all(b > a for a, b in itertools.pairwise(keys))
    # Refused writes and failed transactions consume no sequence numbers: the log has no gaps.
    assert keys == list(range(1, len(keys) + 1))


def test_refused_writes_leave_no_gap_in_the_sequence(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        outcomes = store.commit([commit(admitted("a")), commit(admitted("x", "no/such/bank")), commit(admitted("b"))])
        assert [error is None for _, error, _ in outcomes] == [True, False, True]
        keys = _event_keys(store)
        assert keys == list(range(1, len(keys) + 1))
        first, _, _ = outcomes[0]
        last, _, _ = outcomes[2]
        assert first is not None
        assert last is not None
        assert last.last_seq == (first.last_seq or 0) + 1


# -- append-only ---------------------------------------------------------------------------------


@pytest.mark.parametrize("view_kind", ["txn", "dict"])
def test_a_view_refuses_to_write_the_event_log(tmp_path: Path, view_kind: str) -> None:
    event = memory_on()
    if view_kind == "dict":
        with pytest.raises(PermissionError, match="append-only"):
            DictView().put(EVENTS, "1", event)
        return
    with open_home(tmp_path / "home") as store:
        env, dbs = store._env, store._dbs
        with env.begin(write=True) as txn:
            with pytest.raises(PermissionError, match="append-only"):
                TxnView(txn, dbs).put(EVENTS, "1", event)
            txn.abort()
        assert _event_keys(store) == []


_MUTATING = re.compile(r"(put|delete|del|update|remove|pop|drop|truncate|replace|rewrite|set|clear|erase|edit)")


@pytest.mark.parametrize("cls", [Store, Reader])
def test_the_public_api_offers_no_way_to_update_or_delete_an_event(cls: type) -> None:
    public = [name for name, _ in inspect.getmembers(cls) if not name.startswith("_")]
    assert public, cls
    assert [name for name in public if _MUTATING.search(name)] == []


def test_a_stale_sequence_cannot_overwrite_an_event_and_fails_closed(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        store.commit([commit(admitted("r1"))])
        with store.reader() as reader:
            log_before = list(reader.raw_items(EVENTS))
        state_before = store.state_tables()
        store._next_seq = 2  # as if another writer had appended behind this store's back
        ((_, error, _),) = store.commit([commit(admitted("r2"))])
        assert isinstance(error, StoreFailed)
        assert "reopen" in str(error)
        with store.reader() as reader:
            assert list(reader.raw_items(EVENTS)) == log_before
        assert store.state_tables() == state_before


# -- state and event together --------------------------------------------------------------------


def test_a_multi_event_write_refused_midway_leaves_none_of_its_events_or_state(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        keys_before = _event_keys(store)
        ((_, error, applied),) = store.commit([commit(bank_created("new/bank"), admitted("r1", "missing/bank"))])
        assert isinstance(error, UnknownBank)
        assert applied == ()
        with store.reader() as reader:
            assert reader.get(BANKS, "new/bank") is None
            assert reader.get(RECORDS, "r1") is None
        assert _event_keys(store) == keys_before


def test_a_multi_event_write_lands_whole(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        ((committed, error, applied),) = store.commit([commit(bank_created("new/bank"), admitted("r1", "new/bank"))])
        assert error is None
        assert [type(event) for event in applied] == [BankCreated, RecordAdmitted]
        assert committed == Committed(last_seq=_event_keys(store)[-1], applied=2)
        with store.reader() as reader:
            assert reader.get(BANKS, "new/bank") is not None
            assert reader.get(RECORDS, "r1") is not None


def test_an_event_that_changes_nothing_is_not_appended(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        keys, state = _event_keys(store), store.state_tables()
        outcomes = store.commit([commit(memory_on()), commit(bank_created())])
        assert [committed for committed, _, _ in outcomes] == [
            Committed(last_seq=None, applied=0),
            Committed(last_seq=None, applied=0),
        ]
        assert _event_keys(store) == keys
        assert store.state_tables() == state


def test_a_refused_multi_event_write_leaves_nothing_for_the_writes_after_it_in_the_commit(tmp_path: Path) -> None:
    # The commit remembers what it read and wrote; what an abandoned write did must be forgotten.
    with open_home(tmp_path / "home") as store:
        prepare(store)
        outcomes = store.commit(
            [
                commit(bank_created("b/new"), admitted("r1", "b/missing")),
                commit(admitted("r2", "b/new")),
                commit(bank_created("b/new")),
                commit(admitted("r3", "b/new")),
            ]
        )
        assert [type(error) for _, error, _ in outcomes] == [UnknownBank, UnknownBank, type(None), type(None)]
        assert store.replay() == store.state_tables()
        with store.reader() as reader:
            assert {key for key, _ in reader.items(RECORDS)} == {"r3"}


def test_a_refused_write_stores_nothing(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        ((_, error, _),) = store.commit([commit(admitted("r1"))])
        assert isinstance(error, MemoryDisabled)
        assert "resident memory enable" in str(error)
        assert _event_keys(store) == []
        assert all(rows == [] for rows in store.state_tables().values())


def test_every_snapshot_taken_during_concurrent_commits_replays_to_its_state(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store:
        prepare(store)
        done = threading.Event()
        mismatches: list[int] = []
        snapshots = 0

        def watch() -> None:
            nonlocal snapshots
            while not done.is_set():
                live, replayed = _snapshot(store)
                snapshots += 1
                if live != replayed:
                    mismatches.append(snapshots)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            for batch in range(40):
                writes = [commit(admitted(f"r{batch}-{i}")) for i in range(5)]
                writes.append(commit(RecordsRecalled(at=3.0 + batch, ids=(f"r{batch}-0", f"r{batch}-1"))))
                writes.append(commit(bank_created(f"bank/{batch}"), admitted(f"in-bank-{batch}", f"bank/{batch}")))
                if batch % 3 == 0:
                    writes.append(commit(RecordSuperseded(at=4.0, id=f"r{batch}-2", by=f"r{batch}-3")))
                store.commit(writes)
        finally:
            done.set()
            watcher.join(timeout=30)
        assert snapshots > 0
        assert mismatches == []


# -- rebuilding state from the log (property) ----------------------------------------------------

_IDS = [f"r{i}" for i in range(6)]
_BANKS = ["b0", "b1", "b2"]
_times = st.integers(min_value=1, max_value=10_000).map(float)

_switch_on = st.builds(
    MemorySwitchedOn,
    at=_times,
    provider=st.sampled_from(["hindsight", "other"]),
    embedder=st.sampled_from(["hash", "llama"]),
)
_create_bank = st.builds(lambda name, at: BankCreated(at=at, bank=bank(name)), st.sampled_from(_BANKS), _times)
_admit = st.builds(
    lambda rid, name, at, importance: RecordAdmitted(at=at, record=record(rid, name, at=at, importance=importance)),
    st.sampled_from(_IDS),
    # b0 and b1 exist in most runs, b2 only if created, b3 never (admitting into it is refused).
    st.sampled_from(["b0", "b0", "b1", "b2", "b3"]),
    _times,
    st.floats(min_value=0.0, max_value=1.0),
)
_supersede = st.builds(RecordSuperseded, at=_times, id=st.sampled_from(_IDS), by=st.sampled_from(_IDS))
_retract = st.builds(
    RecordRetracted, at=_times, id=st.sampled_from(_IDS), by=st.just("deven"), reason=st.sampled_from(["", "wrong"])
)
_recall = st.builds(RecordsRecalled, at=_times, ids=st.lists(st.sampled_from(_IDS), max_size=4).map(tuple))
_other_events = st.one_of(
    _create_bank,
    _switch_on,
    st.builds(MemorySwitchedOff, at=_times),
    st.builds(
        MemberImported,
        at=_times,
        member=st.sampled_from(["alice", "oliver"]),
        world=st.sampled_from([None, "w1", "w2"]),
        records=st.integers(min_value=0, max_value=5),
    ),
)
# Admissions and changes to admitted records are what the log mostly holds. Hypothesis prefers
# the first branches of `one_of` (and folds repeated ones), so the weights are a sampled kind.
_BY_KIND: dict[str, st.SearchStrategy[AnyEvent]] = {
    "admit": _admit,
    "supersede": _supersede,
    "recall": _recall,
    "retract": _retract,
    "other": _other_events,
}
_events: st.SearchStrategy[AnyEvent] = st.sampled_from(
    ["admit", "admit", "admit", "supersede", "recall", "retract", "supersede", "other", "other"]
).flatmap(_BY_KIND.__getitem__)
# Most runs start with memory on and two banks, or admissions would almost always be refused.
_prelude = Commit(events=(memory_on(), BankCreated(at=1.0, bank=bank("b0")), BankCreated(at=1.0, bank=bank("b1"))))
# A multi-event write is refused whole when any of its events is, so most writes carry one event.
_writes = st.one_of(
    _events.map(lambda event: Commit(events=(event,))),
    _events.map(lambda event: Commit(events=(event,))),
    st.lists(_events, min_size=2, max_size=3).map(lambda events: Commit(events=tuple(events))),
)
_batches = st.tuples(
    st.sampled_from([True] * 9 + [False]),
    st.lists(st.lists(_writes, min_size=1, max_size=6), min_size=1, max_size=8),
).map(lambda drawn: ([[_prelude]] if drawn[0] else []) + drawn[1])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=_batches)
def test_state_rebuilt_from_events_equals_live_state(batches: list[list[Commit]]) -> None:
    with tempfile.TemporaryDirectory() as directory, open_home(Path(directory) / "home") as store:
        appended = 0
        for batch in batches:
            for committed, error, applied in store.commit(batch):
                if error is None:
                    assert committed is not None
                    assert committed.applied == len(applied)
                    appended += len(applied)
                else:
                    assert applied == ()
            assert store.replay() == store.state_tables()
        assert len(_event_keys(store)) == appended
        assert store.verify() == []
        with store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        # Every admission while memory was off was refused, so records exist only if memory was on once.
        if config is None:
            assert store.state_tables()["records"] == []


@contextmanager
def _unsynced_store(path: Path) -> Iterator[Store]:
    """A store that never fsyncs, for comparisons that need many commits and no durability."""
    path.mkdir()
    env = lmdb.open(str(path), map_size=1 << 28, max_dbs=MAX_DBS, sync=False, metasync=False)
    check_schema(env, initialize=True, where=path)
    store = Store(path, env, {table.name: env.open_db(table.name.encode("ascii")) for table in TABLES}, 1 << 28)
    try:
        yield store
    finally:
        store.close()


def _log(store: Store) -> list[tuple[int, AnyEvent]]:
    with store.reader() as reader:
        return list(reader.events())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=_batches)
def test_a_group_commit_means_what_committing_its_writes_one_by_one_means(batches: list[list[Commit]]) -> None:
    with (
        tempfile.TemporaryDirectory() as directory,
        open_home(Path(directory) / "home") as grouped,
        _unsynced_store(Path(directory) / "one-by-one") as alone,
    ):
        for batch in batches:
            together = [(committed, type(error), applied) for committed, error, applied in grouped.commit(batch)]
            one_by_one = [
                (committed, type(error), applied)
                for write in batch
                for committed, error, applied in alone.commit([write])
            ]
            assert together == one_by_one
        assert grouped.state_tables() == alone.state_tables()
        assert _log(grouped) == _log(alone)
