"""How failures travel: to the caller, to the supervisor, up the tree, and never sideways.

An error in an ask goes back to the caller; a crash goes to the supervisor; a supervisor that
exceeds its restart intensity stops its children and escalates to its parent, and the root's
escalation reaches `on_escalate`. A `SystemExit` anywhere in a supervised actor stays inside it
(plain pykka would stop every actor in the process).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pykka
import pytest

from resident.clock import ManualClock
from resident.errors import ActorUnavailable, AskTimeout
from resident.messages.supervision import Crash, Ping
from resident.supervisor import Address, SupervisorSpec
from tests.supervision_helpers import (
    WAIT,
    Echo,
    Exit,
    Fail,
    Journal,
    Note,
    WhoAmI,
    Worker,
    nested,
    running_tree,
    wait_until,
    worker,
)


class Bystander(pykka.ThreadingActor):
    """A plain pykka actor outside the tree: pykka stops it when any actor lets a SystemExit out."""

    def on_receive(self, message: Any) -> Any:
        return message


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def journal() -> Journal:
    return Journal()


@pytest.fixture
def bystander() -> Iterator[pykka.ActorRef[Bystander]]:
    ref = Bystander.start()
    yield ref
    if ref.is_alive():
        ref.stop(timeout=WAIT)


def _assert_alive(bystander: pykka.ActorRef[Bystander]) -> None:
    assert bystander.is_alive()
    assert bystander.ask("still there?", timeout=WAIT) == "still there?"


# -- errors go to the caller ------------------------------------------------------------------------


def test_an_error_in_an_ask_goes_back_to_the_caller_and_the_actor_lives(clock: ManualClock, journal: Journal) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal)]), clock) as tree:
        with pytest.raises(ValueError, match="w fails on purpose"):
            tree.address("w").ask(Fail(), timeout=WAIT)
        assert tree.address("w").ask(WhoAmI(), timeout=WAIT) == 1
        assert tree.child("w").total_restarts == 0
        assert journal.events("crash") == []


def test_a_system_exit_in_an_ask_fails_the_caller_and_the_actor_is_restarted(
    clock: ManualClock, journal: Journal, bystander: pykka.ActorRef[Bystander]
) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal)]), clock) as tree:
        with pytest.raises(ActorUnavailable, match=r"w crashed while handling the request \(SystemExit"):
            tree.address("w").ask(Exit(), timeout=WAIT)
        tree.wait_child("w", state="running", incarnation=2)
        assert tree.address("w").ask(WhoAmI(), timeout=WAIT) == 2
        _assert_alive(bystander)


# -- SystemExit stays inside the actor --------------------------------------------------------------


def test_crash_exit_in_one_actor_stops_no_other_actor(
    clock: ManualClock, journal: Journal, bystander: pykka.ActorRef[Bystander]
) -> None:
    spec = SupervisorSpec("root", [worker("a", journal), worker("b", journal)])
    with running_tree(spec, clock) as tree:
        tree.address("a").tell(Crash(reason="pulled the plug", kind="exit"))
        stats = tree.wait_child("a", state="running", incarnation=2)
        assert stats.last_exit == "killed: SystemExit: pulled the plug"
        assert tree.address("b").ask(WhoAmI(), timeout=WAIT) == 1
        _assert_alive(bystander)


def test_crash_error_restarts_the_actor_and_answers_an_ask_for_it(clock: ManualClock, journal: Journal) -> None:
    with running_tree(SupervisorSpec("root", [worker("w", journal)]), clock) as tree:
        assert tree.address("w").ask(Crash(reason="chaos monkey"), timeout=WAIT) is None
        stats = tree.wait_child("w", state="running", incarnation=2)
        assert stats.last_exit == "error: ChaosCrash: chaos monkey"
        assert journal.events("crash") == [("crash", "w", 1, "ChaosCrash")]


@pytest.mark.parametrize("hook", ["teardown", "on_crash"])
def test_a_system_exit_in_a_clean_up_hook_stops_no_other_actor(
    clock: ManualClock, journal: Journal, bystander: pykka.ActorRef[Bystander], hook: str
) -> None:
    # "a" is stopped by the group restart (teardown) or crashes itself (on_crash).
    failing: dict[str, Any] = {"teardown_error": SystemExit} if hook == "teardown" else {"crash_error": SystemExit}
    spec = SupervisorSpec("root", [worker("a", journal, **failing), worker("b", journal)], strategy="one_for_all")
    with running_tree(spec, clock) as tree:
        tree.address("b" if hook == "teardown" else "a").tell(Fail())
        tree.wait_child("a", state="running", incarnation=2)
        tree.wait_child("b", state="running", incarnation=2)
        assert [tree.address(n).ask(WhoAmI(), timeout=WAIT) for n in "ab"] == [2, 2]
        _assert_alive(bystander)


# -- start failures ---------------------------------------------------------------------------------


def test_a_child_that_does_not_answer_its_start_ping_in_time_fails_the_start(
    clock: ManualClock, journal: Journal
) -> None:
    gate = threading.Event()
    spec = SupervisorSpec("root", [worker("slow", journal, start_gate=gate, start_timeout=0.2)])
    started = time.monotonic()
    try:
        with pytest.raises(RuntimeError, match="slow failed to start"), running_tree(spec, clock):
            pass
        assert time.monotonic() - started < 0.2 + 1.0
    finally:
        gate.set()
    # Once it finally starts, the abandoned incarnation stops instead of lingering.
    journal.wait_for(lambda events: ("stop", "slow", 1) in events, "the late starter stopped")


class _LateInbox(queue.Queue[Any]):
    """Puts the start ping only after the actor's thread has ended: pykka's lost-ask race, made certain.

    The sender has already seen the actor alive when it puts; the actor fails its start meanwhile
    and drains its inbox before the ping lands, so nobody ever answers it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.ping_sent = threading.Event()
        self.owner_known = threading.Event()
        self.owner: threading.Thread | None = None

    def put(self, item: Any, block: bool = True, timeout: float | None = None) -> None:
        if isinstance(item.message, Ping):
            self.ping_sent.set()
            if self.owner_known.wait(WAIT) and self.owner is not None:
                self.owner.join(WAIT)
        super().put(item, block, timeout)


