"""The operations of the loopback API, as one table that the server, the client and `/openapi.json` read.

Each `Operation` names its method, its path (with `{member}` and `{record}` segments), the struct
its body decodes to and the struct it answers with. The server binds a handler to each name, the
client builds requests from it, and the OpenAPI document is generated from it, so the three cannot
drift apart; adding a route is one row here and one handler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from resident.api import wire
from resident.messages.coordination import Correction, Progress
from resident.messages.memory import MemoryRecord, MemoryStatus, Receipt, Reconciled
from resident.messages.replication import RecordReplication, ReplicationCounts
from resident.messages.supervision import SupervisorStatistics

__all__ = [
    "CORRECT",
    "EVENTS_PATH",
    "FORGET",
    "GET_RECORD",
    "HEALTH",
    "MEMBERS",
    "MEMBER_RECONCILE",
    "MEMORY_DISABLE",
    "MEMORY_ENABLE",
    "MEMORY_STATUS",
    "OPENAPI_PATH",
    "OPERATIONS",
    "PROGRESS",
    "RECALL",
    "RECONCILE",
    "REMEMBER",
    "REPLICATION_RECORD",
    "REPLICATION_STATUS",
    "STATISTICS",
    "SYNC",
    "Operation",
]

_SEGMENT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One route: `name` is its OpenAPI operationId and the key of its server handler."""

    name: str
    method: Literal["GET", "POST"]
    path: str
    reply: type[Any]
    summary: str
    body: type[Any] | None = None

    @property
    def params(self) -> tuple[str, ...]:
        """The path's `{…}` segments, in order."""
        return tuple(_SEGMENT.findall(self.path))

    def url(self, **params: str) -> str:
        """The path with each segment filled in, escaped so a value stays one segment."""
        return self.path.format(**{name: quote(params[name], safe="") for name in self.params})


HEALTH = Operation("health", "GET", "/v1/health", wire.Health, "Whether the runtime is open (no token needed)")
MEMORY_STATUS = Operation("memory.status", "GET", "/v1/memory", MemoryStatus, "Memory on or off, and how it is doing")
MEMORY_ENABLE = Operation(
    "memory.enable", "POST", "/v1/memory/enable", wire.MemorySwitch, "Turn memory on", wire.EnableMemory
)
MEMORY_DISABLE = Operation(
    "memory.disable", "POST", "/v1/memory/disable", wire.MemorySwitch, "Turn memory off (deletes nothing)", wire.NoBody
)
MEMBERS = Operation("members.list", "GET", "/v1/members", wire.Members, "The roster and its coordinator")
REMEMBER = Operation(
    "member.remember", "POST", "/v1/members/{member}/remember", Receipt, "Store a memory durably", wire.Remember
)
RECALL = Operation(
    "member.recall", "POST", "/v1/members/{member}/recall", wire.RecallHits, "Recall a member's memories",
    wire.RecallQuery,
)
GET_RECORD = Operation(
    "member.get", "GET", "/v1/members/{member}/records/{record}", MemoryRecord, "One record, as the member sees it"
)
FORGET = Operation(
    "member.forget", "POST", "/v1/members/{member}/records/{record}/forget", wire.Forgotten,
    "Retract a record (it stays stored, marked retracted)", wire.Forget,
)
MEMBER_RECONCILE = Operation(
    "member.reconcile", "POST", "/v1/members/{member}/records/{record}/reconcile", Reconciled,
    "Settle a withheld record as this member", wire.Reconcile,
)
RECONCILE = Operation(
    "records.reconcile", "POST", "/v1/records/{record}/reconcile", Reconciled,
    "Settle a withheld record as the member who wrote it", wire.Reconcile,
)
REPLICATION_STATUS = Operation(
    "replication.status", "GET", "/v1/replication", ReplicationCounts, "Records per replication state"
)
REPLICATION_RECORD = Operation(
    "replication.record", "GET", "/v1/replication/records/{record}", RecordReplication,
    "One record's replication state, reason and attempts",
)
SYNC = Operation(
    "replication.sync", "POST", "/v1/replication/sync", ReplicationCounts, "Push and poll now, and wait", wire.Sync
)
PROGRESS = Operation("coordinator.progress", "GET", "/v1/coordinator/progress", Progress, "Progress per member")
CORRECT = Operation(
    "coordinator.correct", "POST", "/v1/coordinator/corrections", Correction, "Record an owner correction",
    wire.Correct,
)
STATISTICS = Operation(
    "statistics", "GET", "/v1/statistics", SupervisorStatistics, "Every supervised actor: state, restarts, buffers"
)

OPERATIONS: tuple[Operation, ...] = (
    HEALTH, MEMORY_STATUS, MEMORY_ENABLE, MEMORY_DISABLE, MEMBERS, REMEMBER, RECALL, GET_RECORD, FORGET,
    MEMBER_RECONCILE, RECONCILE, REPLICATION_STATUS, REPLICATION_RECORD, SYNC, PROGRESS, CORRECT, STATISTICS,
)

# Served beside the table: the event stream (text/event-stream) and the document describing the API.
EVENTS_PATH = "/v1/events"
OPENAPI_PATH = "/openapi.json"
