"""`rt.engagement`: what each member is engaged in, how it is decided, and the owner's questions.

    rt.engagement.engage("deven", domain="work", project="acme")   # explicit: wins until released
    rt.engagement.resolve("deven", EngagementContext(task="fix the acme deploy", directory=...))
    rt.engagement.questions()                                       # where the judge was not sure
    rt.engagement.answer(question_id, domain="personal")

Resolution runs where a session starts (`dispatch` calls it with the task). The judge runs in the
calling thread, never in an actor: a judge may be a remote model. Switches are written by the
member's actor, so they order with the member's other changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from resident.engagement.judge import Judge, KeywordJudge
from resident.engagement.resolution import resolve
from resident.errors import InvalidInput, ResidentError, UnknownQuestion
from resident.evolution.text import clean_line
from resident.ids import new_id
from resident.messages.engagement import (
    DOMAINS,
    Domain,
    Engage,
    EngagementContext,
    EngagementDecision,
    EngagementExample,
    EngagementQuestion,
    EngagementState,
    GetEngagement,
    MemberEngagement,
)
from resident.store.tables import ENGAGEMENT_QUESTIONS

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["EngagementControl"]

logger = logging.getLogger(__name__)

MAX_FIELD = 200


def _domain(value: str | None) -> Domain | None:
    if value is not None and value not in DOMAINS:
        raise InvalidInput(f"a domain is work or personal, not {value!r}")
    return value


def _field(value: str | None, what: str) -> str | None:
    return None if value is None else clean_line(value, what, MAX_FIELD)


class EngagementControl:
    """Engagement state per member: explicit switches, resolution, questions and answers."""

    def __init__(self, runtime: Runtime, judge: Judge | None = None) -> None:
        self._runtime = runtime
        self._judge: Judge = judge or KeywordJudge()

    def use_judge(self, judge: Judge) -> None:
        """Decide with `judge` from now on (the default is the member-trained `KeywordJudge`)."""
        self._judge = judge

    def state(self, member: str) -> EngagementState | None:
        """`member`'s engagement (None until something decided it: no narrowing then)."""
        return self._row(member, examples=False).state

    def examples(self, member: str) -> tuple[EngagementExample, ...]:
        """What `member`'s judge learns from: its explicit switches in sessions and the owner's answers."""
        return self._row(member, examples=True).examples

    def engage(
        self,
        member: str,
        *,
        domain: str | None = None,
        project: str | None = None,
        counterpart: str | None = None,
        activity: str | None = None,
        by: str = "owner",
    ) -> EngagementState:
        """An explicit switch: it wins over entry rules and the judge until the next switch or `release`.

        Made while a session is under way, it also teaches the member's judge that session's context.
        """
        current = self.state(member)
        context = current.context if current is not None else EngagementContext()
        state = EngagementState(
            member=member, at=self._runtime.clock.time(), domain=_domain(domain), project=_field(project, "project"),
            counterpart=_field(counterpart, "counterpart"), activity=_field(activity, "activity"), source="explicit",
            held=True, context=context,
        )
        return self._switch(Engage(state=state, example=_teaches(context), by=by))

    def release(self, member: str, *, by: str = "owner") -> EngagementState:
        """End an explicit switch: the next session's start decides again (rules, then the judge)."""
        current = self.state(member)
        if current is None or not current.held:
            raise InvalidInput(f"{member}'s engagement is not held by an explicit switch; nothing to release")
        released = EngagementState(
            member=member, at=self._runtime.clock.time(), domain=current.domain, project=current.project,
            counterpart=current.counterpart, activity=current.activity, source=current.source,
            confidence=current.confidence, held=False, context=current.context,
        )
        return self._switch(Engage(state=released, by=by))

    def resolve(self, member: str, context: EngagementContext) -> EngagementState | None:
        """Decide `member`'s engagement for a session starting in `context`; the state now in force."""
        runtime = self._runtime
        row = self._row(member, examples=True)
        with runtime._internal.store.reader() as reader:
            open_question = next(
                (q.id for _, q in reader.items(ENGAGEMENT_QUESTIONS) if q.member == member and q.answered_at is None),
                None,
            )

        def judge() -> EngagementDecision:
            try:
                return self._judge.decide(context, row.examples)
            except Exception as error:  # noqa: BLE001 - a failing judge must not decide anything
                logger.warning("the engagement judge %s failed (%s); asking the owner instead", self._judge.name, error)
                return EngagementDecision(domain=None, project=None, confidence=0.0, judge=self._judge.name,
                                          reason=f"the judge failed: {type(error).__name__}")

        resolution = resolve(
            member, row.state, context, runtime.config.engagement, judge, open_question=open_question,
            new_question_id=lambda: new_id("q"), at=runtime.clock.time(),
        )
        if resolution.state is None:
            return row.state
        return self._switch(Engage(state=resolution.state, question=resolution.question, by="runtime"))

    def resolve_quietly(self, member: str, context: EngagementContext) -> None:
        """`resolve` where a session starts: a failure leaves the previous state and is logged."""
        try:
            self.resolve(member, context)
        except ResidentError as error:
            logger.warning("the engagement of %s was not resolved for its new session: %s", member, error)

    def questions(self, *, include_answered: bool = False) -> list[EngagementQuestion]:
        """The owner's questions, oldest first (only open ones unless asked)."""
        self._runtime.check_open()
        with self._runtime._internal.store.reader() as reader:
            found = [q for _, q in reader.items(ENGAGEMENT_QUESTIONS)]
        return sorted(
            (q for q in found if include_answered or q.answered_at is None), key=lambda q: (q.asked_at, q.id)
        )

    def answer(
        self, question_id: str, *, domain: str | None = None, project: str | None = None, by: str = "owner"
    ) -> EngagementState:
        """The owner's answer: it applies to the member now and teaches the member's judge."""
        self._runtime.check_open()
        with self._runtime._internal.store.reader() as reader:
            question = reader.get(ENGAGEMENT_QUESTIONS, question_id) if isinstance(question_id, str) else None
        if question is None:
            raise UnknownQuestion(f"no question {str(question_id)[:80]!r}; see `resident questions`")
        if question.answered_at is not None:
            raise InvalidInput(f"question {question_id} was already answered")
        if domain is None and project is None:
            raise InvalidInput("an answer names a domain, a project, or both")
        state = EngagementState(
            member=question.member, at=self._runtime.clock.time(), domain=_domain(domain),
            project=_field(project, "project"), counterpart=question.context.counterpart or None, source="answer",
            context=question.context,
        )
        return self._switch(Engage(state=state, example=_teaches(question.context), answers=question.id, by=by))

    def _row(self, member: str, *, examples: bool) -> MemberEngagement:
        row: MemberEngagement = self._runtime._services.ask_member(member, GetEngagement(with_examples=examples), None)
        return row

    def _switch(self, message: Engage) -> EngagementState:
        state: EngagementState = self._runtime._services.ask_member(message.state.member, message, None)
        return state


def _teaches(context: EngagementContext) -> bool:
    """A switch teaches the judge only when there is a session context to learn from."""
    return bool(context.task or context.directory or context.harness or context.counterpart)