class _LosesItsPing(Worker):
    @staticmethod
    def _create_actor_inbox() -> Any:
        return _LateInbox()

    def setup(self) -> None:
        inbox = self.actor_inbox
        assert isinstance(inbox, _LateInbox)
        inbox.owner = threading.current_thread()
        inbox.owner_known.set()
        inbox.ping_sent.wait(WAIT)
        raise RuntimeError("setup failed")


def test_a_start_failing_while_its_ping_is_lost_fails_at_once_not_after_the_start_timeout(
    clock: ManualClock, journal: Journal
) -> None:
    spec = SupervisorSpec("root", [worker("w", journal, actor=_LosesItsPing, start_timeout=WAIT)])
    started = time.monotonic()
    with (
        pytest.raises(RuntimeError, match="w failed to start: start failed: RuntimeError: setup failed"),
        running_tree(spec, clock),
    ):
        pass
    assert time.monotonic() - started < 1.0


class _CrashesBeforeAttach(Address):
    """Crashes the first incarnation after it answered its start ping, before it is attached.

    With `during_clean_up`, the attach happens while that incarnation is still in `on_crash`
    (its inbox already drained); otherwise once it is dead.
    """

    def __init__(self, name: str, journal: Journal, *, during_clean_up: bool) -> None:
        super().__init__(name)
        self.journal = journal
        self.during_clean_up = during_clean_up
        self.clean_up_may_end = threading.Event()
        self.crashed_one = False

    def attach(self, ref: pykka.ActorRef[Any]) -> bool:
        if not self.buffered or self.crashed_one:
            return super().attach(ref)
        self.crashed_one = True
        ref.tell(Fail())
        try:
            if self.during_clean_up:
                self.journal.wait_for(lambda events: ("crash", self.name, 1, "ValueError") in events, "w crashed")
            else:
                self.clean_up_may_end.set()
                wait_until(lambda: not ref.is_alive(), "the first incarnation died")
            return super().attach(ref)
        finally:
            self.clean_up_may_end.set()


class _SlowToCleanUp(Worker):
    def on_crash(self, error: BaseException) -> None:
        super().on_crash(error)
        address = self.context.address
        assert isinstance(address, _CrashesBeforeAttach)
        address.clean_up_may_end.wait(WAIT)


@pytest.mark.parametrize("during_clean_up", [False, True])
def test_a_child_dying_between_its_start_and_its_attach_loses_no_buffered_message(
    clock: ManualClock, journal: Journal, during_clean_up: bool
) -> None:
    address = _CrashesBeforeAttach("w", journal, during_clean_up=during_clean_up)
    address.tell(Note("sent before the start"))
    spec = SupervisorSpec("root", [worker("w", journal, address=address, actor=_SlowToCleanUp)])
    with running_tree(spec, clock) as tree:
        tree.wait_child("w", state="running", incarnation=2)
        journal.wait_for(lambda events: ("got", "w", "sent before the start", 2) in events, "w got the note")
        assert tree.escalations == []


def test_a_child_that_can_never_start_again_makes_the_supervisor_escalate(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("w", journal, fails_on=range(2, 100))], intensity=2, period=10.0)
    with running_tree(spec, clock) as tree:
        tree.address("w").tell(Fail())
        reason = tree.wait_escalation()
        assert "w (start failed: RuntimeError: w refuses start 3)" in reason


# -- escalation -------------------------------------------------------------------------------------


