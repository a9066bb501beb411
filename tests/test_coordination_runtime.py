"""The coordinator: executions under grants, progress from execution records, corrections."""

from __future__ import annotations

import asyncio

import pytest

from resident import Runtime
from resident.errors import GrantExceeded, OwnerOnlyAction, UnknownExecution
from resident.messages.coordination import CorrectionRecorded, ExecutionFinished, ExecutionStarted, GrantIssued
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.tables import EXECUTIONS


@pytest.fixture
def rt(tmp_path):
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


def events_of(rt, kind):
    with rt._internal.store.reader() as reader:
        return [event for _, event in reader.events() if isinstance(event, kind)]


def test_a_dispatch_records_an_execution_with_its_grant_and_role(rt):
    grant = rt.coordinator.issue_grant(actions={"remember", "recall"})
    session = dispatch_session(host_context(rt), "write-notes", "deven", role="implement", parent_grant=grant,
                                      actions={"remember"})
    execution = session.execution
    assert (execution.task, execution.member, execution.role, execution.outcome) == (
        "write-notes", "deven", "implement", "running"
    )
    assert session.grant.parent == grant.id
    assert set(session.grant.actions) == {"remember"}
    assert [e.execution.id for e in events_of(rt, ExecutionStarted)] == [execution.id]
    assert {e.grant.id for e in events_of(rt, GrantIssued)} == {grant.id, session.grant.id}


def test_progress_comes_from_execution_records_even_with_memory_off(rt):
    grant = rt.coordinator.issue_grant(actions={"remember", "recall"})
    first = dispatch_session(host_context(rt), "a", "deven", role="implement", parent_grant=grant, actions={"remember"})
    dispatch_session(host_context(rt), "b", "alice", role="test", parent_grant=grant, actions={"recall"})
    asyncio.run(first.remember("the build is green"))
    first.finish("succeeded")
    rt.memory.disable()
    progress = rt.coordinator.progress()
    rows = {row.member: row for row in progress.members}
    assert (progress.executions, progress.running) == (2, 1)
    assert (rows["deven"].succeeded, rows["deven"].steps, rows["deven"].last_task) == (1, 1, "a")
    assert rows["alice"].running == 1
    assert [e.outcome for e in events_of(rt, ExecutionFinished)] == ["succeeded"]


def test_a_child_grant_wider_than_its_parent_is_refused_and_nothing_is_recorded(rt):
    grant = rt.coordinator.issue_grant(actions={"recall"}, scopes={"AGENT_CORE"})
    with pytest.raises(GrantExceeded, match="cannot widen"):
        dispatch_session(
            host_context(rt), "x", "deven", role="implement", parent_grant=grant, actions={"recall", "forget"})
    with pytest.raises(GrantExceeded, match="cannot widen"):
        dispatch_session(host_context(rt), "x", "deven", role="implement", parent_grant=grant, actions={"recall"},
                                scopes={"WORLD_SHARED"})
    with rt._internal.store.reader() as reader:
        assert reader.count(EXECUTIONS) == 0


def test_a_role_whose_actions_exceed_the_parent_grant_is_refused(rt):
    grant = rt.coordinator.issue_grant(actions={"recall"})
    with pytest.raises(GrantExceeded, match="cannot widen"):
        dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant)


def test_owner_actions_are_never_granted(rt):
    with pytest.raises(OwnerOnlyAction):
        rt.coordinator.issue_grant(actions={"recall", "merge"})


def test_member_callbacks_are_checked_against_the_grant(rt):
    grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
    session = dispatch_session(host_context(rt), "r", "alice", role="review", parent_grant=grant, actions={"recall"})
    before = len(events_of(rt, object))
    with pytest.raises(GrantExceeded, match="does not allow alice to remember"):
        asyncio.run(session.remember("not allowed"))
    writer = dispatch_session(
        host_context(rt), "w", "alice", role="implement", parent_grant=grant, actions={"remember"})
    with pytest.raises(GrantExceeded, match="does not cover WORLD_SHARED"):
        asyncio.run(writer.remember("shared", scope="WORLD_SHARED", world="team"))
    # Only the second dispatch: grant, execution, token and the member's session, then its engagement.
    assert len(events_of(rt, object)) == before + 5


def test_a_correction_is_an_event_on_the_execution(rt):
    grant = rt.coordinator.issue_grant(actions={"remember"})
    session = dispatch_session(
        host_context(rt), "fix", "deven", role="implement", parent_grant=grant, actions={"remember"})
    session.finish("succeeded")
    correction = rt.coordinator.correct(session.execution.id, "used the wrong branch")
    assert [e.correction.id for e in events_of(rt, CorrectionRecorded)] == [correction.id]
    with rt._internal.store.reader() as reader:
        assert reader.get(EXECUTIONS, session.execution.id).corrections == 1
    with pytest.raises(UnknownExecution):
        rt.coordinator.correct("exec_nope", "x")


def test_executions_survive_a_restart(tmp_path):
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"recall"})
        session = dispatch_session(
            host_context(rt), "t", "oliver", role="operate", parent_grant=grant, actions={"recall"})
        execution_id = session.execution.id
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        assert [e.id for e in rt.coordinator.executions()] == [execution_id]
        assert rt.coordinator.progress().running == 1


def test_dispatch_by_role_grants_evolution_callbacks_only_as_far_as_the_parent_allows(rt):
    memory_only = rt.coordinator.issue_grant(
        actions={"remember", "recall", "forget", "supersede", "reconcile", "write_back", "push"}
    )
    narrow = dispatch_session(host_context(rt), "fix", "deven", role="implement", parent_grant=memory_only)
    assert "fetch_skills" not in narrow.grant.actions
    with pytest.raises(GrantExceeded, match="does not allow deven to fetch_skills"):
        narrow.authorize("fetch_skills")
    everything = rt.coordinator.issue_grant(
        actions={"remember", "recall", "forget", "supersede", "reconcile", "write_back", "push", "fetch_skills"}
    )
    wide = dispatch_session(host_context(rt), "fix", "deven", role="implement", parent_grant=everything)
    wide.authorize("fetch_skills")
    assert "write_engagement" not in wide.grant.actions
