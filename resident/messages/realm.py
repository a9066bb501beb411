"""The bodies of Realm's HTTP protocol (`/v1`) and the values Realm keeps in its own store.

Wire bodies are untagged JSON objects: the path says which shape is expected, so there is no
`type` field to send. Request bodies forbid unknown fields, so a client that misspells a field gets
a 400 instead of a silently ignored value; response bodies tolerate unknown fields, so Realm can
add fields to an answer without breaking older clients.

Every route but `GET /v1/health` needs `Authorization: Bearer TOKEN`: a home's token for
replication (`/v1/replicate`, `/v1/invalidations`), the admin token for governance
(`/v1/invalidate`, `/v1/records`). A token is `NAME.SECRET`, where NAME is the home it was issued
to (or `admin`); Realm keeps only its SHA-256.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from resident.messages.base import Record
from resident.messages.limits import MAX_BODY_CHARS, MAX_SUMMARY_CHARS, RecordId
from resident.messages.memory import Kind, Scope

__all__ = [
    "ADMIN",
    "DEFAULT_PAGE_LIMIT",
    "MAX_BODY_BYTES",
    "MAX_PAGE_LIMIT",
    "MAX_REPLICATE_RECORDS",
    "PROTOCOL_VERSION",
    "AcceptedRecord",
    "ConflictRule",
    "Digest",
    "ErrorBody",
    "ErrorDetail",
    "Health",
    "HomeEntry",
    "HomeName",
    "InvalidateRequest",
    "Invalidation",
    "InvalidationPage",
    "RealmRecord",
    "RecordId",
    "RecordPage",
    "RecordSummary",
    "ReplicateRequest",
    "ReplicateResponse",
    "ReplicateResult",
    "ReplicateStatus",
    "Verdict",
]

PROTOCOL_VERSION = 2
MAX_REPLICATE_RECORDS = 500
MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_PAGE_LIMIT = 500
MAX_PAGE_LIMIT = 1000

# Lower-case hex SHA-256 of the content (`resident.messages.digest`); Realm recomputes it.
Digest = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}$")]
# The name a home is enrolled under, and the first part of its token; `admin` is Realm's own.
HomeName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]
ADMIN = "admin"
Summary = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_SUMMARY_CHARS)]
Body = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_BODY_CHARS)]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# At least one visible character: an invalidation must say why.
Reason = Annotated[str, msgspec.Meta(pattern=r"\S", max_length=2000)]

ReplicateStatus = Literal["accepted", "conflict"]
# Which rule refused a record (`resident.realm.governance`); `id_owned` is the runtime's own name
# for a 409 (the id belongs to another home) and `invalidated` for an invalidation.
ConflictRule = Literal[
    "different_content", "delegated_promotion", "supersedes_invalidated", "invalidated_content", "id_owned",
    "invalidated",
]


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
    summary: Summary
    body: Body
    canonical: bool
    delegated: bool
    recorded_at: float
    supersedes: RecordId | None = None


class ReplicateRequest(_Request, frozen=True):
    """`POST /v1/replicate`: records to replicate, answered one result each, in order."""

    records: Annotated[tuple[RealmRecord, ...], msgspec.Meta(max_length=MAX_REPLICATE_RECORDS)]


class ReplicateResult(_Body, frozen=True):
    """Realm's decision on one replicated record; `reason` and `rule` are empty when it was accepted."""

    id: str
    status: ReplicateStatus
    reason: str = ""
    rule: str = ""


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
    """`GET /v1/invalidations`: entries after `since`; pass `cursor` as the next `since`.

    A home sees only invalidations of the records it owns, so a page may hold fewer than `limit`
    items and still have more behind it: `more` says so.
    """

    items: tuple[Invalidation, ...]
    cursor: int
    more: bool = False


class RecordSummary(_Body, frozen=True):
    """One record Realm accepted, as governance lists it (`GET /v1/records`)."""

    id: str
    home: str
    digest: str
    accepted_at: float
    invalidated: bool


class RecordPage(_Body, frozen=True):
    """`GET /v1/records`: accepted records after `after`, by id; pass `next` as the next `after`."""

    items: tuple[RecordSummary, ...]
    next: str | None = None


class Health(_Body, frozen=True):
    """`GET /v1/health`: liveness plus how much Realm holds."""

    status: Literal["ok"]
    records: int
    invalidations: int
    version: int


class ErrorDetail(_Body, frozen=True):
    type: str
    message: str
    # The record ids the error is about, where there are some (a 409 names the ids it refused).
    ids: tuple[str, ...] = ()


class ErrorBody(_Body, frozen=True):
    """Every 4xx and 5xx answer: `{"error": {"type": ..., "message": ...}}`."""

    error: ErrorDetail


# -- Realm's stored values -----------------------------------------------------------------------


class Verdict(Record, frozen=True):
    """Realm's durable decision on one (id, digest): asking again always gets the same answer."""

    status: ReplicateStatus
    reason: str = ""
    at: float = 0.0
    rule: str = ""


class AcceptedRecord(Record, frozen=True):
    """A record Realm accepted, as it was sent, with when it was accepted and which home sent it."""

    record: RealmRecord
    accepted_at: float
    home: str = ""


class HomeEntry(Record, frozen=True):
    """A home enrolled with Realm: the SHA-256 of its token (the token itself is never stored)."""

    name: str
    token_sha256: str
    enrolled_at: float
