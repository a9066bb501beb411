"""Skills in a running runtime: the library, member sets, reads becoming uses, corrections, forgetting, rebuild."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import GrantExceeded, GrantInvalid, InvalidInput, SkillInvalid, UnknownMember, UnknownSkill
from resident.messages.coordination import ExecutionFinished
from resident.messages.store import Commit
from resident.skills.weights import HALF_LIFE
from tests.evolution_helpers import DAY, add_skills, evolving, session, skill_folder


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    with evolving(tmp_path / "home", clock) as runtime:
        yield runtime


def weights(rt: Runtime, member: str) -> dict[str, float]:
    return {held.skill: held.weight for held in rt.skills.skill_set(member).skills}


def test_a_skill_folder_joins_the_team_library_and_a_rewrite_is_a_new_skill_derived_from_it(rt, tmp_path) -> None:
    rt.skills.add(skill_folder(tmp_path, "deploy-k8s", "Deploy to Kubernetes"))
    with pytest.raises(SkillInvalid, match="already in the team library"):
        rt.skills.add(skill_folder(tmp_path / "again", "deploy-k8s", "Deploy again"))
    rewrite = rt.skills.add(skill_folder(tmp_path, "deploy-k8s-codex", "Deploy from Codex"), derived_from="deploy-k8s")
    assert rewrite.derived_from == "deploy-k8s"
    with pytest.raises(UnknownSkill):
        rt.skills.add(skill_folder(tmp_path, "orphan", "Derived from nothing"), derived_from="no-such-skill")
    assert [s.name for s in rt.skills.library()] == ["deploy-k8s", "deploy-k8s-codex"]


def test_giving_a_skill_syncs_it_into_one_members_set_with_its_initial_weight(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs")])
    view = rt.skills.give("triage", "deven", weight=2.5, track="days")
    held = {h.skill: h for h in view.skills}["triage"]
    assert (held.weight, held.track, held.protected_sessions, held.last_used_session) == (2.5, "days", 10, None)
    assert rt.skills.skill_set("alice").skills == ()
    with pytest.raises(InvalidInput, match="already carries"):
        rt.skills.give("triage", "deven")
    with pytest.raises(UnknownSkill):
        rt.skills.give("no-such-skill", "deven")
    with pytest.raises(UnknownMember):
        rt.skills.give("triage", "mallory")
    with pytest.raises(InvalidInput, match="decay track"):
        rt.skills.give("triage", "alice", track="weeks")


def test_a_read_in_a_session_becomes_a_use_scored_by_its_outcome_and_projection_alone_is_not(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs"), ("deploy-k8s", "Deploy to Kubernetes")])
    rt.skills.give("triage", "deven")
    rt.skills.give("deploy-k8s", "deven")
    won = session(rt, "deven", "triage the bug queue")
    assert rt.skills.choose("deven", "triage the bug queue")[0].name == "triage"
    assert rt.with_grant(won.token).skills.read("triage").body.startswith("# triage")
    won.finish("succeeded")
    lost = session(rt, "deven", "deploy")
    rt.with_grant(lost.token).skills.read("deploy-k8s")
    lost.finish("failed")
    decay = 2 ** (-1 / HALF_LIFE["sessions"])
    assert weights(rt, "deven") == pytest.approx({"triage": (1 * decay + 1.0) * decay, "deploy-k8s": decay**2 + 0.25})
    uses = [(c.kind, c.subject) for c in rt.evolution.log("deven") if c.kind == "use"]
    assert uses == [("use", "triage"), ("use", "deploy-k8s")]


def test_an_owner_correction_turns_the_sessions_uses_into_zero_before_or_after_it_ends(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs"), ("review", "Review a pull request")])
    rt.skills.give("triage", "deven")
    rt.skills.give("review", "deven")
    after = session(rt, "deven")
    rt.with_grant(after.token).skills.read("triage")
    after.finish("succeeded")
    rt.coordinator.correct(after.execution.id, "the triage was wrong")
    before = session(rt, "deven")
    rt.with_grant(before.token).skills.read("review")
    rt.coordinator.correct(before.execution.id, "reviewed the wrong branch")
    before.finish("succeeded")
    decay = 2 ** (-1 / HALF_LIFE["sessions"])
    assert weights(rt, "deven") == pytest.approx({"triage": decay**2, "review": decay**2})
    kinds = [c.kind for c in rt.evolution.log("deven") if c.subject in ("triage", "review")]
    assert kinds == ["give", "give", "use", "rescore", "use"]


def test_a_read_outside_a_running_session_of_the_member_is_refused(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs")])
    ended = session(rt, "deven")
    ended.finish("succeeded")
    # The token of an ended session is spent: it acts as no one.
    with pytest.raises(GrantInvalid, match="has ended"):
        rt.with_grant(ended.token).skills.read("triage")
    narrow = session(rt, "deven", actions=("recall",))
    with pytest.raises(GrantExceeded, match="fetch_skills"):
        rt.with_grant(narrow.token).skills.read("triage")


def test_a_library_skill_read_outside_the_set_is_a_read_but_never_a_use(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs")])
    work = session(rt, "deven")
    rt.with_grant(work.token).skills.read("triage")
    work.finish("succeeded")
    assert rt.skills.skill_set("deven").skills == ()
    assert not [c for c in rt.evolution.log("deven") if c.kind == "use"]


def test_a_session_whose_settling_was_interrupted_is_settled_when_the_member_starts_again(tmp_path, clock) -> None:
    home = tmp_path / "home"
    with evolving(home, clock) as rt:
        add_skills(rt, tmp_path, [("triage", "Triage incoming bugs")])
        rt.skills.give("triage", "deven")
        work = session(rt, "deven")
        rt.with_grant(work.token).skills.read("triage")
        # The execution ends without the settling step (as if the process died right after).
        rt._internal.write(Commit(events=(ExecutionFinished(at=clock.time(), id=work.execution.id,
                                                            outcome="succeeded"),)))
        assert weights(rt, "deven")["triage"] == pytest.approx(2 ** (-1 / 30))
    with evolving(home, clock) as rt:
        assert [c.kind for c in rt.evolution.log("deven")][-1] == "use"
        assert weights(rt, "deven")["triage"] == pytest.approx(2 ** (-1 / 30) + 1.0)
        assert rt.skills.rebuild().differences == ()


def test_reclaiming_takes_any_team_skill_back_into_the_set_without_approval(rt, tmp_path, clock) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs")])
    view = rt.skills.reclaim("triage", "alice")
    assert [(h.skill, h.weight, h.origin) for h in view.skills] == [("triage", 1.0, "reclaimed")]
    with pytest.raises(InvalidInput, match="already carries"):
        rt.skills.reclaim("triage", "alice")
    assert [c.kind for c in rt.evolution.log("alice")] == ["reclaim"]


def test_forgetting_is_a_dry_run_in_the_first_month_then_applies_and_leaves_the_library_alone(rt, tmp_path, clock):
    add_skills(rt, tmp_path, [(f"skill-{n:02d}", f"Skill number {n}") for n in range(32)])
    for n in range(32):
        rt.skills.give(f"skill-{n:02d}", "deven", weight=1.0 + n / 100)
    for _ in range(10):
        session(rt, "deven").finish("succeeded")
    view = rt.skills.skill_set("deven")
    assert view.dry_run
    assert len(view.skills) == 32
    assert sorted(h.skill for h in view.skills if h.would_forget) == ["skill-00", "skill-01"]
    clock.advance(31 * DAY)
    session(rt, "deven").finish("succeeded")
    view = rt.skills.skill_set("deven", include_left=True)
    assert not view.dry_run
    assert sorted(h.skill for h in view.skills if not h.in_set) == ["skill-00", "skill-01"]
    assert not any(h.would_forget for h in view.skills)
    assert len(rt.skills.library()) == 32
    forgotten = [c for c in rt.evolution.log("deven") if c.kind == "forget"]
    assert [(c.subject, c.basis.split(":")[0]) for c in forgotten] == [
        ("skill-00", "capacity"), ("skill-01", "capacity")
    ]


def test_native_skills_from_soul_md_are_never_forgotten_and_do_not_count(rt, tmp_path, clock) -> None:
    add_skills(rt, tmp_path, [(f"skill-{n:02d}", f"Skill number {n}") for n in range(33)])
    soul = rt.home / "members" / "deven" / "soul.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("---\nnative_skills: [skill-00, skill-01, skill-02]\n---\nDeven builds things.\n")
    for n in range(3, 33):
        rt.skills.give(f"skill-{n:02d}", "deven")
    clock.advance(31 * DAY)
    for _ in range(120):  # long enough for every unused weight to fall under 0.1
        session(rt, "deven").finish("succeeded")
    view = rt.skills.skill_set("deven", include_left=True)
    assert {h.skill for h in view.skills if h.in_set} == {"skill-00", "skill-01", "skill-02"}
    assert all(h.native for h in view.skills if h.in_set)


def test_rebuilding_recomputes_every_weight_from_events_and_finds_them_equal(rt, tmp_path, clock) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage incoming bugs"), ("review", "Review a pull request")])
    rt.skills.give("triage", "deven", track="days")
    rt.skills.give("review", "deven")
    for outcome in ("succeeded", "failed", "succeeded"):
        work = session(rt, "deven")
        rt.with_grant(work.token).skills.read("triage")
        rt.with_grant(work.token).skills.read("review")
        clock.advance(3 * DAY)
        work.finish(outcome)
    rt.coordinator.correct(work.execution.id, "no")
    result = rt.skills.rebuild()
    assert result.holdings == 2
    assert result.differences == ()
    assert rt._internal.store.replay() == rt._internal.store.state_tables()
