"""Backup and restore: verifiable copies, verified whole before anything is replaced, never half-restored."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import threading
import time
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import BackupInvalid, HomeInUse, InvalidInput, ResidentError, SchemaMismatch
from resident.messages.backup import BACKUP_FORMAT, BackupManifest
from resident.store.backup import MANIFEST_FILE, STORE_DATA, backup, restore, verify_backup
from resident.store.home import CONFIG_FILE, RESTORED_CONFIG, HomeLock, current_store_dir, ensure_home
from resident.store.store import Store, open_environment
from resident.store.tables import RECORDS, SCHEMA_VERSION
from tests.cli_helpers import expect_error, invoke
from tests.store_helpers import ForkServer, admitted, commit, open_home, prepare, running_writer, tree_digest


def _make_home(home: Path, ids: list[str], config: str | None = "[team]\nmembers = ['deven']\n") -> None:
    ensure_home(home)
    if config is not None:
        (home / CONFIG_FILE).write_text(config)
    with open_home(home) as store:
        prepare(store)
        store.commit([commit(admitted(record_id)) for record_id in ids])


def _record_ids(home: Path) -> set[str]:
    with open_home(home) as store, store.reader() as reader:
        return {key for key, _ in reader.items(RECORDS)}


def _backup_of(home: Path, dest: Path) -> BackupManifest:
    with open_home(home) as store:
        return backup(store, home, dest, clock=ManualClock(wall_start=1_700_000_000.5))


# Two configurations that parse (a file of comments alone is empty, which is an error) and differ.
BACKED_UP_CONFIG = '# the backed-up configuration\n[team]\ncoordinator = "samuel"\n'
OWN_CONFIG = '# the home\'s own configuration\n[team]\ncoordinator = "samuel"\n'


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A backup of a home holding records b0..b9 and a configuration."""
    home = tmp_path / "source-home"
    _make_home(home, [f"b{index}" for index in range(10)], config=BACKED_UP_CONFIG)
    _backup_of(home, tmp_path / "backup")
    return tmp_path / "backup"


@pytest.fixture
def target(tmp_path: Path) -> Path:
    """A live home holding other records (h0..h4) and its own configuration."""
    home = tmp_path / "home"
    _make_home(home, [f"h{index}" for index in range(5)], config=OWN_CONFIG)
    return home


# -- backup --------------------------------------------------------------------------------------


