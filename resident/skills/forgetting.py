"""Forgetting: which held skills leave a member's set, and when it is only a dry run.

Two rules, applied in order to the skills in the set that are neither native nor protected (a
skill is protected for its first 10 sessions in the set):

1. *unused*: current weight < 0.1 and unused for at least 20 sessions (session track) or 60 days
   (time track), counted from the last use or, never used, from when it joined the set;
2. *capacity*: while more than 30 skills count (natives never do), the lowest current weight goes
   (ties: the one unused longest, then by name).

During the member's first month (30 days from its first session or skill) forgetting is a dry
run: the plan is reported, nothing leaves the set. Forgetting never touches the team library.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from resident.messages.skills import ForgetCandidate, SkillHolding
from resident.skills.weights import SECONDS_PER_DAY, current_weight

__all__ = [
    "DRY_RUN_DAYS",
    "PROTECTED_SESSIONS",
    "SET_LIMIT",
    "UNUSED_DAYS",
    "UNUSED_SESSIONS",
    "WEIGHT_FLOOR",
    "ForgettingPlan",
    "in_dry_run",
    "plan_forgetting",
    "protected_sessions",
]

WEIGHT_FLOOR = 0.1
UNUSED_SESSIONS = 20
UNUSED_DAYS = 60.0
SET_LIMIT = 30
PROTECTED_SESSIONS = 10
DRY_RUN_DAYS = 30.0


@dataclass(frozen=True, slots=True)
class ForgettingPlan:
    """The skills to forget now, in order, and whether this is the first month's dry run."""

    forget: tuple[ForgetCandidate, ...]
    dry_run: bool


def in_dry_run(since: float | None, now: float) -> bool:
    """Whether a member that started evolving at `since` is still in its first month."""
    return since is None or now - since < DRY_RUN_DAYS * SECONDS_PER_DAY


def protected_sessions(holding: SkillHolding, sessions: int) -> int:
    """How many more sessions the holding is protected for (0: not protected)."""
    return max(0, PROTECTED_SESSIONS - (sessions - holding.added_session))


def _idle(holding: SkillHolding, sessions: int, now: float) -> tuple[int, float]:
    """Sessions and days since the holding was last used (or joined the set)."""
    session = holding.last_used_session if holding.last_used_session is not None else holding.added_session
    at = holding.last_used_at if holding.last_used_at is not None else holding.added_at
    return sessions - session, (now - at) / SECONDS_PER_DAY


def _unused_long_enough(holding: SkillHolding, sessions: int, now: float) -> bool:
    idle_sessions, idle_days = _idle(holding, sessions, now)
    return idle_sessions >= UNUSED_SESSIONS if holding.track == "sessions" else idle_days >= UNUSED_DAYS


def plan_forgetting(holdings: Iterable[SkillHolding], sessions: int, now: float, since: float | None) -> ForgettingPlan:
    """Apply both rules to the member's set as it is at session `sessions`, time `now`."""
    in_set = [h for h in holdings if h.in_set]
    counted = [h for h in in_set if not h.native]
    weight = {h.skill: current_weight(h, sessions, now) for h in counted}
    candidates = sorted(
        (h for h in counted if not protected_sessions(h, sessions)),
        key=lambda h: (weight[h.skill], -_idle(h, sessions, now)[0], -_idle(h, sessions, now)[1], h.skill),
    )
    forget = [
        ForgetCandidate(skill=h.skill, rule="unused", weight=weight[h.skill])
        for h in candidates
        if weight[h.skill] < WEIGHT_FLOOR and _unused_long_enough(h, sessions, now)
    ]
    chosen = {c.skill for c in forget}
    excess = len(counted) - len(forget) - SET_LIMIT
    for holding in candidates:
        if excess <= 0:
            break
        if holding.skill not in chosen:
            forget.append(ForgetCandidate(skill=holding.skill, rule="capacity", weight=weight[holding.skill]))
            excess -= 1
    return ForgettingPlan(forget=tuple(forget), dry_run=in_dry_run(since, now))
