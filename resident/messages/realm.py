"""The bodies of Realm's HTTP protocol (`/v1`) and the values Realm keeps in its own store.

Wire bodies are untagged JSON objects: the path says which shape is expected, so there is no
`type` field to send. Request bodies forbid unknown fields, so a client that misspells a field gets
a 400 instead of a silently ignored value; response bodies tolerate unknown fields, so Realm can
add fields to an answer without breaking older clients.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from resident.messages.base import Record
from resident.messages.memory import Kind, Scope

__all__ = [
    "DEFAULT_PAGE_LIMIT",
    "MAX_BODY_BYTES",
    "MAX_PAGE_LIMIT",
    "MAX_REPLICATE_RECORDS",
    "PROTOCOL_VERSION",
    "AcceptedRecord",
    "Digest",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "InvalidateRequest",
    "Invalidation",
    "InvalidationPage",
    "RealmRecord",
    "RecordId",
    "ReplicateRequest",
    "ReplicateResponse",
    "ReplicateResult",
    "ReplicateStatus",
    "Verdict",
]

PROTOCOL_VERSION = 1
MAX_REPLICATE_RECORDS = 500
MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_PAGE_LIMIT = 500
MAX_PAGE_LIMIT = 1000

# Printable ASCII without spaces, at most 200 characters: such an id is safe in a URL, a log line
# and an LMDB key (511 bytes at most, and Realm keys decisions by id + digest).
RecordId = Annotated[str, msgspec.Meta(pattern=r"^[!-~]{1,200}$")]
# Lower-case hex SHA-256 of the content, as the client computed it; Realm never recomputes it.
Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# At least one visible character: an invalidation must say why.
Reason = Annotated[str, msgspec.Meta(pattern=r"\S", max_length=2000)]

ReplicateStatus = Literal["accepted", "conflict"]


class _Body(msgspec.Struct, frozen=True, kw_only=True):
    """A JSON body Realm sends; unknown fields are ignored so answers can grow."""


class _Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A JSON body a client sends; unknown fields are refused."""


class RealmRecord(_Request, frozen=True):
    """The part of a memory record Realm governs; `digest` names the version of its content."""

    id: RecordId
    digest: Digest
    owner: Name
    bank: Name
    scope: Scope
    kind: Kind
    summary: str
    body: str
    canonical: bool
    delegated: bool
    recorded_at: float
    supersedes: RecordId | None = None


class ReplicateRequest(_Request, frozen=True):
    """`POST /v1/replicate`: records to replicate, answered one result each, in order."""

    records: Annotated[tuple[RealmRecord, ...], msgspec.Meta(max_length=MAX_REPLICATE_RECORDS)]


class ReplicateResult(_Body, frozen=True):
    """Realm's decision on one replicated record; `reason` is empty when it was accepted."""

    id: str
    status: ReplicateStatus
    reason: str = ""


class ReplicateResponse(_Body, frozen=True):
    results: tuple[ReplicateResult, ...]


class InvalidateRequest(_Request, frozen=True):
    """`POST /v1/invalidate`: the governance action that withdraws an accepted record."""

    id: RecordId
    reason: Reason


class Invalidation(_Body, frozen=True):
    """One entry of Realm's append-only invalidation feed; `seq` starts at 1 and only grows."""

    seq: int
    id: str
    reason: str
    at: float


class InvalidationPage(_Body, frozen=True):
    """`GET /v1/invalidations`: entries after `since`; pass `cursor` as the next `since`."""

    items: tuple[Invalidation, ...]
    cursor: int


class Health(_Body, frozen=True):
    """`GET /v1/health`: liveness plus how much Realm holds."""

    status: Literal["ok"]
    records: int
    invalidations: int
    version: int


class ErrorDetail(_Body, frozen=True):
    type: str
    message: str


class ErrorBody(_Body, frozen=True):
    """Every 4xx and 5xx answer: `{"error": {"type": ..., "message": ...}}`."""

    error: ErrorDetail


# -- Realm's stored values -----------------------------------------------------------------------


class Verdict(Record, frozen=True):
    """Realm's durable decision on one (id, digest): asking again always gets the same answer."""

    status: ReplicateStatus
    reason: str = ""
    at: float = 0.0


class AcceptedRecord(Record, frozen=True):
    """A record Realm accepted, as it was sent, with when it was accepted."""

    record: RealmRecord
    accepted_at: float
