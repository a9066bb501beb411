"""`rt.evolution`: the versioned log of every change evolution made to a member, rollback, the weekly report.

    rt.evolution.log("deven")                 # deven@1, deven@2, … with kind, before → after, basis
    rt.evolution.rollback("deven@7")          # a compensating change; nothing is deleted
    rt.evolution.report("2026-W49")           # per member: sessions, uses, forgetting, reclaims, principles
    rt.evolution.admit_memory("deven", text, basis="curated from session …")

Skill changes are rolled back by the member's actor (they order with its other changes);
principle decisions and curated admissions by a compensating event written here. Declared in
`resident.operations.evolution`.
"""

from __future__ import annotations

from typing import Any

from resident.checks import clean_line
from resident.errors import RollbackRefused, UnknownChange
from resident.evolution.report import member_week
from resident.evolution.weeks import parse_week, week_of
from resident.messages.evolution import EvolutionChange, MemoryAdmissionRecorded, MemoryAdmissionRetracted, WeeklyReport
from resident.messages.evolution_calls import (
    AdmitMemory,
    ChangeQuery,
    EvolutionLog,
    LogQuery,
    RollbackRequest,
    WeekQuery,
)
from resident.messages.memory import Receipt, RecordRetracted
from resident.messages.memory_calls import RememberRequest
from resident.messages.principles import PrincipleReverted
from resident.messages.skills import RollBackSkillChange
from resident.messages.store import Commit
from resident.runtime.caller import Caller
from resident.runtime.context import Call, Context
from resident.runtime.memory.member import remember as remember_memory
from resident.runtime.skills.library import settle
from resident.store.changes import change_key
from resident.store.tables import EVOLUTION, EXECUTIONS, MEMBER_EVOLUTION, PRINCIPLES, SKILL_SESSIONS

__all__ = ["admit_memory", "change", "log", "report", "rollback"]

_SKILL_KINDS = frozenset({"give", "reclaim", "forget", "use"})
MAX_REASON = 2_000


def log(context: Context, call: Call, request: LogQuery) -> EvolutionLog:
    """A member's changes, oldest first (the last `limit` only, when given)."""
    member = call.caller.acting_as(request.member)
    context.config.member(member)
    settle(context, member)
    with context.store.reader() as reader:
        changes = [found for _, found in reader.items(EVOLUTION, f"{member}/")]
    return EvolutionLog(member=member, changes=tuple(changes[-request.limit:] if request.limit else changes))


def change(context: Context, _call: Call, request: ChangeQuery) -> EvolutionChange:
    """One change, by id (`UnknownChange` when there is none)."""
    return _change(context, request.change_id)


def _change(context: Context, change_id: str) -> EvolutionChange:
    context.check_open()
    key = change_key(change_id)
    with context.store.reader() as reader:
        found = reader.get(EVOLUTION, key)
    if found is None:
        raise UnknownChange(f"no evolution change {change_id}; see `resident evolution log MEMBER`")
    return found


def rollback(context: Context, _call: Call, request: RollbackRequest) -> EvolutionChange:
    """Undo change `change_id` by a compensating change (returned); the original stays, marked."""
    by = "owner"
    undone = _change(context, request.change_id)
    if undone.rolled_back_by:
        raise RollbackRefused(f"change {undone.id} was already rolled back by {undone.rolled_back_by}")
    reason = request.reason
    note = clean_line(reason, "a rollback's reason", MAX_REASON) if reason.strip() else ""
    at = context.clock.time()
    basis = f"rollback of {undone.id} by {by}" + (f": {note}" if note else "")
    if undone.kind in _SKILL_KINDS:
        context.ask_member(undone.member, RollBackSkillChange(change=undone.id, by=by, reason=note), None)
    elif undone.kind in ("principle-approve", "principle-reject"):
        event: Any = PrincipleReverted(at=at, id=undone.subject, compensates=undone.id, by=by, reason=basis)
        context.write(Commit(events=(event,)))
    elif undone.kind == "memory-admission":
        retracted = RecordRetracted(at=at, id=undone.subject, by=by, reason=basis)
        compensation = MemoryAdmissionRetracted(
            at=at, member=undone.member, record=undone.subject, compensates=undone.id, basis=basis
        )
        context.write(Commit(events=(compensation, retracted)))
    else:
        raise RollbackRefused(
            f"change {undone.id} is a {undone.kind} change; only gives, reclaims, forgetting, uses, "
            "principle decisions and memory admissions roll back"
        )
    return _change(context, _change(context, request.change_id).rolled_back_by)


def admit_memory(context: Context, _call: Call, request: AdmitMemory) -> Receipt:
    """Admit `text` into `member`'s memory from curation, as a versioned change on `basis`.

    The record is admitted first and the change recorded right after: a crash between the two
    leaves a memory without its change, which curation records again (never the reverse).
    """
    why = clean_line(request.basis, "an admission's basis", MAX_REASON)
    remembered = RememberRequest(
        request.text, summary=request.summary, importance=request.importance, occurred_at=request.occurred_at,
        source=request.source,
    )
    receipt = remember_memory(context, Call(Caller(), request.member), remembered)
    event = MemoryAdmissionRecorded(at=context.clock.time(), member=request.member, record=receipt.id, basis=why)
    context.write(Commit(events=(event,)))
    return receipt


def report(context: Context, _call: Call, request: WeekQuery) -> WeeklyReport:
    """The weekly report (ISO week `YYYY-Www`, UTC; the current week by default), one row per member."""
    context.check_open()
    chosen = week_of(context.clock.time()) if request.week is None else parse_week(request.week)
    names = context.config.member_names()
    for name in names:
        settle(context, name)
    rows = []
    with context.store.reader() as reader:
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
