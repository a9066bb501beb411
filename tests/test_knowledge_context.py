"""Context preparation: verified entries only, each revalidated within a TTL by an authorized probe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import InvalidInput, NotVisible
from resident.knowledge.visibility import Subject
from resident.messages.knowledge import EntryRevalidated, EntryStaled, EntrySuperseded
from resident.messages.store import Commit
from resident.runtime.knowledge.context import read_context, revalidate
from tests.knowledge_helpers import candidate, entries_of, evidence_chain, open_knowledge
from tests.memory_helpers import events_of

TTL = 600.0


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    (repo / "pool.py").write_text("POOL = 4\n", encoding="utf-8")
    return repo


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(tmp_path: Path, repo: Path, clock: ManualClock) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home", clock=clock) as runtime:
        runtime.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        runtime._services.revalidation.ttl = TTL
        yield runtime


def ids(rt: Runtime, subject: str = "alice", query: str | None = None) -> list[str]:
    return [entry.id for entry in rt.knowledge.context(subject, "resident", "resident", query)]


def test_only_verified_entries_are_handed_out(rt: Runtime, tmp_path: Path) -> None:
    verified = evidence_chain(rt).entry
    waiting = evidence_chain(rt, proposal=candidate("Still a candidate"), accept=False).entry
    legacy = tmp_path / "old.jsonl"
    legacy.write_text('{"project": "resident", "repository": "resident", "kind": "fact", "title": "Legacy", '
                      '"body": "old words", "state": "verified"}\n', encoding="utf-8")
    rt.knowledge.import_legacy(legacy)
    assert verified is not None
    assert waiting is not None
    assert waiting.state == "candidate"
    assert ids(rt) == [verified.id]


def test_within_the_ttl_an_entry_is_served_without_a_probe_and_after_it_the_probe_proves_it_stale(
    rt: Runtime, repo: Path, clock: ManualClock
) -> None:
    entry = evidence_chain(rt).entry
    assert entry is not None
    (repo / "writer.py").write_text("WRITERS = 2\n", encoding="utf-8")
    clock.advance(TTL / 2)
    assert ids(rt) == [entry.id]  # checked when it was made, less than a TTL ago
    clock.advance(TTL)
    assert ids(rt) == []
    stored = entries_of(rt)[entry.id]
    assert (stored.state, stored.reason) == ("stale", "writer.py changed")
    assert [e.id for e in events_of(rt) if isinstance(e, EntryStaled)] == [entry.id]


def test_an_unchanged_entry_is_revalidated_and_its_check_recorded(rt: Runtime, clock: ManualClock) -> None:
    entry = evidence_chain(rt).entry
    assert entry is not None
    clock.advance(TTL * 2)
    [served] = rt.knowledge.context("alice", "resident", "resident")
    assert served.checked_at == rt._internal.clock.time()
    assert [e.id for e in events_of(rt) if isinstance(e, EntryRevalidated)] == [entry.id]
    ids(rt)  # within the new TTL: no second probe, no second event
    assert len([e for e in events_of(rt) if isinstance(e, EntryRevalidated)]) == 1


def test_a_deleted_source_file_is_proof_and_an_unreadable_tree_is_not(rt: Runtime, repo: Path,
                                                                     clock: ManualClock) -> None:
    gone = evidence_chain(rt).entry
    kept = evidence_chain(rt, files=("pool.py",), proposal=candidate("Pool size")).entry
    assert gone is not None
    assert kept is not None
    (repo / "writer.py").unlink()
    clock.advance(TTL * 2)
    assert ids(rt) == [kept.id]
    assert entries_of(rt)[gone.id].state == "stale"
    # The work tree moved away: the probe cannot look, which proves nothing about the entry.
    moved = repo.rename(repo.with_name("moved"))
    clock.advance(TTL * 2)
    assert ids(rt) == []
    assert entries_of(rt)[kept.id].state == "verified"
    moved.rename(repo)
    assert ids(rt) == [kept.id]


def test_a_source_swapped_for_a_link_out_of_the_tree_fails_the_probe_without_marking_it(
    rt: Runtime, repo: Path, tmp_path: Path, clock: ManualClock
) -> None:
    entry = evidence_chain(rt).entry
    assert entry is not None
    outside = tmp_path / "outside.py"
    outside.write_text("WRITERS = 1\n", encoding="utf-8")  # same bytes: only the link differs
    (repo / "writer.py").unlink()
    (repo / "writer.py").symlink_to(outside)
    clock.advance(TTL * 2)
    assert ids(rt) == []
    assert entries_of(rt)[entry.id].state == "verified"


def test_an_entry_whose_state_changed_after_it_was_read_is_left_out(rt: Runtime, clock: ManualClock) -> None:
    entry = evidence_chain(rt, proposal=candidate("Use one writer", kind="decision")).entry
    assert entry is not None
    clock.advance(TTL * 2)
    read = read_context(rt._services, Subject(member="alice"), "resident", "resident", None)
    # Between the read and the revalidation's write, the decision is replaced.
    rt._internal.write(Commit(events=(EntrySuperseded(at=rt._internal.clock.time(), id=entry.id, version=entry.version,
                                                      by="kn_" + "1" * 28),)))
    assert revalidate(rt._services, read, k=5, ttl=TTL) == []
    assert not any(isinstance(e, EntryRevalidated) for e in events_of(rt))


def test_a_fresh_entry_whose_state_changed_after_the_read_is_left_out_too(rt: Runtime) -> None:
    entry = evidence_chain(rt).entry
    assert entry is not None
    read = read_context(rt._services, Subject(member="alice"), "resident", "resident", None)
    rt._internal.write(Commit(events=(EntryStaled(at=rt._internal.clock.time(), id=entry.id, version=entry.version,
                                                  reason="changed elsewhere"),)))
    assert revalidate(rt._services, read, k=5, ttl=TTL) == []


def test_subject_project_and_repository_are_checked_first(rt: Runtime) -> None:
    evidence_chain(rt)
    with pytest.raises(NotVisible, match="victor"):
        rt.knowledge.context("victor", "resident", "resident")
    with pytest.raises(NotVisible):
        rt.knowledge.context("alice", "other-project", "resident")
    with pytest.raises(NotVisible):
        rt.knowledge.context("alice", "resident", "unregistered")
    with pytest.raises(InvalidInput):
        rt.knowledge.context("alice", "../x", "resident")
    with pytest.raises(InvalidInput, match="k must be"):
        rt.knowledge.context("alice", "resident", "resident", k=0)


def test_a_private_entry_is_its_owners_alone(rt: Runtime) -> None:
    private = evidence_chain(rt, proposal=candidate("Deven's note", visibility="private")).entry
    assert private is not None
    assert ids(rt, "deven") == [private.id]
    assert ids(rt, "alice") == []


def test_a_query_ranks_the_entries_and_leaves_out_those_it_does_not_match(rt: Runtime) -> None:
    writer = evidence_chain(rt, proposal=candidate("One writer", body="Only one writer commits to LMDB.")).entry
    pool = evidence_chain(rt, files=("pool.py",),
                          proposal=candidate("Pool size", body="The worker pool holds four threads.")).entry
    assert writer is not None
    assert pool is not None
    assert ids(rt, query="worker pool threads") == [pool.id]
    assert set(ids(rt)) == {writer.id, pool.id}
