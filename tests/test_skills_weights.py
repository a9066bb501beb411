"""Skill weights as pure rules: a decayed sum on one track, never negative, rescoring exact."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from resident.messages.skills import SkillHolding, SkillUse, Track
from resident.skills.holdings import joined, rejoined, rescore, use
from resident.skills.weights import (
    CORRECTED_SCORE,
    FAILURE_SCORE,
    HALF_LIFE,
    SECONDS_PER_DAY,
    SUCCESS_SCORE,
    current_weight,
    score_for,
)

SCORES = st.sampled_from([SUCCESS_SCORE, FAILURE_SCORE, CORRECTED_SCORE])
TRACKS = st.sampled_from(["sessions", "days"])
# (sessions elapsed, seconds elapsed, score) per use, in order.
Use = tuple[int, float, float]
USES = st.lists(
    st.tuples(st.integers(0, 40), st.floats(0, 90 * SECONDS_PER_DAY, allow_nan=False), SCORES), max_size=30
)


def _replay(track: Track, uses: list[Use]) -> tuple[SkillHolding, list[SkillUse]]:
    holding = joined("deven", "triage", weight=1.0, track=track, session=0, at=0.0)
    session, at, past = 0, 0.0, []
    for sessions, seconds, score in uses:
        session, at = session + sessions, at + seconds
        holding = use(holding, score, session, at)
        past.append(SkillUse(skill="triage", score=score, session=session, at=at))
    return holding, past


def _closed_form(track: Track, uses: list[SkillUse], initial: float, now_session: int, now: float) -> float:
    """Σ score·2^(-Δ/h) over the initial weight and every use, Δ measured to now."""
    def distance(session: int, at: float) -> float:
        return float(now_session - session) if track == "sessions" else (now - at) / SECONDS_PER_DAY

    terms = [(initial, 0, 0.0)] + [(u.score, u.session, u.at) for u in uses]
    return sum(float(score * 2.0 ** (-distance(session, at) / HALF_LIFE[track])) for score, session, at in terms)


def test_scores_are_one_for_success_a_quarter_for_failure_and_zero_when_corrected() -> None:
    assert score_for("succeeded", corrected=False) == 1.0
    assert score_for("failed", corrected=False) == 0.25
    assert score_for("cancelled", corrected=False) == 0.25
    assert score_for("succeeded", corrected=True) == 0.0


def test_a_weight_halves_after_one_half_life_on_its_own_track_only() -> None:
    by_sessions = joined("deven", "a", weight=1.0, track="sessions", session=0, at=0.0)
    by_days = joined("deven", "b", weight=1.0, track="days", session=0, at=0.0)
    assert current_weight(by_sessions, 30, 0.0) == 0.5
    assert current_weight(by_sessions, 0, 365 * SECONDS_PER_DAY) == 1.0
    assert current_weight(by_days, 0, 60 * SECONDS_PER_DAY) == 0.5
    assert current_weight(by_days, 1000, 0.0) == 1.0


@given(TRACKS, USES)
def test_the_incremental_weight_equals_the_closed_form_decayed_sum(track: Track, uses: list[Use]) -> None:
    holding, past = _replay(track, uses)
    expected = _closed_form(track, past, 1.0, holding.updated_session, holding.updated_at)
    assert math.isclose(holding.weight, expected, rel_tol=1e-9, abs_tol=1e-12)


@given(TRACKS, USES, st.data())
def test_weights_are_never_negative_through_uses_and_rescoring(
    track: Track, uses: list[Use], data: st.DataObject
) -> None:
    holding, past = _replay(track, uses)
    assert holding.weight >= 0.0
    for index in data.draw(st.lists(st.integers(0, max(0, len(past) - 1)), max_size=10)) if past else []:
        holding = rescore(holding, past[index], 0.0)
        past[index] = SkillUse(skill="triage", score=0.0, session=past[index].session, at=past[index].at)
        assert holding.weight >= 0.0
        assert current_weight(holding, holding.updated_session + 7, holding.updated_at + 9.0) >= 0.0


@given(TRACKS, USES.filter(bool), st.data())
def test_rescoring_a_use_to_zero_equals_never_having_scored_it(
    track: Track, uses: list[Use], data: st.DataObject
) -> None:
    holding, past = _replay(track, uses)
    index = data.draw(st.integers(0, len(past) - 1))
    rescored = rescore(holding, past[index], 0.0)
    without = [u if i != index else SkillUse(skill=u.skill, score=0.0, session=u.session, at=u.at)
               for i, u in enumerate(past)]
    expected = _closed_form(track, without, 1.0, holding.updated_session, holding.updated_at)
    assert math.isclose(rescored.weight, expected, rel_tol=1e-9, abs_tol=1e-9)


@given(TRACKS, USES, st.integers(0, 200))
def test_a_reclaim_keeps_the_better_of_the_current_weight_and_the_initial_one(
    track: Track, uses: list[Use], later: int
) -> None:
    holding, _ = _replay(track, uses)
    back = rejoined(holding, "deven", "triage", session=holding.updated_session + later, at=holding.updated_at)
    assert back.weight == max(1.0, current_weight(holding, holding.updated_session + later, holding.updated_at))
    assert back.track == track
    assert back.added_session == holding.updated_session + later
