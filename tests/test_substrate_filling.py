"""The substrate's vector filling on its own: retries back off by the embedder's Backoff, requests have deadlines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from resident.actors.substrate_embedder import EMBEDDER_BACKOFF, FILL_DEADLINE, EmbedderState
from resident.actors.substrate_filling import FILL_DEADLINE_PER_TEXT, FillDeadline, VectorFilling
from resident.clock import ManualClock, Timer
from resident.supervisor import WakeUp


@dataclass(frozen=True)
class _Fill:
    """The wake-up's message."""


class _Rig:
    """The machine with its wake-up and deadlines on a manual clock; what would reach the actor is kept in order."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.told: list[tuple[float, Any]] = []
        self.embedder = EmbedderState(spec="local", name="local")
        self.filling = VectorFilling(WakeUp(self.clock, self._tell, _Fill()), self._schedule)

    def _tell(self, message: Any) -> None:
        self.told.append((self.clock.monotonic(), message))

    def _schedule(self, delay: float, message: Any) -> Timer:
        return self.clock.call_later(delay, lambda: self._tell(message))

    def fills(self) -> list[float]:
        return [at for at, message in self.told if isinstance(message, _Fill)]


@pytest.fixture
def rig() -> _Rig:
    return _Rig()


def test_failed_requests_are_retried_after_the_backoff_of_each_failure_in_a_row(rig: _Rig) -> None:
    start = rig.clock.monotonic()
    expected: list[float] = []
    at = start
    for attempt in range(1, 5):
        rig.filling.asked(attempt, (f"r{attempt}",), texts=1)
        wait = EMBEDDER_BACKOFF.delay(attempt, 0.0)
        rig.filling.failed(rig.embedder.failed("connection refused"))
        rig.clock.advance(wait * 0.99)
        assert rig.fills() == expected  # not before its wait
        rig.clock.advance(wait * 0.01)
        at += wait
        expected.append(at)
        assert rig.fills() == pytest.approx(expected)
        assert rig.filling.due()  # the retry may ask again: the failed request is gone
        assert rig.filling.in_progress == set()
    assert [b - a for a, b in zip([start, *expected], expected, strict=False)] == pytest.approx([1.0, 2.0, 4.0, 8.0])


def test_a_success_makes_the_next_failure_wait_the_least_again(rig: _Rig) -> None:
    for _ in range(3):
        rig.embedder.failed("down")
    rig.embedder.succeeded(1, 0.01, fill=True)
    rig.filling.failed(rig.embedder.failed("down again"))
    rig.clock.advance(EMBEDDER_BACKOFF.min)
    assert len(rig.fills()) == 1


def test_a_request_the_worker_never_answers_meets_its_deadline(rig: _Rig) -> None:
    rig.filling.asked(7, ("a", "b"), texts=2)
    assert not rig.filling.due()  # no second request while one is out
    deadline = FILL_DEADLINE + 2 * FILL_DEADLINE_PER_TEXT
    rig.clock.advance(deadline - 0.01)
    assert not [m for _, m in rig.told if isinstance(m, FillDeadline)]
    rig.clock.advance(0.01)
    assert [m for _, m in rig.told if isinstance(m, FillDeadline)] == [FillDeadline(7)]
    assert rig.filling.asks(7)


def test_an_answered_request_cancels_its_deadline_and_a_stale_token_is_not_asked(rig: _Rig) -> None:
    rig.filling.asked(3, ("a",), texts=1)
    assert rig.filling.in_progress == {"a"}
    assert rig.filling.answered() == ("a",)
    assert not rig.filling.asks(3)
    assert rig.filling.in_progress == set()
    assert rig.clock.pending() == 0


def test_records_being_written_stay_out_of_the_next_chunk_until_written(rig: _Rig) -> None:
    rig.filling.writing(["a", "b"])
    assert rig.filling.in_progress == {"a", "b"}
    rig.filling.written(["a"])
    assert rig.filling.in_progress == {"b"}
    rig.filling.restart()
    assert rig.filling.in_progress == set()
