"""The home's operations: health, status, statistics, backup, and replication to Realm.

Each request is at once a facade method's signature (`rt.status()`, `rt.backup(dest)`,
`rt.replication.sync(timeout)`), the loopback API's body or query and its OpenAPI schema
(`resident.operations.home`).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from resident.messages.bounds import FilePath, RecordRef, Seconds
from resident.messages.cognition import BridgeReport
from resident.messages.memory import MemoryStatus
from resident.messages.supervision import SupervisorStatistics

__all__ = [
    "API_VERSION",
    "BackupRequest",
    "Health",
    "HealthQuery",
    "HomeStatus",
    "RecordReplicationQuery",
    "ReplicationQuery",
    "StatisticsQuery",
    "StatusQuery",
    "SyncRequest",
]

# The loopback API's version: a client speaking another refuses to talk to the server.
API_VERSION = 1


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class HealthQuery(_Request, frozen=True):
    """Whether the runtime is open (the one question asked without the home's token)."""


class Health(msgspec.Struct, frozen=True, kw_only=True):
    """Whether the runtime behind the API is open (`ok`) or has stopped; needs no token."""

    status: Literal["ok", "stopped"]
    api_version: int = API_VERSION


class StatusQuery(_Request, frozen=True):
    """The home, its roster, its Realm, memory and every supervised actor (`resident status`)."""


class HomeStatus(msgspec.Struct, frozen=True, kw_only=True):
    """The home, its roster, its Realm, memory and every supervised actor (`resident status`)."""

    home: str
    schema_version: int
    members: tuple[str, ...]
    coordinator: str
    realm: str | None
    memory: MemoryStatus
    supervisor: SupervisorStatistics
    # The bridge to an independent Cognition service: `off` when none is configured, `degraded` when it is cut off.
    cognition: BridgeReport = msgspec.field(default_factory=lambda: BridgeReport(provider="none", state="off"))


class StatisticsQuery(_Request, frozen=True):
    """An immutable snapshot of every supervised actor: state, restarts, buffered, dead letters."""


class BackupRequest(_Request, frozen=True):
    """A consistent, compacted copy of the home in `dest` (over the API: an absolute path on the runtime's
    machine), with a checksummed manifest."""

    dest: FilePath


class _ReplicationNamed(_Request, frozen=True):
    # The record whose replication to show; the counts per state when left out.
    id: RecordRef | None = None


class ReplicationQuery(_ReplicationNamed, frozen=True, kw_only=True):
    """Counts per replication state (at most 1,000 withheld ids listed); with `id`, that record's state, reason,
    attempts and last error."""

    timeout: Seconds | None = None


class _RecordNamed(_Request, frozen=True):
    record_id: RecordRef


class RecordReplicationQuery(_RecordNamed, frozen=True, kw_only=True):
    """One record's replication state, reason and attempts."""

    timeout: Seconds | None = None


class SyncRequest(_Request, frozen=True):
    """Push pending records and poll invalidations now; wait until nothing is pending or `timeout` seconds.
    The counts come back either way: `pending == 0` means everything settled (records Realm refused stay
    pending, parked, and are counted)."""

    timeout: Annotated[float, msgspec.Meta(gt=0.0, le=120.0)] = 30.0
