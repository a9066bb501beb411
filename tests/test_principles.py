"""Principles: candidates from members or the runtime, promoted by nothing but the owner's decision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import GrantExceeded, InvalidInput, TextInvalid, UnknownPrinciple
from tests.evolution_helpers import DAY, evolving, session


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    with evolving(tmp_path / "home", clock) as runtime:
        yield runtime


def test_a_member_proposes_for_itself_and_it_stays_a_candidate_until_the_owner_decides(rt, clock) -> None:
    work = session(rt, "deven")
    as_deven = rt.with_grant(work.token)
    proposed = as_deven.principles.propose(None, "Run migrations before deploying", basis="exec failed twice")
    assert (proposed.member, proposed.proposed_by, proposed.state) == ("deven", "deven", "candidate")
    for _ in range(20):
        session(rt, "deven").finish("succeeded")
    clock.advance(90 * DAY)
    assert rt.principles.get(proposed.id).state == "candidate"
    approved = rt.principles.approve(proposed.id, reason="agreed")
    assert (approved.state, approved.decided_by, approved.reason) == ("approved", "owner", "agreed")
    assert [c.kind for c in rt.evolution.log("deven")] == ["principle-approve"]


def test_a_session_cannot_propose_for_another_member_or_without_the_grant(rt) -> None:
    work = session(rt, "deven")
    with pytest.raises(InvalidInput, match="for itself only"):
        rt.with_grant(work.token).principles.propose("alice", "Always pair", basis="because")
    narrow = session(rt, "deven", actions=("recall",))
    with pytest.raises(GrantExceeded, match="propose_principle"):
        rt.with_grant(narrow.token).principles.propose(None, "Always pair", basis="because")


def test_a_rejection_needs_a_reason_and_a_decision_is_not_made_twice(rt) -> None:
    first = rt.principles.propose("alice", "Write the test first", basis="review notes")
    with pytest.raises(TextInvalid, match="rejection's --reason"):
        rt.principles.reject(first.id, reason="  ")
    rejected = rt.principles.reject(first.id, reason="already a team convention")
    assert rejected.state == "rejected"
    with pytest.raises(InvalidInput, match="already rejected"):
        rt.principles.approve(first.id)
    with pytest.raises(UnknownPrinciple):
        rt.principles.approve("prn_nope")


@pytest.mark.parametrize(
    ("text", "basis", "says"),
    [("", "b", "text is empty"), ("x" * 2_001, "b", "limit is 2000"), ("ok", "", "basis"),
     ("ok \x1b[2J", "b", "control character")],
)
def test_a_bad_principle_is_refused_and_nothing_is_written(rt, text: str, basis: str, says: str) -> None:
    with pytest.raises(TextInvalid, match=says):
        rt.principles.propose("alice", text, basis=basis)
    assert rt.principles.list() == []


def test_an_owner_correction_proposes_its_note_to_the_corrected_member(rt) -> None:
    work = session(rt, "victor", "rebalance the portfolio")
    work.finish("succeeded")
    correction = rt.coordinator.correct(work.execution.id, "never trade on Fridays")
    (candidate,) = rt.principles.list(member="victor", state="candidate")
    assert (candidate.text, candidate.proposed_by) == ("never trade on Fridays", "runtime")
    assert correction.id in candidate.basis
    assert work.execution.id in candidate.basis
    hostile = session(rt, "victor")
    rt.coordinator.correct(hostile.execution.id, "fine \x1b]0;pwned\x07")
    assert len(rt.principles.list(member="victor")) == 1


def test_rolling_back_a_decision_makes_the_principle_a_candidate_again(rt) -> None:
    proposed = rt.principles.propose("oliver", "Page a human before restarting prod", basis="incident")
    rt.principles.approve(proposed.id)
    (change,) = rt.evolution.log("oliver")
    undone = rt.evolution.rollback(change.id, reason="premature")
    assert undone.kind == "principle-revert"
    assert undone.compensates == change.id
    assert rt.principles.get(proposed.id).state == "candidate"
    assert rt.evolution.log("oliver")[0].rolled_back_by == undone.id
    rt.principles.reject(proposed.id, reason="a runbook covers it")
    assert rt.principles.get(proposed.id).state == "rejected"
