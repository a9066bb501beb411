"""Which children a supervisor restarts, in which order, when, and how often (OTP and Akka semantics).

Ports the restart scenarios of OTP's supervisor_SUITE (restart types, strategies, intensity,
temporary bystanders, shutdown order, nested supervisors) and Akka's BackoffSupervisorSpec
(exponential backoff, cap, jitter, reset). Time is a `ManualClock`: nothing here sleeps.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest

from resident.clock import ManualClock
from resident.errors import ActorUnavailable
from resident.supervisor import Backoff, RestartType, SupervisorSpec
from tests.supervision_helpers import (
    Exit,
    Fail,
    Journal,
    Note,
    StopSelf,
    WhoAmI,
    nested,
    running_tree,
    wait_until,
    worker,
)

# A binary fraction, so `t + d - EPS + EPS == t + d` exactly and due times are hit on the dot.
EPS = 2.0**-10

EXITS: dict[str, Any] = {"normal": StopSelf(), "error": Fail(), "SystemExit": Exit()}


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def journal() -> Journal:
    return Journal()


# -- restart types ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("restart", "exit_kind", "restarted"),
    [
        ("permanent", "normal", True),
        ("permanent", "error", True),
        ("permanent", "SystemExit", True),
        ("transient", "normal", False),
        ("transient", "error", True),
        ("transient", "SystemExit", True),
        ("temporary", "normal", False),
        ("temporary", "error", False),
        ("temporary", "SystemExit", False),
    ],
)
def test_restart_type_decides_whether_an_exit_is_restarted(
    clock: ManualClock, journal: Journal, restart: RestartType, exit_kind: str, restarted: bool
) -> None:
    spec = SupervisorSpec("root", [worker("w", journal, restart=restart), worker("other", journal)])
    with running_tree(spec, clock) as tree:
        tree.address("w").tell(EXITS[exit_kind])
        if restarted:
            tree.wait_child("w", state="running", incarnation=2)
            assert tree.address("w").ask(WhoAmI(), timeout=1.0) == 2
        else:
            wait_until(lambda: tree.address("w").state == "closed", "the supervisor has given w up")
            with pytest.raises(ActorUnavailable, match="w is stopped"):
                tree.address("w").ask(WhoAmI(), timeout=1.0)
            assert journal.count("start", "w") == 1
            names = [child.name for child in tree.stats().children]
            assert names == (["other"] if restart == "temporary" else ["w", "other"])
        assert tree.address("other").ask(WhoAmI(), timeout=1.0) == 1
        assert tree.escalations == []


@pytest.mark.parametrize("fail_in", ["setup", "constructor"])
@pytest.mark.parametrize("start_error", [RuntimeError, SystemExit])
@pytest.mark.parametrize(("restart", "retried"), [("permanent", True), ("transient", True), ("temporary", False)])
def test_a_failed_restart_is_tried_again_unless_the_child_is_temporary(
    clock: ManualClock,
    journal: Journal,
    restart: RestartType,
    retried: bool,
    start_error: type[BaseException],
    fail_in: Literal["setup", "constructor"],
) -> None:
    child = worker("w", journal, restart=restart, fails_on={2}, start_error=start_error, fail_in=fail_in)
    with running_tree(SupervisorSpec("root", [child]), clock) as tree:
        tree.address("w").tell(Fail())
        if retried:
            stats = tree.wait_child("w", state="running", incarnation=3)
            assert stats.total_restarts == 2
            assert journal.count("start_failed", "w") == 1
            assert tree.address("w").ask(WhoAmI(), timeout=1.0) == 3
        else:
            wait_until(lambda: tree.address("w").state == "closed", "the supervisor has given w up")
            assert journal.count("start_failed", "w") == 0
        assert tree.escalations == []


@pytest.mark.parametrize("restart", ["permanent", "transient", "temporary"])
def test_a_child_failing_its_first_start_fails_the_supervisor_start_whatever_its_restart_type(
    clock: ManualClock, journal: Journal, restart: RestartType
) -> None:
    spec = SupervisorSpec(
        "root", [worker("a", journal), worker("w", journal, restart=restart, fails_on={1}), worker("c", journal)]
    )
    with pytest.raises(RuntimeError, match="w failed to start"), running_tree(spec, clock):
        pass
    assert journal.lifecycle() == [("start", "a"), ("stop", "a")]


def test_a_child_whose_restart_fails_a_few_times_ends_up_running(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("w", journal, fails_on={2, 3, 4})], intensity=4)
    with running_tree(spec, clock) as tree:
        tree.address("w").tell(Fail())
        stats = tree.wait_child("w", state="running", incarnation=5)
        assert stats.total_restarts == 4
        assert journal.count("start_failed", "w") == 3
        assert tree.address("w").ask(WhoAmI(), timeout=1.0) == 5
        assert tree.escalations == []


# -- strategies -------------------------------------------------------------------------------------


def test_one_for_one_restarts_only_the_child_that_crashed(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker(n, journal) for n in "abc"], strategy="one_for_one")
    with running_tree(spec, clock) as tree:
        tree.address("b").tell(Fail())
        tree.wait_child("b", state="running", incarnation=2)
        assert journal.lifecycle()[3:] == [("crash", "b"), ("start", "b")]
        assert [tree.child(n).incarnation for n in "abc"] == [1, 2, 1]


def test_one_for_all_stops_the_others_in_reverse_order_and_restarts_all_in_start_order(
    clock: ManualClock, journal: Journal
) -> None:
    spec = SupervisorSpec("root", [worker(n, journal) for n in "abc"], strategy="one_for_all")
    with running_tree(spec, clock) as tree:
        tree.address("b").tell(Fail())
        for name in "abc":
            tree.wait_child(name, state="running", incarnation=2)
        assert journal.lifecycle()[3:] == [
            ("crash", "b"),
            ("stop", "c"),
            ("stop", "a"),
            ("start", "a"),
            ("start", "b"),
            ("start", "c"),
        ]
        assert [tree.address(n).ask(WhoAmI(), timeout=1.0) for n in "abc"] == [2, 2, 2]


def test_rest_for_one_restarts_the_crashed_child_and_those_started_after_it(
    clock: ManualClock, journal: Journal
) -> None:
    spec = SupervisorSpec("root", [worker(n, journal) for n in "abcd"], strategy="rest_for_one")
    with running_tree(spec, clock) as tree:
        tree.address("b").tell(Fail())
        for name in "bcd":
            tree.wait_child(name, state="running", incarnation=2)
        assert journal.lifecycle()[4:] == [
            ("crash", "b"),
            ("stop", "d"),
            ("stop", "c"),
            ("start", "b"),
            ("start", "c"),
            ("start", "d"),
        ]
        assert tree.child("a").incarnation == 1


def test_rest_for_one_restarts_only_the_last_child_when_the_last_crashes(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker(n, journal) for n in "abc"], strategy="rest_for_one")
    with running_tree(spec, clock) as tree:
        tree.address("c").tell(Fail())
        tree.wait_child("c", state="running", incarnation=2)
        assert journal.lifecycle()[3:] == [("crash", "c"), ("start", "c")]
        assert [tree.child(n).incarnation for n in "ab"] == [1, 1]


def test_a_temporary_bystander_of_a_one_for_all_restart_is_stopped_and_not_restarted(
    clock: ManualClock, journal: Journal
) -> None:
    children = [worker("a", journal), worker("t", journal, restart="temporary"), worker("c", journal)]
    with running_tree(SupervisorSpec("root", children, strategy="one_for_all"), clock) as tree:
        tree.address("a").tell(Fail())
        tree.wait_child("c", state="running", incarnation=2)
        assert journal.lifecycle()[3:] == [
            ("crash", "a"),
            ("stop", "c"),
            ("stop", "t"),
            ("start", "a"),
            ("start", "c"),
        ]
        assert [child.name for child in tree.stats().children] == ["a", "c"]
        with pytest.raises(ActorUnavailable, match="t is stopped"):
            tree.address("t").ask(WhoAmI(), timeout=1.0)


def test_a_transient_child_that_ended_normally_comes_back_with_a_one_for_all_restart(
    clock: ManualClock, journal: Journal
) -> None:
    # OTP keeps a transient child that exited normally in the child list; a group restart starts
    # it again, and then it must be reachable through its address again.
    children = [worker("a", journal), worker("tr", journal, restart="transient")]
    with running_tree(SupervisorSpec("root", children, strategy="one_for_all"), clock) as tree:
        tree.address("tr").tell(StopSelf())
        wait_until(lambda: tree.address("tr").state == "closed", "tr is given up")
        tree.address("a").tell(Fail())
        tree.wait_child("tr", state="running", incarnation=2)
        assert tree.address("tr").ask(WhoAmI(), timeout=1.0) == 2


# -- shutdown order and nesting ---------------------------------------------------------------------


def test_a_tree_stops_in_reverse_start_order_through_nested_supervisors(clock: ManualClock, journal: Journal) -> None:
    children = [worker("a", journal), nested("sub", [worker("x", journal), worker("y", journal)]), worker("b", journal)]
    with running_tree(SupervisorSpec("root", children), clock):
        assert journal.lifecycle() == [("start", "a"), ("start", "x"), ("start", "y"), ("start", "b")]
    assert journal.lifecycle()[4:] == [("stop", "b"), ("stop", "y"), ("stop", "x"), ("stop", "a")]


def test_statistics_flatten_nested_supervisors_as_paths(clock: ManualClock, journal: Journal) -> None:
    children = [worker("a", journal), nested("sub", [worker("x", journal), worker("y", journal)])]
    with running_tree(SupervisorSpec("root", children), clock) as tree:
        tree.address("sub/x").tell(Fail())
        tree.wait_child("sub/x", state="running", incarnation=2)
        stats = tree.stats()
        assert [child.name for child in stats.children] == ["a", "sub", "sub/x", "sub/y"]
        assert {child.state for child in stats.children} == {"running"}
        assert stats.child("sub/x").total_restarts == 1
        assert stats.child("sub/x").last_exit == "error: ValueError: x fails on purpose"
        assert stats.child("sub").total_restarts == 0
        with pytest.raises(AttributeError):
            stats.child("a").state = "stopped"  # type: ignore[misc]
        with pytest.raises(KeyError):
            stats.child("sub/nobody")


# -- the restart window -----------------------------------------------------------------------------


def _crash_and_wait(tree: Any, name: str, incarnation: int) -> None:
    tree.address(name).tell(Fail())
    tree.wait_child(name, state="running", incarnation=incarnation)


def test_crashes_spaced_just_outside_the_period_never_trip_the_limit(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("w", journal)], intensity=2, period=10.0)
    with running_tree(spec, clock) as tree:
        for incarnation in range(2, 12):
            _crash_and_wait(tree, "w", incarnation)
            clock.advance(10.0 / 2 + EPS)
        assert tree.escalations == []
        assert tree.child("w").total_restarts == 10


def test_crashes_spaced_just_inside_the_period_trip_the_limit(clock: ManualClock, journal: Journal) -> None:
    spec = SupervisorSpec("root", [worker("w", journal)], intensity=2, period=10.0)
    with running_tree(spec, clock) as tree:
        for incarnation in (2, 3):
            _crash_and_wait(tree, "w", incarnation)
            clock.advance(10.0 / 2 - EPS)
        tree.address("w").tell(Fail())
        assert "more than 2 restarts in 10 s" in tree.wait_escalation()


def test_the_window_counts_each_restart_before_its_start(clock: ManualClock, journal: Journal) -> None:
    # With intensity 3, a child that can never start again gets exactly 3 restart attempts.
    spec = SupervisorSpec("root", [worker("w", journal, fails_on=range(2, 100))], intensity=3, period=10.0)
    with running_tree(spec, clock) as tree:
        tree.address("w").tell(Fail())
        tree.wait_escalation()
        assert journal.count("start_failed", "w") == 3


# -- backoff ----------------------------------------------------------------------------------------


def _expect_restart_after(clock: ManualClock, delay: float) -> None:
    """The pending restart falls due exactly `delay` seconds from now (to within EPS)."""
    wait_until(lambda: clock.pending() == 1, "a restart is scheduled")
    clock.advance(delay - EPS)
    assert clock.pending() == 1, f"the restart came before {delay:g} s"
    clock.advance(EPS)
    assert clock.pending() == 0, f"the restart did not come at {delay:g} s"


def test_backoff_delays_double_from_min_up_to_max(clock: ManualClock, journal: Journal) -> None:
    child = worker("w", journal, backoff=Backoff(min=1.0, max=4.0, jitter=0.0, reset_after=1_000.0))
    with running_tree(SupervisorSpec("root", [child], intensity=100), clock) as tree:
        for incarnation, delay in enumerate([1.0, 2.0, 4.0, 4.0, 4.0], start=2):
            tree.address("w").tell(Fail())
            _expect_restart_after(clock, delay)
            tree.wait_child("w", state="running", incarnation=incarnation)


def test_backoff_jitter_stretches_each_delay_by_at_most_the_jitter_fraction(
    clock: ManualClock, journal: Journal
) -> None:
    child = worker("w", journal, backoff=Backoff(min=1.0, max=1.0, jitter=0.5, reset_after=1_000.0))
    with running_tree(SupervisorSpec("root", [child], intensity=100), clock) as tree:
        for incarnation in range(2, 12):
            tree.address("w").tell(Fail())
            wait_until(lambda: clock.pending() == 1, "a restart is scheduled")
            clock.advance(1.0 - EPS)
            assert clock.pending() == 1, "restarted before the backoff minimum"
            clock.advance(0.5 + EPS)
            assert clock.pending() == 0, "not restarted within min * (1 + jitter)"
            tree.wait_child("w", state="running", incarnation=incarnation)


@pytest.mark.parametrize(("uptime", "delay"), [(10.0, 1.0), (10.0 - EPS, 8.0)])
def test_backoff_starts_again_from_min_once_the_child_stayed_up_for_reset_after(
    clock: ManualClock, journal: Journal, uptime: float, delay: float
) -> None:
    child = worker("w", journal, backoff=Backoff(min=1.0, max=60.0, jitter=0.0, reset_after=10.0))
    with running_tree(SupervisorSpec("root", [child], intensity=100), clock) as tree:
        for incarnation, expected in enumerate([1.0, 2.0, 4.0], start=2):
            tree.address("w").tell(Fail())
            _expect_restart_after(clock, expected)
            tree.wait_child("w", state="running", incarnation=incarnation)
        clock.advance(uptime)
        tree.address("w").tell(Fail())
        _expect_restart_after(clock, delay)
        tree.wait_child("w", state="running", incarnation=5)


def test_backoff_keeps_growing_while_restarts_fail_to_start(clock: ManualClock, journal: Journal) -> None:
    backoff = Backoff(min=1.0, max=60.0, jitter=0.0, reset_after=10.0)
    child = worker("w", journal, backoff=backoff, fails_on={2, 3, 4})
    with running_tree(SupervisorSpec("root", [child], intensity=100), clock) as tree:
        clock.advance(100.0)  # a long uptime: the first restart starts from min
        tree.address("w").tell(Fail())
        for delay in (1.0, 2.0, 4.0, 8.0):
            _expect_restart_after(clock, delay)
        tree.wait_child("w", state="running", incarnation=5)


def test_children_backing_off_at_the_same_time_are_all_restarted(clock: ManualClock, journal: Journal) -> None:
    backoff = Backoff(min=1.0, max=1.0, jitter=0.0)
    children = [worker("a", journal, backoff=backoff), worker("b", journal, backoff=backoff)]
    with running_tree(SupervisorSpec("root", children), clock) as tree:
        tree.address("a").tell(Fail())
        wait_until(lambda: clock.pending() == 1, "a's restart is scheduled")
        tree.address("b").tell(Fail())
        wait_until(lambda: clock.pending() == 2, "b's restart is scheduled")
        clock.advance(1.0)
        tree.wait_child("a", state="running", incarnation=2)
        tree.wait_child("b", state="running", incarnation=2)


def test_a_group_restart_with_backoff_waits_then_restarts_the_whole_group(clock: ManualClock, journal: Journal) -> None:
    backoff = Backoff(min=2.0, max=2.0, jitter=0.0)
    children = [worker("a", journal), worker("b", journal, backoff=backoff), worker("c", journal)]
    with running_tree(SupervisorSpec("root", children, strategy="rest_for_one"), clock) as tree:
        tree.address("b").tell(Fail())
        wait_until(lambda: clock.pending() == 1, "the group restart is scheduled")
        assert [tree.child(n).state for n in "abc"] == ["running", "backoff", "backoff"]
        tree.address("c").tell(Note("waits for the restart"))
        _expect_restart_after(clock, 2.0)
        tree.wait_child("c", state="running", incarnation=2)
        journal.wait_for(lambda events: ("got", "c", "waits for the restart", 2) in events, "c got the note")
        assert tree.child("a").incarnation == 1
