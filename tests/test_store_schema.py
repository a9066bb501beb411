"""The schema version a home carries: stamped when new, checked on every open, never migrated silently."""

from __future__ import annotations

from pathlib import Path

import lmdb
import pytest

from resident.errors import ResidentError, SchemaMismatch
from resident.messages.store import Commit
from resident.store.home import ensure_home
from resident.store.store import open_environment
from resident.store.tables import META, RECORDS, SCHEMA_VERSION, TABLES
from tests.store_helpers import admitted, open_home, prepare, tree_digest


def _raw_home(tmp_path: Path) -> tuple[Path, lmdb.Environment]:
    home = ensure_home(tmp_path / "home")
    store_dir = home / "store.1"
    store_dir.mkdir(mode=0o700)
    return home, open_environment(store_dir, map_size=1 << 24)


def test_a_new_home_is_stamped_with_this_schema_version(tmp_path: Path) -> None:
    with open_home(tmp_path / "home") as store, store.reader() as reader:
        assert reader.raw(META, "schema_version") == str(SCHEMA_VERSION).encode("ascii")


def test_a_home_reopens_with_its_data(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_home(home) as store:
        prepare(store)
        store.commit([Commit(events=(admitted("r1"),))])
    with open_home(home) as store, store.reader() as reader:
        record = reader.get(RECORDS, "r1")
        assert record is not None
        assert record.id == "r1"
        assert reader.raw(META, "schema_version") == str(SCHEMA_VERSION).encode("ascii")


def test_a_home_of_another_version_is_refused_naming_both_and_left_unwritten(tmp_path: Path) -> None:
    # A future version with a different set of tables: opening it must not create ours.
    home, env = _raw_home(tmp_path)
    with env.begin(write=True) as txn:
        meta = env.open_db(b"meta", txn=txn)
        txn.put(b"schema_version", b"99", db=meta)
        other = env.open_db(b"events_v99", txn=txn)
        txn.put(b"\x00" * 8, b"an event of version 99", db=other)
    env.close()
    # lock.mdb is LMDB's reader table, rewritten by every open; everything else must stay as it was.
    before = tree_digest(home, skip=("lock.mdb",))

    with pytest.raises(SchemaMismatch) as caught, open_home(home):
        pass

    message = str(caught.value)
    assert "99" in message
    assert f"version {SCHEMA_VERSION}" in message
    assert "\n" not in message
    assert isinstance(caught.value, ResidentError)
    after = tree_digest(home, skip=("lock.mdb", "resident.lock"))
    assert after == {name: value for name, value in before.items() if name != "resident.lock"}
    env = open_environment(home / "store.1", map_size=1 << 24, readonly=True)
    try:
        with env.begin() as txn:
            names = {bytes(key) for key, _ in txn.cursor()}
    finally:
        env.close()
    assert names == {b"meta", b"events_v99"}


def test_a_store_without_a_version_but_with_data_is_refused(tmp_path: Path) -> None:
    home, env = _raw_home(tmp_path)
    with env.begin(write=True) as txn:
        foreign = env.open_db(b"records", txn=txn)
        txn.put(b"r1", b"not ours", db=foreign)
    env.close()
    with pytest.raises(SchemaMismatch, match="no schema version"), open_home(home):
        pass


def test_a_first_open_interrupted_before_the_stamp_is_completed_on_the_next_open(tmp_path: Path) -> None:
    # What a first open killed after creating data.mdb and some tables (but before stamping) leaves.
    home, env = _raw_home(tmp_path)
    with env.begin(write=True) as txn:
        for table in TABLES[:3]:
            env.open_db(table.name.encode("ascii"), txn=txn)
    env.close()
    with open_home(home) as store, store.reader() as reader:
        assert reader.raw(META, "schema_version") == str(SCHEMA_VERSION).encode("ascii")
        assert reader.count(RECORDS) == 0


def test_a_refused_home_stays_refused(tmp_path: Path) -> None:
    home, env = _raw_home(tmp_path)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"0", db=env.open_db(b"meta", txn=txn))
    env.close()
    for _ in range(2):
        with pytest.raises(SchemaMismatch, match="schema version 0"), open_home(home):
            pass
