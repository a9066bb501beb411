"""The engagement operations' requests and replies (`rt.engagement`): switches, resolution, the owner's questions."""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import Named, Note
from resident.messages.engagement import (
    Domain,
    EngagementContext,
    EngagementExample,
    EngagementQuestion,
    EngagementState,
)

__all__ = [
    "AnswerQuestion", "EngageRequest", "EngagementOf", "EngagementQuery", "Examples", "ExamplesQuery", "Questions",
    "QuestionsQuery", "ReleaseRequest", "ResolveRequest", "Resolved",
]

QuestionRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _Whose(_Request, frozen=True):
    # The member; a member session's own when left out.
    member: Named | None = None


class EngageRequest(_Whose, frozen=True, kw_only=True):
    """An explicit switch of a member's engagement: it wins over entry rules and the judge until the next switch or
    a release. Made while a session is under way, it also teaches the member's judge that session's context."""

    domain: Domain | None = None
    project: Named | None = None
    counterpart: Named | None = None
    activity: Note | None = None


class ReleaseRequest(_Whose, frozen=True):
    """End an explicit switch: the next session's start decides again (rules, then the judge)."""


class EngagementQuery(_Whose, frozen=True):
    """A member's engagement (none until something decided it: no narrowing then)."""


class EngagementOf(msgspec.Struct, frozen=True, kw_only=True):
    member: str
    state: EngagementState | None


class ExamplesQuery(_Request, frozen=True):
    """What a member's judge learns from: its explicit switches in sessions and the owner's answers."""

    member: Named


class Examples(msgspec.Struct, frozen=True, kw_only=True):
    examples: tuple[EngagementExample, ...]


class _Resolving(_Request, frozen=True):
    member: Named
    context: EngagementContext


class ResolveRequest(_Resolving, frozen=True):
    """Decide a member's engagement for a session starting in `context` (rules, then the judge, else a question
    for the owner); the state now in force."""


class Resolved(msgspec.Struct, frozen=True, kw_only=True):
    state: EngagementState | None


class QuestionsQuery(_Request, frozen=True, kw_only=True):
    """The owner's questions, oldest first: sessions whose engagement the judge could not decide (only open ones
    unless asked)."""

    include_answered: bool = False


class Questions(msgspec.Struct, frozen=True, kw_only=True):
    questions: tuple[EngagementQuestion, ...]


class _Answered(_Request, frozen=True):
    question_id: QuestionRef


class AnswerQuestion(_Answered, frozen=True, kw_only=True):
    """The owner's answer to a question: it applies to the member now and teaches the member's judge."""

    domain: Domain | None = None
    project: Named | None = None
