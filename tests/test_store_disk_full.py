"""Out of room: a real full disk (a small tmpfs) and a full map refuse writes by name, keep reads
working, show the writer degraded, and resume by themselves once a write fits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb
import pytest

import resident.store.store as store_module
from resident import Runtime
from resident.clock import ManualClock
from resident.errors import DiskFull, MapFull, StoreFailed
from resident.messages.store import GetWriterStatistics, WriterStatistics
from tests.cli_helpers import expect_error, run_process
from tests.small_filesystem import SmallFilesystem, small_filesystem
from tests.store_helpers import admitted, commit, open_home, prepare, running_writer

E = TypeVar("E", DiskFull, MapFull)
# Bodies this long fill a few hundred KiB in a few dozen writes.
TEXT = "the staging deploy needs the migration first; " * 300


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[SmallFilesystem]:
    with small_filesystem(tmp_path / "disk", "8m") as mounted:
        yield mounted


def _writer(runtime: Runtime) -> WriterStatistics:
    statistics: WriterStatistics = runtime._internal.wiring.writer.ask(GetWriterStatistics(), 10.0)
    return statistics


def _remember_until_full(runtime: Runtime, refusal: type[E] = DiskFull) -> tuple[list[str], E]:  # type: ignore[assignment]
    """Remember long notes until one is refused with `refusal`: the ids acknowledged, and the refusal."""
    member = runtime.member("deven")
    acknowledged: list[str] = []
    for index in range(500):
        try:
            acknowledged.append(member.remember(f"note {index}: {TEXT}").id)
        except refusal as error:
            return acknowledged, error
    raise AssertionError(f"no {refusal.__name__} in 500 writes")


def test_a_full_disk_refuses_writes_as_disk_full_and_resumes_by_itself_once_space_is_freed(
    disk: SmallFilesystem,
) -> None:
    clock = ManualClock()
    with Runtime.open(disk.root / "home", clock=clock) as runtime:
        runtime.memory.enable()
        disk.fill(leave=256 * 1024)
        acknowledged, refusal = _remember_until_full(runtime)
        assert acknowledged, "some writes fit before the disk filled"
        assert "is full" in refusal.message
        assert "is free" in refusal.message
        assert "resume by themselves" in refusal.message
        assert refusal.needed > len(TEXT)

        # Refusing: the next write is answered at once, without another failed transaction.
        failed_before = _writer(runtime).failed_commits
        with pytest.raises(DiskFull):
            runtime.member("deven").remember("one more while full")
        writer = _writer(runtime)
        assert (writer.state, writer.failed_commits) == ("refusing", failed_before)
        child = runtime.statistics().child("writer")
        assert child.state == "degraded"
        assert child.condition.startswith("refusing writes: DiskFull:")

        # Reads and status keep working.
        assert runtime.member("deven").get(acknowledged[0]).id == acknowledged[0]
        assert runtime.member("deven").recall("staging deploy migration")
        assert runtime.memory.status().records == len(acknowledged)

        # Still full: the check finds no room, and the writer keeps refusing.
        clock.advance(60.0)
        assert _writer(runtime).state == "refusing"

        disk.drain()
        clock.advance(60.0)
        assert _writer(runtime).state == "running"
        assert runtime.statistics().child("writer").state == "running"
        after = runtime.member("deven").remember("written once space was freed").id
        for record_id in [*acknowledged, after]:
            assert runtime.member("deven").get(record_id).id == record_id


@pytest.mark.slow
def test_status_and_reads_of_a_home_on_a_full_disk_work_in_a_new_process(disk: SmallFilesystem) -> None:
    home = disk.root / "home"
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        disk.fill(leave=256 * 1024)
        acknowledged, _ = _remember_until_full(runtime)
    disk.fill(leave=0)
    status = run_process(home, "status", "--json")
    assert status.code == 0, status.describe()
    shown = run_process(home, "memory", "show", acknowledged[-1], "--as", "deven", "--json")
    assert shown.code == 0, shown.describe()
    # Long enough that LMDB's free pages cannot take it: it needs new pages at the end of the file.
    refused = run_process(home, "remember", "deven", "-", input=TEXT.encode())
    expect_error(refused, "DiskFull", naming=("is full", "resume by themselves"))


def test_an_io_error_on_a_disk_with_room_is_not_taken_for_a_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = store_module._apply_write

    def input_output_error(*arguments: Any) -> Any:
        raise lmdb.Error("mdb_txn_commit: Input/output error")

    with open_home(tmp_path / "home") as store:
        prepare(store)
        monkeypatch.setattr(store_module, "_apply_write", input_output_error)
        ((_, error, _),) = store.commit([commit(admitted("r1"))])
        assert isinstance(error, StoreFailed)
        monkeypatch.setattr(store_module, "_apply_write", original)
        assert store.failure.endswith("Input/output error")


def test_a_full_map_refuses_writes_as_map_full_while_reads_and_status_keep_working(tmp_path: Path) -> None:
    clock = ManualClock()
    small = 1 << 20
    with Runtime.open(tmp_path / "home", clock=clock, map_size=small, max_map_size=2 * small) as runtime:
        runtime.memory.enable()
        member = runtime.member("deven")
        acknowledged, refusal = _remember_until_full(runtime, MapFull)
        assert acknowledged
        assert "limit of 2.0 MiB" in refusal.message
        assert refusal.needed > len(TEXT)
        assert _writer(runtime).state == "refusing"
        assert runtime.statistics().child("writer").condition.startswith("refusing writes: MapFull:")
        assert member.get(acknowledged[-1]).id == acknowledged[-1]
        assert runtime.memory.status().records == len(acknowledged)
        # The map cannot grow past its limit, so the checks keep finding no room.
        clock.advance(120.0)
        assert _writer(runtime).state == "refusing"
        with pytest.raises(MapFull):
            member.remember("still no room in the map")


def test_a_write_told_without_a_reply_while_refusing_does_not_crash_the_writer(tmp_path: Path) -> None:
    with open_home(tmp_path / "home", map_size=1 << 20, max_map_size=1 << 20) as store:
        prepare(store)
        with running_writer(store) as writer:
            with pytest.raises(MapFull):
                writer.ask(commit(*(admitted(f"r{index}") for index in range(3000))), 30)
            writer.tell(commit(admitted("told")))
            statistics: WriterStatistics = writer.ask(GetWriterStatistics(), 10)
            assert statistics.state == "refusing"
            assert statistics.refused >= 1
