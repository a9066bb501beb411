"""The substrate's waiting recalls on their own: answered once, by their vector or, at their deadline, without it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from resident.actors.substrate_waiting import (
    BUILD_WAIT,
    BuildDeadline,
    QueryDeadline,
    Search,
    Vector,
    WaitingRecall,
    WaitingRecalls,
)
from resident.clock import ManualClock, Timer
from resident.messages.memory import Principal, Recall

QUERY_WAIT = 0.5


def _search(query: str) -> Search:
    principal = Principal(kind="member", name="deven")
    return Search(Recall(query=query, principal=principal), principal, query, 5, ["deven"])


class _Rig:
    """The machine on a manual clock; a deadline message goes straight back to it, as the actor's inbox would."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.answered: list[tuple[str, Vector | None, float]] = []
        self.refused: list[tuple[str, float]] = []
        self.waiting = WaitingRecalls(self._schedule, self._answer)

    def _schedule(self, delay: float, message: Any) -> Timer:
        if isinstance(message, BuildDeadline):
            return self.clock.call_later(delay, lambda: self._refuse(message.token))
        assert isinstance(message, QueryDeadline)
        return self.clock.call_later(delay, lambda: self.waiting.due(message.token))

    def _refuse(self, token: int) -> None:
        parked = self.waiting.build_due(token)
        if parked is not None:
            self.refused.append((parked[0].query, self.clock.monotonic()))

    def _answer(self, waiting: WaitingRecall, vector: Vector | None) -> None:
        self.answered.append((waiting.search.query, vector, self.clock.monotonic()))

    def park(self, token: int, query: str, wait: float = QUERY_WAIT) -> None:
        self.waiting.wait_for_vector(token, WaitingRecall(_search(query), None, "local"), wait)


@pytest.fixture
def rig() -> _Rig:
    return _Rig()


def test_a_recall_whose_vector_never_comes_is_answered_by_the_exact_path_at_its_deadline(rig: _Rig) -> None:
    start = rig.clock.monotonic()
    rig.park(1, "harbour")
    rig.clock.advance(QUERY_WAIT * 0.99)
    assert rig.answered == []
    assert rig.waiting.waits(1)
    rig.clock.advance(QUERY_WAIT * 0.01)
    [(query, vector, at)] = rig.answered
    assert (query, vector) == ("harbour", None)
    assert at == pytest.approx(start + QUERY_WAIT)
    assert not rig.waiting.waits(1)


def test_a_vector_in_time_answers_with_it_once_and_the_deadline_finds_nothing(rig: _Rig) -> None:
    rig.park(1, "harbour")
    vector = np.ones(4, dtype=np.float32)
    rig.waiting.vector_came(1, vector)
    assert len(rig.answered) == 1
    assert rig.answered[0][1] is vector
    assert rig.clock.pending() == 0  # its deadline was cancelled
    rig.waiting.due(1)  # a deadline already in the inbox
    rig.waiting.vector_came(1, vector)  # or a late second answer
    assert len(rig.answered) == 1


def test_a_vector_after_the_deadline_answers_nobody_a_second_time(rig: _Rig) -> None:
    rig.park(1, "harbour")
    rig.clock.advance(QUERY_WAIT)
    rig.waiting.vector_came(1, np.ones(4, dtype=np.float32))
    assert [(query, vector) for query, vector, _ in rig.answered] == [("harbour", None)]


def test_a_stop_answers_every_waiting_recall_without_a_vector_in_order(rig: _Rig) -> None:
    rig.park(1, "first")
    rig.park(2, "second", wait=0.0)
    rig.waiting.give_up()
    assert [(query, vector) for query, vector, _ in rig.answered] == [("first", None), ("second", None)]
    assert (len(rig.waiting), rig.clock.pending()) == (0, 0)


def test_recalls_during_a_build_are_handed_back_in_order_once(rig: _Rig) -> None:
    assert not rig.waiting.for_build()
    rig.waiting.wait_for_build(_search("a"), None)
    rig.waiting.wait_for_build(_search("b"), None)
    assert rig.waiting.for_build()
    assert [search.query for search, _ in rig.waiting.built()] == ["a", "b"]
    assert rig.waiting.built() == []


def test_a_crash_hands_every_parked_recall_on_unanswered_build_waiters_first(rig: _Rig) -> None:
    rig.park(1, "waiting for its vector")
    rig.waiting.wait_for_build(_search("waiting for the build"), None)
    rescued = [message.query for message, _ in rig.waiting.rescue()]
    assert rescued == ["waiting for the build", "waiting for its vector"]
    assert rig.answered == []
    assert (len(rig.waiting), rig.clock.pending()) == (0, 0)


def test_a_recall_that_waits_for_the_build_past_its_wait_is_refused_then_and_not_before(rig: _Rig) -> None:
    started = rig.clock.monotonic()
    rig.waiting.wait_for_build(_search("early"), None)
    rig.clock.advance(BUILD_WAIT / 2)
    rig.waiting.wait_for_build(_search("later"), None)
    rig.clock.advance(BUILD_WAIT / 2 - 0.001)
    assert rig.refused == []
    rig.clock.advance(0.001)
    assert rig.refused == [("early", started + BUILD_WAIT)]
    # The later one still waits, and the build's end hands it back alone, its deadline cancelled.
    assert [search.query for search, _ in rig.waiting.built()] == ["later"]
    rig.clock.advance(BUILD_WAIT)
    assert rig.refused == [("early", started + BUILD_WAIT)]
    assert rig.clock.pending() == 0


def test_a_build_done_in_time_leaves_no_deadline_behind(rig: _Rig) -> None:
    rig.waiting.wait_for_build(_search("a"), None)
    assert rig.clock.pending() == 1
    assert [search.query for search, _ in rig.waiting.built()] == ["a"]
    assert rig.clock.pending() == 0
    assert not rig.waiting.for_build()

