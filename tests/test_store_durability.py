"""Acknowledged writes survive `kill -9`; a killed writer leaves whole transactions and a sound environment.

A child process (tests/store_durability_child.py) writes multi-event commits through the
group-commit writer and prints each id once its write is acknowledged. The parent kills it with
SIGKILL at random moments — sometimes before it has even opened the home — reopens the home and
checks that every acknowledged id is there, that each commit is there whole or not at all, that
the event log is gapless and replays to the live state, and that LMDB's own structures are sound.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

import pytest

from resident.messages.memory import MemoryRecord
from resident.store.home import current_store_dir
from resident.store.store import open_environment
from resident.store.tables import BANKS, EVENTS, RECORDS
from tests.store_helpers import ForkServer, open_home

KILLS = 30


def _run_and_kill(server: ForkServer, home: Path, mode: str, prefix: str, rng: random.Random) -> tuple[list[str], bool]:
    """Fork a writer, kill it at a random moment; the ids it acknowledged, and whether it got ready."""
    pid = server.fork(f"write {home} {mode} {prefix} 8")
    early = rng.random() < 0.2
    lines = [] if early else server.until("ready")
    # Early: anywhere in opening the home, starting the writer and the first commits.
    time.sleep(rng.uniform(0.0, 0.08) if early else rng.uniform(0.0, 0.3))
    more, status = server.kill(pid)
    assert os.WIFSIGNALED(status), status
    assert os.WTERMSIG(status) == signal.SIGKILL, status
    lines += more
    return [line[4:] for line in lines if line.startswith("ack ")], "ready" in lines


def _check_environment(home: Path) -> None:
    """Walk every sub-database with plain `lmdb` and compare with LMDB's own entry counts."""
    store_dir = current_store_dir(home)
    env = open_environment(store_dir, map_size=64 << 20, readonly=True)
    try:
        with env.begin() as txn:
            names = [bytes(key) for key, _ in txn.cursor()]
            assert len(names) == env.stat()["entries"]
            assert set(names) >= {b"meta", b"events", b"records", b"banks"}
            for name in names:
                db = env.open_db(name, txn=txn, create=False)
                keys = [bytes(key) for key, _ in txn.cursor(db=db)]
                assert len(keys) == txn.stat(db)["entries"], name
                assert keys == sorted(keys), name
                assert len(set(keys)) == len(keys), name
    finally:
        env.close()
    for tool in ("mdb_stat", "mdb_dump"):
        path = shutil.which(tool)
        if path is not None:
            done = subprocess.run([path, "-a", str(store_dir)], capture_output=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr


def _check_home(home: Path, acked: set[str], mode: str) -> int:
    """Reopen the home and check it; returns how many records it holds."""
    with open_home(home, map_size=64 << 20) as store:
        assert store.verify() == []
        with store.reader() as reader:
            seqs = [seq for seq, _ in reader.events()]
            records = dict(reader.items(RECORDS))
            banks = {key for key, _ in reader.items(BANKS)}
            assert reader.count(EVENTS) == len(seqs)
        assert seqs == list(range(1, len(seqs) + 1)), "the event log has a gap or is out of order"
        missing = acked - set(records)
        assert not missing, f"{len(missing)} acknowledged writes were lost, e.g. {sorted(missing)[:3]}"
        assert store.replay() == store.state_tables()
        _check_whole_commits(mode, records, banks)
    _check_environment(home)
    return len(records)


def _check_whole_commits(mode: str, records: Mapping[str, MemoryRecord], banks: set[str]) -> None:
    if mode == "threads":
        # Each commit: a bank `dur/ID` and the record ID in it, both or neither.
        made_banks = {name.removeprefix("dur/") for name in banks if name.startswith("dur/")}
        assert made_banks == set(records)
        return
    for record_id, value in records.items():
        if record_id.endswith("-b"):
            # Each commit: record B (superseding A) and A's supersession, both or neither.
            old = records[record_id[:-1] + "a"]
            assert value.supersedes == record_id[:-1] + "a"
            assert old.superseded_by == record_id
            assert old.lifecycle == "superseded"
        else:
            replacement = record_id[:-1] + "b"
            assert (replacement in records) == (value.superseded_by == replacement)


def _kill_many_times(tmp_path: Path, mode: str, seed: int) -> None:
    rng = random.Random(seed)
    home = tmp_path / "home"
    acked: set[str] = set()
    ready_kills = 0
    server = ForkServer()
    try:
        for round_ in range(KILLS):
            ids, was_ready = _run_and_kill(server, home, mode, f"k{round_}", rng)
            acked.update(ids)
            ready_kills += was_ready
            if home.exists():
                _check_home(home, acked, mode)
    finally:
        server.close()
    assert ready_kills >= KILLS // 2
    assert len(acked) > 100, f"only {len(acked)} writes were acknowledged: the test exercised too little"


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_kill_9_during_thread_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    _kill_many_times(tmp_path, "threads", seed=1)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_kill_9_during_async_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    _kill_many_times(tmp_path, "asyncio", seed=2)
