"""Coordination that outlives its failures: an `await` pending across a coordinator crash is still answered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.messages.coordination import AwaitExecution, Execution, ExecutionFinished
from resident.messages.store import Commit
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.supervisor import ThreadReply
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
