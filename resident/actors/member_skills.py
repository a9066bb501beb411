"""A member's skill set, as its actor keeps it: plans for each change, and reads of the set.

Every plan reads the holdings from the store, runs the rules of `resident.skills` on them, and
returns the events to write (with the results they computed: weights, what is forgotten). A plan
that changes the set ends with a forgetting pass over the set as it will be, so the set never
stays over its size and a skill unused too long leaves at the end of the session that made it so.

A session is settled after its execution ends: each skill read in it and still in the set gets a
use scored by the outcome (0 when the owner corrected the execution), and a session corrected
after it was settled has its uses rescored to 0. Settling looks at one session, or at every session
of the member when the actor starts (so nothing a crash interrupted stays unsettled).
"""

from __future__ import annotations

from typing import Any

import msgspec

from resident.clock import Clock
from resident.errors import InvalidInput, RollbackRefused, UnknownChange, UnknownSkill
from resident.messages.coordination import Execution
from resident.messages.evolution import EvolutionChange, MemberEvolution
from resident.messages.skills import (
    ChooseSkills,
    DeclareNatives,
    ForgettingDryRun,
    GetSkillSet,
    GiveSkill,
    HeldSkill,
    NativeSkillsDeclared,
    RankCandidate,
    RankSkills,
    ReadSkill,
    ReclaimSkill,
    RollBackSkillChange,
    Settled,
    SettleSessions,
    SkillForgotten,
    SkillGiven,
    SkillHolding,
    SkillRead,
    SkillReclaimed,
    SkillRemoved,
    SkillRestored,
    SkillSession,
    SkillSessionClosed,
    SkillSetView,
    SkillUseCorrected,
    SkillUsed,
    TeamSkill,
)
from resident.skills.forgetting import in_dry_run, plan_forgetting, protected_sessions
from resident.skills.holdings import INITIAL_WEIGHT, joined, rejoined, rescore, returned, use
from resident.skills.weights import current_weight, score_for
from resident.store.changes import change_key
from resident.store.skill_projections import session_key
from resident.store.store import Reader, Store
from resident.store.tables import EVOLUTION, EXECUTIONS, MEMBER_EVOLUTION, SKILL_HOLDINGS, SKILL_SESSIONS, SKILLS

__all__ = ["MAX_INITIAL_WEIGHT", "SkillSet"]

MAX_INITIAL_WEIGHT = 1_000.0
Events = tuple[Any, ...]


