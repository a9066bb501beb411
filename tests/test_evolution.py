"""Versioned evolution: every change numbered with its basis, undone only by a compensating change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import InvalidInput, RollbackRefused, TextInvalid, UnknownChange
from resident.evolution.weeks import parse_week, week_of
from resident.skills.weights import HALF_LIFE
from resident.store.tables import RECORDS
from tests.evolution_helpers import DAY, add_skills, evolving, session


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rt(tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    with evolving(tmp_path / "home", clock) as runtime:
        yield runtime


def test_each_members_changes_are_numbered_in_order_with_their_basis(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage bugs"), ("review", "Review code")])
    rt.skills.give("triage", "deven")
    rt.skills.give("review", "alice")
    # A member reclaims a skill itself, from a session of its own.
    rt.with_grant(session(rt, "deven").token).skills.reclaim("review")
    log = rt.evolution.log("deven")
    assert [(c.id, c.kind, c.subject) for c in log] == [("deven@1", "give", "triage"), ("deven@2", "reclaim", "review")]
    assert log[0].basis == "given by owner"
    assert log[1].basis == "reclaimed by deven"
    assert [c.id for c in rt.evolution.log("alice")] == ["alice@1"]


def test_rolling_back_a_give_removes_the_skill_from_the_set_and_marks_the_change(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage bugs")])
    rt.skills.give("triage", "deven")
    undone = rt.evolution.rollback("deven@1", reason="given by mistake")
    assert (undone.id, undone.kind, undone.compensates) == ("deven@2", "remove", "deven@1")
    assert "given by mistake" in undone.basis
    assert rt.skills.skill_set("deven").skills == ()
    assert rt.evolution.log("deven")[0].rolled_back_by == "deven@2"
    assert [s.name for s in rt.skills.library()] == ["triage"]
    with pytest.raises(RollbackRefused, match="already rolled back"):
        rt.evolution.rollback("deven@1")
    with pytest.raises(RollbackRefused, match="remove change"):
        rt.evolution.rollback("deven@2")


def test_rolling_back_a_use_takes_its_score_out_of_the_weight(rt, tmp_path) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage bugs")])
    rt.skills.give("triage", "deven")
    work = session(rt, "deven")
    rt.with_grant(work.token).skills.read("triage")
    work.finish("succeeded")
    (use,) = [c for c in rt.evolution.log("deven") if c.kind == "use"]
    assert use.ref == work.execution.id
    undone = rt.evolution.rollback(use.id)
    assert undone.kind == "rescore"
    assert undone.compensates == use.id
    (held,) = rt.skills.skill_set("deven").skills
    assert held.weight == pytest.approx(2 ** (-1 / HALF_LIFE["sessions"]))
    assert rt.skills.rebuild().differences == ()


def test_rolling_back_a_forgetting_puts_the_skill_back_protected_anew(rt, tmp_path, clock) -> None:
    add_skills(rt, tmp_path, [("old-habit", "Something rarely needed")])
    rt.skills.give("old-habit", "deven", weight=0.05)
    clock.advance(31 * DAY)
    for _ in range(20):
        session(rt, "deven").finish("succeeded")
    (forgotten,) = [c for c in rt.evolution.log("deven") if c.kind == "forget"]
    assert forgotten.basis.startswith("unused")
    undone = rt.evolution.rollback(forgotten.id)
    assert undone.kind == "restore"
    (held,) = rt.skills.skill_set("deven").skills
    assert held.in_set
    assert held.protected_sessions == 10
    session(rt, "deven").finish("succeeded")
    assert [h.skill for h in rt.skills.skill_set("deven").skills] == ["old-habit"]


def test_a_memory_admitted_by_curation_is_a_change_and_its_rollback_retracts_the_record(rt) -> None:
    receipt = rt.evolution.admit_memory("deven", "the staging deploy needs the migration first",
                                        basis="curated from session exec_123")
    (change,) = rt.evolution.log("deven")
    assert (change.kind, change.subject) == ("memory-admission", receipt.id)
    assert change.basis == "curated from session exec_123"
    assert [h.id for h in rt.member("deven").recall("staging deploy migration")] == [receipt.id]
    undone = rt.evolution.rollback(change.id)
    assert undone.kind == "memory-retract"
    assert rt.member("deven").recall("staging deploy migration") == []
    with rt._internal.store.reader() as reader:
        record = reader.get(RECORDS, receipt.id)
    assert record is not None
    assert record.lifecycle == "retracted"
    with pytest.raises(TextInvalid):
        rt.evolution.admit_memory("deven", "another", basis="")


def test_unknown_malformed_and_irreversible_changes_are_refused(rt, tmp_path) -> None:
    with pytest.raises(UnknownChange, match="not an evolution change id"):
        rt.evolution.rollback("deven-1")
    with pytest.raises(UnknownChange, match="no evolution change deven@9"):
        rt.evolution.rollback("deven@9")
    add_skills(rt, tmp_path, [(f"skill-{n:02d}", f"Skill {n}") for n in range(31)])
    for n in range(31):
        rt.skills.give(f"skill-{n:02d}", "deven")
    for _ in range(10):
        session(rt, "deven").finish("succeeded")
    (dry,) = [c for c in rt.evolution.log("deven") if c.kind == "forget-dry-run"]
    with pytest.raises(RollbackRefused, match="forget-dry-run change"):
        rt.evolution.rollback(dry.id)


def test_iso_weeks_are_parsed_strictly_in_utc() -> None:
    week = parse_week("2026-W01")
    assert week.label == "2026-W01"
    assert week.end - week.start == 7 * DAY
    assert week_of(week.start).label == "2026-W01"
    assert week_of(week.end - 1).label == "2026-W01"
    assert week_of(week.end).label == "2026-W02"
    for bad in ("2026-W54", "2026-53", "W01", "2026-W1", "2026-W00"):
        with pytest.raises(InvalidInput):
            parse_week(bad)


def test_the_weekly_report_counts_each_members_week(rt, tmp_path, clock) -> None:
    add_skills(rt, tmp_path, [("triage", "Triage bugs"), ("review", "Review code")])
    rt.skills.give("triage", "deven")
    this_week = week_of(clock.time())
    ok = session(rt, "deven")
    rt.with_grant(ok.token).skills.read("triage")
    ok.finish("succeeded")
    bad = session(rt, "deven")
    rt.with_grant(bad.token).skills.read("triage")
    # A member reclaims a skill itself, from a session of its own.
    rt.with_grant(bad.token).skills.reclaim("review")
    bad.finish("failed")
    rt.coordinator.correct(bad.execution.id, "always check the logs first")
    rt.principles.propose("deven", "Pair on deploys", basis="two failed deploys")
    report = rt.evolution.report(this_week.label)
    deven = next(m for m in report.members if m.member == "deven")
    assert (deven.sessions, deven.uses) == (2, 2)
    assert (deven.uses_succeeded, deven.uses_failed, deven.uses_corrected) == (1, 0, 1)
    assert deven.reclaims == ("review",)
    assert len(deven.awaiting_principles) == 2
    assert deven.dry_run
    clock.advance(7 * DAY)
    rt.principles.approve(deven.awaiting_principles[0])
    later = next(m for m in rt.evolution.report().members if m.member == "deven")
    assert (later.sessions, later.uses, later.reclaims) == (0, 0, ())
    assert len(later.awaiting_principles) == 1
    again = next(m for m in rt.evolution.report(this_week.label).members if m.member == "deven")
    assert len(again.awaiting_principles) == 2
