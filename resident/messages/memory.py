"""Memory records, banks, their events, and the commands members and the substrate exchange."""

from __future__ import annotations

from typing import Literal

import msgspec

from resident.messages.base import Event, Message, Record

__all__ = [
    "AWAITING_REALM",
    "PROVIDERS",
    "RECORD_TRANSITIONS",
    "SCOPES",
    "VERDICT_APPLIES_TO",
    "Activation",
    "Bank",
    "BankCreated",
    "Delegation",
    "EmbedTexts",
    "EmbedderWorkerStatus",
    "EmbeddingFailed",
    "Forget",
    "GetEmbedderWorkerStatus",
    "GetRecord",
    "GetSubstrateStatus",
    "Kind",
    "Lifecycle",
    "MemberImported",
    "MemoryConfig",
    "MemoryRecord",
    "MemoryStatus",
    "MemorySwitchedOff",
    "MemorySwitchedOn",
    "NoteRecalled",
    "Principal",
    "Recall",
    "RecallHit",
    "RecallUsage",
    "Receipt",
    "Reconcile",
    "Reconciled",
    "RecordAdmitted",
    "RecordRetracted",
    "RecordSuperseded",
    "RecordsRecalled",
    "Remember",
    "ReplicationState",
    "Scope",
    "SubstrateStatus",
    "TextsEmbedded",
    "VectorsFilled",
    "WaitForVectors",
]

Scope = Literal["AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED", "APP_PRIVATE", "WORKSPACE_PRIVATE"]
SCOPES: tuple[Scope, ...] = ("AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED", "APP_PRIVATE", "WORKSPACE_PRIVATE")

Kind = Literal["world", "experience", "observation"]
# The memory providers a home may admit (`resident memory enable --provider`).
PROVIDERS: tuple[str, ...] = ("hindsight",)
Lifecycle = Literal["active", "superseded", "retracted"]
# A record's lifecycle: the states each may move to. Only an active record is superseded (by its next
# version); any record not yet retracted may be retracted. The writer's projection refuses any other move.
RECORD_TRANSITIONS: dict[Lifecycle, frozenset[Lifecycle]] = {
    "active": frozenset({"superseded", "retracted"}),
    "superseded": frozenset({"retracted"}),
    "retracted": frozenset(),
}
# `pending_review`: a version that supersedes a withheld record. Realm has not judged it yet and,
# unlike `pending`, it is not served until Realm accepts it (fail-closed).
ReplicationState = Literal["pending", "pending_review", "synced", "conflict", "invalidated"]
# The states that wait for Realm's verdict: a plain write, and a version that supersedes a withheld one.
AWAITING_REALM: frozenset[ReplicationState] = frozenset({"pending", "pending_review"})
# Realm's verdicts, and the states each may move a record from. The writer's projection applies a verdict
# only to a record in one of these states (a late or repeated verdict changes nothing), so this table is the
# replication lifecycle the store enforces. A restore sends a synced record back to be pushed again.
VERDICT_APPLIES_TO: dict[Literal["synced", "conflict", "invalidated", "restored"], frozenset[ReplicationState]] = {
    "synced": AWAITING_REALM,
    "conflict": AWAITING_REALM,
    "invalidated": AWAITING_REALM | {"synced"},
    "restored": frozenset({"synced"}),
}


class Principal(Record, frozen=True):
    """Who is asking: a member (with the worlds it belongs to), an app, or a workspace.

    A member acting under a grant (`grant` set) sees only the scopes the grant covers.
    """

    kind: Literal["member", "app", "workspace"]
    name: str
    worlds: tuple[str, ...] = ()
    grant: str | None = None
    scopes: tuple[Scope, ...] | None = None


class Delegation(Record, frozen=True):
    """A call made by a member's session under a grant, not by the owner: the runtime sets it.

    The member actor narrows what the call may read or change to `scopes`, and marks what it
    writes `delegated`; callers never set either themselves.
    """

    grant: str
    holder: str
    scopes: tuple[Scope, ...]


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
    `superseded_by`, `retracted_at` (+ by, reason), `source`. Weight and state: `importance` (+ reason),
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
    author: str = ""
    # Which of Realm's rules withheld the record (`delegated_promotion`, `invalidated`, ...): a
    # readmit must change what that rule objected to.
    replication_rule: str = ""
    # Who retracted the record and why (the `RecordRetracted` event's), so reading it says so.
    retracted_by: str = ""
    retraction_reason: str = ""


class RecallUsage(Record, frozen=True):
    """How often recall served a record since usage left the event log, and when it last did.

    Counted in place by the writer (`resident.store.usage`), one row per record however often it
    is read; a record's served `recall_count` is its own (from `RecordsRecalled` events of older
    homes, or an import) plus `count`.
    """

    count: int = 0
    last_at: float | None = None


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
    # A reconcile rollback: it applies only while the record is still active, so it cannot also
    # apply after a readmit sent at the same time superseded the record.
    only_if_active: bool = False


class RecordsRecalled(Event, frozen=True, tag="records.recalled"):
    """Records recall served (once per time served). No longer written: usage is counted in place
    (`RecallUsage`); kept so that the logs of older homes replay."""

    ids: tuple[str, ...]


class VectorsFilled(Event, frozen=True, tag="vectors.filled"):
    """Embeddings were stored for records admitted while the embedder was down."""

    ids: tuple[str, ...]
    embedder: str


class MemberImported(Event, frozen=True, tag="member.imported"):
    member: str
    world: str | None
    records: int
    role: str = "member"