def test_a_backup_holds_a_manifest_with_every_file_its_size_and_checksum(source: Path) -> None:
    raw = json.loads((source / MANIFEST_FILE).read_text())
    assert raw["format"] == BACKUP_FORMAT == "resident-backup/1"
    assert raw["schema_version"] == SCHEMA_VERSION
    assert raw["created_at"] == 1_700_000_000.5
    files = {entry["path"]: entry for entry in raw["files"]}
    assert set(files) == {STORE_DATA, CONFIG_FILE}
    for path, entry in files.items():
        data = (source / path).read_bytes()
        assert entry["size"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
    assert sorted(path.relative_to(source).as_posix() for path in source.rglob("*")) == sorted(
        ["manifest.json", "resident.toml", "store", "store/data.mdb"]
    )


def test_a_backup_is_private(source: Path) -> None:
    for path in [source, *source.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


def test_verify_backup_returns_the_manifest_backup_wrote(tmp_path: Path, target: Path) -> None:
    written = _backup_of(target, tmp_path / "b")
    assert verify_backup(tmp_path / "b") == written


def test_a_backup_needs_a_new_or_empty_destination(tmp_path: Path, target: Path) -> None:
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(InvalidInput, match="not an empty directory"):
        _backup_of(target, occupied)
    assert [path.name for path in occupied.iterdir()] == ["keep.txt"]
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(InvalidInput):
        _backup_of(target, tmp_path / "a-file")
    empty = tmp_path / "empty"
    empty.mkdir()
    _backup_of(target, empty)
    verify_backup(empty)


def test_a_backup_taken_during_concurrent_writes_is_consistent(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_home(home) as store:
        prepare(store)
        with running_writer(store) as writer:
            stop = threading.Event()
            acknowledged = threading.Semaphore(0)

            def write(worker: int) -> None:
                index = 0
                while not stop.is_set():
                    writer.ask(commit(admitted(f"w{worker}-{index}")), 30)
                    acknowledged.release()
                    index += 1

            threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
            for thread in threads:
                thread.start()
            try:
                for _ in range(50):
                    assert acknowledged.acquire(timeout=30)
                # The writers keep committing while the copy is taken.
                backup(store, home, tmp_path / "b")
                assert acknowledged.acquire(timeout=30)
            finally:
                stop.set()
                for thread in threads:
                    thread.join(30)
            live = len(store.state_tables()["records"])
    restored = tmp_path / "restored"
    restore(tmp_path / "b", restored)
    with open_home(restored) as store:
        assert store.verify() == []
        assert store.replay() == store.state_tables()
        copied = len(store.state_tables()["records"])
    assert 50 <= copied <= live


def test_a_backup_holds_off_map_growth_while_it_copies(tmp_path: Path, target: Path) -> None:
    # Resizing the map with a read transaction open in the process (the copy's) is undefined.
    class Watched:
        def __init__(self, env: object) -> None:
            self._env = env
            self.readers_during_copy: list[int] = []

        def copy(self, path: str, compact: bool) -> None:
            self.readers_during_copy.append(store._gate._readers)
            self._env.copy(path, compact=compact)  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self._env, name)

    with open_home(target) as store:
        watched = Watched(store._env)
        store._env = watched  # type: ignore[assignment]
        try:
            backup(store, target, tmp_path / "b")
        finally:
            store._env = watched._env  # type: ignore[assignment]
    assert watched.readers_during_copy == [1]
    verify_backup(tmp_path / "b")


# -- restore -------------------------------------------------------------------------------------


def test_restore_replaces_the_store_and_configuration(source: Path, target: Path) -> None:
    manifest = restore(source, target)
    assert manifest == verify_backup(source)
    assert _record_ids(target) == {f"b{index}" for index in range(10)}
    assert (target / CONFIG_FILE).read_text() == BACKED_UP_CONFIG
    assert current_store_dir(target).name == "store.2"
    assert sorted(path.name for path in target.iterdir()) == ["CURRENT", "resident.lock", "resident.toml", "store.2"]
    assert not (target / "store.2" / RESTORED_CONFIG).exists()
    for path in [target, *target.rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


def test_restore_twice_moves_on_to_the_next_store_directory(source: Path, target: Path) -> None:
    restore(source, target)
    restore(source, target)
    assert current_store_dir(target).name == "store.3"
    assert _record_ids(target) == {f"b{index}" for index in range(10)}


def test_restore_into_a_new_home(source: Path, tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    restore(source, home)
    assert _record_ids(home) == {f"b{index}" for index in range(10)}
    assert home.stat().st_mode & 0o777 == 0o700


def test_a_backup_without_configuration_leaves_the_homes_own(tmp_path: Path, target: Path) -> None:
    bare = tmp_path / "bare-home"
    _make_home(bare, ["x1"], config=None)
    _backup_of(bare, tmp_path / "b")
    restore(tmp_path / "b", target)
    assert _record_ids(target) == {"x1"}
    assert (target / CONFIG_FILE).read_text() == OWN_CONFIG


def test_a_restored_home_takes_writes(source: Path, target: Path) -> None:
    restore(source, target)
    with open_home(target) as store:
        ((_, error, _),) = store.commit([commit(admitted("after-restore"))])
        assert error is None
        assert store.replay() == store.state_tables()
    assert "after-restore" in _record_ids(target)


# -- refusals leave the home untouched -----------------------------------------------------------


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    with path.open("r+b") as stream:
        stream.truncate(path.stat().st_size - 4096)


def _rewrite_manifest(source: Path, **changes: object) -> None:
    raw = json.loads((source / MANIFEST_FILE).read_text())
    raw.update(changes)
    (source / MANIFEST_FILE).write_text(json.dumps(raw))


def _list_missing_file(source: Path) -> None:
    raw = json.loads((source / MANIFEST_FILE).read_text())
    raw["files"].append({"path": "store/extra.mdb", "size": 1, "sha256": "00" * 32})
    (source / MANIFEST_FILE).write_text(json.dumps(raw))


def _escape(source: Path) -> None:
    raw = json.loads((source / MANIFEST_FILE).read_text())
    raw["files"][0]["path"] = "../../etc/passwd"
    (source / MANIFEST_FILE).write_text(json.dumps(raw))


DAMAGES = {
    "corrupted data": (lambda s: _flip_a_byte(s / STORE_DATA), BackupInvalid, "corrupted"),
    "truncated data": (lambda s: _truncate(s / STORE_DATA), BackupInvalid, "truncated"),
    "corrupted config": (lambda s: _flip_a_byte(s / CONFIG_FILE), BackupInvalid, "resident.toml"),
    "missing manifest": (lambda s: (s / MANIFEST_FILE).unlink(), BackupInvalid, "no manifest.json"),
    "garbage manifest": (lambda s: (s / MANIFEST_FILE).write_text("{not json"), BackupInvalid, "malformed"),
    "wrong format": (lambda s: _rewrite_manifest(s, format="tarball/9"), BackupInvalid, "tarball/9"),
    "wrong schema": (lambda s: _rewrite_manifest(s, schema_version=99), SchemaMismatch, "schema version 99"),
    "listed file missing": (_list_missing_file, BackupInvalid, "store/extra.mdb"),
    "missing data file": (lambda s: (s / STORE_DATA).unlink(), BackupInvalid, "store/data.mdb"),
    "unlisted file": (lambda s: (s / "store" / "lock.mdb").write_bytes(b"x"), BackupInvalid, "store/lock.mdb"),
    "path escaping the backup": (_escape, BackupInvalid, "../../etc/passwd"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_backup_is_refused_and_the_home_is_left_untouched(damage: str, source: Path, target: Path) -> None:
    spoil, error_type, named = DAMAGES[damage]
    spoil(source)
    before = tree_digest(target)
    with pytest.raises(error_type) as caught:
        restore(source, target)
    message = str(caught.value)
    assert isinstance(caught.value, ResidentError)
    assert named in message
    assert "\n" not in message
    assert "home was left untouched" in message
    assert tree_digest(target) == before
    with pytest.raises(error_type):
        verify_backup(source)


def test_a_backup_whose_environment_has_another_schema_is_refused(tmp_path: Path, target: Path) -> None:
    # The manifest claims our version, but the environment inside says 99: the read-only open catches it.
    other = tmp_path / "other-home"
    _make_home(other, ["o1"])
    _backup_of(other, tmp_path / "b")
    data = tmp_path / "b" / STORE_DATA
    env = open_environment(data.parent, map_size=1 << 26)
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"99", db=env.open_db(b"meta", txn=txn))
    env.close()
    (data.parent / "lock.mdb").unlink()
    raw = json.loads((tmp_path / "b" / MANIFEST_FILE).read_text())
    for entry in raw["files"]:
        if entry["path"] == STORE_DATA:
            entry["size"] = data.stat().st_size
            entry["sha256"] = hashlib.sha256(data.read_bytes()).hexdigest()
    (tmp_path / "b" / MANIFEST_FILE).write_text(json.dumps(raw))
    before = tree_digest(target)
    with pytest.raises(SchemaMismatch) as caught:
        restore(tmp_path / "b", target)
    assert "99" in str(caught.value)
    assert f"version {SCHEMA_VERSION}" in str(caught.value)
    assert "home was left untouched" in str(caught.value)
    assert tree_digest(target) == before


def test_restore_into_a_home_in_use_is_refused(source: Path, target: Path) -> None:
    before = tree_digest(target, skip=("lock.mdb",))
    with open_home(target), pytest.raises(HomeInUse):
        restore(source, target)
    assert tree_digest(target, skip=("lock.mdb",)) == before
    assert _record_ids(target) == {f"h{index}" for index in range(5)}


def _forge(backup_dir: Path, relative: str, data: bytes) -> None:
    """Replace one file of a backup and rewrite its manifest to match, as a forger would."""
    (backup_dir / relative).write_bytes(data)
    manifest_path = backup_dir / MANIFEST_FILE
    manifest = json.loads(manifest_path.read_text())
    for entry in manifest["files"]:
        if entry["path"] == relative:
            entry["size"] = len(data)
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    manifest_path.write_text(json.dumps(manifest))


def test_restore_refuses_a_backup_whose_data_file_is_damaged_though_its_checksums_match(
    source: Path, target: Path
) -> None:
    data = bytearray((source / STORE_DATA).read_bytes())
    noise = random.Random(3).randbytes(4096 - 16)
    for page in range(2, len(data) // 4096):
        data[page * 4096 + 16 : (page + 1) * 4096] = noise
    _forge(source, STORE_DATA, bytes(data))
    before = tree_digest(target)
    with pytest.raises(BackupInvalid, match="damaged data file") as caught:
        Runtime.restore(source, target)
    assert "home was left untouched" in str(caught.value)
    assert tree_digest(target) == before


def test_restore_refuses_a_backup_whose_data_file_is_not_an_lmdb_file(source: Path, target: Path) -> None:
    _forge(source, STORE_DATA, random.Random(5).randbytes(64 * 1024))
    before = tree_digest(target)
    with pytest.raises(BackupInvalid, match="data file"):
        Runtime.restore(source, target)
    assert tree_digest(target) == before


def test_restore_refuses_a_backup_whose_configuration_does_not_parse(source: Path, target: Path) -> None:
    _forge(source, CONFIG_FILE, b"[team\nmembers = ['deven'\n")
    before = tree_digest(target)
    outcome = invoke(target, "restore", str(source))
    expect_error(outcome, "BackupInvalid", naming=("resident.toml that does not parse", "left untouched"))
    assert tree_digest(target) == before
    assert _record_ids(target) == {f"h{index}" for index in range(5)}


# -- crash safety --------------------------------------------------------------------------------


def test_leftovers_of_a_killed_restore_are_removed_by_the_next(source: Path, target: Path) -> None:
    # What a restore killed at various points leaves: an orphaned next store, a dead process's staging.
    shutil.copytree(target / "store.1", target / "store.2")
    dead = target / ".restore-999999999-x"
    dead.mkdir()
    (dead / "data.mdb").write_bytes(b"partial")
    assert _record_ids(target) == {f"h{index}" for index in range(5)}
    restore(source, target)
    assert sorted(path.name for path in target.iterdir()) == ["CURRENT", "resident.lock", "resident.toml", "store.2"]
    assert _record_ids(target) == {f"b{index}" for index in range(10)}


def test_a_restore_killed_after_its_switch_has_its_configuration_installed_on_open(source: Path, target: Path) -> None:
    # The state between the switch of CURRENT and the move of resident.toml into the home.
    restore(source, target)
    live = current_store_dir(target)
    (live / RESTORED_CONFIG).write_text("# waiting to be installed\n")
    (target / CONFIG_FILE).write_text("# the old one\n")
    with HomeLock(target):
        Store.open(target).close()
    assert (target / CONFIG_FILE).read_text() == "# waiting to be installed\n"
    assert not (live / RESTORED_CONFIG).exists()
    assert (target / CONFIG_FILE).stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_a_restore_killed_at_any_moment_leaves_the_old_or_the_new_home(tmp_path: Path) -> None:
    old_ids = {f"old{index}" for index in range(20)}
    new_ids = {f"new{index}" for index in range(800)}
    configs = {"old": "# old configuration\n", "new": "# new configuration\n"}
    backups = {}
    for name, ids in (("old", old_ids), ("new", new_ids)):
        _make_home(tmp_path / f"{name}-home", sorted(ids), config=configs[name])
        backups[name] = tmp_path / f"{name}-backup"
        _backup_of(tmp_path / f"{name}-home", backups[name])
    home = tmp_path / "home"
    _make_home(home, sorted(old_ids), config=configs["old"])
    live = "old"

    server = ForkServer()
    try:
        # How long an uninterrupted restore takes here, so kills can land anywhere in it.
        started = time.monotonic()
        pid = server.fork(f"restore {backups['new']} {home}")
        server.until("restored")
        lines, status = server.wait()
        horizon = time.monotonic() - started
        assert os.WIFEXITED(status), (lines, status)
        restore(backups["old"], home)

        rng = random.Random(7)
        outcomes = {"before the switch": 0, "after the switch": 0}
        for _ in range(40):
            wanted = "new" if live == "old" else "old"
            pid = server.fork(f"restore {backups[wanted]} {home}")
            delay = rng.uniform(0.0, horizon * 1.5)
            time.sleep(delay)
            server.kill(pid)
            ids = _record_ids(home)  # opening also completes a restore killed after its switch
            assert ids in (old_ids, new_ids), "a half-restored store is live"
            live = "new" if ids == new_ids else "old"
            assert (home / CONFIG_FILE).read_text() == configs[live], "the configuration does not match the store"
            outcomes["after the switch" if live == wanted else "before the switch"] += 1
            if live != wanted:
                # Restores run slower after killed ones (their writes are still being flushed):
                # keep the kills spread over the whole of one.
                horizon = max(horizon, delay)
            with open_home(home) as store:
                assert store.verify() == []
                assert store.replay() == store.state_tables()
    finally:
        server.close()
    assert all(outcomes.values()), outcomes
    restore(backups["old"], home)
    assert sorted(path.name for path in home.iterdir() if not path.name.startswith(".CURRENT")) == [
        "CURRENT",
        "resident.lock",
        "resident.toml",
        current_store_dir(home).name,
    ]
