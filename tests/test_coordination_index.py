"""The executions index answers `executions --member/--state`, a coordinator's own listing and the runner's
search exactly as a scan of every execution would, stays whole through state changes, and a replay of the log
rebuilds it byte for byte; a home whose index does not cover its executions is answered by the scan. `await`
reports each execution's own writes from the records index."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from itertools import product
from pathlib import Path

import pytest

from resident import Runtime
from resident.coordination.grants import ROLE_ACTIONS
from resident.messages.coordination import Execution
from resident.messages.coordination_calls import ExecutionState, FinishRequest, state_of
from resident.runtime.caller import Caller
from resident.runtime.context import Call
from resident.runtime.coordination import dispatch_session, finish
from resident.runtime.runtime import host_context
from resident.store.environment import open_environment
from resident.store.execution_index import FAMILIES, RECORDS_COVERED, covers, indexed
from resident.store.tables import EXECUTION_INDEX, EXECUTION_RECORDS, EXECUTIONS

pytestmark = pytest.mark.timeout(60)

MEMBERS = ("deven", "alice", "oliver")
STATES: tuple[ExecutionState, ...] = ("running", "succeeded", "failed", "cancelled", "accepted", "rejected")


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        yield runtime


def _end(rt: Runtime, execution_id: str, outcome: str) -> None:
    finish(host_context(rt), Call(Caller()), FinishRequest(execution_id, outcome))  # type: ignore[arg-type]  # a valid outcome


def _history(rt: Runtime) -> list[str]:
    """Executions of every member in every state, some moved twice (finished, then accepted or rejected)."""
    ids = []
    for round_, member in product(range(3), MEMBERS):
        execution = rt.coordinator.dispatch(member, f"task {round_} of {member}")
        ids.append(execution.id)
        match (3 * round_ + MEMBERS.index(member)) % 6:
            case 1:
                _end(rt, execution.id, "succeeded")
            case 2:
                _end(rt, execution.id, "failed")
                rt.coordinator.reject(execution.id, "it failed", reassign="oliver")
            case 3:
                _end(rt, execution.id, "succeeded")
                rt.coordinator.accept(execution.id)
            case 4:
                _end(rt, execution.id, "cancelled")
            case 5:
                _end(rt, execution.id, "failed")
    return ids


def _scan(rt: Runtime) -> list[Execution]:
    with host_context(rt).store.reader() as reader:
        return sorted((e for _, e in reader.items(EXECUTIONS)), key=lambda e: (e.started_at, e.id))


def test_every_member_and_state_listing_matches_a_scan_of_every_execution(rt: Runtime) -> None:
    _history(rt)
    everything = _scan(rt)
    assert {state_of(e) for e in everything} == set(STATES)
    with host_context(rt).store.reader() as reader:
        assert covers(reader)
        assert reader.count(EXECUTION_INDEX) == FAMILIES * len(everything)
        running = [e.id for e in indexed(reader, state="running")]
    assert running == [e.id for e in everything if e.outcome == "running"]
    for member, state in product((None, *MEMBERS), (None, *STATES)):
        listed = [e.id for e in rt.coordinator.executions(member=member, state=state)]
        expected = [
            e.id for e in everything
            if (member is None or e.member == member) and (state is None or state_of(e) == state)
        ]
        assert listed == expected, (member, state)


def test_a_coordinators_listing_is_its_own_dispatches_from_the_index(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions=ROLE_ACTIONS["coordinate"])
    samuel = dispatch_session(host_context(rt), "plan", "samuel", role="coordinate", parent_grant=grant)
    as_samuel = rt.with_grant(samuel.token)
    rt.coordinator.dispatch("deven", "the owner's own")
    mine = [as_samuel.coordinator.dispatch(member, "samuel's").id for member in ("deven", "alice")]
    _end(rt, mine[0], "succeeded")
    assert [e.id for e in as_samuel.coordinator.executions()] == mine
    assert [e.id for e in as_samuel.coordinator.executions(member="deven", state="succeeded")] == mine[:1]
    assert [e.id for e in as_samuel.coordinator.executions(state="running")] == mine[1:]


def test_a_replay_of_the_log_rebuilds_the_index_exactly(rt: Runtime) -> None:
    _history(rt)
    store = host_context(rt).store
    assert store.replay()[EXECUTION_INDEX.name] == store.state_tables()[EXECUTION_INDEX.name]


def test_a_home_whose_index_does_not_cover_its_executions_is_answered_by_a_scan(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as rt:
        _history(rt)
        before = {(m, s): [e.id for e in rt.coordinator.executions(member=m, state=s)]
                  for m, s in product((None, *MEMBERS), (None, *STATES))}
        store_path = host_context(rt).store.path
    # As a home whose executions were recorded before the index existed: the index is empty.
    environment = open_environment(store_path, map_size=1 << 26)
    try:
        table = environment.open_db(EXECUTION_INDEX.name.encode())
        with environment.begin(write=True) as txn:
            txn.drop(table, delete=False)
    finally:
        environment.close()
    with Runtime.open(home, realm="none") as rt:
        with host_context(rt).store.reader() as reader:
            assert not covers(reader)
        after = {(m, s): [e.id for e in rt.coordinator.executions(member=m, state=s)]
                 for m, s in product((None, *MEMBERS), (None, *STATES))}
    assert after == before


def test_await_reports_each_executions_own_writes_from_the_records_index(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        rt.memory.enable()
        grant = rt.coordinator.issue_grant(actions={"remember"})
        works = [
            dispatch_session(host_context(rt), f"t{n}", "deven", role="implement", parent_grant=grant,
                             actions={"remember"})
            for n in range(3)
        ]
        rt.member("deven").remember("a note of no execution")
        written: dict[str, list[str]] = {w.execution.id: [] for w in works}
        for n, work in enumerate(works * 2):
            if n % 3 != 2:  # the third execution writes nothing
                written[work.execution.id].append(asyncio.run(work.remember(f"note {n} of {work.execution.task}")).id)
        for work in works:
            work.finish("succeeded")
        with host_context(rt).store.reader() as reader:
            assert reader.raw(EXECUTION_RECORDS, RECORDS_COVERED) is not None
        for work in works:
            report = rt.coordinator.wait(work.execution.id, timeout=10)
            assert [r.id for r in report.records] == sorted(written[work.execution.id])
        store = host_context(rt).store
        assert store.replay()[EXECUTION_RECORDS.name] == store.state_tables()[EXECUTION_RECORDS.name]
