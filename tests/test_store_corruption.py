"""A damaged data file is `StoreCorrupted`, naming the file and the way out, on every surface:
opening, `status`, `backup`, a read of a rotted value; a truncated file never kills the process."""

from __future__ import annotations

from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import StoreCorrupted
from tests.cli_helpers import expect_error, run_process
from tests.store_damage import data_file, make_home, rot_text, scramble_pages, stored


def _scramble_rows(home: Path) -> None:
    """Damage the records table's page holding the first record (its events stay intact)."""
    records = make_home(home, 30)
    row, _ = stored(home, records[0])
    scramble_pages(home, row)


def test_opening_a_home_with_a_damaged_page_is_store_corrupted_naming_the_file_and_the_way_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _scramble_rows(home)
    with pytest.raises(StoreCorrupted) as caught:
        Runtime.open(home)
    message = caught.value.message
    assert str(data_file(home)) in message
    assert "resident doctor" in message
    assert "resident salvage DEST" in message
    assert isinstance(caught.value, OSError)


@pytest.mark.slow
def test_status_and_backup_of_a_damaged_home_exit_1_with_store_corrupted_not_an_internal_error(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    _scramble_rows(home)
    expect_error(run_process(home, "status"), "StoreCorrupted", naming=("data.mdb", "resident doctor"))
    expect_error(run_process(home, "backup", str(tmp_path / "b"), "--json"), "StoreCorrupted")
    assert not (tmp_path / "b").exists()


def test_a_truncated_data_file_is_store_corrupted_instead_of_a_bus_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    make_home(home, 30)
    path = data_file(home)
    with path.open("r+b") as stream:
        stream.truncate(path.stat().st_size // 2)
    with pytest.raises(StoreCorrupted, match="truncated"):
        Runtime.open(home)


def test_a_rotted_record_does_not_stop_the_home_opening_and_doctor_names_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 3)
    row, _ = stored(home, records[1])
    # The row's `lifecycle` key becomes `elcycefil`: the value no longer decodes as a record. No actor reads
    # every record before it answers its start (replication keeps its index with the records, the substrate
    # loads or builds its index after its start), so the home opens; the damage is doctor's to find.
    rot_text(home, row, "lifecycle")
    with Runtime.open(home) as runtime:
        assert runtime.statistics().escalated == ""
    report = Runtime.doctor(home)
    assert not report.sound
    assert any(records[1].id in " ".join(finding.problems) for finding in report.findings), report


def test_an_empty_data_file_left_by_an_interrupted_first_open_is_initialized_not_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "store.1").mkdir(parents=True)
    (home / "store.1" / "data.mdb").write_bytes(b"")
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        assert runtime.member("deven").remember("the first note").id
