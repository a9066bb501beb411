"""Wake-ups: one recurring message to self, at most one pending, on the injectable clock, gone with its actor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from resident.clock import ManualClock
from resident.supervisor import ChildContext, SupervisorSpec, WakeUp
from tests.supervision_helpers import WAIT, Fail, Journal, Worker, running_tree, worker


@dataclass(frozen=True)
class _Tick:
    """The wake-up's message."""


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def delivered() -> list[Any]:
    return []


@pytest.fixture
def wake(clock: ManualClock, delivered: list[Any]) -> WakeUp:
    return WakeUp(clock, delivered.append, _Tick())


def test_now_queues_the_message_once_until_done(wake: WakeUp, delivered: list[Any]) -> None:
    assert wake.now()
    assert (wake.state, delivered) == ("queued", [_Tick()])
    assert not wake.now()
    assert not wake.after(1.0)
    assert delivered == [_Tick()]
    wake.done()
    assert wake.state == "idle"
    assert wake.now()
    assert delivered == [_Tick(), _Tick()]


def test_after_arms_one_timer_that_delivers_when_due_and_rearming_keeps_it(
    wake: WakeUp, clock: ManualClock, delivered: list[Any]
) -> None:
    assert wake.after(2.0)
    assert (wake.state, wake.due) == ("armed", clock.monotonic() + 2.0)
    assert not wake.after(0.5)  # idempotent: the first due time stands
    assert not wake.now()
    assert clock.pending() == 1
    clock.advance(1.9)
    assert delivered == []
    clock.advance(0.1)
    assert delivered == [_Tick()]
    # Still pending until the handler says the work ran: a burst meanwhile schedules nothing more.
    assert not wake.after(2.0)
    wake.done()
    assert (wake.state, wake.due) == ("idle", None)
    assert wake.after(2.0)
    clock.advance(2.0)
    assert delivered == [_Tick(), _Tick()]


def test_a_delay_of_zero_or_less_queues_at_once(wake: WakeUp, clock: ManualClock, delivered: list[Any]) -> None:
    assert wake.after(0.0)
    assert (wake.state, delivered, clock.pending()) == ("queued", [_Tick()], 0)


def test_done_before_the_due_time_cancels_the_timer(wake: WakeUp, clock: ManualClock, delivered: list[Any]) -> None:
    wake.after(5.0)
    wake.done()
    assert clock.pending() == 0
    clock.advance(10.0)
    assert delivered == []


def test_cancel_drops_an_armed_wake_up(wake: WakeUp, clock: ManualClock, delivered: list[Any]) -> None:
    wake.after(5.0)
    wake.cancel()
    clock.advance(10.0)
    assert (wake.state, delivered, clock.pending()) == ("idle", [], 0)


# -- inside an actor --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arm:
    delay: float


class _Ticking(Worker):
    """A worker with one wake-up: `_Arm` arms it; each `_Tick` it gets is journaled."""

    def __init__(self, context: ChildContext, journal: Journal, **kwargs: Any) -> None:
        super().__init__(context, journal, **kwargs)
        self._tick = self.wake_up(_Tick())

    def handle(self, message: Any) -> Any:
        match message:
            case _Arm(delay=delay):
                return self._tick.after(delay)
            case _Tick():
                self._tick.done()
                self.journal.add("tick", self.name, self.context.incarnation)
            case _:
                return super().handle(message)
        return None


def test_an_actors_wake_up_arrives_as_a_message_once_however_often_it_is_armed(clock: ManualClock) -> None:
    journal = Journal()
    with running_tree(SupervisorSpec("root", [worker("t", journal, actor=_Ticking)]), clock) as tree:
        address = tree.address("t")
        assert address.ask(_Arm(3.0), timeout=WAIT) is True
        assert address.ask(_Arm(1.0), timeout=WAIT) is False
        clock.advance(3.0)
        journal.wait_for(lambda events: ("tick", "t", 1) in events, "the wake-up arrived")
        assert address.ask(_Arm(1.0), timeout=WAIT) is True  # done() made it idle again
        assert journal.count("tick", "t") == 1


def test_stopping_an_actor_cancels_its_armed_wake_up(clock: ManualClock) -> None:
    journal = Journal()
    with running_tree(SupervisorSpec("root", [worker("t", journal, actor=_Ticking)]), clock) as tree:
        before = clock.pending()
        tree.address("t").ask(_Arm(60.0), timeout=WAIT)
        assert clock.pending() == before + 1
    assert clock.pending() == before


def test_a_crash_cancels_the_incarnations_wake_up(clock: ManualClock) -> None:
    journal = Journal()
    with running_tree(SupervisorSpec("root", [worker("t", journal, actor=_Ticking)]), clock) as tree:
        address = tree.address("t")
        before = clock.pending()
        address.ask(_Arm(60.0), timeout=WAIT)
        address.tell(Fail())
        tree.wait_child("t", state="running", incarnation=2)
        assert clock.pending() == before
        clock.advance(60.0)
        assert address.ask(_Arm(1.0), timeout=WAIT) is True
        assert journal.count("tick", "t") == 0
