"""A home written before the usage table existed (its data file has no `usage` table) is no damage:
it opens, `doctor` finds it sound and `salvage` copies every record of it without naming a loss."""

from __future__ import annotations

from pathlib import Path

from resident import Runtime
from resident.messages.memory import MemoryRecord
from resident.store.environment import open_environment
from resident.store.tables import RECORDS, USAGE
from tests.store_damage import data_file, make_home


def _drop_usage_table(home: Path) -> None:
    """Make `home` as a release before the usage table left it: the table is not in the data file at all."""
    directory = data_file(home).parent
    env = open_environment(directory, map_size=max(64 << 20, data_file(home).stat().st_size))
    try:
        with env.begin(write=True) as txn:
            txn.drop(env.open_db(USAGE.name.encode("ascii"), txn=txn), delete=True)
        with env.begin(write=False) as txn:
            names = [bytes(key) for key, _ in txn.cursor()]
    finally:
        env.close()
    assert USAGE.name.encode("ascii") not in names


def _records(home: Path) -> dict[str, MemoryRecord]:
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        return dict(reader.items(RECORDS))


def test_a_home_without_the_usage_table_is_sound_and_salvaged_whole(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 4)
    _drop_usage_table(home)
    report = Runtime.doctor(home)
    assert report.sound, report
    salvaged = Runtime.salvage(tmp_path / "new", home)
    assert salvaged.lost == (), salvaged
    assert salvaged.damage == (), salvaged
    assert _records(tmp_path / "new") == {record.id: record for record in records}
    # And it still opens as it is, serving every record.
    assert _records(home) == {record.id: record for record in records}
