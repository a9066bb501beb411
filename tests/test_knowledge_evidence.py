"""The acceptance gate: a candidate is verified only on complete, sound evidence from execution records.

Every test here builds its evidence through the coordinator's real sessions (dispatch, finish,
accept), or forges records the way an attacker with the raw write path would, and asks the gate.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from resident import Runtime
from resident.errors import PromotionRefused
from resident.ids import new_id
from resident.knowledge.evidence import fingerprint, seal
from resident.messages.coordination import Execution, ExecutionFinished, ExecutionStarted, Grant, GrantIssued
from resident.messages.knowledge import EntrySuperseded, EntryVerified, EvidenceRef
from resident.messages.store import Commit
from resident.operations.knowledge import KnowledgeSurface
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.knowledge_helpers import candidate, entries_of, evidence_chain, open_knowledge, owner_grant, work_item
from tests.memory_helpers import events_of


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with open_knowledge(tmp_path / "home") as runtime:
        runtime.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver", "victor"])
        yield runtime


def refusal(rt: Runtime, entry_id: str) -> str:
    with pytest.raises(PromotionRefused) as raised:
        rt.knowledge.promote(entry_id)
    assert entries_of(rt)[entry_id].state == "candidate"
    return str(raised.value)


def test_the_full_chain_of_real_records_verifies_the_candidate(rt: Runtime) -> None:
    chain = evidence_chain(rt)
    assert chain.entry is not None
    assert chain.entry.state == "verified"
    assert [ref.role for ref in chain.entry.evidence] == ["implement", "review", "audit"]
    assert chain.entry.evidence[0].execution == chain.implementation.id
    verified = [e for e in events_of(rt) if isinstance(e, EntryVerified)]
    assert [e.id for e in verified] == [chain.entry.id]


def test_the_candidate_waits_for_acceptance_and_is_promoted_when_it_comes(rt: Runtime) -> None:
    chain = evidence_chain(rt, accept=False)
    assert chain.entry is not None
    assert chain.entry.state == "candidate"
    assert "incomplete: implementation step" in refusal(rt, chain.entry.id)
    rt.coordinator.accept(chain.implementation.id)
    assert entries_of(rt)[chain.entry.id].state == "verified"


def test_a_rejecting_review_is_failed_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, verdicts=("rejected", "approved"))
    assert chain.entry is not None
    assert "failed: review" in refusal(rt, chain.entry.id)


def test_a_failed_audit_step_is_failed_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, auditor=None)
    assert chain.entry is not None
    audit = dispatch_session(host_context(rt), "audit", "oliver", role="audit", parent_grant=chain.grant,
                                    reviews=chain.implementation.id)
    audit.finish("failed", result="complete", error="could not build")
    assert "failed: audit" in refusal(rt, chain.entry.id)


def test_a_partial_review_is_partial_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, reviewer=None)
    assert chain.entry is not None
    review = dispatch_session(host_context(rt), "review", "alice", role="review", parent_grant=chain.grant,
                                     reviews=chain.implementation.id)
    review.finish("succeeded", result="partial", verdict="approved")
    assert "partial: review" in refusal(rt, chain.entry.id)


def test_missing_and_running_examinations_are_incomplete_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, auditor=None)
    assert chain.entry is not None
    assert "incomplete: no audit" in refusal(rt, chain.entry.id)
    dispatch_session(
        host_context(rt), "audit", "oliver", role="audit", parent_grant=chain.grant, reviews=chain.implementation.id)
    assert "still running" in refusal(rt, chain.entry.id)


def test_a_review_of_another_tree_is_mismatched_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, reviewer=None)
    assert chain.entry is not None
    review = dispatch_session(host_context(rt), "review", "alice", role="review", parent_grant=chain.grant,
                                     reviews=chain.implementation.id, work=work_item(tree="tree-2"))
    review.finish("succeeded", result="complete", verdict="approved")
    reasons = refusal(rt, chain.entry.id)
    assert "mismatched: review" in reasons
    assert "tree ('tree-2', not 'tree-1')" in reasons


def test_the_implementer_reviewing_its_own_work_is_forged_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, reviewer="deven")
    assert chain.entry is not None
    assert "not independent" in refusal(rt, chain.entry.id)


def test_the_reviewer_auditing_what_it_reviewed_is_not_independent(rt: Runtime) -> None:
    chain = evidence_chain(rt, auditor="alice")
    assert chain.entry is not None
    assert "forged: audit" in refusal(rt, chain.entry.id)


def test_a_finish_record_that_does_not_match_its_seal_is_forged_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, reviewer=None)
    assert chain.entry is not None
    review = dispatch_session(host_context(rt), "review", "alice", role="review", parent_grant=chain.grant,
                                     reviews=chain.implementation.id)
    # Written around the coordinator, claiming approval with a seal the runtime never computed.
    rt._internal.write(Commit(events=(ExecutionFinished(
        at=0.0, id=review.execution.id, outcome="succeeded", result="complete", verdict="approved", seal="ab" * 32,
    ),)))
    assert "does not match its seal" in refusal(rt, chain.entry.id)


def test_a_review_under_a_grant_the_owner_never_issued_is_forged_evidence(rt: Runtime) -> None:
    chain = evidence_chain(rt, reviewer=None)
    assert chain.entry is not None
    now = rt._internal.clock.time()
    # A self-issued grant and an execution record, each well formed, and a correctly computed seal.
    fake = Grant(id=new_id("grant"), holder="alice", actions=("review",), scopes=("AGENT_CORE",),
                 expires_at=now + 3600, issued_at=now, issued_by="alice", parent=new_id("grant"))
    work = work_item()
    record = Execution(id=new_id("exec"), task="review", member="alice", role="review", grant=fake.id, started_at=now,
                       work=work, reviews=chain.implementation.id, fingerprint=fingerprint(work))
    finished = msgspec.structs.replace(record, outcome="succeeded", result="complete", verdict="approved")
    rt._internal.write(Commit(events=(
        GrantIssued(at=now, grant=fake),
        ExecutionStarted(at=now, execution=record),
        ExecutionFinished(at=now, id=record.id, outcome="succeeded", result="complete", verdict="approved",
                          seal=seal(finished)),
    )))
    assert "not dispatched under a grant the owner issued" in refusal(rt, chain.entry.id)


def test_a_verification_written_on_evidence_that_changed_meanwhile_is_refused(rt: Runtime) -> None:
    chain = evidence_chain(rt, accept=False)
    assert chain.entry is not None
    refs = (EvidenceRef(execution=chain.implementation.id, role="implement", seal="00" * 32),)
    with pytest.raises(PromotionRefused, match="changed since the gate read it"):
        rt._internal.write(Commit(events=(EntryVerified(at=0.0, id=chain.entry.id, version=1, evidence=refs),)))
    assert entries_of(rt)[chain.entry.id].state == "candidate"


def test_no_api_takes_evidence_a_receipt_or_a_verdict_from_the_caller() -> None:
    assert list(KnowledgeSurface.promote.op.signature().parameters) == ["entry_id"]
    forbidden = {"verified", "receipt", "receipts", "evidence", "verdict", "seal", "fingerprint", "reviews"}
    for name, derived in vars(KnowledgeSurface).items():
        if hasattr(derived, "op"):
            assert not forbidden & set(derived.op.signature().parameters), name


def test_a_verified_decision_replaced_through_the_gate_is_superseded_and_keeps_its_events(rt: Runtime) -> None:
    first = evidence_chain(rt, proposal=candidate("Use one writer", kind="decision"))
    assert first.entry is not None
    second = evidence_chain(rt, proposal={**candidate("Use a writer pool", kind="decision"),
                                          "supersedes": first.entry.id})
    assert second.entry is not None
    entries = entries_of(rt)
    assert entries[second.entry.id].state == "verified"
    assert entries[first.entry.id].state == "superseded"
    assert entries[first.entry.id].superseded_by == second.entry.id
    assert [e.id for e in events_of(rt) if isinstance(e, EntrySuperseded)] == [first.entry.id]
    assert first.entry.id in {e.id for e in events_of(rt) if isinstance(e, EntryVerified)}


def test_a_legacy_entry_is_never_promoted(rt: Runtime, tmp_path: Path) -> None:
    legacy = tmp_path / "old.jsonl"
    legacy.write_text('{"project": "resident", "repository": "resident", "kind": "fact", "title": "Old", '
                      '"body": "from the old store", "state": "verified"}\n', encoding="utf-8")
    rt.knowledge.import_legacy(legacy)
    [entry] = entries_of(rt).values()
    with pytest.raises(PromotionRefused, match="never treated as fact"):
        rt.knowledge.promote(entry.id)
    assert entries_of(rt)[entry.id].state == "legacy_unverified"


def test_the_grant_chain_of_real_sessions_descends_from_the_owner(rt: Runtime) -> None:
    grant = owner_grant(rt)
    assert (grant.issued_by, grant.parent) == ("owner", None)
