"""End to end: a folder of Markdown in three languages is ingested and searched; a candidate is promoted
through the gate on real execution records; its source file changes, and the entry goes stale and
leaves the context."""

from __future__ import annotations

from pathlib import Path

from resident.clock import ManualClock
from resident.messages.knowledge import EntryProposed, EntryStaled, EntryVerified
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.knowledge_helpers import (
    DOCS,
    candidate,
    evidence_chain,
    open_knowledge,
    owner_grant,
    work_item,
    write_docs,
)
from tests.memory_helpers import events_of


def test_ingest_search_promote_change_and_leave_context(tmp_path: Path) -> None:
    clock = ManualClock()
    docs = write_docs(tmp_path / "repo" / "docs")
    repo = tmp_path / "repo"
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with open_knowledge(tmp_path / "home", clock=clock) as rt:
        # Knowledge base: three languages in, each found again.
        rt.knowledge.create_bank("handbook", owner="workspace:acme")
        report = rt.knowledge.ingest("handbook", [docs])
        assert (report.files, report.admitted, report.rejected) == (len(DOCS), 6, ())
        assert rt.knowledge.search("handbook", "database migration deployment")[0].title == "Deploy guide"
        assert rt.knowledge.search("handbook", "migracion produccion")[0].title == "Despliegue"
        assert rt.knowledge.search("handbook", "迁移数据库")[0].title == "部署指南"

        # Verified knowledge: a candidate from a real implementation step, reviewed, audited, accepted.
        rt.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        grant = owner_grant(rt)
        work = work_item("resident")
        implement = dispatch_session(
            host_context(rt), "one writer", "deven", role="implement", parent_grant=grant, work=work)
        step = implement.finish("succeeded", result="complete", files=["writer.py", "docs/deploy.md"],
                                knowledge_candidate=candidate("One writer per worktree"))
        [proposed] = [e.entry for e in events_of(rt) if isinstance(e, EntryProposed)]
        for role, member in (("review", "alice"), ("audit", "oliver")):
            examination = dispatch_session(
                host_context(rt), role, member, role=role, parent_grant=grant, reviews=step.id)
            examination.finish("succeeded", result="complete", verdict="approved")
        assert rt.knowledge.entry(proposed.id).state == "candidate"  # not accepted yet
        rt.coordinator.accept(step.id)
        assert rt.knowledge.entry(proposed.id).state == "verified"
        assert [e.id for e in events_of(rt) if isinstance(e, EntryVerified)] == [proposed.id]
        [served] = rt.knowledge.context("alice", "resident", "resident", "writer worktree")
        assert served.id == proposed.id

        # A source file changes: once the TTL has passed, the probe proves it and the entry leaves context.
        (docs / "deploy.md").write_text(DOCS["deploy.md"] + "\nNew step: drain the queue first.\n", encoding="utf-8")
        clock.advance(rt._services.revalidation.ttl + 1)
        assert rt.knowledge.context("alice", "resident", "resident") == []
        stale = rt.knowledge.entry(proposed.id)
        assert (stale.state, stale.reason) == ("stale", "docs/deploy.md changed")
        assert [e.id for e in events_of(rt) if isinstance(e, EntryStaled)] == [proposed.id]
        # The knowledge base saw the change too, once the file is ingested again.
        again = rt.knowledge.ingest("handbook", [docs])
        assert (again.admitted, again.superseded) == (1, 1)
        assert "drain" in rt.knowledge.search("handbook", "drain queue")[0].snippet


def test_knowledge_state_is_rebuilt_exactly_from_its_events(tmp_path: Path) -> None:
    clock = ManualClock()
    repo = tmp_path / "repo"
    docs = write_docs(repo / "docs")
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with open_knowledge(tmp_path / "home", clock=clock) as rt:
        rt.knowledge.create_bank("handbook", owner="member:deven")
        rt.knowledge.ingest("handbook", [docs])
        (docs / "deploy.md").write_text("# Deploy guide\nShip on fridays.\n", encoding="utf-8")
        rt.knowledge.ingest("handbook", [docs])
        rt.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        kept = evidence_chain(rt, files=("docs/bushu.md",), proposal=candidate("Kept")).entry
        staled = evidence_chain(rt, proposal=candidate("Staled", kind="decision")).entry
        evidence_chain(rt, accept=False, proposal=candidate("Waiting"))
        assert kept is not None
        assert staled is not None
        (repo / "writer.py").write_text("WRITERS = 2\n", encoding="utf-8")
        clock.advance(rt._services.revalidation.ttl * 2)
        assert [e.id for e in rt.knowledge.context("alice", "resident", "resident")] == [kept.id]
        assert rt.knowledge.entry(staled.id).state == "stale"
        store = rt._internal.store
        assert store.replay() == store.state_tables()
