"""`rt.engagement`: what each member is engaged in, how it is decided, and the owner's questions.

    rt.engagement.engage("deven", domain="work", project="acme")   # explicit: wins until released
    rt.engagement.resolve("deven", EngagementContext(task="fix the acme deploy", directory=...))
    rt.engagement.questions()                                       # where the judge was not sure
    rt.engagement.answer(question_id, domain="personal")

Resolution runs where a session starts (`dispatch` calls it with the task). The judge runs in the
calling thread, never in an actor: a judge may be a remote model. Switches are written by the
member's actor, so they order with the member's other changes. Declared in `resident.operations.engagement`.
"""

from __future__ import annotations

import logging

from resident.checks import clean_line
from resident.engagement.judge import Judge, KeywordJudge
from resident.engagement.resolution import resolve as resolve_engagement
from resident.errors import InvalidInput, ResidentError, UnknownQuestion
from resident.ids import new_id
from resident.messages.engagement import (
    DOMAINS,
    Domain,
    Engage,
    EngagementContext,
    EngagementDecision,
    EngagementState,
    GetEngagement,
    MemberEngagement,
)
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
from resident.runtime.context import Call, Context
from resident.store.tables import ENGAGEMENT_QUESTIONS

__all__ = [
    "Judging", "answer", "engage", "examples", "questions", "release", "resolve", "resolve_quietly", "state",
]

logger = logging.getLogger(__name__)

MAX_FIELD = 200


def _domain(value: str | None) -> Domain | None:
    if value is not None and value not in DOMAINS:
        raise InvalidInput(f"a domain is work or personal, not {value!r}")
    return value


def _field(value: str | None, what: str) -> str | None:
    return None if value is None else clean_line(value, what, MAX_FIELD)


class Judging:
    """The judgment model the runtime decides engagement with (the member-trained `KeywordJudge` by default)."""

    def __init__(self, judge: Judge | None = None) -> None:
        self.judge: Judge = judge or KeywordJudge()


def _by(call: Call) -> str:
    return call.caller.member or "owner"


def state(context: Context, call: Call, request: EngagementQuery) -> EngagementOf:
    """A member's engagement (None until something decided it: no narrowing then)."""
    call.caller.authorize("read_engagement")
    member = call.caller.acting_as(request.member)
    return EngagementOf(member=member, state=_row(context, member, examples=False).state)


def examples(context: Context, _call: Call, request: ExamplesQuery) -> Examples:
    """What a member's judge learns from: its explicit switches in sessions and the owner's answers."""
    return Examples(examples=_row(context, request.member, examples=True).examples)


def engage(context: Context, call: Call, request: EngageRequest) -> EngagementState:
    """An explicit switch: it wins over entry rules and the judge until the next switch or `release`.

    Made while a session is under way, it also teaches the member's judge that session's context.
    """
    call.caller.authorize("write_engagement")
    member = call.caller.acting_as(request.member)
    current = _row(context, member, examples=False).state
    situation = current.context if current is not None else EngagementContext()
    switched = EngagementState(
        member=member, at=context.clock.time(), domain=_domain(request.domain),
        project=_field(request.project, "project"), counterpart=_field(request.counterpart, "counterpart"),
        activity=_field(request.activity, "activity"), source="explicit", held=True, context=situation,
    )
    return _switch(context, Engage(state=switched, example=_teaches(situation), by=_by(call)))


def release(context: Context, call: Call, request: ReleaseRequest) -> EngagementState:
    """End an explicit switch: the next session's start decides again (rules, then the judge)."""
    call.caller.authorize("write_engagement")
    member = call.caller.acting_as(request.member)
    current = _row(context, member, examples=False).state
    if current is None or not current.held:
        raise InvalidInput(f"{member}'s engagement is not held by an explicit switch; nothing to release")
    released = EngagementState(
        member=member, at=context.clock.time(), domain=current.domain, project=current.project,
        counterpart=current.counterpart, activity=current.activity, source=current.source,
        confidence=current.confidence, held=False, context=current.context,
    )
    return _switch(context, Engage(state=released, by=_by(call)))