def test_exceeding_the_intensity_stops_every_child_and_escalates_with_the_cause(
    clock: ManualClock, journal: Journal
) -> None:
    spec = SupervisorSpec("root", [worker("a", journal), worker("b", journal), worker("c", journal)], intensity=2)
    with running_tree(spec, clock) as tree:
        for incarnation in (2, 3):
            tree.address("b").tell(Fail())
            tree.wait_child("b", state="running", incarnation=incarnation)
        tree.address("b").tell(Fail())
        reason = tree.wait_escalation()
        assert reason == (
            "SupervisorGaveUp: root gave up: more than 2 restarts in 5 s; "
            "last: b (error: ValueError: b fails on purpose)"
        )
        assert tree.escalations == [reason]
        assert journal.lifecycle()[-3:] == [("crash", "b"), ("stop", "c"), ("stop", "a")]
        stats = tree.stats()
        assert {child.state for child in stats.children} == {"stopped"}
        assert "more than 2 restarts" in stats.escalated


def test_a_nested_supervisor_that_gives_up_is_restarted_by_its_parent(clock: ManualClock, journal: Journal) -> None:
    sub = nested("sub", [worker("x", journal), worker("y", journal)], intensity=1, period=10.0)
    spec = SupervisorSpec("root", [worker("a", journal), sub], intensity=3, period=10.0)
    with running_tree(spec, clock) as tree:
        tree.address("sub/x").tell(Fail())
        tree.wait_child("sub/x", state="running", incarnation=2)
        clock.advance(9.0)  # still inside sub's 10 s window
        tree.address("sub/x").tell(Fail())

        tree.wait_child("sub", state="running", incarnation=2)
        journal.wait_for(lambda events: [e[1] for e in events if e[0] == "start"].count("x") == 3, "x restarted")
        assert journal.lifecycle()[3:] == [
            ("crash", "x"),
            ("start", "x"),
            ("crash", "x"),
            ("stop", "y"),
            ("start", "x"),
            ("start", "y"),
        ]
        assert tree.child("sub").last_exit.startswith("error: SupervisorGaveUp: sub gave up: more than 1 restarts")
        assert tree.child("a").incarnation == 1
        assert tree.escalations == []
        assert tree.address("sub/x").ask(Echo("back"), timeout=WAIT) == "back"


def test_a_nested_supervisor_giving_up_too_often_makes_the_root_escalate(clock: ManualClock, journal: Journal) -> None:
    sub = nested("sub", [worker("x", journal)], intensity=0)
    spec = SupervisorSpec("root", [sub], intensity=1, period=10.0)
    with running_tree(spec, clock) as tree:
        tree.address("sub/x").tell(Fail())
        tree.wait_child("sub", state="running", incarnation=2)
        wait_until(lambda: tree.address("sub/x").state == "running", "x is back")
        tree.address("sub/x").tell(Fail())
        reason = tree.wait_escalation()
        assert "root gave up: more than 1 restarts in 10 s; last: sub (error: SupervisorGaveUp: sub gave up" in reason


# -- asks racing crashes ----------------------------------------------------------------------------


def test_asks_racing_repeated_crashes_are_all_answered(clock: ManualClock, journal: Journal) -> None:
    crashes = 40
    spec = SupervisorSpec("root", [worker("w", journal)], intensity=1_000_000, period=1.0)
    with running_tree(spec, clock) as tree:
        address = tree.address("w")
        progress = threading.Condition()
        answers: list[Any] = []
        asks_ended = threading.Event()

        # Each crash waits for a few more answers rather than for wall time, so the crashes land
        # among the asks on any machine, however fast or loaded.
        def answered_at_least(wanted: int) -> Callable[[], bool]:
            return lambda: asks_ended.is_set() or len(answers) >= wanted

        def crash_while_asks_flow() -> None:
            for _ in range(crashes):
                with progress:
                    progress.wait_for(answered_at_least(len(answers) + 5), timeout=WAIT)
                if asks_ended.is_set():
                    return
                address.tell(Crash())

        crasher = threading.Thread(target=crash_while_asks_flow, name="test-crasher")
        crasher.start()
        try:
            while crasher.is_alive() or len(answers) < 500:
                answer = address.ask(Echo(len(answers)), timeout=2.0)
                with progress:
                    answers.append(answer)
                    progress.notify_all()
        except AskTimeout as error:  # a lost message: report it as a failure, not an error
            pytest.fail(f"an ask racing a crash was never answered: {error}")
        finally:
            # A failed ask must not leave the crasher waiting out its timeouts.
            asks_ended.set()
            with progress:
                progress.notify_all()
            crasher.join(WAIT)
        assert answers == list(range(len(answers)))
        # Asked after the last crash was sent, so answered only once every crash has been handled.
        assert address.ask(Echo("last"), timeout=2.0) == "last"
        assert tree.child("w").total_restarts == crashes
