"""The loopback API's request and answer bodies, shared by the server, the client and the OpenAPI document.

Requests are plain structs that refuse unknown fields (a misspelt option is an error, not a silent
default) and carry their bounds as `msgspec.Meta`, so one definition checks a body, documents it
in `/openapi.json`, and tells a client what it may send. Bounds on the wire are wide: the runtime
checks the finer rules (text length, visibility, activation) and answers with its own typed errors.
Answers reuse the runtime's own reply structs (`Receipt`, `RecallHit`, `MemoryStatus`, ...), so a
remote caller gets the same values as an in-process one.

This module imports only msgspec and the message structs: the client (and later the CLI) can use
it without loading the runtime, numpy or LMDB.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from resident.messages.bounds import Named
from resident.messages.memory import Kind, ReplicationState, Scope
from resident.messages.outcomes import ErrorBody, ErrorDetail, ItemOutcome, RememberedMany

__all__ = [
    "API_EVENTS",
    "GRANT_HEADER",
    "MAX_BODY_BYTES",
    "MAX_IMPORT_BODY_BYTES",
    "READ_TIMEOUT",
    "ActorEvent",
    "ApiEvent",
    "ErrorBody",
    "ErrorDetail",
    "ImportMember",
    "Imported",
    "ItemOutcome",
    "MemorySwitchedEvent",
    "NoBody",
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

# A remember of the longest text (16,000 characters), every one escaped as \\uXXXX, fits.
MAX_BODY_BYTES = 256 * 1024
# A member import carries the export file itself (base64 in JSON: 4 bytes for every 3), up to the
# size an import accepts from a file (`resident.memory.portability.MAX_EXPORT_BYTES`, 256 MiB).
MAX_IMPORT_BODY_BYTES = (256 * 1024 * 1024) * 4 // 3 + 64 * 1024
# A whole request arrives within this many seconds (by default; `resident up --read-timeout`) or is answered 408.
READ_TIMEOUT = 10.0
# A member session presents its grant token in this header, besides the home's token; the server
# then acts as that member within that grant, as the CLI does in-process with $RESIDENT_GRANT_TOKEN.
GRANT_HEADER = "Resident-Grant-Token"


class _Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are refused rather than ignored."""


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    """An answer body of the API itself (answers of the runtime reuse its reply structs)."""


# -- requests ------------------------------------------------------------------------------------


class NoBody(_Request, frozen=True):
    """The body of a POST that takes no options: `{}` (or nothing at all)."""



class ImportMember(_Request, frozen=True):
    """A member export file (its bytes, as `resident member export` wrote them) to load into this home.

    `source` names the file in error messages; `world` is the world a member new to this home joins.
    """

    data: bytes
    source: Annotated[str, msgspec.Meta(max_length=4_096)] = "the export"
    world: Named | None = None


# -- answers -------------------------------------------------------------------------------------


class Imported(_Answer, frozen=True):
    """What a member import did: records imported and already here, whether the member joined, sessions brought."""

    member: str
    imported: int
    skipped: int
    joined: bool
    sessions: int = 0


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
)
