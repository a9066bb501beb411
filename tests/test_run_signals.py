"""`resident run` stopped from outside: SIGTERM is a graceful stop, kill -9 leaves no Realm behind.

Real processes and real signals: the run is a `python -m resident.cli run` process whose Realm
child is found through its pid file, as the next run's orphan sweep would find it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import pytest

from resident import Runtime
from resident.children import ChildRecord, stop_orphans
from resident.children.orphans import wait_gone
from resident.cli.main import EXIT_TERMINATED
from resident.errors import SchemaMismatch, StoreCorrupted
from resident.store.store import Store
from resident.store.tables import RECORDS

STARTED_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


def start_run(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "RESIDENT_HOME"}
    env["TMPDIR"] = str(tmp_path)
    return subprocess.Popen(
        [sys.executable, "-m", "resident.cli", "run", "--writes", "3000", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def realm_child(tmp_path: Path, run: subprocess.Popen[str]) -> ChildRecord:
    """The run's Realm child, once its pid file is written (the Realm is then starting up)."""
    folder = tmp_path / f"resident-{os.getuid()}-children"
    deadline = time.monotonic() + STARTED_TIMEOUT
    while True:
        records = [msgspec.json.decode(p.read_bytes(), type=ChildRecord) for p in folder.glob("*.json")]
        if records:
            assert records[0].parent_pid == run.pid
            return records[0]
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never started its Realm"
        time.sleep(0.05)


def wait_playing(tmp_path: Path, run: subprocess.Popen[str], records: int) -> None:
    """Wait until the run's plan is being played: its store holds `records` records (read beside it)."""
    deadline = time.monotonic() + STARTED_TIMEOUT
    while True:
        homes = [h for h in tmp_path.glob("resident-run-*/home") if (h / "store.1" / "data.mdb").exists()]
        if homes:
            try:
                store = Store.open(homes[0], readonly=True)
            except SchemaMismatch:
                store = None  # the run has created the data file but not yet written its schema
            except StoreCorrupted:
                # The open-time check reads the file without LMDB's lock (it expects no writer), and
                # the run is writing it: a page can be caught mid-write. Look again.
                store = None
            if store is not None:
                try:
                    with store.reader() as reader:
                        if reader.count(RECORDS) >= records:
                            return
                finally:
                    store.close()
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never got to writing"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_sigterm_stops_a_run_gracefully_with_exit_143_and_one_line(tmp_path, as_json):
    run = start_run(tmp_path, *(["--json"] if as_json else []))
    realm = realm_child(tmp_path, run)
    wait_playing(tmp_path, run, records=200)
    run.send_signal(signal.SIGTERM)
    stdout, stderr = run.communicate(timeout=STOP_TIMEOUT)
    assert run.returncode == EXIT_TERMINATED, stderr
    assert "Traceback" not in stderr, stderr
    if as_json:
        assert json.loads(stdout) == {"error": {"type": "Terminated", "message": "terminated by SIGTERM"}}
    else:
        assert stderr.splitlines()[-1] == "error: terminated by SIGTERM"
        assert stderr.count("error:") == 1
    assert wait_gone(realm.pid, STOP_TIMEOUT), "the Realm child outlived the run"
    assert not list((tmp_path / f"resident-{os.getuid()}-children").glob("*.json")), "its pid file was left"
    # The home was closed cleanly and kept (the run did not succeed): it is free, and opens.
    (home,) = tmp_path.glob("resident-run-*/home")
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        assert reader.count(RECORDS) >= 200


def test_a_run_killed_with_sigkill_takes_its_realm_child_down_with_it(tmp_path, monkeypatch):
    run = start_run(tmp_path)
    realm = realm_child(tmp_path, run)
    run.kill()
    run.communicate(timeout=STOP_TIMEOUT)
    assert wait_gone(realm.pid, STOP_TIMEOUT), "the Realm child outlived a kill -9 of the run"
    # Its pid file stays behind (nobody could remove it); the next start's sweep clears it.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert stop_orphans() == []
    assert not list((tmp_path / f"resident-{os.getuid()}-children").glob("*.json"))
