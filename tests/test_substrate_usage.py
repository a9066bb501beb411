"""The substrate's usage flushing on its own: counts written after their delay, or at once when a batch is full."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from resident.actors.substrate_usage import USAGE_BATCH, USAGE_FLUSH_SECONDS, UsageFlush
from resident.clock import ManualClock
from resident.supervisor import WakeUp


@dataclass(frozen=True)
class _Due:
    """The wake-up's message (delivered straight back to the machine here, as the actor's inbox would)."""


class _Rig:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.written: list[list[str]] = []
        self.usage = UsageFlush(WakeUp(self.clock, lambda _message: self.usage.due(), _Due()), self._write)

    def _write(self, ids: Sequence[str]) -> None:
        self.written.append(list(ids))


@pytest.fixture
def rig() -> _Rig:
    return _Rig()


def test_counts_are_written_after_the_flush_delay_and_not_before(rig: _Rig) -> None:
    rig.usage.note(["a", "b"])
    rig.clock.advance(USAGE_FLUSH_SECONDS * 0.9)
    assert rig.written == []
    rig.usage.note(["a"])  # joins the pending flush instead of pushing it back
    rig.clock.advance(USAGE_FLUSH_SECONDS * 0.1)
    assert rig.written == [["a", "b", "a"]]
    assert len(rig.usage) == 0
    assert rig.clock.pending() == 0


def test_a_full_batch_is_written_at_once(rig: _Rig) -> None:
    ids = [f"r{i}" for i in range(USAGE_BATCH)]
    rig.usage.note(ids)
    assert rig.written == [ids]
    assert rig.clock.pending() == 0


def test_nothing_counted_schedules_nothing_and_writes_nothing(rig: _Rig) -> None:
    rig.usage.note([])
    rig.usage.flush()
    rig.clock.advance(USAGE_FLUSH_SECONDS * 4)
    assert (rig.written, rig.clock.pending()) == ([], 0)


def test_a_flush_before_the_wake_up_leaves_the_wake_up_nothing_to_write(rig: _Rig) -> None:
    rig.usage.note(["a"])
    rig.usage.flush()
    rig.clock.advance(USAGE_FLUSH_SECONDS)
    assert rig.written == [["a"]]
    rig.usage.note(["b"])  # a new count schedules a new flush once the old wake-up ran
    rig.clock.advance(USAGE_FLUSH_SECONDS)
    assert rig.written == [["a"], ["b"]]
