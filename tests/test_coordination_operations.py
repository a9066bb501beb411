"""Dispatch, executions, await, accept and reject as operations: the owner's, a coordinator session's, and every
refusal (grant amplification, a member dispatching, deciding twice, an unknown execution)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import ExecutionSettled, GrantExceeded, InvalidInput, UnknownExecution
from resident.messages.coordination import ExecutionRejected
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context
from tests.cli_helpers import expect_ok, invoke

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


def _coordinator(rt: Runtime) -> Session:
    """Samuel at work under a coordinator grant the owner issued (the role's actions, every scope)."""
    from resident.coordination.grants import ROLE_ACTIONS  # noqa: PLC0415 - the role's actions, as a session start issues them

    grant = rt.coordinator.issue_grant(actions=ROLE_ACTIONS["coordinate"])
    return dispatch_session(host_context(rt), "plan the release", "samuel", role="coordinate", parent_grant=grant)


def test_the_owner_dispatches_and_lists_by_member_and_state(rt: Runtime) -> None:
    first = rt.coordinator.dispatch("deven", "fix the flaky retry test")
    rt.coordinator.dispatch("alice", "review the retry fix", role="review")
    assert (first.member, first.role, first.outcome, first.dispatched_by) == ("deven", "implement", "running", "owner")
    assert [e.id for e in rt.coordinator.executions(member="deven")] == [first.id]
    assert {e.member for e in rt.coordinator.executions(state="running")} == {"deven", "alice"}
    assert rt.coordinator.executions(state="succeeded") == []


def test_a_coordinator_dispatches_within_its_grant_and_never_beyond(rt: Runtime) -> None:
    samuel = _coordinator(rt)
    as_samuel = rt.with_grant(samuel.token)
    step = as_samuel.coordinator.dispatch("deven", "fix the retry test")
    with host_context(rt).store.reader() as reader:
        from resident.store.tables import GRANTS  # noqa: PLC0415 - the stored grant, read once

        child = reader.get(GRANTS, step.grant)
    assert child is not None
    assert child.parent == samuel.grant.id
    # The implement role's push and write_back are not Samuel's to hand on: the step gets the rest of the role.
    assert set(child.actions) <= set(samuel.grant.actions)
    assert "push" not in child.actions
    assert "remember" in child.actions
    assert step.dispatched_by == "samuel"
    with pytest.raises(GrantExceeded, match="push"):
        as_samuel.coordinator.dispatch("deven", "push it", actions=["remember", "push"])
    narrow = rt.coordinator.issue_grant(actions={"recall", "dispatch"}, scopes={"AGENT_CORE"})
    limited = dispatch_session(host_context(rt), "coordinate", "samuel", role="coordinate", parent_grant=narrow,
                               actions={"recall", "dispatch"})
    with pytest.raises(GrantExceeded, match="cannot widen"):
        rt.with_grant(limited.token).coordinator.dispatch("deven", "t", scopes=["AGENT_CORE", "WORLD_SHARED"])
    # Samuel sees what it dispatched, not the executions others dispatched.
    rt.coordinator.dispatch("alice", "the owner's own")
    assert [e.id for e in as_samuel.coordinator.executions()] == [step.id]


def test_a_member_without_dispatch_may_not_dispatch_accept_or_reject(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember", "recall"})
    deven = dispatch_session(host_context(rt), "work", "deven", role="implement", parent_grant=grant,
                             actions={"remember", "recall"})
    as_deven = rt.with_grant(deven.token)
    with pytest.raises(GrantExceeded, match="may not dispatch"):
        as_deven.coordinator.dispatch("alice", "do my work")
    other = rt.coordinator.dispatch("alice", "t")
    with pytest.raises(GrantExceeded):
        as_deven.coordinator.accept(other.id)
    with pytest.raises(GrantExceeded):
        as_deven.coordinator.reject(other.id, "no")
    assert [e.member for e in rt.coordinator.executions()] == ["deven", "alice"]


def test_a_coordinator_settles_only_what_it_dispatched(rt: Runtime) -> None:
    samuel = _coordinator(rt)
    owners = dispatch_session(host_context(rt), "t", "alice", role="test",
                              parent_grant=rt.coordinator.issue_grant(actions={"recall"}), actions={"recall"})
    owners.finish("succeeded")
    with pytest.raises(GrantExceeded, match="not dispatched by this session"):
        rt.with_grant(samuel.token).coordinator.accept(owners.execution.id)
    assert rt.coordinator.execution(owners.execution.id).accepted_at is None


def test_accepting_twice_or_a_running_step_is_refused(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember"})
    work = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, actions={"remember"})
    with pytest.raises(InvalidInput, match="running"):
        rt.coordinator.accept(work.execution.id)
    work.finish("succeeded")
    accepted = rt.coordinator.accept(work.execution.id)
    assert accepted.accepted_by == "owner"
    with pytest.raises(ExecutionSettled, match="already accepted"):
        rt.coordinator.accept(work.execution.id)
    with pytest.raises(ExecutionSettled, match="already accepted"):
        rt.coordinator.reject(work.execution.id, "too late")


def test_an_unknown_execution_is_refused_everywhere(rt: Runtime) -> None:
    for call in (
        lambda: rt.coordinator.accept("exec_nothing"),
        lambda: rt.coordinator.reject("exec_nothing", "why"),
        lambda: rt.coordinator.wait("exec_nothing", timeout=0),
    ):
        with pytest.raises(UnknownExecution):
            call()


def test_reject_says_why_once_and_reassigns_the_task(rt: Runtime) -> None:
    samuel = _coordinator(rt)
    as_samuel = rt.with_grant(samuel.token)
    step = as_samuel.coordinator.dispatch("alice", "make the build reproducible", role="test")
    with pytest.raises(InvalidInput, match="still running"):
        as_samuel.coordinator.reject(step.id, "not yet")
    host_context(rt)  # the member's side: alice ends her step
    from resident.messages.coordination_calls import FinishRequest  # noqa: PLC0415
    from resident.runtime.caller import Caller  # noqa: PLC0415
    from resident.runtime.context import Call  # noqa: PLC0415
    from resident.runtime.coordination import finish  # noqa: PLC0415 - ended as a harness's end would

    finish(host_context(rt), Call(Caller()), FinishRequest(step.id, "failed", error="make exited 2"))
    with pytest.raises(InvalidInput, match="says why"):
        as_samuel.coordinator.reject(step.id, "   ")
    rejected = as_samuel.coordinator.reject(step.id, "the build is not reproducible", reassign="oliver")
    assert rejected.reassigned is not None
    assert (rejected.reassigned.member, rejected.reassigned.task, rejected.reassigned.role) == (
        "oliver", "make the build reproducible", "test"
    )
    assert rejected.execution.reassigned_to == rejected.reassigned.id
    assert (rejected.execution.rejection, rejected.execution.rejected_by) == ("the build is not reproducible", "samuel")
    assert [e.id for e in as_samuel.coordinator.executions(state="rejected")] == [step.id]
    with pytest.raises(ExecutionSettled, match="already rejected"):
        as_samuel.coordinator.reject(step.id, "again", reassign="deven")
    with host_context(rt).store.reader() as reader:
        assert sum(isinstance(event, ExecutionRejected) for _, event in reader.events()) == 1
    # No second reassignment was dispatched by the refused rejection.
    assert [e.member for e in rt.coordinator.executions(member="deven")] == []


def test_await_answers_when_the_execution_ends_with_the_records_written(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember"})
    work = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, actions={"remember"})
    assert rt.coordinator.wait(work.execution.id, timeout=0).state == "running"
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(rt.coordinator.wait(work.execution.id, timeout=30)))
    waiting.start()
    receipt = asyncio.run(work.remember("the retry test waits for the lock"))
    work.finish("succeeded")
    waiting.join(40)
    [report] = answers
    assert (report.state, report.execution.outcome) == ("succeeded", "succeeded")
    assert [r.id for r in report.records] == [receipt.id]
    assert "deven's implement step succeeded" in report.summary


def test_the_commands_dispatch_list_await_and_settle(tmp_path: Path) -> None:
    home = tmp_path / "home"
    expect_ok(invoke(home, "memory", "enable"))
    first = expect_ok(invoke(home, "dispatch", "deven", "--task", "fix the retry test")).stdout.strip()
    assert first.startswith("exec_")
    listed = expect_ok(invoke(home, "executions", "--member", "deven")).stdout
    assert first in listed
    assert "running" in listed
    still = invoke(home, "await", first, "--timeout", "0")
    assert still.code == 3
    assert "running" in still.stdout
    refused = invoke(home, "accept", first)
    assert refused.code == 1
    assert refused.stderr.startswith("error: InvalidInput:")
    assert len(refused.stderr.splitlines()) == 1
    unknown = invoke(home, "reject", "exec_nothing", "--reason", "why")
    assert unknown.code == 1
    assert unknown.stderr.startswith("error: UnknownExecution:")
    usage = invoke(home, "dispatch", "deven", "--task", "t", "--", "make")
    assert usage.code == 2
    assert "--harness" in usage.stderr


def test_a_coordinators_projection_tells_it_how_to_dispatch_by_the_exact_command() -> None:
    from resident.sessions.projection import WorkPackage, agents_text  # noqa: PLC0415 - the projection's text alone

    package = WorkPackage(
        member="samuel", role="coordinator", harness="claude-code", session="ses_1", execution="exec_1",
        task="plan the release", actions=("dispatch", "recall", "remember"), resident=("/opt/team bin/resident",),
    )
    text = agents_text(package)
    assert "'/opt/team bin/resident' dispatch MEMBER" in text
    assert "'/opt/team bin/resident' await EXECUTION" in text
    assert "'/opt/team bin/resident' recall samuel" in text


def test_a_credential_typed_into_a_dispatched_task_is_redacted_before_it_is_stored(rt: Runtime) -> None:
    planted = "AKIA" + "Q7RSTUVWXYZ23456"
    execution = rt.coordinator.dispatch("deven", f"rotate the staging key {planted}")
    assert planted not in execution.task
    assert "[REDACTED:" in execution.task


def test_a_coordinators_session_runs_the_commands_and_a_members_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        samuel = _coordinator(rt).token
        deven = dispatch_session(host_context(rt), "t", "deven", role="implement",
                                 parent_grant=rt.coordinator.issue_grant(actions={"recall"}), actions={"recall"}).token
    step = expect_ok(invoke(home, "dispatch", "alice", "--task", "draft the notes",
                            env={"RESIDENT_GRANT_TOKEN": samuel})).stdout.strip()
    listed = expect_ok(invoke(home, "executions", env={"RESIDENT_GRANT_TOKEN": samuel})).stdout
    assert step in listed
    refused = invoke(home, "dispatch", "alice", "--task", "t", env={"RESIDENT_GRANT_TOKEN": deven})
    assert refused.code == 1
    assert refused.stderr.startswith("error: GrantExceeded:")
