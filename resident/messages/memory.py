"""Memory records, banks, their events, and the commands members and the substrate exchange."""

from __future__ import annotations

from typing import Literal

import msgspec

from resident.messages.base import Event, Message, Record

__all__ = [
    "SCOPES",
    "Activation",
    "Bank",
    "BankCreated",
    "Forget",
    "GetRecord",
    "Kind",
    "Lifecycle",
    "MemberImported",
    "MemoryConfig",
    "MemoryRecord",
    "MemorySwitchedOff",
    "MemorySwitchedOn",
    "Recall",
    "RecallHit",
    "Receipt",
    "RecordAdmitted",
    "RecordRetracted",
    "RecordSuperseded",
    "RecordsRecalled",
    "ReplicationState",
    "Retain",
    "Scope",
    "VectorsFilled",
]

Scope = Literal["AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED", "APP_PRIVATE", "WORKSPACE_PRIVATE"]
SCOPES: tuple[Scope, ...] = ("AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED", "APP_PRIVATE", "WORKSPACE_PRIVATE")

Kind = Literal["world", "experience", "observation"]
Lifecycle = Literal["active", "superseded", "retracted"]
ReplicationState = Literal["pending", "synced", "conflict", "invalidated"]


class Activation(Record, frozen=True):
    """When a record may be recalled; `None` means "any". Engagement can only narrow, never widen."""

    domain: Literal["work", "personal"] | None = None
    project: str | None = None


class Bank(Record, frozen=True):
    """A named memory bank of one scope (`agent_core/deven`, `app_private/notes/cache`, ...)."""

    name: str
    scope: Scope
    owner: str
    counterpart: str | None = None
    world: str | None = None
    created_at: float = 0.0
    created_by: str = "runtime"


class MemoryRecord(Record, frozen=True):
    """One memory, with the spec's four groups of fields.

    Content: `summary`, `body`, `kind`, `cites`. Scope: `bank`, `scope`, `owner`, `counterpart`,
    `world`, `activation`. Time and provenance: `occurred_at`, `recorded_at`, `supersedes`,
    `superseded_by`, `retracted_at`, `source`. Weight and state: `importance` (+ reason),
    `confidence`, `lifecycle`, usage, and the replication state Realm decides.
    """

    id: str
    summary: str
    body: str
    kind: Kind
    bank: str
    scope: Scope
    owner: str
    occurred_at: float
    recorded_at: float
    digest: str
    cites: tuple[str, ...] = ()
    counterpart: str | None = None
    world: str | None = None
    activation: Activation = msgspec.field(default_factory=Activation)
    supersedes: str | None = None
    superseded_by: str | None = None
    retracted_at: float | None = None
    source: str = "manual"
    importance: float = 0.5
    importance_reason: str = ""
    confidence: float = 1.0
    lifecycle: Lifecycle = "active"
    recall_count: int = 0
    last_recalled_at: float | None = None
    canonical: bool = False
    delegated: bool = False
    replication: ReplicationState = "pending"
    replication_reason: str = ""


class MemoryConfig(Record, frozen=True):
    """The admitted memory provider; absent (or `enabled=False`) means memory is off."""

    enabled: bool = False
    provider: str = "hindsight"
    embedder: str = "hash"
    changed_at: float = 0.0


# -- events --------------------------------------------------------------------------------------


class MemorySwitchedOn(Event, frozen=True, tag="memory.enabled"):
    provider: str
    embedder: str


class MemorySwitchedOff(Event, frozen=True, tag="memory.disabled"):
    pass


class BankCreated(Event, frozen=True, tag="bank.created"):
    bank: Bank


class RecordAdmitted(Event, frozen=True, tag="record.admitted"):
    record: MemoryRecord


class RecordSuperseded(Event, frozen=True, tag="record.superseded"):
    id: str
    by: str


class RecordRetracted(Event, frozen=True, tag="record.retracted"):
    id: str
    by: str
    reason: str = ""


class RecordsRecalled(Event, frozen=True, tag="records.recalled"):
    ids: tuple[str, ...]


class VectorsFilled(Event, frozen=True, tag="vectors.filled"):
    """Embeddings were stored for records admitted while the embedder was down."""

    ids: tuple[str, ...]
    embedder: str


class MemberImported(Event, frozen=True, tag="member.imported"):
    member: str
    world: str | None
    records: int


# -- commands and replies ------------------------------------------------------------------------


class Retain(Message, frozen=True, tag="retain"):
    """Member → substrate: embed, write durably, index. The record is fully formed except its vector."""

    record: MemoryRecord


class Recall(Message, frozen=True, tag="recall"):
    """Member → substrate: the member's visible, active, served records that best match `query`."""

    member: str
    query: str
    k: int = 10
    char_budget: int = 8_000
    activation: Activation = msgspec.field(default_factory=Activation)
    worlds: tuple[str, ...] = ()
    include_inactive: bool = False


class GetRecord(Message, frozen=True, tag="record.get"):
    member: str
    id: str
    worlds: tuple[str, ...] = ()


class Forget(Message, frozen=True, tag="record.forget"):
    member: str
    id: str
    worlds: tuple[str, ...] = ()
    reason: str = ""


class Receipt(Message, frozen=True, tag="receipt"):
    """The durable acknowledgement of a `remember`: the write is committed when this exists."""

    id: str
    bank: str
    replication: ReplicationState = "pending"
    recorded_at: float = 0.0


class RecallHit(Message, frozen=True, tag="recall.hit"):
    """One recall result and the scores that placed it."""

    id: str
    summary: str
    body: str
    scope: Scope
    bank: str
    kind: Kind
    score: float
    semantic: float
    keyword: float
    temporal: float
    replication: ReplicationState
    occurred_at: float
    recorded_at: float
