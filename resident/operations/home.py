"""The home (`rt.status()`, `rt.statistics()`, `rt.backup(dest)`, `rt.health()`), and what the runtime answers
itself: its roster and reconciling a record as the member who wrote it. `health` needs no token."""

from __future__ import annotations

from resident.messages.backup import BackupManifest
from resident.messages.home_calls import BackupRequest, Health, HealthQuery, HomeStatus, StatisticsQuery, StatusQuery
from resident.messages.supervision import SupervisorStatistics
from resident.operations import memory
from resident.operations.declaration import Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["BACKUP", "HEALTH", "OPERATIONS", "STATISTICS", "STATUS", "RootSurface"]

_SERVICES = "resident.runtime.home.status"

HEALTH = declare(
    "health", "Whether the runtime is open (no token needed)", HealthQuery, Health,
    route=Route("GET", "/v1/health"), service=f"{_SERVICES}:health",
)
STATUS = declare(
    "home.status", "The home, its roster, Realm, memory and every actor", StatusQuery, HomeStatus,
    route=Route("GET", "/v1/status"), service=f"{_SERVICES}:status",
)
STATISTICS = declare(
    "statistics", "Every supervised actor: state, restarts, buffers", StatisticsQuery, SupervisorStatistics,
    route=Route("GET", "/v1/statistics"), service=f"{_SERVICES}:statistics",
)
BACKUP = declare(
    "home.backup", "Write a verifiable copy of the home to a directory", BackupRequest, BackupManifest,
    route=Route("POST", "/v1/backup"), service=f"{_SERVICES}:backup",
)

OPERATIONS = (HEALTH, STATUS, BACKUP, STATISTICS)


class RootSurface(Surface):
    """What the runtime itself answers: the home, its roster, reconciling a record as the member who wrote it."""

    health = method(HEALTH)
    ahealth = awaitable(HEALTH)
    status = method(STATUS)
    astatus = awaitable(STATUS)
    statistics = method(STATISTICS)
    astatistics = awaitable(STATISTICS)
    backup = method(BACKUP)
    abackup = awaitable(BACKUP)
    members = method(memory.MEMBERS)
    amembers = awaitable(memory.MEMBERS)
    reconcile = method(memory.RECONCILE_RECORD)
    areconcile = awaitable(memory.RECONCILE_RECORD)
