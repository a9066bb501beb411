"""A simulated quarter: one member with 60 skills, 300 sessions over 90 days, and a report that matches the rules.

The runtime runs the whole quarter on a manual clock. Beside it, `Quarter` applies the spec's rules
(section 5.3) again, written out plainly here, to the same sessions; every week's report must agree
with it on sessions, uses and their scores, forgotten skills, would-be forgotten skills in the first
month's dry run, and reclaims. The end state must also keep the rules' invariants.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from resident.clock import ManualClock
from resident.evolution.weeks import week_of
from resident.messages.evolution import MemberWeek
from resident.messages.skills import Track
from tests.evolution_helpers import DAY, add_skills, evolving, session

SESSIONS = 300
QUARTER = 90 * DAY
NATIVES = ("skill-00", "skill-01", "skill-02")
SKILLS = [f"skill-{n:02d}" for n in range(60)]
DAY_TRACK = set(SKILLS[50:])  # the last ten decay by days, the rest by sessions
HALF_LIFE = {"sessions": 30.0, "days": 60.0}


@dataclass
class Held:
    weight: float
    track: str
    updated: tuple[int, float]
    added: tuple[int, float]
    last_used: tuple[int, float] | None = None
    in_set: bool = True
    native: bool = False
    flagged: bool = False


@dataclass
class Quarter:
    """The rules of section 5.3, applied to one member step by step (the reference for the report)."""

    since: float
    held: dict[str, Held] = field(default_factory=dict)
    sessions: int = 0
    events: list[tuple[str, float, str]] = field(default_factory=list)  # (kind, time, skill)
    uses: list[tuple[float, float]] = field(default_factory=list)  # (time, score)
    starts: list[float] = field(default_factory=list)

    def weight_now(self, held: Held, at: float) -> float:
        session, when = held.updated
        distance = max(0, self.sessions - session) if held.track == "sessions" else max(0.0, at - when) / DAY
        return float(held.weight * 2.0 ** (-distance / HALF_LIFE[held.track]))

    def join(self, skill: str, at: float, *, native: bool = False, track: str = "sessions") -> None:
        self.held[skill] = Held(1.0, track, (self.sessions, at), (self.sessions, at), native=native)
        self.sweep(at)

    def reclaim(self, skill: str, at: float) -> None:
        old = self.held[skill]
        self.held[skill] = Held(max(self.weight_now(old, at), 1.0), old.track, (self.sessions, at), (self.sessions, at))
        self.events.append(("reclaim", at, skill))
        self.sweep(at)

    def session(self, at: float, reads: list[str], score: float) -> None:
        self.sessions += 1
        self.starts.append(at)
        for skill in reads:
            held = self.held.get(skill)
            if held is None or not held.in_set:
                continue
            held.weight = self.weight_now(held, at) + score
            held.updated = held.last_used = (self.sessions, at)
            self.uses.append((at, score))
        self.sweep(at)

    def sweep(self, at: float) -> None:
        """The forgetting pass: the unused rule, then capacity, over unprotected non-natives."""
        counted = [s for s, h in self.held.items() if h.in_set and not h.native]
        weight = {s: self.weight_now(self.held[s], at) for s in counted}

        def idle(skill: str) -> tuple[int, float]:
            held = self.held[skill]
            session, when = held.last_used or held.added
            return self.sessions - session, (at - when) / DAY

        open_to_forgetting = sorted(
            (s for s in counted if self.sessions - self.held[s].added[0] >= 10),
            key=lambda s: (weight[s], -idle(s)[0], -idle(s)[1], s),
        )
        chosen = [
            s for s in open_to_forgetting
            if weight[s] < 0.1 and (idle(s)[0] >= 20 if self.held[s].track == "sessions" else idle(s)[1] >= 60)
        ]
        excess = len(counted) - len(chosen) - 30
        for skill in open_to_forgetting:
            if excess <= 0:
                break
            if skill not in chosen:
                chosen.append(skill)
                excess -= 1
        if at - self.since < 30 * DAY:
            for skill in chosen:
                if not self.held[skill].flagged:
                    self.events.append(("would-forget", at, skill))
            for skill, held in self.held.items():
                held.flagged = held.in_set and skill in chosen
            return
        for skill in chosen:
            self.held[skill].in_set = False
            self.events.append(("forget", at, skill))
        for held in self.held.values():
            held.flagged = False

    def week(self, member: str, start: float, end: float) -> dict[str, object]:
        def inside(at: float) -> bool:
            return start <= at < end

        def named(kind: str) -> tuple[str, ...]:
            return tuple(skill for k, at, skill in self.events if k == kind and inside(at))

        scores = [score for at, score in self.uses if inside(at)]
        return {
            "member": member, "sessions": sum(map(inside, self.starts)), "uses": len(scores),
            "uses_succeeded": scores.count(1.0), "uses_failed": scores.count(0.25), "uses_corrected": scores.count(0.0),
            "forgotten": named("forget"), "would_forget": named("would-forget"), "reclaims": named("reclaim"),
        }


def plan(index: int) -> tuple[list[str], str, bool]:
    """Session `index`: two skills read (one common, one from the long tail), outcome, corrected or not."""
    rng = random.Random(index)
    common = rng.choice(["skill-00", "skill-01", "skill-03", "skill-04", "skill-05", "skill-06", "skill-50"])
    tail = rng.choice(SKILLS[7:])
    outcome = "failed" if index % 7 == 3 else "succeeded"
    return [common, tail] if tail != common else [common], outcome, index % 11 == 5


def summary(week: MemberWeek) -> dict[str, object]:
    return {name: getattr(week, name) for name in (
        "member", "sessions", "uses", "uses_succeeded", "uses_failed", "uses_corrected", "forgotten", "would_forget",
        "reclaims",
    )}


@pytest.mark.slow
def test_a_quarter_of_300_sessions_with_60_skills_is_reported_as_the_rules_say(tmp_path: Path) -> None:
    clock = ManualClock()
    with evolving(tmp_path / "home", clock) as rt:
        add_skills(rt, tmp_path, [(name, f"Procedure number {name[-2:]} for the team") for name in SKILLS])
        soul = rt.home / "members" / "deven" / "soul.md"
        soul.parent.mkdir(parents=True)
        soul.write_text(f"---\nnative_skills: [{', '.join(NATIVES)}]\n---\nDeven builds and ships.\n")
        start = clock.time()
        model = Quarter(since=start)
        for native in NATIVES:
            model.join(native, start, native=True)
        for skill in SKILLS[3:]:
            track: Track = "days" if skill in DAY_TRACK else "sessions"
            rt.skills.give(skill, "deven", track=track)
            model.join(skill, start, track=track)
        step = QUARTER / SESSIONS
        for index in range(SESSIONS):
            clock.advance(step)
            now = clock.time()
            if index in (150, 250):
                gone = sorted(s for s, h in model.held.items() if not h.in_set)
                rt.skills.reclaim(gone[0], "deven")
                model.reclaim(gone[0], now)
            reads, outcome, corrected = plan(index)
            work = session(rt, "deven", f"task {index}")
            for skill in reads:
                rt.with_grant(work.token).skills.read(skill)
            if corrected:
                rt.coordinator.correct(work.execution.id, "not what was asked")
            work.finish(outcome)  # type: ignore[arg-type]
            model.session(now, reads, 0.0 if corrected else 1.0 if outcome == "succeeded" else 0.25)

        first, last = week_of(start), week_of(clock.time())
        week = first
        weeks = 0
        while week.start <= last.start:
            (reported,) = [m for m in rt.evolution.report(week.label).members if m.member == "deven"]
            assert summary(reported) == model.week("deven", week.start, week.end), week.label
            weeks += 1
            week = week_of(week.end)
        assert weeks >= 13

        final = rt.skills.skill_set("deven", include_left=True)
        in_set = [h for h in final.skills if h.in_set]
        assert {h.skill for h in in_set if h.native} == set(NATIVES)
        assert len([h for h in in_set if not h.native]) <= 30
        assert {h.skill for h in in_set} == {s for s, h in model.held.items() if h.in_set}
        for held in final.skills:
            assert held.weight == pytest.approx(model.weight_now(model.held[held.skill], clock.time()))
        assert sum(1 for kind, _, _ in model.events if kind == "forget") > 27
        assert sum(1 for kind, _, _ in model.events if kind == "would-forget") > 0
        assert rt.skills.rebuild().differences == ()
        assert len(rt.skills.library()) == 60
