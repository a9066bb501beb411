"""Engagement (`rt.engagement`): what each member is engaged in, how it is decided, and the owner's questions.

A member session may switch, release and read its own member's engagement, under its grant; resolving,
the judge's examples and the owner's questions and answers are the owner's.
"""

from __future__ import annotations

from resident.messages.engagement import EngagementExample, EngagementQuestion, EngagementState
from resident.messages.engagement_calls import (
    AnswerQuestion,
    EngagementOf,
    EngagementQuery,
    EngageRequest,
    Examples,
    ExamplesQuery,
    Questions,
    QuestionsQuery,
    ReleaseRequest,
    Resolved,
    ResolveRequest,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["ANSWER", "ENGAGE", "EXAMPLES", "OPERATIONS", "QUESTIONS", "RELEASE", "RESOLVE", "STATE",
           "EngagementSurface"]

_SERVICES = "resident.runtime.engagement"


def _state(reply: EngagementOf | Resolved) -> EngagementState | None:
    return reply.state


def _examples(reply: Examples) -> tuple[EngagementExample, ...]:
    return reply.examples


def _questions(reply: Questions) -> list[EngagementQuestion]:
    return list(reply.questions)


ENGAGE = declare(
    "engagement.engage", "Switch a member's engagement explicitly", EngageRequest, EngagementState,
    route=Route("POST", "/v1/engagement"), service=f"{_SERVICES}:engage", access=Access.MEMBER,
)
RELEASE = declare(
    "engagement.release", "Release an explicit switch: rules and the judge decide again", ReleaseRequest,
    EngagementState, route=Route("POST", "/v1/engagement/release"), service=f"{_SERVICES}:release",
    access=Access.MEMBER,
)
STATE = declare(
    "engagement.show", "A member's engagement state", EngagementQuery, EngagementOf,
    route=Route("POST", "/v1/engagement/show"), service=f"{_SERVICES}:state", access=Access.MEMBER, result=_state,
)
EXAMPLES = declare(
    "engagement.examples", "What a member's judge learns from", ExamplesQuery, Examples,
    route=Route("POST", "/v1/engagement/examples"), service=f"{_SERVICES}:examples", result=_examples,
)
RESOLVE = declare(
    "engagement.resolve", "Decide a member's engagement for a session starting in a context", ResolveRequest,
    Resolved, route=Route("POST", "/v1/engagement/resolve"), service=f"{_SERVICES}:resolve", result=_state,
)
QUESTIONS = declare(
    "engagement.questions", "The owner's questions: sessions whose engagement the judge could not decide",
    QuestionsQuery, Questions, route=Route("POST", "/v1/engagement/questions"), service=f"{_SERVICES}:questions",
    result=_questions,
)
ANSWER = declare(
    "engagement.answer", "Answer a question: the member's engagement becomes this", AnswerQuestion, EngagementState,
    route=Route("POST", "/v1/engagement/questions/{question_id}/answer"), service=f"{_SERVICES}:answer",
)

OPERATIONS = (ENGAGE, RELEASE, STATE, EXAMPLES, RESOLVE, QUESTIONS, ANSWER)


class EngagementSurface(Surface):
    """`rt.engagement`: explicit switches, resolution, questions and answers."""

    engage = method(ENGAGE)
    aengage = awaitable(ENGAGE)
    release = method(RELEASE)
    arelease = awaitable(RELEASE)
    state = method(STATE)
    astate = awaitable(STATE)
    examples = method(EXAMPLES)
    aexamples = awaitable(EXAMPLES)
    resolve = method(RESOLVE)
    aresolve = awaitable(RESOLVE)
    questions = method(QUESTIONS)
    aquestions = awaitable(QUESTIONS)
    answer = method(ANSWER)
    aanswer = awaitable(ANSWER)
