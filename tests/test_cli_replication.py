"""`resident replication status | sync`, `reconcile` and `realm serve | invalidate` from the shell.

One test runs the whole loop against a real `resident realm serve` process on a free loopback
port; the others need no Realm (records stay `pending`, withheld records are made by committing
the event Realm's rejection would cause).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from resident import Runtime
from resident.messages.replication import RecordsSynced
from resident.messages.store import Commit
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke, withhold
from tests.replication_support import delegated_promotion

DEPLOY = "the deploy needs a migration first"
START_TIMEOUT = 30.0
STOP_TIMEOUT = 15.0


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with memory on and no Realm."""
    path = tmp_path / "home"
    expect_ok(invoke(path, "memory", "enable"))
    return path


def _remember(home: Path, text: str, *options: str) -> str:
    record_id: str = expect_json(invoke(home, "remember", "deven", text, *options, "--json"))["id"]
    return record_id


def accept(home: Path, record_id: str) -> None:
    """Mark a record synced the way Realm's acceptance does: a committed `RecordsSynced` event."""
    with Runtime.open(home) as runtime:
        runtime._internal.write(Commit(events=(RecordsSynced(at=runtime._internal.clock.time(), ids=(record_id,)),)))


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextmanager
def realm_serve(tmp_path: Path) -> Iterator[str]:
    """`resident realm serve --port 0` as its own process; yields its URL, stops it with SIGTERM."""
    ready = tmp_path / "realm.ready.json"
    environment = {k: v for k, v in os.environ.items() if k != "RESIDENT_DEBUG"}
    process = subprocess.Popen(
        [sys.executable, "-m", "resident.cli", "--home", str(tmp_path / "realm-home"), "realm", "serve",
         "--data", str(tmp_path / "realm-data"), "--port", "0", "--ready-file", str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not ready.exists() or not ready.read_text().strip():
            assert process.poll() is None, f"realm serve exited early: {process.communicate()}"
            assert time.monotonic() < deadline, "realm serve did not get ready in time"
            time.sleep(0.05)
        port = json.loads(ready.read_text())["port"]
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=STOP_TIMEOUT)
    assert process.returncode == 0, err.decode()
    assert b"Traceback" not in err
    assert b"Realm serving" in out
    assert not ready.exists(), "the ready file outlives the server"


def test_the_whole_replication_loop_against_a_real_realm_serve_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    realm_data = tmp_path / "realm-data"
    with realm_serve(tmp_path) as url:
        token = expect_ok(invoke(home, "realm", "enroll", "laptop", "--data", str(realm_data))).stdout.strip()
        token_file = tmp_path / "laptop.token"
        token_file.write_text(token + "\n")
        expect_ok(invoke(home, "init", "--realm", url, "--realm-token-file", str(token_file)))
        assert stat.S_IMODE((home / "realm.token").stat().st_mode) == 0o600
        expect_ok(invoke(home, "memory", "enable"))
        fact = _remember(home, DEPLOY)
        # A canonical memory written by deven's session under a grant: delegated, as the runtime marks it.
        with Runtime.open(home) as runtime:
            promoted = delegated_promotion(runtime, "promote me")

        settled = expect_json(invoke(home, "replication", "sync", "--timeout", "20", "--json"))
        assert settled["settled"] is True
        assert "error" not in settled
        assert (settled["counts"]["synced"], settled["counts"]["conflict"]) == (1, 1)
        status = expect_json(invoke(home, "replication", "status", promoted, "--json"))
        assert status["state"] == "conflict"
        assert "delegated path" in status["reason"]
        expect_error(invoke(home, "memory", "show", promoted, "--as", "deven"), "RecordWithheld", naming=("conflict",))

        admin = ("--token-file", str(realm_data / "admin.token"))
        invalidated = expect_json(invoke(home, "realm", "invalidate", fact, "--reason", "stale fact", *admin, "--json"))
        assert invalidated["id"] == fact
        expect_ok(invoke(home, "replication", "sync", "--timeout", "20"))
        expect_error(
            invoke(home, "memory", "show", fact, "--as", "deven"),
            "RecordWithheld",
            naming=("invalidated", "stale fact"),
        )
        assert expect_json(invoke(home, "recall", "deven", "deploy migration promote", "--json"))["hits"] == []

        readmitted = expect_json(
            invoke(home, "reconcile", fact, "--readmit", "--text", "the deploy needs two migrations", "--json")
        )
        assert (readmitted["action"], readmitted["replication"]) == ("readmit", "pending_review")
        rolled_back = expect_ok(invoke(home, "reconcile", promoted, "--rollback")).stdout
        assert rolled_back.startswith(f"{promoted} rolled back")
        expect_ok(invoke(home, "replication", "sync", "--timeout", "20"))
        hits = expect_json(invoke(home, "recall", "deven", "deploy migrations", "--json"))["hits"]
        assert [(hit["id"], hit["replication"]) for hit in hits] == [(readmitted["new_id"], "synced")]


# -- without a Realm -----------------------------------------------------------------------------


def test_replication_status_counts_records_and_says_why_they_stay_pending(home: Path) -> None:
    record_id = _remember(home, DEPLOY)
    counts = expect_json(invoke(home, "replication", "status", "--json"))
    assert counts["counts"]["pending"] == 1
    assert counts["realm"] is None
    assert "resident init --realm" in counts["note"]
    text = expect_ok(invoke(home, "replication", "status")).stdout
    assert "pending 1" in text
    one = expect_json(invoke(home, "replication", "status", record_id, "--json"))
    assert (one["id"], one["state"], one["attempts"]) == (record_id, "pending", 0)
    expect_error(invoke(home, "replication", "status", "mem_nothing", "--json"), "RecordNotFound")


def test_sync_without_a_realm_exits_1_naming_the_pending_count(home: Path) -> None:
    _remember(home, DEPLOY)
    _remember(home, "a second note")
    outcome = invoke(home, "replication", "sync")
    assert outcome.code == 1
    # No Realm: the sync answers at once, and says why instead of claiming it waited its 30 s.
    assert outcome.stderr == (
        "error: 2 records are pending and stay so: no Realm is configured for this home; "
        "run `resident init --realm URL`\n"
    )
    assert "pending 2" in outcome.stdout

    outcome = invoke(home, "replication", "sync", "--timeout", "0.2", "--json")
    assert outcome.code == 1
    assert outcome.stderr == ""
    document = json.loads(outcome.stdout)
    assert document["settled"] is False
    assert document["pending"] == 2
    assert document["error"]["type"] == "ReplicationPending"


def test_sync_with_realm_down_keeps_records_pending(tmp_path: Path) -> None:
    home = tmp_path / "home"
    expect_ok(invoke(home, "init", "--realm", f"http://127.0.0.1:{_closed_port()}"))
    expect_ok(invoke(home, "memory", "enable"))
    record_id = _remember(home, DEPLOY)
    outcome = invoke(home, "replication", "sync", "--timeout", "1", "--json")
    assert outcome.code == 1, outcome.describe()
    document = json.loads(outcome.stdout)
    assert document["error"]["type"] == "ReplicationPending"
    assert document["pending"] == 1
    one = expect_json(invoke(home, "replication", "status", record_id, "--json"))
    assert one["state"] == "pending"


def test_reconcile_readmits_a_conflicted_record_as_a_version_withheld_until_realm_accepts_it(home: Path) -> None:
    record_id = _remember(home, DEPLOY, "--canonical")
    withhold(home, record_id, "non-canonical memory cannot be promoted through a delegated path",
             rule="delegated_promotion")
    answer = expect_json(invoke(home, "reconcile", record_id, "--readmit", "--no-canonical", "--json"))
    assert (answer["id"], answer["action"], answer["replication"]) == (record_id, "readmit", "pending_review")
    # Neither the withheld record nor its new version is served until Realm accepts the new one.
    assert expect_json(invoke(home, "recall", "deven", "deploy", "--json"))["hits"] == []
    expect_error(invoke(home, "memory", "show", answer["new_id"], "--as", "deven"), "RecordWithheld",
                 naming=("pending_review",))
    status = expect_json(invoke(home, "replication", "status", "--json"))
    assert status["counts"]["pending_review"] == 1
    accept(home, answer["new_id"])
    hits = expect_json(invoke(home, "recall", "deven", "deploy", "--json"))["hits"]
    assert [hit["id"] for hit in hits] == [answer["new_id"]]
    assert hits[0]["body"] == DEPLOY
    expect_error(invoke(home, "reconcile", record_id, "--rollback"), "InvalidInput", naming=("already reconciled",))


def test_reconcile_rollback_retracts_and_keeps_it_withheld(home: Path) -> None:
    record_id = _remember(home, DEPLOY)
    withhold(home, record_id, "rejected")
    assert expect_json(invoke(home, "reconcile", record_id, "--rollback", "--json"))["action"] == "rollback"
    expect_error(invoke(home, "memory", "show", record_id, "--as", "deven"), "RecordWithheld")
    assert expect_json(invoke(home, "recall", "deven", "deploy", "--json"))["hits"] == []


RECONCILE_MISTAKES = {
    "neither action": ((), "InvalidInput", "choose one"),
    "both actions": (("--rollback", "--readmit"), "InvalidInput", "choose one"),
    "text with rollback": (("--rollback", "--text", "x"), "InvalidInput", "--readmit"),
}


@pytest.mark.parametrize("mistake", list(RECONCILE_MISTAKES))
def test_reconcile_needs_exactly_one_action(home: Path, mistake: str) -> None:
    options, error_type, named = RECONCILE_MISTAKES[mistake]
    record_id = _remember(home, DEPLOY)
    withhold(home, record_id, "rejected")
    expect_error(invoke(home, "reconcile", record_id, *options, "--json"), error_type, naming=(named,))
    expect_error(invoke(home, "memory", "show", record_id, "--as", "deven", "--json"), "RecordWithheld")


def test_reconcile_refuses_a_record_that_is_not_withheld_or_does_not_exist(home: Path) -> None:
    record_id = _remember(home, DEPLOY)
    expect_error(invoke(home, "reconcile", record_id, "--rollback"), "InvalidInput", naming=("not withheld",))
    expect_error(invoke(home, "reconcile", "mem_nothing", "--readmit", "--json"), "RecordNotFound")
    assert expect_json(invoke(home, "memory", "show", record_id, "--as", "deven", "--json"))["lifecycle"] == "active"


# -- the governance side -------------------------------------------------------------------------


def test_realm_invalidate_needs_a_realm_url(home: Path) -> None:
    expect_error(invoke(home, "realm", "invalidate", "mem_1", "--reason", "r"), "InvalidInput", naming=("--realm",))


def test_realm_invalidate_with_realm_down_is_one_line(home: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    token = tmp_path / "admin.token"
    token.write_text("admin." + "A" * 43)
    expect_error(
        invoke(home, "realm", "invalidate", "mem_1", "--reason", "r", "--realm", url, "--token-file", str(token),
               "--json"),
        "RealmUnavailable",
        naming=(url,),
    )


def test_realm_serve_refuses_a_non_loopback_host_without_announcing_itself(tmp_path: Path) -> None:
    expect_error(
        invoke(tmp_path / "home", "realm", "serve", "--host", "0.0.0.0", "--port", "0"),
        "InvalidInput",
        naming=("--allow-remote",),
    )
