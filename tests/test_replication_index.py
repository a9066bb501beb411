"""Replication works from a pending index in LMDB and never waits on the network in its handlers.

* The index (`pending` awaiting Realm, `refused` conflict or invalidated) is written in the same
  transaction as each record and its verdicts, rebuilds from the event log, and is built once for
  records admitted before it existed.
* A record whose admission tell never reaches replication is still pushed: the next polling round
  looks at the index (on main, such a record waited for a restart).
* Status and sync read the index, never every record.
* While a Realm request hangs, the actor still answers status, sync and stop.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest

from resident import Runtime
from resident.actors import replication as replication_module
from resident.actors.replication import Replication, _IndexNext
from resident.clock import ManualClock
from resident.messages.replication import GetReplicationStatus, PendingIndexBuilt, ReplicationCounts
from resident.realm.process import RealmProcess, start_realm
from resident.runtime import wiring
from resident.store import store as store_module
from resident.store.environment import MAX_DBS
from resident.store.home import current_store_dir
from resident.store.store import Store
from resident.store.tables import INDEXED_KEY, PENDING, REALM_CURSOR, REFUSED
from resident.supervisor import ChildSpec, ForwardReply
from tests.faultproxy import FaultProxy
from tests.replication_support import (
    FAST,
    counts,
    delegated_promotion,
    local_records,
    open_runtime,
    record_status,
    use_home_token,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    with start_realm(tmp_path_factory.mktemp("realm") / "data") as process:
        yield process


@pytest.fixture(autouse=True)
def _home_token(realm: RealmProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    use_home_token(monkeypatch, realm)


def index_of(store: Store) -> tuple[dict[str, str], dict[str, str]]:
    with store.reader() as reader:
        pending: dict[str, str] = {key: value.state for key, value in reader.items(PENDING)}
        refused: dict[str, str] = {key: value.state for key, value in reader.items(REFUSED)}
    return pending, refused


def test_the_index_follows_each_record_through_its_verdicts_and_rebuilds_from_events(
    tmp_path: Path, realm: RealmProcess
) -> None:
    with FaultProxy(realm.url) as proxy, open_runtime(tmp_path / "home", proxy.url) as runtime:
        proxy.set_mode("down")
        plain = runtime.member("deven").remember("the index follows this note").id
        promoted = delegated_promotion(runtime, "the index follows this promotion")
        store = runtime._internal.store
        assert index_of(store) == ({plain: "pending", promoted: "pending"}, {})
        proxy.set_mode("pass")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert index_of(store) == ({}, {promoted: "conflict"})
        readmitted = runtime.member("deven").reconcile(promoted, readmit=True, canonical=False).new_id
        assert readmitted is not None
        pending, _ = index_of(store)
        assert pending in ({readmitted: "pending_review"}, {})  # replication may have pushed it already
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert index_of(store) == ({}, {promoted: "conflict"})
        assert store.replay() == store.state_tables()


def test_a_record_whose_admission_tell_was_lost_is_pushed_by_the_next_polling_round(
    tmp_path: Path, realm: RealmProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every tell that would wake replication is lost, as when a restart buffer overflows.
    monkeypatch.setattr(Replication, "_published", lambda _self, _message: None)
    clock = ManualClock()
    with open_runtime(tmp_path / "home", realm.url, clock=clock) as runtime:
        wait_until(lambda: counts(runtime).poller == "idle", 10.0, "the first polling round")
        record_id = runtime.member("deven").remember("nobody tells replication about this note").id
        status = counts(runtime)
        assert (status.pending, status.pusher, status.requests) == (1, "idle", 0)
        clock.advance(FAST.poll_interval)  # the next round; no sync, no restart
        wait_until(lambda: local_records(runtime)[record_id].replication == "synced", 10.0, "the push")


def test_status_and_sync_read_the_index_not_every_record(
    tmp_path: Path, realm: RealmProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_runtime(tmp_path / "home", realm.url) as runtime:
        for n in range(30):
            runtime.member("deven").remember(f"note {n} of many that status must not walk")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        walked: list[str] = []
        items = store_module.Reader.items

        def spying(reader: Any, table: Any, prefix: str = "") -> Any:
            if threading.current_thread().name.startswith("Replication"):
                walked.append(table.name)
            return items(reader, table, prefix)

        monkeypatch.setattr(store_module.Reader, "items", spying)
        status = runtime.replication.status()
        synced = runtime.replication.sync(timeout=15.0)
    assert synced.counts["synced"] == 30
    assert status.counts["synced"] == 30
    assert walked
    assert "records" not in walked


def home_of_before_the_index(home: Path, records: int) -> list[str]:
    """A home holding `records` pending records and neither pending entries nor the index marker; their ids."""
    with open_runtime(home, "none") as runtime:
        ids = [runtime.member("deven").remember(f"an old note {n}").id for n in range(records)]
    env = lmdb.open(str(current_store_dir(home)), max_dbs=MAX_DBS)
    try:
        with env.begin(write=True) as txn:
            txn.drop(env.open_db(PENDING.name.encode(), txn=txn), delete=False)
            txn.delete(INDEXED_KEY.encode(), db=env.open_db(REALM_CURSOR.name.encode(), txn=txn))
    finally:
        env.close()
    return ids


class Collected:
    """Stands in for an actor a reply is forwarded to: keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[Any] = []

    def tell(self, message: Any) -> None:
        self.told.append(message)


def test_records_admitted_before_the_index_existed_are_indexed_once_and_pushed(
    tmp_path: Path, realm: RealmProcess
) -> None:
    home = tmp_path / "home"
    ids = home_of_before_the_index(home, 3)
    with open_runtime(home, realm.url) as runtime:
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert {local_records(runtime)[i].replication for i in ids} == {"synced"}
        store = runtime._internal.store
        assert store.replay() == store.state_tables()


