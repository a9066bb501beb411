"""The substrate's index lifecycle on its own: generations, the snapshot check after a load, the build's chunks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from resident.actors.index_snapshot import Snapshot
from resident.actors.substrate_lifecycle import VERIFY_AFTER, IndexLifecycle, Verify
from resident.clock import ManualClock, Timer
from resident.memory.index import RecallIndex
from resident.store.store import Store
from resident.supervisor import WakeUp
from tests.store_helpers import open_home


@dataclass(frozen=True)
class _BuildChunk:
    """The build's wake-up message."""


class _Rig:
    def __init__(self, store: Store) -> None:
        self.clock = ManualClock()
        self.told: list[tuple[float, Any]] = []
        self.life = IndexLifecycle(store, WakeUp(self.clock, self._tell, _BuildChunk()), self._schedule)

    def _tell(self, message: Any) -> None:
        self.told.append((self.clock.monotonic(), message))

    def _schedule(self, delay: float, message: Any) -> Timer:
        return self.clock.call_later(delay, lambda: self._tell(message))


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[_Rig]:
    with open_home(tmp_path / "home") as store:
        rig = _Rig(store)
        yield rig
        rig.life.let_go()


_FILES = (("vectors.npy", 1234),)


def test_a_loaded_snapshot_is_checked_after_verify_after_and_not_before(rig: _Rig) -> None:
    start = rig.clock.monotonic()
    rig.life.resumed(Snapshot(RecallIndex(), seq=7, unverified=_FILES))
    assert (rig.life.source, rig.life.covered_seq, rig.life.building) == ("snapshot", 7, False)
    rig.clock.advance(VERIFY_AFTER * 0.99)
    assert rig.told == []
    rig.clock.advance(VERIFY_AFTER * 0.01)
    [(at, message)] = rig.told
    assert message == Verify(rig.life.generation, _FILES)
    assert at == pytest.approx(start + VERIFY_AFTER)


def test_a_snapshot_with_nothing_to_check_schedules_no_check(rig: _Rig) -> None:
    rig.life.resumed(Snapshot(RecallIndex(), seq=3))
    assert rig.clock.pending() == 0


def test_a_check_for_an_index_since_replaced_is_not_current(rig: _Rig) -> None:
    rig.life.resumed(Snapshot(RecallIndex(), seq=3, unverified=_FILES))
    loaded = rig.life.generation
    assert rig.life.current(loaded)
    rig.life.build_from_store(3, "hash")
    assert not rig.life.current(loaded)
    assert rig.life.current(rig.life.generation)


def test_a_build_of_an_empty_home_ends_at_its_first_chunk_and_asks_for_no_other(rig: _Rig) -> None:
    rig.life.build_from_store(0, "hash")
    assert (rig.life.source, rig.life.building) == ("store", True)
    assert [message for _, message in rig.told] == [_BuildChunk()]
    assert rig.life.step() == []
    assert not rig.life.building
    assert rig.life.step() is None  # a chunk message already queued finds no build
    assert rig.life.finish() is None
    assert [message for _, message in rig.told] == [_BuildChunk()]


def test_events_heard_only_move_the_covered_event_forward(rig: _Rig) -> None:
    rig.life.build_from_store(10, "hash")
    rig.life.covered(8)
    assert rig.life.covered_seq == 10
    rig.life.covered(12)
    assert rig.life.covered_seq == 12
