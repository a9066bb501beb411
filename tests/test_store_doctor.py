"""`resident doctor` finds each kind of damage and says where; `resident salvage` copies out every
record that still reads and verifies, from the live rows or the event log, and names the rest."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from resident import Runtime
from resident.errors import HomeInUse, InvalidInput
from resident.messages.memory import MemoryRecord, RecordAdmitted
from resident.messages.store import Commit, DoctorReport
from resident.store.tables import RECORDS
from tests.cli_helpers import expect_error, invoke, withhold
from tests.store_damage import MARK, data_file, make_home, rot_text, scramble_pages, stored

EXIT_DAMAGED = 3


def _finding(report: DoctorReport, check: str) -> tuple[str, ...]:
    for finding in report.findings:
        if finding.check == check:
            return finding.problems
    raise AssertionError(f"no {check} check in {report}")


def _records(home: Path) -> dict[str, MemoryRecord]:
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        return dict(reader.items(RECORDS))


def test_doctor_finds_a_sound_home_sound_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_home(home, 5)
    before = data_file(home).read_bytes()
    report = Runtime.doctor(home)
    assert report.sound, report
    assert [f.check for f in report.findings] == [
        "configuration", "structure", "tables", "event log", "records", "sessions",
    ]
    assert data_file(home).read_bytes() == before
    outcome = invoke(home, "doctor")
    assert outcome.code == 0, outcome.describe()
    assert "the home is sound" in outcome.stdout


def test_a_record_whose_row_rotted_fails_its_digest_and_its_events_and_salvage_keeps_the_logged_version(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    records = make_home(home, 5)
    row, _ = stored(home, records[2])
    rot_text(home, row)
    report = Runtime.doctor(home)
    assert not report.sound
    assert _finding(report, "records") == (
        f"record {records[2].id}: its content does not match its digest (changed or damaged on disk)",
    )
    assert _finding(report, "event log") == (f"records/{records[2].id} differs from the state its events rebuild",)

    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert salvaged.saved["records"] == 5
    assert salvaged.lost == ()
    assert salvaged.damage == (
        f"record {records[2].id}: its stored row does not verify; the version its events rebuild was kept",
    )
    kept = _records(tmp_path / "new")
    assert kept[records[2].id] == records[2]
    assert Runtime.doctor(tmp_path / "new").sound


def test_a_record_whose_event_rotted_is_saved_from_its_row(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 5)
    _, logged = stored(home, records[3])
    rot_text(home, logged)
    report = Runtime.doctor(home)
    assert _finding(report, "records") == ()
    assert _finding(report, "event log") == (f"records/{records[3].id} differs from the state its events rebuild",)
    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert salvaged.lost == ()
    assert _records(tmp_path / "new") == {record.id: record for record in records}


def test_a_record_rotted_in_both_copies_is_named_lost_and_the_rest_are_saved(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 5)
    row, logged = stored(home, records[1])
    rot_text(home, row)
    rot_text(home, logged)
    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert not salvaged.complete
    assert salvaged.lost == (
        f"record {records[1].id}: its content does not match its digest (changed or damaged on disk)",
    )
    assert set(_records(tmp_path / "new")) == {record.id for record in records} - {records[1].id}


def test_a_damaged_page_of_the_records_table_is_found_by_structure_and_salvaged_from_the_event_log(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    records = make_home(home, 40)
    row, _ = stored(home, records[0])
    scramble_pages(home, row)
    report = Runtime.doctor(home)
    assert _finding(report, "structure")
    assert [f.skipped != "" for f in report.findings] == [False, False, True, True, True, True]

    outcome = invoke(home, "salvage", str(tmp_path / "new"), "--json")
    assert outcome.code == EXIT_DAMAGED, outcome.describe()
    salvaged = json.loads(outcome.stdout)
    assert salvaged["saved"]["records"] == 40
    assert salvaged["lost"] == []
    assert any(note.startswith("records:") for note in salvaged["damage"])
    assert _records(tmp_path / "new") == {record.id: record for record in records}
    assert data_file(home).exists(), "the damaged home is left as it was"


def test_a_truncated_home_is_salvaged_without_a_crash_and_the_events_it_lost_are_reported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 40)
    path = data_file(home)
    with path.open("r+b") as stream:
        # The last sixth of this home's file holds pages of the event log only (the records' rows sit lower).
        stream.truncate(path.stat().st_size * 5 // 6)
    report = Runtime.doctor(home)
    assert any("beyond EOF" in problem for problem in _finding(report, "structure"))
    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert not salvaged.complete
    assert any(note.startswith("events: ") and "could not be read" in note for note in salvaged.damage)
    # The cut took pages of the log only here; every record's live row still read and verified.
    assert _records(tmp_path / "new") == {record.id: record for record in records}
    assert Runtime.doctor(tmp_path / "new").sound


def test_salvage_keeps_a_withheld_record_withheld(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 3)
    withhold(home, records[0].id, "Realm refused it")
    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert salvaged.complete
    kept = _records(tmp_path / "new")
    assert kept[records[0].id].replication == "conflict"
    with Runtime.open(tmp_path / "new") as runtime:
        assert records[0].id not in [hit.id for hit in runtime.member("deven").recall(f"{MARK} deploy")]


def test_doctor_and_salvage_refuse_a_home_in_use_and_a_destination_that_is_not_empty(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_home(home, 2)
    with Runtime.open(home):
        with pytest.raises(HomeInUse):
            Runtime.doctor(home)
        with pytest.raises(HomeInUse):
            Runtime.salvage(tmp_path / "new", home)
    assert not (tmp_path / "new").exists(), "a failed salvage leaves no half-made home"
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.txt").write_text("mine")
    expect_error(invoke(home, "salvage", str(occupied)), "InvalidInput", naming=("not an empty directory",))
    assert [p.name for p in occupied.iterdir()] == ["notes.txt"]
    with pytest.raises(InvalidInput, match="outside the damaged home"):
        Runtime.salvage(home / "inside", home)


def test_doctor_never_creates_a_home_that_does_not_exist(tmp_path: Path) -> None:
    expect_error(invoke(tmp_path / "nowhere", "doctor", "--json"), "InvalidInput", naming=("no home",))
    assert not (tmp_path / "nowhere").exists()


def test_doctor_prints_a_hostile_record_id_escaped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 1)
    # An id that would retitle the terminal if printed raw, on a record whose digest does not match.
    forged = msgspec.structs.replace(records[0], id="\x1b]0;pwned\x07")
    with Runtime.open(home) as runtime:
        runtime._internal.write(Commit(events=(RecordAdmitted(at=forged.recorded_at, record=forged),)))
    outcome = invoke(home, "doctor")
    assert outcome.code == EXIT_DAMAGED, outcome.describe()
    assert "\x1b" not in outcome.stdout
    assert "record \\x1b]0;pwned\\x07: its content does not match its digest" in outcome.stdout
