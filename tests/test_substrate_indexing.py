"""The substrate's indexing queue on its own: a burst is taken in as one batch after its delay, each record once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from resident.actors.substrate_indexing import INDEX_DELAY, Indexable, IndexingQueue, stack_vectors
from resident.clock import ManualClock
from resident.memory.records import make_record
from resident.messages.memory import Activation, MemoryRecord
from resident.supervisor import WakeUp


@dataclass(frozen=True)
class _IndexQueued:
    """The wake-up's message."""


def _record(number: int) -> MemoryRecord:
    return make_record(
        record_id=f"mem_{number:04d}", owner="deven", scope="AGENT_CORE", bank="agent_core/deven",
        text=f"note {number}", summary=None, kind="experience", counterpart=None, world=None, importance=0.5,
        importance_reason="", confidence=1.0, activation=Activation(), supersedes=None, canonical=False,
        delegated=False, source="test", occurred_at=None, cites=(), now=1_700_000_000.0 + number,
    )  # fmt: skip


class _Rig:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.woken: list[float] = []
        self.queue = IndexingQueue(WakeUp(self.clock, self._wake, _IndexQueued()))

    def _wake(self, _message: Any) -> None:
        self.woken.append(self.clock.monotonic())
        self.queue.due()


@pytest.fixture
def rig() -> _Rig:
    return _Rig()


def test_a_burst_is_taken_in_once_after_the_index_delay_and_not_before(rig: _Rig) -> None:
    start = rig.clock.monotonic()
    rig.queue.admit(_record(1), stored=False)
    rig.clock.advance(INDEX_DELAY / 2)
    rig.queue.admit(_record(2), stored=False)
    rig.queue.admit(_record(3), stored=True)
    rig.clock.advance(INDEX_DELAY / 2 * 0.99)
    assert rig.woken == []
    rig.clock.advance(INDEX_DELAY)
    assert rig.woken == [pytest.approx(start + INDEX_DELAY)]
    assert len(rig.queue) == 3
    assert [r.id for r in rig.queue.take_unread()] == ["mem_0003"]
    assert [r.id for r in rig.queue.take_unanalysed()] == ["mem_0001", "mem_0002"]
    assert (rig.queue.batches, rig.queue.largest_batch, len(rig.queue)) == (1, 2, 0)


def test_a_record_is_queued_once_until_it_is_taken_in(rig: _Rig) -> None:
    record = _record(1)
    rig.queue.admit(record, stored=False)
    rig.queue.admit(record, stored=False)
    rig.queue.admit(record, stored=True)
    assert len(rig.queue) == 1
    [taken] = rig.queue.take_unanalysed()
    rig.queue.ready([Indexable(taken, None)])
    rig.queue.admit(record, stored=False)  # analysed, not indexed yet: still once
    assert len(rig.queue) == 1
    assert [item.record.id for item in rig.queue.take_ready()] == ["mem_0001"]
    rig.queue.admit(record, stored=False)  # the actor checks the index first; the queue no longer holds it
    assert len(rig.queue) == 1


def test_an_empty_take_counts_no_batch(rig: _Rig) -> None:
    assert (rig.queue.take_unanalysed(), rig.queue.take_unread(), rig.queue.take_ready()) == ([], [], [])
    assert rig.queue.batches == 0
    assert rig.clock.pending() == 0


def test_missing_or_odd_width_vectors_become_masked_zero_rows() -> None:
    one = np.ones(3, dtype=np.float32)
    assert stack_vectors([None, None]) == (None, None)
    matrix, present = stack_vectors([one, None, np.ones(2, dtype=np.float32)])
    assert matrix is not None
    assert present is not None
    assert present.tolist() == [True, False, False]
    assert matrix.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
