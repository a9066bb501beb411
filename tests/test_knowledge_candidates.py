"""Candidates: only a complete implementation step may propose one; the host sets what the agent cannot."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resident import Runtime
from resident.errors import ExecutionSettled
from resident.knowledge.evidence import fingerprint
from resident.messages.knowledge import EntryProposed
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.knowledge_helpers import candidate, entries_of, open_knowledge, owner_grant, work_item
from tests.memory_helpers import events_of


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside the tree\n", encoding="utf-8")
    (repo / "escape.py").symlink_to(tmp_path / "secret.txt")
    return repo


@pytest.fixture
def rt(tmp_path: Path, repo: Path) -> Iterator[Runtime]:
    with open_knowledge(tmp_path / "home") as runtime:
        runtime.knowledge.register_repository("resident", repo, members=["deven", "alice"])
        yield runtime


def finish(rt: Runtime, *, role: str = "implement", member: str = "deven", work: Any = None,
           outcome: str = "succeeded", result: str = "complete", files: tuple[str, ...] = ("pkg/writer.py",),
           proposal: Any = None) -> Any:
    grant = owner_grant(rt)
    session = dispatch_session(host_context(rt), "t", member, role=role, parent_grant=grant,
                                      work=work_item() if work is None else work)
    return session.finish(outcome, result=result, files=files,  # type: ignore[arg-type]
                          knowledge_candidate=candidate() if proposal is None else proposal)


def test_the_host_sets_repository_owner_sources_provider_and_fingerprint(rt: Runtime, repo: Path) -> None:
    execution = finish(rt)
    assert execution.outcome == "succeeded"
    [entry] = entries_of(rt).values()
    work = work_item()
    digest = hashlib.sha256((repo / "pkg" / "writer.py").read_bytes()).hexdigest()
    assert (entry.state, entry.project, entry.repository, entry.owner) == ("candidate", "resident", "resident", "deven")
    assert entry.fingerprint == execution.fingerprint == fingerprint(work)
    assert entry.provider == "provider-1"
    assert entry.execution == execution.id
    assert [(s.kind, s.ref) for s in entry.sources] == [("execution", execution.id), ("file", "pkg/writer.py")]
    assert entry.sources[1].digest == digest
    assert {(d.kind, d.ref) for d in entry.dependencies} == {("file", "pkg/writer.py"), ("provider", "model-1")}
    # Written in the same transaction as the step's finish.
    # The candidate is proposed in the step's own finishing commit, right after its outcome.
    names = [type(e).__name__ for e in events_of(rt)]
    proposed = names.index("EntryProposed")
    assert names[proposed - 1] == "ExecutionFinished"


@pytest.mark.parametrize(
    ("proposal", "reason"),
    [
        ({**candidate(), "repository": "other"}, "may not set repository"),
        ({**candidate(), "owner": "alice"}, "may not set owner"),
        ({**candidate(), "fingerprint": "00"}, "may not set fingerprint"),
        ({**candidate(), "provider": "x"}, "may not set provider"),
        ({**candidate(), "mood": "sure"}, "unknown field"),
        ({**candidate(), "kind": "rumour"}, "invalid"),
        ({**candidate(), "visibility": "public"}, "invalid"),
        ({**candidate(), "body": "  "}, "needs a title and a body"),
        ({**candidate(), "title": "\x1b[31mred"}, "control characters"),
        ({**candidate(), "supersedes": "kn_" + "0" * 28}, "is not a verified entry"),
        ("{not json", "not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"kind": "fact", "title": "t", "body": "b"}, "visibility"),
    ],
)
def test_an_invalid_candidate_fails_the_step_and_proposes_nothing(rt: Runtime, proposal: Any, reason: str) -> None:
    execution = finish(rt, proposal=proposal)
    assert execution.outcome == "failed"
    assert reason in execution.error
    assert "invalid knowledge_candidate" in execution.error
    assert entries_of(rt) == {}
    assert not any(isinstance(e, EntryProposed) for e in events_of(rt))


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"role": "review"}, "only an implement step"),
        ({"result": "partial"}, "complete result"),
        ({"outcome": "failed"}, "complete result"),
        ({"member": "oliver"}, "not a member of repository"),
        ({"work": work_item("elsewhere")}, "is not registered"),
        ({"files": ("../secret.txt",)}, "cannot be read"),
        ({"files": ("/etc/hostname",)}, "cannot be read"),
        ({"files": ("escape.py",)}, "cannot be read"),
        ({"files": ("pkg/missing.py",)}, "not a file of repository"),
    ],
)
def test_a_step_that_may_not_propose_fails_with_the_reason(rt: Runtime, options: dict[str, Any], reason: str) -> None:
    execution = finish(rt, **options)
    assert execution.outcome == "failed"
    assert reason in execution.error
    assert entries_of(rt) == {}


def test_a_step_without_a_work_item_cannot_propose(rt: Runtime) -> None:
    grant = owner_grant(rt)
    session = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant)
    execution = session.finish("succeeded", result="complete", knowledge_candidate=candidate())
    assert execution.outcome == "failed"
    assert "without a work item" in execution.error


def test_a_candidate_is_refused_while_knowledge_is_off(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        grant = owner_grant(rt)
        session = dispatch_session(
            host_context(rt), "t", "deven", role="implement", parent_grant=grant, work=work_item())
        execution = session.finish("succeeded", result="complete", knowledge_candidate=candidate())
    assert execution.outcome == "failed"
    assert "knowledge is off" in execution.error


def test_verdicts_and_results_are_checked_on_finish(rt: Runtime) -> None:
    grant = owner_grant(rt)
    session = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, work=work_item())
    with pytest.raises(ValueError, match="verdict is given by review and audit"):
        session.finish("succeeded", result="complete", verdict="approved")
    with pytest.raises(ValueError, match="result must be"):
        session.finish("succeeded", result="done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="only review and audit steps examine"):
        dispatch_session(
            host_context(rt), "t", "deven", role="implement", parent_grant=grant, reviews=session.execution.id)
    with pytest.raises(ValueError, match="project"):
        dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, work=work_item("../etc"))


def test_only_a_step_that_succeeded_can_be_accepted_and_accepting_twice_is_refused(rt: Runtime) -> None:
    failed = finish(rt, outcome="failed")
    with pytest.raises(ValueError, match="only a step that succeeded"):
        rt.coordinator.accept(failed.id)
    done = finish(rt)
    first = rt.coordinator.accept(done.id)
    # The dispatcher decides once: a second acceptance is refused and changes nothing.
    with pytest.raises(ExecutionSettled, match="already accepted"):
        rt.coordinator.accept(done.id)
    assert rt.coordinator.execution(done.id).accepted_at == first.accepted_at
    assert first.accepted_by == "owner"
