"""Skill weights: a decayed sum of use scores, on exactly one decay track per held skill.

At each use, `w ← w · 2^(-Δ/h) + score`, where Δ is how far the member moved on the skill's
track since the last update: member sessions on the session track (h = 30 sessions, the default),
days on the time track (h = 60 days). Between updates the weight only decays, so the current
weight is `w · 2^(-Δ/h)` with Δ measured to now. Scores: a use in a session that succeeded 1.0,
one that failed (or was cancelled) 0.25, one the owner corrected 0.0.

A correction (or a rollback of the use) changes a past score: the stored weight, which sits at its
last update, loses the difference decayed from the use to that update. Weights never go below 0.
"""

from __future__ import annotations

from resident.messages.skills import SkillHolding, Track

__all__ = [
    "CORRECTED_SCORE",
    "FAILURE_SCORE",
    "HALF_LIFE",
    "SECONDS_PER_DAY",
    "SUCCESS_SCORE",
    "current_weight",
    "decayed",
    "elapsed",
    "rescored",
    "score_for",
    "used",
]

SECONDS_PER_DAY = 86_400.0
HALF_LIFE: dict[Track, float] = {"sessions": 30.0, "days": 60.0}
SUCCESS_SCORE = 1.0
FAILURE_SCORE = 0.25
CORRECTED_SCORE = 0.0


def score_for(outcome: str, corrected: bool) -> float:
    """The score of a use in a session that ended with `outcome`."""
    if corrected:
        return CORRECTED_SCORE
    return SUCCESS_SCORE if outcome == "succeeded" else FAILURE_SCORE


def elapsed(track: Track, from_session: int, from_at: float, to_session: int, to_at: float) -> float:
    """How far the member moved on `track` between two points (never negative)."""
    if track == "sessions":
        return float(max(0, to_session - from_session))
    return max(0.0, to_at - from_at) / SECONDS_PER_DAY


def decayed(weight: float, distance: float, track: Track) -> float:
    """`weight` after `distance` sessions or days on `track`."""
    return float(weight * 2.0 ** (-distance / HALF_LIFE[track]))


def used(weight: float, distance: float, track: Track, score: float) -> float:
    """The weight after a use scored `score`, `distance` after the last update."""
    return decayed(weight, distance, track) + score


def rescored(weight: float, distance: float, track: Track, score_before: float, score: float) -> float:
    """The stored weight once a use `distance` before its last update scores `score` instead."""
    return max(0.0, weight + decayed(score - score_before, distance, track))


def current_weight(holding: SkillHolding, sessions: int, now: float) -> float:
    """The holding's weight now: decayed from its last update to the member's current session and time."""
    distance = elapsed(holding.track, holding.updated_session, holding.updated_at, sessions, now)
    return decayed(holding.weight, distance, holding.track)