# -- commands and replies ------------------------------------------------------------------------


class Remember(Message, frozen=True, tag="remember"):
    """A memory to admit, checked and shaped into a record by `resident.memory.admission` (in the
    caller's thread, or by the member actor when it is asked)."""

    text: str
    scope: Scope = "AGENT_CORE"
    summary: str | None = None
    kind: Kind = "experience"
    counterpart: str | None = None
    world: str | None = None
    bank: str | None = None
    importance: float = 0.5
    importance_reason: str = ""
    confidence: float = 1.0
    activation: Activation = msgspec.field(default_factory=Activation)
    supersedes: str | None = None
    canonical: bool = False
    source: str = "manual"
    occurred_at: float | None = None
    cites: tuple[str, ...] = ()
    delegation: Delegation | None = None


class Recall(Message, frozen=True, tag="recall"):
    """The principal's visible, active, served records that best match `query`, best first."""

    query: str
    k: int = 10
    char_budget: int = 8_000
    activation: Activation = msgspec.field(default_factory=Activation)
    include_inactive: bool = False
    principal: Principal | None = None
    delegation: Delegation | None = None
    # False when the asker keeps only some of the hits (engagement narrowing) and reports those itself.
    count_usage: bool = True


class NoteRecalled(Message, frozen=True, tag="recall.noted"):
    """Records a recall served after filtering its hits: each counts one recall, as a served hit does."""

    ids: tuple[str, ...]


class GetRecord(Message, frozen=True, tag="record.get"):
    id: str
    delegation: Delegation | None = None


class Forget(Message, frozen=True, tag="record.forget"):
    id: str
    reason: str = ""
    delegation: Delegation | None = None


class Reconcile(Message, frozen=True, tag="record.reconcile"):
    """Settle a withheld record explicitly: roll the local write back, or re-admit a corrected version.

    A re-admitted version supersedes the withheld one and goes back to `pending`; `text` and
    `canonical` correct its terms (None keeps the withheld record's).
    """

    id: str
    rollback: bool = False
    readmit: bool = False
    text: str | None = None
    canonical: bool | None = None
    delegation: Delegation | None = None


class Reconciled(Message, frozen=True, tag="record.reconciled"):
    """What reconciliation did: the withheld record, and the re-admitted version if there is one."""

    id: str
    action: Literal["rollback", "readmit"]
    new_id: str | None = None
    replication: ReplicationState | None = None


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


class SubstrateStatus(Message, frozen=True, tag="substrate.status"):
    """What the substrate holds and how its embedder is doing."""

    records: int
    missing_vectors: int
    embedder: str
    embedder_error: str
    rebuild_seconds: float
    by_lifecycle: dict[str, int]
    by_replication: dict[str, int]
    # Taking in new records: those committed but not yet in the index, and how many analysis
    # batches have run (with the largest), so batching under load can be seen.
    queued: int = 0
    batches: int = 0
    largest_batch: int = 0
    # The embedder spec, and whether its worker is late (recall then answers by keyword alone).
    spec: str = "hash"
    embedder_late: bool = False
    # Where the index came from at this start ("snapshot": its persisted copy, then `replayed` events
    # of the log after it; "store": built from LMDB), "" before it started.
    index_from: str = ""
    replayed: int = 0


class GetSubstrateStatus(Message, frozen=True, tag="substrate.status.get"):
    pass


class WaitForVectors(Message, frozen=True, tag="substrate.vectors.wait"):
    """Answered (with None) once every indexed record has a vector of the current embedder."""


class MemoryStatus(Message, frozen=True, tag="memory.status"):
    """Whether memory is on, with which provider and embedder, and how the substrate is doing."""

    enabled: bool
    provider: str
    embedder: str
    substrate: str
    records: int = 0
    missing_vectors: int = 0
    embedder_error: str = ""
    by_lifecycle: dict[str, int] = msgspec.field(default_factory=dict)
    by_replication: dict[str, int] = msgspec.field(default_factory=dict)
    replication_note: str = ""
    # The embedding worker (for embedders other than `hash`): its state and restarts, and whether
    # it is late; and resident.toml's `[memory] embedder` where it differs from the one enabled.
    worker: str = ""
    worker_restarts: int = 0
    embedder_late: bool = False
    configured_embedder: str = ""
    # The local model's process, while it runs.
    model_pid: int | None = None


# -- the embedding worker ---------------------------------------------------------------------------


class EmbedTexts(Message, frozen=True, tag="embed.texts"):
    """Ask the embedding worker for vectors; it answers with `TextsEmbedded` or `EmbeddingFailed`."""

    token: int
    spec: str
    texts: tuple[str, ...]
    query: bool = False


class TextsEmbedded(Message, frozen=True, tag="embed.done"):
    """Vectors for an `EmbedTexts`: `len(texts)` rows of `dim` float32, row after row."""

    token: int
    spec: str
    dim: int
    vectors: bytes
    seconds: float


class EmbeddingFailed(Message, frozen=True, tag="embed.failed"):
    """The worker could not embed an `EmbedTexts`; `error` says why in one line."""

    token: int
    spec: str
    error: str


class GetEmbedderWorkerStatus(Message, frozen=True, tag="embed.status.get"):
    pass


class EmbedderWorkerStatus(Message, frozen=True, tag="embed.status"):
    """The embedding worker's embedder (its spec, "" before the first), and its model process if any."""

    spec: str
    pid: int | None = None