class SkillSet:
    """Plans and reads of one member's skill set (the member actor runs them, one write at a time)."""

    def __init__(self, member: str, store: Store, clock: Clock) -> None:
        self.member = member
        self.store = store
        self.clock = clock

    # -- reads ------------------------------------------------------------------------------------

    def _state(self, reader: Reader) -> tuple[MemberEvolution, dict[str, SkillHolding]]:
        row = reader.get(MEMBER_EVOLUTION, self.member) or MemberEvolution(member=self.member)
        holdings = {h.skill: h for _, h in reader.items(SKILL_HOLDINGS, f"{self.member}/")}
        return row, holdings

    def view(self, message: GetSkillSet) -> SkillSetView:
        now = self.clock.time()
        with self.store.reader() as reader:
            row, holdings = self._state(reader)
        skills = tuple(
            HeldSkill(
                skill=h.skill, weight=current_weight(h, row.sessions, now), track=h.track, native=h.native,
                in_set=h.in_set, protected_sessions=protected_sessions(h, row.sessions), origin=h.origin,
                last_used_session=h.last_used_session, last_used_at=h.last_used_at, would_forget=h.would_forget,
            )
            for h in holdings.values()
            if h.in_set or message.include_left
        )
        dry_run = in_dry_run(row.since, now)
        return SkillSetView(member=self.member, sessions=row.sessions, dry_run=dry_run, skills=skills)

    def ranking(self, message: ChooseSkills) -> RankSkills:
        """What the library is asked to rank for a session on `message.task`."""
        now = self.clock.time()
        with self.store.reader() as reader:
            row, holdings = self._state(reader)
        candidates = tuple(
            RankCandidate(name=h.skill, weight=current_weight(h, row.sessions, now))
            for h in holdings.values()
            if h.in_set
        )
        return RankSkills(task=message.task, candidates=candidates, limit=message.limit)

    # -- plans ------------------------------------------------------------------------------------

    def give(self, message: GiveSkill) -> tuple[Events, Any]:
        if not 0.0 <= message.weight <= MAX_INITIAL_WEIGHT:
            raise InvalidInput(f"--weight must be from 0 to {MAX_INITIAL_WEIGHT:g}, not {message.weight!r}")
        now = self.clock.time()
        with self.store.reader() as reader:
            self._skill(reader, message.skill)
            row, holdings = self._state(reader)
        self._not_held(holdings, message.skill)
        given = SkillGiven(
            at=now, member=self.member, skill=message.skill, weight=message.weight, track=message.track,
            session=row.sessions, by=message.by,
        )
        holdings[message.skill] = joined(
            self.member, message.skill, weight=message.weight, track=message.track, session=row.sessions, at=now
        )
        return (given, *self._forgetting(row, holdings, now)), None

    def reclaim(self, message: ReclaimSkill) -> tuple[Events, Any]:
        now = self.clock.time()
        with self.store.reader() as reader:
            self._skill(reader, message.skill)
            row, holdings = self._state(reader)
        self._not_held(holdings, message.skill)
        back = rejoined(holdings.get(message.skill), self.member, message.skill, session=row.sessions, at=now)
        holdings[message.skill] = back
        reclaimed = SkillReclaimed(
            at=now, member=self.member, skill=message.skill, weight=back.weight, track=back.track,
            session=row.sessions, by=message.by,
        )
        return (reclaimed, *self._forgetting(row, holdings, now)), None

    def declare_natives(self, message: DeclareNatives) -> tuple[Events, Any]:
        now = self.clock.time()
        with self.store.reader() as reader:
            for skill in message.skills:
                self._skill(reader, skill)
            row, holdings = self._state(reader)
        if row.natives == message.skills and row.natives_digest == message.digest:
            return (), None
        declared = NativeSkillsDeclared(
            at=now, member=self.member, skills=message.skills, digest=message.digest, session=row.sessions,
            weight=INITIAL_WEIGHT,
        )
        for skill in set(row.natives) - set(message.skills):
            if skill in holdings:
                holdings[skill] = msgspec.structs.replace(holdings[skill], native=False)
        for skill in message.skills:
            holding = holdings.get(skill) or joined(
                self.member, skill, weight=INITIAL_WEIGHT, track="sessions", session=row.sessions, at=now
            )
            holdings[skill] = msgspec.structs.replace(holding, in_set=True, native=True, would_forget=False)
        return (declared, *self._forgetting(row, holdings, now)), None

    def read(self, message: ReadSkill) -> tuple[Events, Any]:
        with self.store.reader() as reader:
            skill = self._skill(reader, message.skill)
            session = reader.get(SKILL_SESSIONS, session_key(self.member, message.execution))
            execution = reader.get(EXECUTIONS, message.execution)
        if session is None or execution is None or execution.member != self.member:
            raise InvalidInput(f"execution {message.execution} is not a session of {self.member}")
        if session.closed or execution.outcome != "running":
            raise InvalidInput(f"the session of execution {message.execution} has ended; a read must happen inside it")
        if message.skill in session.reads:
            return (), skill
        read = SkillRead(at=self.clock.time(), member=self.member, execution=message.execution, skill=message.skill)
        return (read,), skill

    def settle(self, message: SettleSessions) -> tuple[Events, Any]:
        now = self.clock.time()
        with self.store.reader() as reader:
            row, holdings = self._state(reader)
            if message.execution is None:
                sessions = [s for _, s in reader.items(SKILL_SESSIONS, f"{self.member}/")]
            else:
                one = reader.get(SKILL_SESSIONS, session_key(self.member, message.execution))
                sessions = [] if one is None else [one]
            executions = {s.execution: reader.get(EXECUTIONS, s.execution) for s in sessions}
        events: list[Any] = []
        closed = rescored = 0
        for session in sessions:
            execution = executions[session.execution]
            if execution is None or execution.outcome == "running":
                continue
            if not session.closed:
                events += self._close(session, execution, row, holdings, now)
                closed += 1
            elif execution.corrections:
                corrections = self._corrections(session, holdings, f"owner correction of execution {execution.id}")
                events += corrections
                rescored += len(corrections)
        if not events:
            return (), Settled(sessions=0, corrections=0)
        return (*events, *self._forgetting(row, holdings, now)), Settled(sessions=closed, corrections=rescored)

    def roll_back(self, message: RollBackSkillChange) -> tuple[Events, Any]:
        now = self.clock.time()
        with self.store.reader() as reader:
            change = self._change(reader, message.change)
            row, holdings = self._state(reader)
            session = reader.get(SKILL_SESSIONS, session_key(self.member, change.ref)) if change.ref else None
        basis = f"rollback of {change.id} by {message.by}" + (f": {message.reason}" if message.reason else "")
        holding = holdings.get(change.subject)
        match change.kind:
            case "give" | "reclaim":
                if holding is None or not holding.in_set:
                    raise RollbackRefused(f"{self.member} no longer carries {change.subject!r}; nothing to roll back")
                event: Any = SkillRemoved(
                    at=now, member=self.member, skill=change.subject, compensates=change.id, basis=basis
                )
            case "forget":
                if holding is None or holding.in_set:
                    raise RollbackRefused(f"{self.member} carries {change.subject!r} again; nothing to roll back")
                event = SkillRestored(
                    at=now, member=self.member, skill=change.subject, session=row.sessions, compensates=change.id,
                    basis=basis,
                )
                holdings[change.subject] = returned(holding, row.sessions, now)
            case "use":
                if holding is None or session is None:
                    raise RollbackRefused(f"the use behind {change.id} is no longer recorded")
                rolled = self._corrections(session, holdings, basis, only=change.subject, compensates=change.id)
                if not rolled:
                    raise RollbackRefused(f"the use behind {change.id} already scores 0")
                return tuple(rolled), None
            case _:
                raise RollbackRefused(f"change {change.id} is a {change.kind} change, which the skill set cannot undo")
        return (event, *self._forgetting(row, holdings, now)), None

    # -- pieces -----------------------------------------------------------------------------------

    def _close(
        self, session: SkillSession, execution: Execution, row: MemberEvolution, holdings: dict[str, SkillHolding],
        now: float,
    ) -> list[Any]:
        score = score_for(execution.outcome, corrected=execution.corrections > 0)
        events: list[Any] = []
        for skill in session.reads:
            holding = holdings.get(skill)
            if holding is None or not holding.in_set:
                continue  # read from the library outside the set: a read, not a use
            after = use(holding, score, row.sessions, now)
            holdings[skill] = after
            events.append(SkillUsed(
                at=now, member=self.member, skill=skill, execution=session.execution, outcome=execution.outcome,
                score=score, session=row.sessions, weight_before=current_weight(holding, row.sessions, now),
                weight=after.weight,
            ))
        events.append(SkillSessionClosed(
            at=now, member=self.member, execution=session.execution, outcome=execution.outcome
        ))
        return events

    def _corrections(
        self, session: SkillSession, holdings: dict[str, SkillHolding], basis: str, *, only: str | None = None,
        compensates: str = "",
    ) -> list[SkillUseCorrected]:
        """Rescore to 0 every use of `session` still above it (or only the use of skill `only`)."""
        events: list[SkillUseCorrected] = []
        for past in session.uses:
            holding = holdings.get(past.skill)
            if past.score == 0.0 or holding is None or (only is not None and past.skill != only):
                continue
            after = rescore(holding, past, 0.0)
            holdings[past.skill] = after
            events.append(SkillUseCorrected(
                at=self.clock.time(), member=self.member, skill=past.skill, execution=session.execution,
                score_before=past.score, score=0.0, weight_before=holding.weight, weight=after.weight, basis=basis,
                compensates=compensates,
            ))
        return events

    def _forgetting(self, row: MemberEvolution, holdings: dict[str, SkillHolding], now: float) -> list[Any]:
        """The forgetting pass over the set as the planned events leave it."""
        since = row.since if row.since is not None else now
        plan = plan_forgetting(holdings.values(), row.sessions, now, since)
        if not plan.dry_run:
            events: list[Any] = [
                SkillForgotten(at=now, member=self.member, skill=c.skill, rule=c.rule, weight=c.weight,
                               session=row.sessions)
                for c in plan.forget
            ]
            forgotten = {c.skill for c in plan.forget}
            stale = tuple(sorted(s for s, h in holdings.items() if h.would_forget and s not in forgotten))
            if stale:
                events.append(ForgettingDryRun(at=now, member=self.member, flagged=(), cleared=stale,
                                               session=row.sessions))
            return events
        would = {c.skill for c in plan.forget}
        flagged = tuple(c for c in plan.forget if not holdings[c.skill].would_forget)
        cleared = tuple(sorted(s for s, h in holdings.items() if h.would_forget and s not in would))
        if not flagged and not cleared:
            return []
        return [ForgettingDryRun(at=now, member=self.member, flagged=flagged, cleared=cleared, session=row.sessions)]

    def _skill(self, reader: Reader, name: str) -> TeamSkill:
        skill = reader.get(SKILLS, name)
        if skill is None:
            raise UnknownSkill(f"no skill {name!r} in the team library; see `resident skills search` or `skills list`")
        return skill

    def _not_held(self, holdings: dict[str, SkillHolding], skill: str) -> None:
        held = holdings.get(skill)
        if held is not None and held.in_set:
            raise InvalidInput(f"{self.member} already carries skill {skill!r}")

    def _change(self, reader: Reader, identifier: str) -> EvolutionChange:
        change = reader.get(EVOLUTION, change_key(identifier))
        if change is None or change.member != self.member:
            raise UnknownChange(f"no evolution change {identifier} of {self.member}")
        if change.rolled_back_by:
            raise RollbackRefused(f"change {identifier} was already rolled back by {change.rolled_back_by}")
        return change
