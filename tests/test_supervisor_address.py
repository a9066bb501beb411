"""Stable addresses: buffering through restarts, dead letters, timeouts, and asks from asyncio.

While a child is down its address holds messages in order and hands them to the next
incarnation; a full buffer turns messages into counted dead letters; an ask never waits longer
than its timeout, and `ask_async` never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import weakref

import pytest

from resident.clock import ManualClock
from resident.errors import ActorUnavailable, AskTimeout, DeadLetter, RuntimeStopped
from resident.supervisor import Address, Backoff, SupervisorSpec, ThreadReply
from tests.supervision_helpers import (
    WAIT,
    Background,
    Echo,
    Fail,
    Hold,
    Journal,
    Note,
    WhoAmI,
    running_tree,
    wait_until,
    worker,
)

# How late a timeout may fire on a loaded test machine and still count as "in time".
SLACK = 0.5

ONE_SECOND_BACKOFF = Backoff(min=1.0, max=1.0, jitter=0.0)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def journal() -> Journal:
    return Journal()


def _got(journal: Journal, name: str) -> list[tuple[object, int]]:
    return [(e[2], e[3]) for e in journal.events("got") if e[1] == name]


# -- buffering through restarts ---------------------------------------------------------------------


def test_messages_sent_during_a_backoff_are_delivered_in_order_to_the_next_incarnation(
    clock: ManualClock, journal: Journal
) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal, backoff=ONE_SECOND_BACKOFF)]), clock) as tree:
        address = tree.address("w")
        address.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "w is backing off")
        address.tell(Note(1))
        address.tell(Note(2))
        asked = Background(lambda: address.ask(Note(3), timeout=WAIT))
        wait_until(lambda: address.buffered == 3, "the ask is buffered")
        address.tell(Note(4))
        assert tree.child("w").buffered == 4
        assert _got(journal, "w") == []

        clock.advance(1.0)
        assert asked.result() == 3
        journal.wait_for(lambda events: len([e for e in events if e[0] == "got"]) == 4, "all four arrived")
        assert _got(journal, "w") == [(1, 2), (2, 2), (3, 2), (4, 2)]
        assert tree.child("w").buffered == 0


def test_messages_queued_behind_a_crash_survive_it_and_reach_the_next_incarnation(
    clock: ManualClock, journal: Journal
) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal)]), clock) as tree:
        address = tree.address("w")
        entered, release = threading.Event(), threading.Event()
        address.tell(Hold(entered, release))
        assert entered.wait(WAIT)
        address.tell(Fail())
        address.tell(Note(1))
        reply = ThreadReply("note 2")
        address.tell(Note(2), reply)
        release.set()
        assert reply.wait(WAIT) == 2
        assert _got(journal, "w") == [(1, 2), (2, 2)]


def test_a_full_buffer_makes_dead_letters_and_an_overflowing_ask_fails_at_once(
    clock: ManualClock, journal: Journal
) -> None:
    child = worker("w", journal, backoff=ONE_SECOND_BACKOFF, capacity=3)
    with running_tree(SupervisorSpec("root", [child]), clock) as tree:
        address = tree.address("w")
        address.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "w is backing off")
        for n in (1, 2, 3):
            address.tell(Note(n))
        started = time.monotonic()
        with pytest.raises(DeadLetter, match="buffer of 3 messages is full"):
            address.ask(Note(4), timeout=WAIT)
        assert time.monotonic() - started < SLACK
        address.tell(Note(5))
        stats = tree.child("w")
        assert (stats.buffered, stats.dead_letters) == (3, 2)

        clock.advance(1.0)
        tree.wait_child("w", state="running", incarnation=2)
        assert address.ask(WhoAmI(), timeout=WAIT) == 2
        assert _got(journal, "w") == [(1, 2), (2, 2), (3, 2)]
        assert tree.child("w").dead_letters == 2


def test_messages_rescued_from_a_crash_into_a_full_buffer_become_dead_letters(
    clock: ManualClock, journal: Journal
) -> None:
    child = worker("w", journal, backoff=ONE_SECOND_BACKOFF, capacity=2)
    with running_tree(SupervisorSpec("root", [child]), clock) as tree:
        address = tree.address("w")
        entered, release = threading.Event(), threading.Event()
        address.tell(Hold(entered, release))
        assert entered.wait(WAIT)
        address.tell(Fail())
        replies = [ThreadReply(f"note {n}") for n in range(4)]
        for n, reply in enumerate(replies):
            address.tell(Note(n), reply)
        release.set()
        with pytest.raises(DeadLetter):
            replies[3].wait(WAIT)
        with pytest.raises(DeadLetter):
            replies[2].wait(WAIT)
        assert tree.child("w").dead_letters == 2
        wait_until(lambda: clock.pending() == 1, "w is backing off")
        clock.advance(1.0)
        assert [reply.wait(WAIT) for reply in replies[:2]] == [0, 1]


# -- asks that cannot be answered -------------------------------------------------------------------


def test_an_ask_to_a_child_backing_off_longer_than_the_timeout_times_out_in_time(
    clock: ManualClock, journal: Journal
) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal, backoff=ONE_SECOND_BACKOFF)]), clock) as tree:
        address = tree.address("w")
        address.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "w is backing off")
        started = time.monotonic()
        with pytest.raises(AskTimeout, match=r"w did not answer Note within 0.2 s \(it is down\)"):
            address.ask(Note("late"), timeout=0.2)
        assert 0.2 <= time.monotonic() - started < 0.2 + SLACK

        # The next incarnation skips the request nobody waits for any more.
        clock.advance(1.0)
        assert address.ask(WhoAmI(), timeout=WAIT) == 2
        assert _got(journal, "w") == []


@pytest.mark.parametrize("ending", ["stopped", "gave up"])
def test_an_ask_to_a_tree_that_ended_times_out_in_time_saying_the_child_is_down(
    clock: ManualClock, journal: Journal, ending: str
) -> None:
    spec = SupervisorSpec("root", [worker("w", journal), worker("other", journal)], intensity=0)
    with running_tree(spec, clock) as tree:
        if ending == "gave up":
            tree.address("w").tell(Fail())
            tree.wait_escalation()
    for name in ("w", "other"):
        started = time.monotonic()
        with pytest.raises(AskTimeout, match=rf"{name} did not answer WhoAmI within 0.2 s \(it is down\)"):
            tree.address(name).ask(WhoAmI(), timeout=0.2)
        assert 0.2 <= time.monotonic() - started < 0.2 + SLACK


def test_a_closed_address_fails_buffered_and_later_messages_at_once_with_the_owners_error(
    clock: ManualClock, journal: Journal
) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal, backoff=ONE_SECOND_BACKOFF)]), clock) as tree:
        address = tree.address("w")
        address.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "w is backing off")
        buffered = ThreadReply("buffered")
        address.tell(Note("buffered"), buffered)

        address.close("the runtime is closed", RuntimeStopped)
        with pytest.raises(RuntimeStopped, match="the runtime is closed"):
            buffered.wait(0.0)
        started = time.monotonic()
        with pytest.raises(RuntimeStopped, match="the runtime is closed"):
            address.ask(WhoAmI(), timeout=WAIT)
        assert time.monotonic() - started < SLACK


def test_a_closed_address_says_who_is_stopped_and_why_by_default() -> None:
    address = Address("w")
    address.close("it exited and is temporary")
    with pytest.raises(ActorUnavailable, match="w is stopped: it exited and is temporary"):
        address.ask(WhoAmI(), timeout=WAIT)


# -- asks from asyncio ------------------------------------------------------------------------------


def test_many_concurrent_async_asks_all_get_their_own_answer(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("a", journal), worker("b", journal)])
    with running_tree(spec, clock) as tree:
        a, b = tree.address("a"), tree.address("b")

        async def main() -> list[int]:
            asks = ((a if n % 2 else b).ask_async(Echo(n), timeout=WAIT) for n in range(2_000))
            answers: list[int] = await asyncio.gather(*asks)
            return answers

        assert asyncio.run(main()) == list(range(2_000))


def test_answered_async_asks_are_not_kept_until_their_timeout_and_the_loop_is_not_kept(
    clock: ManualClock, journal: Journal
) -> None:
    # The timeout watchdog must not hold settled asks (and their messages) for the whole timeout,
    # nor keep an event loop alive after it is done.
    spec = SupervisorSpec("root", [worker("a", journal)])
    with running_tree(spec, clock) as tree:
        address = tree.address("a")
        loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

        async def main() -> weakref.ref[Echo]:
            loops.append(weakref.ref(asyncio.get_running_loop()))
            first = Echo("first")
            assert await address.ask_async(first, timeout=3600.0) == "first"
            for n in range(3):
                assert await address.ask_async(Echo(n), timeout=3600.0) == n
            return weakref.ref(first)

        first = asyncio.run(main())
        # The actor's thread holds the last message it handled until the next one arrives.
        assert address.ask(Echo("next"), timeout=WAIT) == "next"
        gc.collect()
        assert first() is None, "an answered ask's message is still held"
        assert loops[0]() is None, "a finished event loop is still held"


def test_an_async_ask_raises_the_handlers_error_and_the_actor_lives(clock: ManualClock, journal: Journal) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal)]), clock) as tree:
        address = tree.address("w")

        async def main() -> object:
            with pytest.raises(ValueError, match="w fails on purpose"):
                await address.ask_async(Fail(), timeout=WAIT)
            return await address.ask_async(WhoAmI(), timeout=WAIT)

        assert asyncio.run(main()) == 1


def test_an_async_ask_waits_through_a_restart_for_its_answer(clock: ManualClock, journal: Journal) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal, backoff=ONE_SECOND_BACKOFF)]), clock) as tree:
        address = tree.address("w")
        address.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "w is backing off")

        async def main() -> object:
            asked = asyncio.ensure_future(address.ask_async(WhoAmI(), timeout=WAIT))
            while address.buffered == 0:
                await asyncio.sleep(0.001)
            clock.advance(1.0)
            return await asked

        assert asyncio.run(main()) == 2


def test_an_async_ask_times_out_in_time_without_blocking_the_event_loop(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("down", journal, backoff=ONE_SECOND_BACKOFF), worker("busy", journal)])
    with running_tree(spec, clock) as tree:
        down, busy = tree.address("down"), tree.address("busy")
        down.tell(Fail())
        wait_until(lambda: clock.pending() == 1, "down is backing off")
        entered, release = threading.Event(), threading.Event()
        busy.tell(Hold(entered, release))
        assert entered.wait(WAIT)

        async def main() -> tuple[list[float], list[BaseException | object], float]:
            loop = asyncio.get_running_loop()
            gaps: list[float] = []
            stop = asyncio.Event()

            async def ticker() -> None:
                last = loop.time()
                while not stop.is_set():
                    await asyncio.sleep(0.005)
                    now = loop.time()
                    gaps.append(now - last)
                    last = now

            ticking = asyncio.ensure_future(ticker())
            started = loop.time()
            outcomes = await asyncio.gather(
                *(down.ask_async(Echo(n), timeout=0.3) for n in range(100)),
                *(busy.ask_async(Echo(n), timeout=0.3) for n in range(100)),
                return_exceptions=True,
            )
            elapsed = loop.time() - started
            stop.set()
            await ticking
            return gaps, outcomes, elapsed

        try:
            gaps, outcomes, elapsed = asyncio.run(main())
        finally:
            release.set()
        assert all(isinstance(outcome, AskTimeout) for outcome in outcomes)
        assert 0.3 <= elapsed < 0.3 + SLACK
        assert len(gaps) >= 20, "the event loop stopped ticking while asks waited"
        assert max(gaps) < 0.1, f"the event loop was blocked for {max(gaps):.3f} s"
