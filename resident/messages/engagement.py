"""Engagement: what a member is engaged in (domain, project, counterpart, activity) and how it was decided.

The state narrows which memories a member recalls, never widens it. It is decided by an explicit
switch, else an entry rule of `resident.toml`, else a judge; a judge below its threshold leaves
the member in the restricted state (only memories without activation conditions) and asks the
owner a question instead of guessing.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from resident.messages.base import Event, Record
from resident.messages.evolution import MemberCommand

__all__ = [
    "DOMAINS",
    "Domain",
    "Engage",
    "EngagementContext",
    "EngagementDecision",
    "EngagementExample",
    "EngagementQuestion",
    "EngagementQuestionAnswered",
    "EngagementQuestionAsked",
    "EngagementSource",
    "EngagementState",
    "EngagementSwitched",
    "GetEngagement",
    "MemberEngagement",
]

Domain = Literal["work", "personal"]
DOMAINS: tuple[Domain, ...] = ("work", "personal")
EngagementSource = Literal["unset", "explicit", "entry-rule", "judge", "restricted", "answer"]


class EngagementContext(Record, frozen=True):
    """What is known about a session when its engagement is decided."""

    task: str = ""
    directory: str = ""
    harness: str = ""
    counterpart: str = ""


class EngagementState(Record, frozen=True):
    """A member's current engagement; `restricted` serves only memories without activation conditions.

    `held` marks an explicit switch, which wins until the next switch or a release.
    """

    member: str
    at: float
    domain: Domain | None = None
    project: str | None = None
    counterpart: str | None = None
    activity: str | None = None
    source: EngagementSource = "unset"
    confidence: float = 1.0
    held: bool = False
    restricted: bool = False
    context: EngagementContext = msgspec.field(default_factory=EngagementContext)
    question: str = ""


class EngagementDecision(Record, frozen=True):
    """A judge's typed decision: the state it proposes and how confident it is (0..1)."""

    domain: Domain | None
    project: str | None
    confidence: float
    judge: str
    reason: str = ""


class EngagementExample(Record, frozen=True):
    """One training example for the member's judge: a context and the state the owner set for it."""

    member: str
    context: EngagementContext
    domain: Domain | None
    project: str | None
    source: EngagementSource
    at: float


class MemberEngagement(Record, frozen=True):
    """What the store keeps per member: the current state and its judge's most recent examples."""

    member: str
    state: EngagementState | None = None
    examples: tuple[EngagementExample, ...] = ()


class EngagementQuestion(Record, frozen=True):
    """A question to the owner: which state applies to this context (the judge was not sure)."""

    id: str
    member: str
    context: EngagementContext
    asked_at: float
    decision: EngagementDecision | None = None
    answered_at: float | None = None
    answered_by: str = ""
    domain: Domain | None = None
    project: str | None = None


# -- events --------------------------------------------------------------------------------------


class EngagementSwitched(Event, frozen=True, tag="engagement.switched"):
    """The member's engagement became `state`; with `example`, the switch also teaches its judge."""

    state: EngagementState
    example: bool = False


class EngagementQuestionAsked(Event, frozen=True, tag="engagement.question.asked"):
    question: EngagementQuestion


class EngagementQuestionAnswered(Event, frozen=True, tag="engagement.question.answered"):
    id: str
    by: str
    domain: Domain | None
    project: str | None


# -- commands ------------------------------------------------------------------------------------


class Engage(MemberCommand, frozen=True, tag="engagement.engage"):
    """Switch the member's engagement (answered with the new state once it is durable).

    An answer to a question (`answers`) is written with the switch, in one commit.
    """

    state: EngagementState
    example: bool = False
    question: EngagementQuestion | None = None
    answers: str = ""
    by: str = "owner"


class GetEngagement(MemberCommand, frozen=True, tag="engagement.get"):
    """The member's engagement state and its judge's training examples."""

    with_examples: bool = False
