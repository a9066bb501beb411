"""The home's services: whether the runtime is open, its status, its actors' statistics, and a backup of it.

Declared in `resident.operations.home`.
"""

from __future__ import annotations

from pathlib import Path

from resident.errors import InvalidInput, ResidentError
from resident.messages.backup import BackupManifest
from resident.messages.home_calls import BackupRequest, Health, HealthQuery, HomeStatus, StatisticsQuery, StatusQuery
from resident.messages.memory_calls import NoOptions
from resident.messages.supervision import SupervisorStatistics
from resident.runtime.context import Call, Context
from resident.runtime.memory.switch import status as memory_status
from resident.store.backup import backup as backup_home
from resident.store.tables import SCHEMA_VERSION

__all__ = ["backup", "health", "statistics", "status"]


def health(context: Context, _call: Call, _request: HealthQuery) -> Health:
    """`ok` while the runtime is open, `stopped` once it closed or its supervisor gave up."""
    try:
        context.check_open()
    except ResidentError:
        return Health(status="stopped")
    return Health(status="ok")


def status(context: Context, call: Call, _request: StatusQuery) -> HomeStatus:
    """The home, its roster, its Realm, memory and every supervised actor."""
    config = context.config
    return HomeStatus(
        home=str(context.home), schema_version=SCHEMA_VERSION, members=tuple(config.member_names()),
        coordinator=config.coordinator, realm=config.realm_url, memory=memory_status(context, call, NoOptions()),
        supervisor=context.statistics(), cognition=context.cognition.report(),
    )


def statistics(context: Context, _call: Call, _request: StatisticsQuery) -> SupervisorStatistics:
    """An immutable snapshot of every supervised actor: state, restarts, buffered, dead letters."""
    return context.statistics()


def backup(context: Context, call: Call, request: BackupRequest) -> BackupManifest:
    """A consistent, compacted copy of the home in `dest`, with a checksummed manifest."""
    context.check_open()
    dest = Path(request.dest)
    if call.remote and not dest.is_absolute():
        # The runtime's working folder is not the caller's.
        raise InvalidInput(f"the backup destination must be an absolute path, not {request.dest!r}")
    return backup_home(context.store, context.home, dest)
