"""Engagement in a running runtime: resolution at session start, questions and answers, narrowed recall."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident import Runtime
from resident.clock import ManualClock
from resident.engagement.narrowing import allows
from resident.errors import InvalidInput, TextInvalid
from resident.memory.visibility import can_see
from resident.messages.engagement import EngagementContext, EngagementDecision
from resident.messages.memory import Activation, Principal
from resident.store.tables import RECORDS
from resident.store.usage import with_usage
from tests.evolution_helpers import evolving, session
from tests.replication_support import wait_until

RULES_TOML = """
[engagement]
threshold = 0.6

[[engagement.rules]]
task = "acme"
domain = "work"
project = "acme"
"""


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "resident.toml").write_text(RULES_TOML, encoding="utf-8")
    with evolving(home, clock) as runtime:
        yield runtime


def test_a_session_start_applies_the_entry_rule_unless_an_explicit_switch_is_held(rt) -> None:
    session(rt, "deven", "fix the acme deploy")
    state = rt.engagement.state("deven")
    assert state is not None
    assert (state.source, state.domain, state.project) == ("entry-rule", "work", "acme")
    rt.engagement.engage("deven", domain="personal", activity="chatting")
    session(rt, "deven", "acme again")
    held = rt.engagement.state("deven")
    assert held is not None
    assert (held.source, held.domain, held.held) == ("explicit", "personal", True)
    rt.engagement.release("deven")
    session(rt, "deven", "acme once more")
    state = rt.engagement.state("deven")
    assert state is not None
    assert (state.source, state.project) == ("entry-rule", "acme")
    with pytest.raises(InvalidInput, match="nothing to release"):
        rt.engagement.release("deven")


def test_an_unsure_judge_asks_the_owner_once_and_answers_teach_it(rt) -> None:
    session(rt, "alice", "plan the garden party")
    session(rt, "alice", "buy garden party lights")
    (question,) = rt.engagement.questions()
    state = rt.engagement.state("alice")
    assert state is not None
    assert state.restricted
    assert state.question == question.id
    answered = rt.engagement.answer(question.id, domain="personal", project="party")
    assert (answered.source, answered.domain, answered.restricted) == ("answer", "personal", False)
    assert rt.engagement.questions() == []
    with pytest.raises(InvalidInput, match="already answered"):
        rt.engagement.answer(question.id, domain="work")
    session(rt, "alice", "garden party invitations")
    state = rt.engagement.state("alice")
    assert state is not None
    assert (state.source, state.domain, state.project) == ("judge", "personal", "party")
    assert len(rt.engagement.examples("alice")) == 1


def test_a_judge_that_fails_decides_nothing_and_the_owner_is_asked(rt) -> None:
    class Broken:
        name = "broken"

        def decide(self, context, examples):
            raise RuntimeError("model unreachable")

    rt._internal.use_judge(Broken())
    rt.engagement.resolve("oliver", EngagementContext(task="restart the queue"))
    state = rt.engagement.state("oliver")
    assert state is not None
    assert state.restricted
    assert [q.member for q in rt.engagement.questions()] == ["oliver"]


def test_a_restricted_recall_finds_k_allowed_records_below_many_it_may_not_return(rt, clock) -> None:
    class Broken:
        name = "broken"

        def decide(self, context, examples):
            raise RuntimeError("model unreachable")

    member = rt.member("oliver")
    # Forty scoped notes that match the query best, then the few unscoped ones restriction allows.
    hidden = [
        member.remember(f"queue restart runbook queue restart steps {n}", activation=Activation(project="billing")).id
        for n in range(40)
    ]
    allowed = {member.remember(f"queue restart note {n}").id for n in range(6)}
    rt._internal.use_judge(Broken())
    rt.engagement.resolve("oliver", EngagementContext(task="restart the queue"))
    state = rt.engagement.state("oliver")
    assert state is not None
    assert state.restricted
    hits = member.recall("queue restart runbook steps", k=5)
    assert len(hits) == 5
    assert {hit.id for hit in hits} <= allowed

    def counts() -> dict[str, int]:
        with rt._internal.store.reader() as reader:
            served = [with_usage(reader, reader.get(RECORDS, record_id)) for record_id in [*allowed, *hidden]]
            return {record.id: record.recall_count for record in served if record is not None}

    # The hits it returned count as recalled; those the engagement dropped were never served, and are
    # counted in the same usage commit if at all, so once the first show the second are settled.
    def counted() -> bool:
        clock.advance(1.0)  # the substrate commits usage on a timer of the runtime's clock
        return all(counts()[hit.id] == 1 for hit in hits)

    wait_until(counted, 10.0, "the returned hits counted as recalled")
    assert [record_id for record_id in hidden if counts()[record_id]] == []


def test_a_bad_switch_is_refused(rt) -> None:
    with pytest.raises(InvalidInput, match="work or personal"):
        rt.engagement.engage("deven", domain="office")
    with pytest.raises(TextInvalid, match="control character"):
        rt.engagement.engage("deven", project="acme\x1b[2J")
    assert rt.engagement.state("deven") is None


DOMAIN = st.sampled_from([None, "work", "personal"])
PROJECT = st.sampled_from([None, "acme", "beta"])


def test_no_engagement_state_ever_reveals_a_record_the_member_could_not_see_without_it(tmp_path, clock) -> None:
    with evolving(tmp_path / "home", clock) as rt:
        member = rt.member("deven")
        for n, (domain, project) in enumerate(
            (d, p) for d in (None, "work", "personal") for p in (None, "acme", "beta")
        ):
            for copy in range(3):
                activation = Activation(domain=domain, project=project)  # type: ignore[arg-type]  # a domain or None
                member.remember(f"note {n}.{copy} about the deploy", activation=activation)
        rt.member("alice").remember("alice's note about the deploy")
        principal = Principal(kind="member", name="deven", worlds=("team",))

        def eligible(asked: Activation) -> set[str]:
            """What deven may recall for `asked` with no engagement: visible, active, activation agreeing."""
            with rt._internal.store.reader() as reader:
                return {
                    r.id for _, r in reader.items(RECORDS)
                    if can_see(principal, r) and all(
                        want is None or value is None or value == want
                        for want, value in ((asked.domain, r.activation.domain), (asked.project, r.activation.project))
                    )
                }

        @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(DOMAIN, PROJECT, st.booleans(), DOMAIN, PROJECT)
        def check(domain, project, restricted, asked_domain, asked_project) -> None:
            if restricted:
                if _held(rt):
                    rt.engagement.release("deven")
                rt.engagement.resolve("deven", EngagementContext(task="anything"))
            else:
                rt.engagement.engage("deven", domain=domain, project=project)
            state = rt.engagement.state("deven")
            asked = Activation(domain=asked_domain, project=asked_project)
            hits = member.recall("deploy note", k=30, activation=Activation(domain=asked_domain, project=asked_project))
            assert {h.id for h in hits} <= eligible(asked)
            with rt._internal.store.reader() as reader:
                records = [reader.get(RECORDS, h.id) for h in hits]
            assert all(r is not None and allows(state, r.activation) for r in records)

        rt._internal.use_judge(_Unsure())

        check()


class _Unsure:
    name = "unsure"

    def decide(self, context, examples):
        return EngagementDecision(domain=None, project=None, confidence=0.0, judge=self.name)


def _held(rt: Runtime) -> bool:
    state = rt.engagement.state("deven")
    return state is not None and state.held
