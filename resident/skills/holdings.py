"""How one holding changes: joining a set, a use, a rescored use, leaving and coming back.

These transitions are the only place a holding's weight and positions are computed. The member
actor runs them on the holdings it reads from the store to decide what to write; `SkillLedger`
runs them on holdings it rebuilt from the event log alone; both must arrive at the same values.
"""

from __future__ import annotations

import msgspec

from resident.messages.skills import SkillHolding, SkillUse, Track
from resident.skills.weights import current_weight, elapsed, rescored, used

__all__ = ["INITIAL_WEIGHT", "joined", "rejoined", "rescore", "returned", "use"]

# The weight a skill starts with when it is given without one, reclaimed, or declared native.
INITIAL_WEIGHT = 1.0


def joined(
    member: str, skill: str, *, weight: float, track: Track, session: int, at: float, origin: str = "given"
) -> SkillHolding:
    """A holding that joins the set now, protected from this session on."""
    return SkillHolding(
        member=member, skill=skill, weight=weight, updated_session=session, updated_at=at, added_session=session,
        added_at=at, track=track, origin="reclaimed" if origin == "reclaimed" else "given",
    )


def rejoined(previous: SkillHolding | None, member: str, skill: str, *, session: int, at: float) -> SkillHolding:
    """A reclaimed holding: it keeps its track, and the better of its current and the initial weight."""
    if previous is None:
        return joined(
            member, skill, weight=INITIAL_WEIGHT, track="sessions", session=session, at=at, origin="reclaimed"
        )
    weight = max(current_weight(previous, session, at), INITIAL_WEIGHT)
    return joined(member, skill, weight=weight, track=previous.track, session=session, at=at, origin="reclaimed")


def use(holding: SkillHolding, score: float, session: int, at: float) -> SkillHolding:
    """The holding after a use scored `score` at session `session`, time `at`."""
    distance = elapsed(holding.track, holding.updated_session, holding.updated_at, session, at)
    return msgspec.structs.replace(
        holding, weight=used(holding.weight, distance, holding.track, score), updated_session=session, updated_at=at,
        last_used_session=session, last_used_at=at,
    )


def rescore(holding: SkillHolding, past: SkillUse, score: float) -> SkillHolding:
    """The holding once its past use `past` scores `score` instead."""
    distance = elapsed(holding.track, past.session, past.at, holding.updated_session, holding.updated_at)
    return msgspec.structs.replace(holding, weight=rescored(holding.weight, distance, holding.track, past.score, score))


def returned(holding: SkillHolding, session: int, at: float) -> SkillHolding:
    """A forgotten holding back in the set (its forgetting rolled back), protected anew."""
    return msgspec.structs.replace(
        holding, in_set=True, added_session=session, added_at=at, left_at=None, left_rule=""
    )
