"""`rt.evolution`: the versioned log of every change evolution made to a member, rollback, the weekly report.

    rt.evolution.log("deven")                 # deven@1, deven@2, … with kind, before → after, basis
    rt.evolution.rollback("deven@7")          # a compensating change; nothing is deleted
    rt.evolution.report("2026-W49")           # per member: sessions, uses, forgetting, reclaims, principles
    rt.evolution.admit_memory("deven", text, basis="curated from session …")

Skill changes are rolled back by the member's actor (they order with its other changes);
principle decisions and curated admissions by a compensating event written here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.errors import RollbackRefused, UnknownChange
from resident.evolution.report import member_week
from resident.evolution.text import clean_line
from resident.evolution.weeks import parse_week, week_of
from resident.messages.evolution import EvolutionChange, MemoryAdmissionRecorded, MemoryAdmissionRetracted, WeeklyReport
from resident.messages.memory import Receipt, RecordRetracted
from resident.messages.principles import PrincipleReverted
from resident.messages.skills import RollBackSkillChange
from resident.messages.store import Commit
from resident.runtime.skills import settle
from resident.store.changes import change_key
from resident.store.tables import EVOLUTION, EXECUTIONS, MEMBER_EVOLUTION, PRINCIPLES, SKILL_SESSIONS

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["EvolutionControl"]

_SKILL_KINDS = frozenset({"give", "reclaim", "forget", "use"})
MAX_REASON = 2_000


class EvolutionControl:
    """The versioned evolution of the members."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def log(self, member: str, *, limit: int | None = None) -> list[EvolutionChange]:
        """`member`'s changes, oldest first (the last `limit` only, when given)."""
        runtime = self._runtime
        runtime.config.member(member)
        settle(runtime._services, member)
        with runtime._internal.store.reader() as reader:
            changes = [change for _, change in reader.items(EVOLUTION, f"{member}/")]
        return changes[-limit:] if limit else changes

    def change(self, change_id: str) -> EvolutionChange:
        runtime = self._runtime
        runtime.check_open()
        key = change_key(change_id)
        with runtime._internal.store.reader() as reader:
            change = reader.get(EVOLUTION, key)
        if change is None:
            raise UnknownChange(f"no evolution change {change_id}; see `resident evolution log MEMBER`")
        return change

    def rollback(self, change_id: str, *, reason: str = "", by: str = "owner") -> EvolutionChange:
        """Undo change `change_id` by a compensating change (returned); the original stays, marked."""
        runtime = self._runtime
        change = self.change(change_id)
        if change.rolled_back_by:
            raise RollbackRefused(f"change {change_id} was already rolled back by {change.rolled_back_by}")
        note = clean_line(reason, "a rollback's reason", MAX_REASON) if reason.strip() else ""
        at = runtime.clock.time()
        basis = f"rollback of {change.id} by {by}" + (f": {note}" if note else "")
        if change.kind in _SKILL_KINDS:
            runtime._services.ask_member(change.member, RollBackSkillChange(change=change.id, by=by, reason=note), None)
        elif change.kind in ("principle-approve", "principle-reject"):
            event: Any = PrincipleReverted(at=at, id=change.subject, compensates=change.id, by=by, reason=basis)
            runtime._internal.write(Commit(events=(event,)))
        elif change.kind == "memory-admission":
            retracted = RecordRetracted(at=at, id=change.subject, by=by, reason=basis)
            undone = MemoryAdmissionRetracted(
                at=at, member=change.member, record=change.subject, compensates=change.id, basis=basis
            )
            runtime._internal.write(Commit(events=(undone, retracted)))
        else:
            raise RollbackRefused(
                f"change {change.id} is a {change.kind} change; only gives, reclaims, forgetting, uses, "
                "principle decisions and memory admissions roll back"
            )
        return self.change(self.change(change_id).rolled_back_by)

    def admit_memory(self, member: str, text: str, *, basis: str, **options: Any) -> Receipt:
        """Admit `text` into `member`'s memory from curation, as a versioned change on `basis`.

        The record is admitted first and the change recorded right after: a crash between the two
        leaves a memory without its change, which curation records again (never the reverse).
        """
        runtime = self._runtime
        why = clean_line(basis, "an admission's basis", MAX_REASON)
        receipt = runtime.member(member).remember(text, source=options.pop("source", "curation"), **options)
        event = MemoryAdmissionRecorded(at=runtime.clock.time(), member=member, record=receipt.id, basis=why)
        runtime._internal.write(Commit(events=(event,)))
        return receipt

    def report(self, week: str | None = None) -> WeeklyReport:
        """The weekly report (ISO week `YYYY-Www`, UTC; the current week by default), one row per member."""
        runtime = self._runtime
        runtime.check_open()
        chosen = week_of(runtime.clock.time()) if week is None else parse_week(week)
        names = runtime.config.member_names()
        for name in names:
            settle(runtime._services, name)
        rows = []
        with runtime._internal.store.reader() as reader:
            starts: dict[str, list[float]] = {name: [] for name in names}
            for _, execution in reader.items(EXECUTIONS):
                starts.setdefault(execution.member, []).append(execution.started_at)
            principles = [p for _, p in reader.items(PRINCIPLES)]
            for name in names:
                row = reader.get(MEMBER_EVOLUTION, name)
                rows.append(member_week(
                    name, chosen, session_starts=starts[name],
                    sessions=[s for _, s in reader.items(SKILL_SESSIONS, f"{name}/")],
                    changes=[c for _, c in reader.items(EVOLUTION, f"{name}/")],
                    principles=[p for p in principles if p.member == name],
                    since=row.since if row is not None else None,
                ))
        return WeeklyReport(week=chosen.label, start=chosen.start, end=chosen.end, members=tuple(rows))

