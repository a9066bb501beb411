"""How principle, engagement and curated-admission events change state.

Principles move only by the owner's decision (candidate → approved or rejected), and a rollback
makes one a candidate again; both are versioned changes of the principle's member. Engagement keeps
one row per member: the current state and the last examples its judge learns from. A memory that
curation admitted is a versioned change too; undoing it is the record's retraction, written by the
same commit as the compensating event.
"""

from __future__ import annotations

import msgspec

from resident.errors import InvalidInput, RecordNotFound, UnknownPrinciple, UnknownQuestion
from resident.messages.engagement import (
    EngagementExample,
    EngagementQuestion,
    EngagementQuestionAnswered,
    EngagementQuestionAsked,
    EngagementSwitched,
    MemberEngagement,
)
from resident.messages.evolution import MemoryAdmissionRecorded, MemoryAdmissionRetracted
from resident.messages.principles import Principle, PrincipleDecided, PrincipleProposed, PrincipleReverted
from resident.store.changes import compensable, record_change
from resident.store.projecting import projection
from resident.store.tables import ENGAGEMENT, ENGAGEMENT_QUESTIONS, PRINCIPLES, RECORDS
from resident.store.view import View

__all__ = ["MAX_EXAMPLES"]

# The judge learns from the most recent examples only: old habits fade, and the row stays small.
MAX_EXAMPLES = 200


# -- principles ----------------------------------------------------------------------------------


def _principle(view: View, principle_id: str) -> Principle:
    principle = view.get(PRINCIPLES, principle_id)
    if principle is None:
        raise UnknownPrinciple(f"no principle {principle_id}; see `resident principles list`")
    return principle


def _proposable(view: View, event: PrincipleProposed) -> bool:
    if view.get(PRINCIPLES, event.principle.id) is not None:
        raise InvalidInput(f"a principle with id {event.principle.id} already exists")
    if event.principle.state != "candidate":
        raise InvalidInput("a principle is proposed as a candidate; only the owner's approval promotes it")
    return True


@projection(PrincipleProposed, check=_proposable)
def _proposed(view: View, event: PrincipleProposed) -> None:
    view.put(PRINCIPLES, event.principle.id, event.principle)


def _decidable(view: View, event: PrincipleDecided) -> bool:
    principle = _principle(view, event.id)
    if principle.state != "candidate":
        raise InvalidInput(f"principle {event.id} was already {principle.state}; roll that back first to decide again")
    return True


@projection(PrincipleDecided, check=_decidable)
def _decided(view: View, event: PrincipleDecided) -> None:
    principle = _principle(view, event.id)
    decided = msgspec.structs.replace(
        principle, state=event.decision, decided_at=event.at, decided_by=event.by, reason=event.reason
    )
    view.put(PRINCIPLES, event.id, decided)
    record_change(
        view, member=principle.member, kind="principle-approve" if event.decision == "approved" else "principle-reject",
        subject=event.id, before="candidate", after=event.decision,
        basis=event.reason or f"{event.decision} by {event.by}", at=event.at,
    )


def _revertible(view: View, event: PrincipleReverted) -> bool:
    change = compensable(view, event.compensates, "principle-approve", "principle-reject")
    if change.subject != event.id:
        raise InvalidInput(f"change {event.compensates} decided principle {change.subject}, not {event.id}")
    return True


@projection(PrincipleReverted, check=_revertible)
def _reverted(view: View, event: PrincipleReverted) -> None:
    principle = _principle(view, event.id)
    candidate = msgspec.structs.replace(principle, state="candidate", decided_at=None, decided_by="", reason="")
    view.put(PRINCIPLES, event.id, candidate)
    record_change(
        view, member=principle.member, kind="principle-revert", subject=event.id, before=principle.state,
        after="candidate", basis=event.reason or f"rolled back by {event.by}", at=event.at,
        compensates=event.compensates,
    )


# -- engagement ----------------------------------------------------------------------------------


@projection(EngagementSwitched)
def _switched(view: View, event: EngagementSwitched) -> None:
    state = event.state
    row = view.get(ENGAGEMENT, state.member) or MemberEngagement(member=state.member)
    examples = row.examples
    if event.example:
        example = EngagementExample(
            member=state.member, context=state.context, domain=state.domain, project=state.project,
            source=state.source, at=event.at,
        )
        examples = (*examples, example)[-MAX_EXAMPLES:]
    view.put(ENGAGEMENT, state.member, MemberEngagement(member=state.member, state=state, examples=examples))


def _question(view: View, question_id: str) -> EngagementQuestion:
    question = view.get(ENGAGEMENT_QUESTIONS, question_id)
    if question is None:
        raise UnknownQuestion(f"no question {question_id}; see `resident questions`")
    return question


def _askable(view: View, event: EngagementQuestionAsked) -> bool:
    if view.get(ENGAGEMENT_QUESTIONS, event.question.id) is not None:
        raise InvalidInput(f"a question with id {event.question.id} already exists")
    return True


@projection(EngagementQuestionAsked, check=_askable)
def _asked(view: View, event: EngagementQuestionAsked) -> None:
    view.put(ENGAGEMENT_QUESTIONS, event.question.id, event.question)


def _answerable(view: View, event: EngagementQuestionAnswered) -> bool:
    if _question(view, event.id).answered_at is not None:
        raise InvalidInput(f"question {event.id} was already answered")
    return True


@projection(EngagementQuestionAnswered, check=_answerable)
def _answered(view: View, event: EngagementQuestionAnswered) -> None:
    answered = msgspec.structs.replace(
        _question(view, event.id), answered_at=event.at, answered_by=event.by, domain=event.domain,
        project=event.project,
    )
    view.put(ENGAGEMENT_QUESTIONS, event.id, answered)


# -- memory admitted by curation -----------------------------------------------------------------


def _admitted_record(view: View, event: MemoryAdmissionRecorded) -> bool:
    record = view.get(RECORDS, event.record)
    if record is None or (record.author or record.owner) != event.member:
        raise RecordNotFound(f"no memory record {event.record} of {event.member}")
    return True


@projection(MemoryAdmissionRecorded, check=_admitted_record)
def _admission(view: View, event: MemoryAdmissionRecorded) -> None:
    record_change(
        view, member=event.member, kind="memory-admission", subject=event.record, before="not in memory",
        after="admitted", basis=event.basis, at=event.at,
    )


def _retractable_admission(view: View, event: MemoryAdmissionRetracted) -> bool:
    change = compensable(view, event.compensates, "memory-admission")
    if change.subject != event.record:
        raise InvalidInput(f"change {event.compensates} admitted record {change.subject}, not {event.record}")
    return True


@projection(MemoryAdmissionRetracted, check=_retractable_admission)
def _admission_retracted(view: View, event: MemoryAdmissionRetracted) -> None:
    record_change(
        view, member=event.member, kind="memory-retract", subject=event.record, before="admitted",
        after="retracted", basis=event.basis, at=event.at, compensates=event.compensates,
    )
