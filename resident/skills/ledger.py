"""Skill weights recomputed from the event log alone, to compare with the live state.

The live holdings are written from the results the member actor computed (each `SkillUsed` carries
the weight after it). The ledger ignores those results: it replays every skill event through the
same transitions from its inputs only (initial weights, scores, session ordinals, times), so a
use scored against a stale holding, a lost update or a damaged table shows up as a difference.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec

from resident.messages.skills import (
    NativeSkillsDeclared,
    SkillForgotten,
    SkillGiven,
    SkillHolding,
    SkillReclaimed,
    SkillRemoved,
    SkillRestored,
    SkillUse,
    SkillUseCorrected,
    SkillUsed,
)
from resident.skills.holdings import joined, rejoined, rescore, returned, use

__all__ = ["COMPARED_FIELDS", "SkillLedger", "differences"]

# What must match between the live holdings and the recomputed ones.
COMPARED_FIELDS = (
    "weight", "updated_session", "updated_at", "added_session", "track", "in_set", "native", "last_used_session",
)


@dataclass
class SkillLedger:
    """Holdings by (member, skill), folded from skill events in log order."""

    holdings: dict[tuple[str, str], SkillHolding] = field(default_factory=dict)
    _uses: dict[tuple[str, str, str], SkillUse] = field(default_factory=dict)
    _natives: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def fold(self, events: Iterable[object]) -> SkillLedger:
        for event in events:
            self.apply(event)
        return self

    def apply(self, event: object) -> None:
        match event:
            case SkillGiven():
                self.holdings[(event.member, event.skill)] = joined(
                    event.member, event.skill, weight=event.weight, track=event.track, session=event.session,
                    at=event.at,
                )
            case SkillReclaimed():
                previous = self.holdings.get((event.member, event.skill))
                self.holdings[(event.member, event.skill)] = rejoined(
                    previous, event.member, event.skill, session=event.session, at=event.at
                )
            case NativeSkillsDeclared():
                self._declare(event)
            case SkillUsed():
                key = (event.member, event.skill)
                self.holdings[key] = use(self.holdings[key], event.score, event.session, event.at)
                self._uses[(event.member, event.execution, event.skill)] = SkillUse(
                    skill=event.skill, score=event.score, session=event.session, at=event.at
                )
            case SkillUseCorrected():
                key = (event.member, event.skill)
                past = self._uses[(event.member, event.execution, event.skill)]
                self.holdings[key] = rescore(self.holdings[key], past, event.score)
                self._uses[(event.member, event.execution, event.skill)] = msgspec.structs.replace(
                    past, score=event.score
                )
            case SkillForgotten() | SkillRemoved():
                key = (event.member, event.skill)
                self.holdings[key] = msgspec.structs.replace(self.holdings[key], in_set=False)
            case SkillRestored():
                key = (event.member, event.skill)
                self.holdings[key] = returned(self.holdings[key], event.session, event.at)
            case _:
                pass

    def _declare(self, event: NativeSkillsDeclared) -> None:
        for skill in set(self._natives.get(event.member, ())) - set(event.skills):
            key = (event.member, skill)
            if key in self.holdings:
                self.holdings[key] = msgspec.structs.replace(self.holdings[key], native=False)
        for skill in event.skills:
            key = (event.member, skill)
            holding = self.holdings.get(key) or msgspec.structs.replace(
                joined(event.member, skill, weight=event.weight, track="sessions", session=event.session, at=event.at),
                origin="native",
            )
            self.holdings[key] = msgspec.structs.replace(holding, in_set=True, native=True)
        self._natives[event.member] = event.skills


def differences(live: Iterable[SkillHolding], ledger: SkillLedger) -> list[str]:
    """Where the live holdings and the recomputed ones disagree (empty when they are equal)."""
    found: list[str] = []
    live_by_key = {(h.member, h.skill): h for h in live}
    for key in sorted(set(live_by_key) | set(ledger.holdings)):
        mine, theirs = live_by_key.get(key), ledger.holdings.get(key)
        where = f"{key[0]}/{key[1]}"
        if mine is None or theirs is None:
            found.append(f"{where}: {'only recomputed' if mine is None else 'only live'}")
            continue
        found.extend(
            f"{where}: {name} is {getattr(mine, name)!r} live but {getattr(theirs, name)!r} recomputed"
            for name in COMPARED_FIELDS
            if getattr(mine, name) != getattr(theirs, name)
        )
    return found
