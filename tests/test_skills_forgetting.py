"""Forgetting as a pure rule: who leaves a set, and who never does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from resident.messages.skills import SkillHolding
from resident.skills.forgetting import (
    PROTECTED_SESSIONS,
    SET_LIMIT,
    UNUSED_DAYS,
    UNUSED_SESSIONS,
    WEIGHT_FLOOR,
    in_dry_run,
    plan_forgetting,
    protected_sessions,
)
from resident.skills.weights import SECONDS_PER_DAY, current_weight

NOW_SESSION = 400
NOW = 1_000 * SECONDS_PER_DAY
SINCE = NOW - 90 * SECONDS_PER_DAY  # past the first month


@st.composite
def holdings(draw: st.DrawFn) -> SkillHolding:
    added = draw(st.integers(0, NOW_SESSION))
    used = draw(st.one_of(st.none(), st.integers(added, NOW_SESSION)))
    updated = used if used is not None else added
    added_at = NOW - draw(st.floats(0, 300)) * SECONDS_PER_DAY
    used_at = None if used is None else draw(st.floats(added_at, NOW))
    return SkillHolding(
        member="deven", skill=f"skill-{draw(st.integers(0, 10_000))}", weight=draw(st.floats(0, 5)),
        updated_session=updated, updated_at=used_at if used_at is not None else added_at, added_session=added,
        added_at=added_at, track=draw(st.sampled_from(["sessions", "days"])), native=draw(st.booleans()),
        last_used_session=used, last_used_at=used_at,
    )


SETS = st.lists(holdings(), max_size=45, unique_by=lambda h: h.skill)
# Sets of up to 45 holdings are costly to draw; fewer examples still cover both sides of 30.
set_examples = settings(max_examples=40)


@set_examples
@given(SETS)
def test_natives_and_protected_skills_are_never_forgotten(held: list[SkillHolding]) -> None:
    plan = plan_forgetting(held, NOW_SESSION, NOW, SINCE)
    by_name = {h.skill: h for h in held}
    for candidate in plan.forget:
        holding = by_name[candidate.skill]
        assert not holding.native
        assert not protected_sessions(holding, NOW_SESSION)


@set_examples
@given(SETS)
def test_the_unused_rule_picks_only_low_weights_unused_long_enough_on_their_track(held: list[SkillHolding]) -> None:
    by_name = {h.skill: h for h in held}
    for candidate in plan_forgetting(held, NOW_SESSION, NOW, SINCE).forget:
        if candidate.rule != "unused":
            continue
        holding = by_name[candidate.skill]
        assert current_weight(holding, NOW_SESSION, NOW) < WEIGHT_FLOOR
        if holding.track == "sessions":
            last = holding.last_used_session if holding.last_used_session is not None else holding.added_session
            assert NOW_SESSION - last >= UNUSED_SESSIONS
        else:
            last_at = holding.last_used_at if holding.last_used_at is not None else holding.added_at
            assert (NOW - last_at) / SECONDS_PER_DAY >= UNUSED_DAYS


@set_examples
@given(SETS)
def test_a_set_over_thirty_is_trimmed_to_thirty_by_lowest_weight_unless_protection_prevents_it(
    held: list[SkillHolding],
) -> None:
    plan = plan_forgetting(held, NOW_SESSION, NOW, SINCE)
    gone = {c.skill for c in plan.forget}
    counted = [h for h in held if not h.native]
    left = [h for h in counted if h.skill not in gone]
    unprotected_left = [h for h in left if not protected_sessions(h, NOW_SESSION)]
    assert len(left) <= SET_LIMIT or not unprotected_left
    capacity = [c for c in plan.forget if c.rule == "capacity"]
    if capacity:
        lowest_gone = max(c.weight for c in capacity)
        assert all(current_weight(h, NOW_SESSION, NOW) >= lowest_gone for h in unprotected_left)
        assert len(left) == SET_LIMIT


@set_examples
@given(st.integers(0, 40), st.integers(0, SET_LIMIT))
def test_natives_do_not_count_toward_the_thirty(natives: int, others: int) -> None:
    def holding(name: str, native: bool) -> SkillHolding:
        return SkillHolding(member="deven", skill=name, weight=0.0 if native else 3.0, updated_session=0,
                            updated_at=0.0, added_session=0, added_at=0.0, native=native)

    held = [holding(f"native-{n}", True) for n in range(natives)]
    held += [holding(f"other-{n}", False) for n in range(others)]
    assert plan_forgetting(held, 20, 0.0, -SINCE).forget == ()
    one_more = [*held, *(holding(f"extra-{n}", False) for n in range(SET_LIMIT + 1 - others))]
    assert len(plan_forgetting(one_more, 20, 0.0, -SINCE).forget) == 1


def test_a_new_skill_is_protected_for_its_first_ten_sessions() -> None:
    fresh = SkillHolding(member="deven", skill="new", weight=0.0, updated_session=100, updated_at=0.0,
                         added_session=100, added_at=0.0)
    assert protected_sessions(fresh, 100) == PROTECTED_SESSIONS
    assert protected_sessions(fresh, 109) == 1
    assert protected_sessions(fresh, 110) == 0


def test_the_first_month_is_a_dry_run() -> None:
    assert in_dry_run(None, NOW)
    assert in_dry_run(NOW - 29.9 * SECONDS_PER_DAY, NOW)
    assert not in_dry_run(NOW - 30 * SECONDS_PER_DAY, NOW)
    stale = SkillHolding(member="deven", skill="old", weight=0.0, updated_session=0, updated_at=0.0,
                         added_session=0, added_at=0.0)
    assert plan_forgetting([stale], NOW_SESSION, NOW, NOW - SECONDS_PER_DAY).dry_run
    assert not plan_forgetting([stale], NOW_SESSION, NOW, SINCE).dry_run
    assert [c.skill for c in plan_forgetting([stale], NOW_SESSION, NOW, SINCE).forget] == ["old"]


@set_examples
@given(SETS)
def test_forgetting_is_deterministic_whatever_the_order_of_the_set(held: list[SkillHolding]) -> None:
    forward = plan_forgetting(held, NOW_SESSION, NOW, SINCE)
    backward = plan_forgetting(list(reversed(held)), NOW_SESSION, NOW, SINCE)
    assert forward == backward