def resolve(context: Context, _call: Call, request: ResolveRequest) -> Resolved:
    """Decide a member's engagement for a session starting in `context`; the state now in force."""
    return Resolved(state=decide(context, request.member, request.context))


def decide(context: Context, member: str, situation: EngagementContext) -> EngagementState | None:
    """`resolve`, for the runtime's own session starts."""
    row = _row(context, member, examples=True)
    with context.store.reader() as reader:
        open_question = next(
            (q.id for _, q in reader.items(ENGAGEMENT_QUESTIONS) if q.member == member and q.answered_at is None),
            None,
        )
    judge = context.judging.judge

    def judgement() -> EngagementDecision:
        try:
            return judge.decide(situation, row.examples)
        except Exception as error:  # noqa: BLE001 - a failing judge must not decide anything
            logger.warning("the engagement judge %s failed (%s); asking the owner instead", judge.name, error)
            return EngagementDecision(domain=None, project=None, confidence=0.0, judge=judge.name,
                                      reason=f"the judge failed: {type(error).__name__}")

    resolution = resolve_engagement(
        member, row.state, situation, context.config.engagement, judgement, open_question=open_question,
        new_question_id=lambda: new_id("q"), at=context.clock.time(),
    )
    if resolution.state is None:
        return row.state
    return _switch(context, Engage(state=resolution.state, question=resolution.question, by="runtime"))


def resolve_quietly(context: Context, member: str, situation: EngagementContext) -> None:
    """`decide` where a session starts: a failure leaves the previous state and is logged."""
    try:
        decide(context, member, situation)
    except ResidentError as error:
        logger.warning("the engagement of %s was not resolved for its new session: %s", member, error)


def questions(context: Context, _call: Call, request: QuestionsQuery) -> Questions:
    """The owner's questions, oldest first (only open ones unless asked)."""
    context.check_open()
    with context.store.reader() as reader:
        found = [q for _, q in reader.items(ENGAGEMENT_QUESTIONS)]
    return Questions(questions=tuple(sorted(
        (q for q in found if request.include_answered or q.answered_at is None), key=lambda q: (q.asked_at, q.id)
    )))


def answer(context: Context, _call: Call, request: AnswerQuestion) -> EngagementState:
    """The owner's answer: it applies to the member now and teaches the member's judge."""
    context.check_open()
    question_id = request.question_id
    with context.store.reader() as reader:
        question = reader.get(ENGAGEMENT_QUESTIONS, question_id) if isinstance(question_id, str) else None
    if question is None:
        raise UnknownQuestion(f"no question {str(question_id)[:80]!r}; see `resident questions`")
    if question.answered_at is not None:
        raise InvalidInput(f"question {question_id} was already answered")
    if request.domain is None and request.project is None:
        raise InvalidInput("an answer names a domain, a project, or both")
    answered = EngagementState(
        member=question.member, at=context.clock.time(), domain=_domain(request.domain),
        project=_field(request.project, "project"), counterpart=question.context.counterpart or None,
        source="answer", context=question.context,
    )
    return _switch(context, Engage(state=answered, example=_teaches(question.context), answers=question.id,
                                   by="owner"))


def _row(context: Context, member: str, *, examples: bool) -> MemberEngagement:
    row: MemberEngagement = context.ask_member(member, GetEngagement(with_examples=examples), None)
    return row


def _switch(context: Context, message: Engage) -> EngagementState:
    switched: EngagementState = context.ask_member(message.state.member, message, None)
    return switched


def _teaches(context: EngagementContext) -> bool:
    """A switch teaches the judge only when there is a session context to learn from."""
    return bool(context.task or context.directory or context.harness or context.counterpart)
