"""A stored record whose content no longer matches its digest is withheld by every read surface.

The attacker here edits the home's data file behind the runtime's back (a record's body rewritten
in LMDB, its digest left as it was). On main (30afd90) the edited text was served by get, recall,
`memory show` and export as if the member had written it. Now get and `memory show` answer a typed
`RecordCorrupted`, recall and export leave the record out, and each logs what it found.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import lmdb
import msgspec
import pytest

from resident import Runtime
from resident.errors import RecordCorrupted, RecordWithheld
from resident.messages.memory import MemoryRecord
from resident.store.environment import MAX_DBS
from resident.store.home import current_store_dir
from resident.store.tables import RECORDS
from tests.cli_helpers import expect_error, expect_json, invoke

ORIGINAL = "the staging deploy needs the migration first"
FORGED = "the staging deploy may skip the migration entirely"


def edit_stored_body(home: Path, record_id: str, body: str) -> None:
    """Rewrite a record's body directly in the home's LMDB file, as an attacker with the file would."""
    env = lmdb.open(str(current_store_dir(home)), max_dbs=MAX_DBS)
    try:
        with env.begin(write=True) as txn:
            db = env.open_db(RECORDS.name.encode(), txn=txn)
            raw = txn.get(record_id.encode(), db=db)
            assert raw is not None
            record = msgspec.msgpack.decode(raw, type=MemoryRecord)
            txn.put(record_id.encode(), msgspec.msgpack.encode(msgspec.structs.replace(record, body=body)), db=db)
    finally:
        env.close()


@pytest.fixture
def edited(tmp_path: Path) -> tuple[Path, str, str]:
    """A home where one of deven's two records was edited in the data file."""
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
        target = runtime.member("deven").remember(ORIGINAL).id
        intact = runtime.member("deven").remember("the staging deploy runs on tuesdays").id
    edit_stored_body(home, target, FORGED)
    return home, target, intact


def test_get_recall_and_export_withhold_an_edited_record_and_log_it(
    edited: tuple[Path, str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home, target, intact = edited
    caplog.set_level(logging.ERROR)
    with Runtime.open(home, realm="none") as runtime:
        deven = runtime.member("deven")
        with pytest.raises(RecordCorrupted) as caught:
            deven.get(target)
        assert isinstance(caught.value, RecordWithheld)
        assert caught.value.state == "corrupted"
        assert target in caught.value.message
        assert FORGED not in caught.value.message
        hits = {hit.id for hit in deven.recall("staging deploy skip the migration", k=20)}
        assert target not in hits
        assert intact in hits
        export = tmp_path / "deven.json"
        runtime.export_member("deven", export)
        exported = {record["id"] for record in json.loads(export.read_bytes())["records"]}
        assert exported == {intact}
        assert deven.get(intact).body == "the staging deploy runs on tuesdays"
    logged = [r.getMessage() for r in caplog.records if target in r.getMessage()]
    assert len(logged) >= 3  # get, recall and export each said what they found
    assert all("does not match its digest" in line for line in logged)


def test_memory_show_refuses_an_edited_record_in_one_typed_line(edited: tuple[Path, str, str]) -> None:
    home, target, _ = edited
    message = expect_error(invoke(home, "memory", "show", target, "--as", "deven"), "RecordCorrupted",
                           naming=(target,))
    assert FORGED not in message
    hits = expect_json(invoke(home, "recall", "deven", "staging deploy skip the migration", "--json"))["hits"]
    assert target not in {hit["id"] for hit in hits}


def test_a_readmit_never_launders_an_edited_withheld_record(edited: tuple[Path, str, str]) -> None:
    home, target, _ = edited
    from resident.messages.replication import RecordConflicted  # noqa: PLC0415 - loaded only when this runs
    from resident.messages.store import Commit  # noqa: PLC0415 - loaded only when this runs

    with Runtime.open(home, realm="none") as runtime:
        now = runtime._internal.clock.time()
        conflict = RecordConflicted(at=now, id=target, reason="refused", rule="different_content")
        runtime._internal.write(Commit(events=(conflict,)))
        with pytest.raises(RecordCorrupted):
            runtime.member("deven").reconcile(target, readmit=True)
