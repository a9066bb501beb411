"""Coordination that outlives its failures: an `await` pending across a coordinator crash is still answered, and
the launches kept for dispatched harnesses go when their sessions end or, after a crash, when the runtime opens."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.messages.coordination import AwaitExecution, Execution, ExecutionFinished
from resident.messages.coordination_calls import FinishRequest
from resident.messages.store import Commit
from resident.runtime.caller import Caller
from resident.runtime.context import Call
from resident.runtime.coordination import dispatch_session, finish
from resident.runtime.runtime import host_context
from resident.runtime.sessions.launching import LaunchSpec, kept_launches, load_launch, save_launch
from resident.supervisor import ThreadReply
from tests.execution_helpers import HeldHarness
from tests.replication_support import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


def test_an_await_pending_when_the_coordinator_crashes_is_answered_after_its_restart(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember"})
    work = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, actions={"remember"})
    coordinator = host_context(rt).coordinator
    reply = ThreadReply("the await")
    # From one thread, in this order: the await reaches the coordinator before the crash does.
    coordinator.tell(AwaitExecution(id=work.execution.id), reply)
    rt._internal.chaos.crash("coordinator", reason="crashed while an await was pending")
    wait_until(lambda: rt.statistics().child("coordinator").incarnation == 2, 20, "the coordinator's restart")
    work.finish("succeeded")
    answered = reply.wait(20)
    assert isinstance(answered, Execution)
    assert (answered.id, answered.outcome) == (work.execution.id, "succeeded")


def test_a_waiter_whose_execution_ended_while_the_coordinator_was_down_is_answered_at_its_start(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember"})
    work = dispatch_session(host_context(rt), "t", "deven", role="implement", parent_grant=grant, actions={"remember"})
    context = host_context(rt)
    reply = ThreadReply("the await")
    context.coordinator.tell(AwaitExecution(id=work.execution.id), reply)
    # The finish is recorded straight through the writer, as if the coordinator died before its confirmation
    # came back: only the next incarnation's start can answer the waiter.
    context.writer.ask(Commit(events=(ExecutionFinished(at=1.0, id=work.execution.id, outcome="failed"),)), 20)
    rt._internal.chaos.crash("coordinator", reason="died before answering")
    answered = reply.wait(20)
    assert (answered.id, answered.outcome) == (work.execution.id, "failed")


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("a repository\n")
    return repo


@pytest.mark.slow
def test_a_launch_is_removed_when_its_session_ends_and_a_reassignment_still_runs_the_same_command(
    rt: Runtime, tmp_path: Path
) -> None:
    held = HeldHarness(tmp_path / "fifos", "held")
    repo = _repo(tmp_path)
    step = rt.coordinator.dispatch("deven", "first", harness="command", command=held.command, directory=str(repo))
    assert kept_launches(rt.home) == [step.id]
    held.started()
    held.go(3)
    report = rt.coordinator.wait(step.id, timeout=60)
    assert report.state == "failed"
    assert kept_launches(rt.home) == []
    # What ran is read from the ended session's record: the reassigned step runs the same command there.
    rejected = rt.coordinator.reject(step.id, "it failed", reassign="alice")
    assert rejected.reassigned is not None
    again = load_launch(rt.home, rejected.reassigned.id)
    assert again is not None
    assert (again.harness, again.command, again.directory) == ("command", held.command, str(repo))


def test_launches_a_crash_left_behind_are_removed_when_the_runtime_opens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        ended = rt.coordinator.dispatch("deven", "ended")
        finish(host_context(rt), Call(Caller()), FinishRequest(ended.id, "succeeded"))
        running = rt.coordinator.dispatch("alice", "still running")
    launch = LaunchSpec(harness="command", command=("true",), directory=str(tmp_path), sandbox=False)
    # As a crash between an execution's end and its launch's removal leaves them (and one never recorded).
    for execution_id in (ended.id, running.id, "exec_never_recorded"):
        save_launch(home, execution_id, launch)
    with Runtime.open(home, realm="none") as rt:
        assert rt.coordinator.execution(running.id).outcome == "running"
    assert kept_launches(home) == [running.id]
