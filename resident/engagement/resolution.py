"""Resolving a member's engagement when a session starts, in the spec's order.

1. An explicit switch that is held wins: nothing changes.
2. Else the first entry rule of `resident.toml` that matches the session's context decides.
3. Else the judge decides, if its confidence reaches the threshold.
4. Else the member is put in the restricted state (only memories without activation conditions
   are recalled) and the owner is asked — once: while a question about the member is open, no
   second one is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from resident.engagement.rules import EngagementConfig, matching_rule
from resident.messages.engagement import EngagementContext, EngagementDecision, EngagementQuestion, EngagementState

__all__ = ["Resolution", "resolve", "restricted_state"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """The state to switch to (None: keep the current one) and the question to ask, if any."""

    state: EngagementState | None
    question: EngagementQuestion | None = None
    decision: EngagementDecision | None = None


def restricted_state(
    member: str, context: EngagementContext, at: float, question: str, confidence: float
) -> EngagementState:
    return EngagementState(
        member=member, at=at, source="restricted", confidence=confidence, restricted=True, context=context,
        question=question, counterpart=context.counterpart or None,
    )


def resolve(
    member: str,
    current: EngagementState | None,
    context: EngagementContext,
    config: EngagementConfig,
    judge: Callable[[], EngagementDecision],
    *,
    open_question: str | None,
    new_question_id: Callable[[], str],
    at: float,
) -> Resolution:
    """What a session starting in `context` does to the member's engagement."""
    if current is not None and current.held:
        return Resolution(state=None)
    counterpart = context.counterpart or None
    rule = matching_rule(config.rules, context)
    if rule is not None:
        return Resolution(state=EngagementState(
            member=member, at=at, domain=rule.domain, project=rule.project, counterpart=counterpart,
            source="entry-rule", context=context,
        ))
    decision = judge()
    if decision.confidence >= config.threshold:
        return Resolution(
            state=EngagementState(
                member=member, at=at, domain=decision.domain, project=decision.project, counterpart=counterpart,
                source="judge", confidence=decision.confidence, context=context,
            ),
            decision=decision,
        )
    if open_question is not None:
        return Resolution(state=restricted_state(member, context, at, open_question, decision.confidence),
                          decision=decision)
    question = EngagementQuestion(id=new_question_id(), member=member, context=context, asked_at=at, decision=decision)
    return Resolution(
        state=restricted_state(member, context, at, question.id, decision.confidence), question=question,
        decision=decision,
    )
