"""Evolution (`rt.evolution`): the versioned log of every change evolution made to a member, rollback, admissions
from curation and the weekly report. A member session may read its own member's log."""

from __future__ import annotations

from resident.messages.evolution import EvolutionChange, WeeklyReport
from resident.messages.evolution_calls import (
    AdmitMemory,
    ChangeQuery,
    EvolutionLog,
    LogQuery,
    RollbackRequest,
    WeekQuery,
)
from resident.messages.memory import Receipt
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["ADMIT", "CHANGE", "LOG", "OPERATIONS", "REPORT", "ROLLBACK", "EvolutionSurface"]

_SERVICES = "resident.runtime.evolution"


def _changes(reply: EvolutionLog) -> list[EvolutionChange]:
    return list(reply.changes)


LOG = declare(
    "evolution.log", "A member's evolution changes, oldest first", LogQuery, EvolutionLog,
    route=Route("POST", "/v1/evolution/log"), service=f"{_SERVICES}:log", access=Access.MEMBER, result=_changes,
)
CHANGE = declare(
    "evolution.change", "One evolution change", ChangeQuery, EvolutionChange,
    route=Route("GET", "/v1/evolution/changes/{change_id}"), service=f"{_SERVICES}:change",
)
ROLLBACK = declare(
    "evolution.rollback", "Undo a change by writing a compensating one", RollbackRequest, EvolutionChange,
    route=Route("POST", "/v1/evolution/changes/{change_id}/rollback"), service=f"{_SERVICES}:rollback",
)
ADMIT = declare(
    "evolution.admit_memory", "Admit a memory from curation as a versioned change", AdmitMemory, Receipt,
    route=Route("POST", "/v1/evolution/admissions"), service=f"{_SERVICES}:admit_memory",
)
REPORT = declare(
    "reports.weekly", "The weekly evolution report", WeekQuery, WeeklyReport,
    route=Route("POST", "/v1/reports/weekly"), service=f"{_SERVICES}:report",
)

OPERATIONS = (LOG, CHANGE, ROLLBACK, ADMIT, REPORT)


class EvolutionSurface(Surface):
    """`rt.evolution`: the versioned evolution of the members."""

    log = method(LOG)
    alog = awaitable(LOG)
    change = method(CHANGE)
    achange = awaitable(CHANGE)
    rollback = method(ROLLBACK)
    arollback = awaitable(ROLLBACK)
    admit_memory = method(ADMIT)
    aadmit_memory = awaitable(ADMIT)
    report = method(REPORT)
    areport = awaitable(REPORT)
