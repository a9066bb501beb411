"""The weekly report of one member, computed from what the store holds about its week.

Sessions are the executions dispatched to the member that week. Uses are the uses scored that
week, counted by the score they hold now (an owner correction made later turns a success into a
corrected use). Forgotten, would-be forgotten (first-month dry run) and reclaimed skills are the
member's versioned changes of those kinds that week. A principle candidate is awaiting approval at
the week's end when it was proposed by then and no decision of it stood then (a decision later
rolled back stood until its rollback).
"""

from __future__ import annotations

from collections.abc import Iterable

from resident.evolution.weeks import Week
from resident.messages.evolution import EvolutionChange, MemberWeek
from resident.messages.principles import Principle
from resident.messages.skills import SkillSession
from resident.skills.forgetting import in_dry_run
from resident.skills.weights import FAILURE_SCORE, SUCCESS_SCORE

__all__ = ["member_week"]

_DECISIONS = frozenset({"principle-approve", "principle-reject"})


def _awaiting(principles: Iterable[Principle], changes: list[EvolutionChange], end: float) -> tuple[str, ...]:
    decided: dict[str, bool] = {}
    for change in sorted(changes, key=lambda c: c.version):
        if change.at >= end:
            break
        if change.kind in _DECISIONS:
            decided[change.subject] = True
        elif change.kind == "principle-revert":
            decided[change.subject] = False
    return tuple(sorted(p.id for p in principles if p.proposed_at < end and not decided.get(p.id, False)))


def member_week(
    member: str,
    week: Week,
    *,
    session_starts: Iterable[float],
    sessions: Iterable[SkillSession],
    changes: Iterable[EvolutionChange],
    principles: Iterable[Principle],
    since: float | None,
) -> MemberWeek:
    """`member`'s report for `week` (see the module docstring for what each figure counts)."""
    changes = list(changes)
    uses = [use for session in sessions for use in session.uses if use.at in week]
    in_week = [change for change in changes if change.at in week]

    def skills(kind: str) -> tuple[str, ...]:
        return tuple(change.subject for change in in_week if change.kind == kind)

    return MemberWeek(
        member=member,
        sessions=sum(1 for at in session_starts if at in week),
        uses=len(uses),
        uses_succeeded=sum(1 for use in uses if use.score == SUCCESS_SCORE),
        uses_failed=sum(1 for use in uses if use.score == FAILURE_SCORE),
        uses_corrected=sum(1 for use in uses if use.score not in (SUCCESS_SCORE, FAILURE_SCORE)),
        forgotten=skills("forget"),
        would_forget=skills("forget-dry-run"),
        reclaims=skills("reclaim"),
        awaiting_principles=_awaiting(principles, changes, week.end),
        dry_run=in_dry_run(since, week.end),
    )
