"""Rebuild: whatever happens to skill sets, weights recomputed from the events equal the live state."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident.clock import ManualClock
from resident.errors import ResidentError
from tests.evolution_helpers import DAY, add_skills, evolving, session

SKILLS = [f"skill-{n}" for n in range(6)]
MEMBERS = ["deven", "alice"]

give = st.tuples(st.just("give"), st.sampled_from(SKILLS), st.sampled_from(MEMBERS),
                 st.floats(0, 5, allow_nan=False), st.sampled_from(["sessions", "days"]))
reclaim = st.tuples(st.just("reclaim"), st.sampled_from(SKILLS), st.sampled_from(MEMBERS))
work = st.tuples(
    st.just("session"), st.sampled_from(MEMBERS), st.lists(st.sampled_from(SKILLS), max_size=3),
    st.sampled_from(["succeeded", "failed", "cancelled"]), st.sampled_from(["none", "before", "after"]),
)
wait = st.tuples(st.just("wait"), st.floats(0, 40, allow_nan=False))
undo = st.tuples(st.just("rollback"), st.sampled_from(MEMBERS), st.integers(0, 50))
OPERATIONS = st.lists(st.one_of(give, reclaim, work, wait, undo), min_size=1, max_size=12)


def test_rebuilding_from_events_always_equals_the_live_skill_state(tmp_path: Path) -> None:
    clock = ManualClock()
    with evolving(tmp_path / "home", clock) as rt:
        add_skills(rt, tmp_path, [(name, f"The {name} procedure") for name in SKILLS])

        def apply(operation: tuple[Any, ...]) -> None:
            match operation:
                case ("give", skill, member, weight, track):
                    rt.skills.give(skill, member, weight=weight, track=track)
                case ("reclaim", skill, member):
                    rt.skills.reclaim(skill, member)
                case ("session", member, reads, outcome, correction):
                    running = session(rt, member)
                    for skill in reads:
                        rt.with_grant(running.token).skills.read(skill)
                    if correction == "before":
                        rt.coordinator.correct(running.execution.id, "not like that")
                    running.finish(outcome)
                    if correction == "after":
                        rt.coordinator.correct(running.execution.id, "not like that either")
                case ("wait", days):
                    clock.advance(days * DAY)
                case ("rollback", member, pick):
                    changes = [c for c in rt.evolution.log(member) if not c.rolled_back_by]
                    if changes:
                        rt.evolution.rollback(changes[pick % len(changes)].id)

        @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(OPERATIONS)
        def check(operations: list[tuple[Any, ...]]) -> None:
            for operation in operations:
                # Refusals (already carried, nothing to roll back, ...) are part of the sequence too.
                with contextlib.suppress(ResidentError):
                    apply(operation)
            rebuilt = rt.skills.rebuild()
            assert rebuilt.differences == ()
            assert rt._internal.store.replay() == rt._internal.store.state_tables()
            for member in MEMBERS:
                assert all(held.weight >= 0.0 for held in rt.skills.skill_set(member, include_left=True).skills)

        check()