def test_replication_starts_while_the_writer_holds_the_index_and_counts_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home_of_before_the_index(home, 3)
    held = threading.Event()
    release = threading.Event()
    commit = Store.commit

    def holding_the_index(store: Store, writes: Any) -> Any:
        if any(isinstance(event, PendingIndexBuilt) for write in writes for event in write.events):
            held.set()
            assert release.wait(30.0), "the index commit was never released"
        return commit(store, writes)

    monkeypatch.setattr(Store, "commit", holding_the_index)
    # The open returns while the writer is inside the index commit: replication's start waits for nobody.
    with Runtime.open(home, realm="none") as runtime:
        assert held.wait(10.0)
        asked = Collected()
        runtime._internal.wiring.replication.tell(GetReplicationStatus(), ForwardReply(asked, "counts"))
        # Answered after the request above was handled: that one waits for the index its counts read.
        record_id = local_records(runtime).popitem()[0]
        assert record_status(runtime, record_id).state == "pending"
        assert asked.told == []
        release.set()
        wait_until(lambda: asked.told, 10.0, "the counts")
        [completed] = asked.told
        [(_, answer, error)] = completed.outcomes
        assert error is None
        assert answer.pending == 3
        assert counts(runtime).pending == 3


def indexed(store: Store) -> bool:
    with store.reader() as reader:
        return reader.get(REALM_CURSOR, INDEXED_KEY) is not None


def test_a_home_whose_memory_is_switched_on_is_indexed_so_no_later_start_walks_its_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    with open_runtime(home, "none", enable=False) as runtime:
        assert not indexed(runtime._internal.store)
        runtime.memory.enable()
        assert indexed(runtime._internal.store)
        runtime.member("deven").remember("a note of a home indexed from its first record")
    stepped: list[str | None] = []
    monkeypatch.setattr(Replication, "_index_step", lambda _actor, after: stepped.append(after))
    with open_runtime(home, "none") as runtime:
        assert counts(runtime).pending == 1
        store = runtime._internal.store
        assert store.replay() == store.state_tables()
    assert stepped == []


def test_replication_answers_its_start_before_an_older_home_is_indexed_and_pushes_meanwhile(
    tmp_path: Path, realm: RealmProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    older = home_of_before_the_index(home, 12)
    # Steps of 5 records; every step after the first waits for the clock, so the test holds a home
    # that takes longer to index than the start timeout allows (made small: a start that walked
    # every record first would fail the open), without the home being big.
    monkeypatch.setattr(replication_module, "INDEX_STEP", 5)
    monkeypatch.setattr(wiring, "ChildSpec", functools.partial(ChildSpec, start_timeout=1.0))
    index_step = Replication._index_step
    held: list[str] = []

    def slow_steps(actor: Replication, after: str | None) -> None:
        if after is not None and after not in held:
            held.append(after)
            actor.schedule(60.0, _IndexNext(after))
            return
        index_step(actor, after)

    monkeypatch.setattr(Replication, "_index_step", slow_steps)
    clock = ManualClock()
    with open_runtime(home, realm.url, clock=clock) as runtime:
        store = runtime._internal.store
        wait_until(lambda: held, 10.0, "the first step of the index")
        assert not indexed(store)
        # Records written meanwhile are pushed, and so are those the first step indexed.
        fresh = runtime.member("deven").remember("a note written while replication indexes").id
        first = sorted(older)[:5]
        wait_until(
            lambda: {local_records(runtime)[i].replication for i in [fresh, *first]} == {"synced"}, 10.0,
            "the pushes while indexing",
        )
        # A record not indexed yet is reported as it is, never as synced.
        assert record_status(runtime, sorted(older)[-1]).state == "pending"
        asked = Collected()
        runtime._internal.wiring.replication.tell(GetReplicationStatus(), ForwardReply(asked, "counts"))
        assert record_status(runtime, fresh).state == "synced"  # handled after the request above
        assert asked.told == []  # counts wait for the index they are read from
        clock.advance(60.0)
        wait_until(lambda: len(held) == 2, 10.0, "the second step")
        clock.advance(60.0)
        wait_until(lambda: asked.told, 10.0, "the counts")
        assert indexed(store)
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert {local_records(runtime)[i].replication for i in older} == {"synced"}
        assert store.replay() == store.state_tables()


def requesting(runtime: Runtime) -> ReplicationCounts | None:
    status = counts(runtime)
    return status if status.pusher == "requesting" else None


def test_the_actor_answers_status_sync_and_stop_while_a_realm_request_hangs(
    tmp_path: Path, realm: RealmProcess
) -> None:
    settings = dataclasses.replace(FAST, request_timeout=3.0)
    with FaultProxy(realm.url) as proxy:
        proxy.set_mode("slow", delay=30.0)  # far longer than anything below waits
        runtime_cm = open_runtime(tmp_path / "home", proxy.url, settings)
        runtime = runtime_cm.__enter__()
        try:
            runtime.member("deven").remember("a note Realm is slow to take")
            # The status answers while the request is out: it reports that very request.
            status = wait_until(lambda: requesting(runtime), 10.0, "a request")
            assert status is not None
            assert status.pending == 1
            during = runtime.replication.sync(timeout=0.2)
            assert during.pending == 1
            assert counts(runtime).pusher == "requesting"
        finally:
            closing = threading.Thread(target=runtime_cm.__exit__, args=(None, None, None))
            closing.start()
            closing.join(timeout=20.0)
        assert not closing.is_alive()
