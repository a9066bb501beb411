"""Replication to Realm (`rt.replication`): where records stand, and pushing and polling now."""

from __future__ import annotations

from resident.messages.home_calls import RecordReplicationQuery, ReplicationQuery, SyncRequest
from resident.messages.replication import RecordReplication, ReplicationCounts
from resident.operations.declaration import Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["OPERATIONS", "RECORD", "STATUS", "SYNC", "ReplicationSurface"]

_SERVICES = "resident.runtime.replication"

STATUS = declare(
    "replication.status", "Records per replication state; with `id`, one record's", ReplicationQuery,
    ReplicationCounts | RecordReplication,  # type: ignore[arg-type]  # a union of tagged structs is one reply
    route=Route("GET", "/v1/replication"), service=f"{_SERVICES}:status",
)
RECORD = declare(
    "replication.record", "One record's replication state, reason and attempts", RecordReplicationQuery,
    RecordReplication, route=Route("GET", "/v1/replication/records/{record_id}"), service=f"{_SERVICES}:record",
)
SYNC = declare(
    "replication.sync", "Push and poll now, and wait", SyncRequest, ReplicationCounts,
    route=Route("POST", "/v1/replication/sync"), service=f"{_SERVICES}:sync",
)

OPERATIONS = (STATUS, RECORD, SYNC)


class ReplicationSurface(Surface):
    """`rt.replication`: replication state per record and overall; `sync()` pushes and polls now and waits."""

    status = method(STATUS)
    astatus = awaitable(STATUS)
    record = method(RECORD)
    arecord = awaitable(RECORD)
    sync = method(SYNC)
    async_ = awaitable(SYNC)  # `async` is a keyword: the twin takes PEP 8's trailing underscore
