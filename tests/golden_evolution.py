"""Golden samples of evolution's stored formats (skills, principles, engagement, changes).

Every field is set to a value other than its default, so a renamed or re-ordered field changes the
golden bytes. Used by `tests/test_messages_golden.py`.
"""

from __future__ import annotations

from typing import Any

from resident.messages.base import Event
from resident.messages.engagement import (
    EngagementContext,
    EngagementDecision,
    EngagementExample,
    EngagementQuestion,
    EngagementQuestionAnswered,
    EngagementQuestionAsked,
    EngagementState,
    EngagementSwitched,
    MemberEngagement,
)
from resident.messages.evolution import (
    EvolutionChange,
    MemberEvolution,
    MemoryAdmissionRecorded,
    MemoryAdmissionRetracted,
)
from resident.messages.principles import Principle, PrincipleDecided, PrincipleProposed, PrincipleReverted
from resident.messages.skills import (
    ForgetCandidate,
    ForgettingDryRun,
    NativeSkillsDeclared,
    SkillAdded,
    SkillForgotten,
    SkillGiven,
    SkillHolding,
    SkillRead,
    SkillReclaimed,
    SkillRemoved,
    SkillRestored,
    SkillSession,
    SkillSessionClosed,
    SkillSessionOpened,
    SkillUse,
    SkillUseCorrected,
    SkillUsed,
    TeamSkill,
)

__all__ = ["evolution_samples"]


def evolution_samples(at: float) -> tuple[list[Event], list[Any]]:
    """The evolution events and stored records, each built once with every field set."""
    skill = TeamSkill(
        name="deploy-k8s-v2", description="Deploy to Kubernetes / 部署到集群", body="# Deploy\nkubectl apply -f .\n",
        digest="ab" * 32, added_at=at, added_by="deven", derived_from="deploy-k8s",
    )
    holding = SkillHolding(
        member="deven", skill="deploy-k8s-v2", weight=2.5, updated_session=41, updated_at=at + 1.5,
        added_session=12, added_at=at - 86_400.0, track="days", in_set=False, native=True, origin="reclaimed",
        last_used_session=40, last_used_at=at + 1.0, would_forget=True, left_at=at + 2.0, left_rule="capacity",
    )
    use = SkillUse(skill="deploy-k8s-v2", score=0.25, session=40, at=at + 1.0)
    session = SkillSession(
        member="deven", execution="exec_01hzx3k9q0", ordinal=40, opened_at=at, reads=("deploy-k8s-v2", "triage"),
        closed=True, outcome="failed", uses=(use,),
    )
    context = EngagementContext(
        task="fix the acme deploy", directory="/work/acme", harness="codex", counterpart="alice"
    )
    state = EngagementState(
        member="deven", at=at, domain="work", project="acme", counterpart="alice", activity="debugging",
        source="judge", confidence=0.875, held=True, restricted=True, context=context, question="q_01hzx3k9q0",
    )
    example = EngagementExample(member="deven", context=context, domain="personal", project="garden",
                                source="answer", at=at)
    decision = EngagementDecision(domain="work", project="acme", confidence=0.5, judge="keyword", reason="close call")
    question = EngagementQuestion(
        id="q_01hzx3k9q0", member="deven", context=context, asked_at=at, decision=decision, answered_at=at + 9.0,
        answered_by="owner", domain="work", project="acme",
    )
    principle = Principle(
        id="prn_01hzx3k9q0", member="deven", text="run migrations before deploying", basis="exec_01hzx3k9q0 failed",
        proposed_by="deven", proposed_at=at, state="rejected", decided_at=at + 60.0, decided_by="owner",
        reason="too narrow",
    )
    change = EvolutionChange(
        id="deven@7", member="deven", version=7, kind="use", subject="deploy-k8s-v2", before="1.0000",
        after="1.2500", basis="read in a session that failed: score 0.25", at=at, ref="exec_01hzx3k9q0",
        rolled_back_by="deven@9", compensates="deven@3",
    )
    candidate = ForgetCandidate(skill="triage", rule="unused", weight=0.0625)
    events: list[Event] = [
        SkillAdded(at=at, skill=skill),
        SkillGiven(at=at, member="deven", skill="triage", weight=1.5, track="days", session=3, by="owner",
                   basis="synced from alice"),
        SkillReclaimed(at=at, member="deven", skill="triage", weight=1.0, track="sessions", session=4, by="deven",
                       basis="needed again"),
        NativeSkillsDeclared(at=at, member="deven", skills=("code-review", "triage"), digest="cd" * 32, session=5,
                             weight=2.0),
        SkillSessionOpened(at=at, member="deven", execution="exec_01hzx3k9q0"),
        SkillRead(at=at, member="deven", execution="exec_01hzx3k9q0", skill="triage"),
        SkillUsed(at=at, member="deven", skill="triage", execution="exec_01hzx3k9q0", outcome="succeeded", score=1.0,
                  session=6, weight_before=0.5, weight=1.5),
        SkillSessionClosed(at=at, member="deven", execution="exec_01hzx3k9q0", outcome="succeeded"),
        SkillUseCorrected(at=at, member="deven", skill="triage", execution="exec_01hzx3k9q0", score_before=1.0,
                          score=0.0, weight_before=1.5, weight=0.5, basis="owner correction", compensates="deven@7"),
        SkillForgotten(at=at, member="deven", skill="triage", rule="capacity", weight=0.05, session=90),
        ForgettingDryRun(at=at, member="deven", flagged=(candidate,), cleared=("code-review",), session=12),
        SkillRemoved(at=at, member="deven", skill="triage", compensates="deven@2", basis="rollback of deven@2"),
        SkillRestored(at=at, member="deven", skill="triage", session=91, compensates="deven@8",
                      basis="rollback of deven@8"),
        PrincipleProposed(at=at, principle=principle),
        PrincipleDecided(at=at, id="prn_01hzx3k9q0", decision="approved", by="owner", reason="agreed"),
        PrincipleReverted(at=at, id="prn_01hzx3k9q0", compensates="deven@10", by="owner", reason="premature"),
        EngagementSwitched(at=at, state=state, example=True),
        EngagementQuestionAsked(at=at, question=question),
        EngagementQuestionAnswered(at=at, id="q_01hzx3k9q0", by="owner", domain="personal", project="garden"),
        MemoryAdmissionRecorded(at=at, member="deven", record="01HZX3K9Q0000000000000000A", basis="curated"),
        MemoryAdmissionRetracted(at=at, member="deven", record="01HZX3K9Q0000000000000000A", compensates="deven@11",
                                 basis="rollback of deven@11"),
    ]
    records: list[Any] = [
        skill,
        holding,
        session,
        MemberEvolution(member="deven", version=11, sessions=90, since=at - 86_400.0 * 40,
                        natives=("code-review",), natives_digest="cd" * 32),
        change,
        principle,
        MemberEngagement(member="deven", state=state, examples=(example,)),
        question,
    ]
    return events, records
