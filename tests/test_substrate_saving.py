"""The substrate's snapshot saving on its own: when a save is due, one at a time, and what a stop must save."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from resident.actors.substrate_saving import SNAPSHOT_EVERY, SnapshotSaves
from resident.clock import ManualClock
from resident.supervisor import WakeUp


@dataclass(frozen=True)
class _SaveIndex:
    """The wake-up's message."""


class _Rig:
    def __init__(self) -> None:
        self.asked: list[Any] = []
        self.wake = WakeUp(ManualClock(), self.asked.append, _SaveIndex())
        self.saves = SnapshotSaves(self.wake)


@pytest.fixture
def rig() -> _Rig:
    return _Rig()


def test_a_save_is_asked_for_once_enough_records_were_added(rig: _Rig) -> None:
    rig.saves.added(SNAPSHOT_EVERY - 1)
    assert rig.asked == []
    rig.saves.added(1)
    assert rig.asked == [_SaveIndex()]


def test_records_replayed_after_a_load_count_as_unsaved_without_asking_for_a_save(rig: _Rig) -> None:
    rig.saves.replayed(SNAPSHOT_EVERY)
    assert rig.asked == []
    assert rig.saves.wanted_at_close(0)


def test_a_save_asked_for_during_another_follows_it(rig: _Rig) -> None:
    rig.saves.added(10)
    assert rig.saves.may_start()
    assert rig.saves.started(graph_rows=10) == 10
    rig.saves.added(5)
    assert not rig.saves.may_start()  # one at a time
    rig.saves.finished(10, written=True)
    assert rig.asked == [_SaveIndex()]  # the one owed
    assert rig.saves.unsaved == 5
    rig.saves.due()
    assert rig.saves.may_start()


def test_a_failed_write_keeps_its_records_unsaved(rig: _Rig) -> None:
    rig.saves.added(7)
    rig.saves.started(graph_rows=7)
    rig.saves.finished(7, written=False)
    assert rig.saves.unsaved == 7
    assert rig.asked == []


def test_a_stop_saves_when_anything_is_unsaved_running_or_grown_and_not_otherwise(rig: _Rig) -> None:
    rig.saves.loaded(graph_rows=100)
    assert not rig.saves.wanted_at_close(100)
    assert rig.saves.wanted_at_close(101)  # the graph grew on its own thread since the load
    rig.saves.added(1)
    assert rig.saves.wanted_at_close(100)
    rig.saves.started(graph_rows=100)
    assert rig.saves.wanted_at_close(100)  # the running save was dropped with the I/O thread
    rig.saves.finished(1, written=True)
    assert not rig.saves.wanted_at_close(100)
