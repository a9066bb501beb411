"""What the loopback API carries besides the operations' own structs: its header, its event stream and error bodies.

Each operation's request and reply are its declaration's (`resident.operations`, structs in `resident.messages`);
this module holds the rest that the server, both clients and the OpenAPI document share: the grant token's header,
the paths served beside the operations, the events of `GET /v1/events` and the typed error body.

This module imports only msgspec and the message structs: the client and the command can use it without loading
the runtime, numpy or LMDB.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from resident.messages.memory import Kind, ReplicationState, Scope
from resident.messages.outcomes import ErrorBody, ErrorDetail, ItemOutcome, RememberedMany

__all__ = [
    "API_EVENTS",
    "EVENTS_PATH",
    "GRANT_HEADER",
    "OPENAPI_PATH",
    "READ_TIMEOUT",
    "ActorEvent",
    "ApiEvent",
    "CognitionBridgeEvent",
    "ErrorBody",
    "ErrorDetail",
    "ItemOutcome",
    "MemorySwitchedEvent",
    "ProgressEvent",
    "RecordAdmittedEvent",
    "RecordLifecycleEvent",
    "RecordWithheldEvent",
    "RememberedMany",
    "ReplicationAttemptEvent",
    "ReplicationSyncedEvent",
    "RuntimeStoppedEvent",
    "StreamGapEvent",
]

# A whole request arrives within this many seconds (by default; `resident up --read-timeout`) or is answered 408.
READ_TIMEOUT = 10.0
# A member session presents its grant token in this header, besides the home's token; the server
# then acts as that member within that grant, as the CLI does in-process with $RESIDENT_GRANT_TOKEN.
GRANT_HEADER = "Resident-Grant-Token"
# Served beside the declared operations: the event stream (text/event-stream) and the document describing the API.
EVENTS_PATH = "/v1/events"
OPENAPI_PATH = "/openapi.json"


# -- the event stream ----------------------------------------------------------------------------


class ApiEvent(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """One event of `GET /v1/events`; `at` is when it happened (seconds since the epoch).

    Events name records by id and carry no memory text: the stream is a signal to read, and reads
    (`get`, `recall`) keep applying visibility and withholding.
    """

    at: float


class RecordAdmittedEvent(ApiEvent, frozen=True, tag="record.admitted"):
    """A memory was durably written (`pending` until Realm accepts it)."""

    id: str
    owner: str
    author: str
    bank: str
    scope: Scope
    kind: Kind


class RecordLifecycleEvent(ApiEvent, frozen=True, tag="record.lifecycle"):
    """A record was superseded (by a newer version) or retracted (forgotten, rolled back)."""

    id: str
    lifecycle: Literal["superseded", "retracted"]
    by: str


class ReplicationSyncedEvent(ApiEvent, frozen=True, tag="replication.synced"):
    """Realm accepted these records."""

    ids: tuple[str, ...]


class RecordWithheldEvent(ApiEvent, frozen=True, tag="record.withheld"):
    """Realm rejected (`conflict`) or invalidated a record; it is withheld until reconciled."""

    id: str
    state: ReplicationState
    reason: str


class ReplicationAttemptEvent(ApiEvent, frozen=True, tag="replication.attempted"):
    """One push to Realm of `records` records; `error` says why it failed (empty when Realm answered)."""

    records: int
    error: str


class MemorySwitchedEvent(ApiEvent, frozen=True, tag="memory.switched"):
    enabled: bool
    provider: str = ""
    embedder: str = ""


class ProgressEvent(ApiEvent, frozen=True, tag="progress"):
    """An execution started, finished, or was corrected (what `coordinator progress` counts)."""

    execution: str
    member: str
    task: str
    outcome: Literal["running", "succeeded", "failed", "cancelled", "corrected"]
    error: str = ""


class ActorEvent(ApiEvent, frozen=True, tag="actor"):
    """A supervised actor went down (`crashed`) or came back (`restarted`), as its supervisor saw it."""

    name: str
    change: Literal["crashed", "restarted", "stopped"]
    state: str
    incarnation: int
    restarts: int
    reason: str = ""


class CognitionBridgeEvent(ApiEvent, frozen=True, tag="cognition.bridge"):
    """The bridge to the independent Cognition service turned `degraded` (cut off by its deadline, failing, or its
    breaker open: recall answers from the runtime alone) or `ok` again."""

    state: str
    reason: str = ""
    breaker: str = "closed"


class RuntimeStoppedEvent(ApiEvent, frozen=True, tag="runtime.stopped"):
    """The root supervisor gave up: the runtime stopped and the server is shutting down."""

    reason: str


class StreamGapEvent(ApiEvent, frozen=True, tag="stream.gap"):
    """Actor events this subscriber had not seen were lost (it lagged, or the server restarted).

    Store events are never lost (they are read back from the event log); actor events live in a
    bounded ring in the server's memory. Read `/v1/statistics` to see the actors as they are now.
    `lost` counts the events missed, or is -1 when the count is unknown (the server restarted).
    """

    lost: int
    # Why, when it is not the ring: "ahead" when the resume id is past the end of the event log (the
    # home was restored from a backup, or the id is from another home). The stream then goes on from
    # the log's end, and a subscriber should read the state it shows again.
    reason: Literal["", "ahead"] = ""


class StreamStartedEvent(ApiEvent, frozen=True, tag="stream.started"):
    """The first event of a stream started `from=now`: nothing before it is replayed.

    Its SSE id is the current position; sent back as `Last-Event-ID` it resumes from here.
    """


API_EVENTS: tuple[type[ApiEvent], ...] = (
    RecordAdmittedEvent, RecordLifecycleEvent, ReplicationSyncedEvent, RecordWithheldEvent, ReplicationAttemptEvent,
    MemorySwitchedEvent, ProgressEvent, ActorEvent, RuntimeStoppedEvent, StreamGapEvent, StreamStartedEvent,
    CognitionBridgeEvent,
)
