"""Replication to Realm: its events, the per-record status it keeps, and how to ask about it."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Message, Record

__all__ = [
    "AwaitingRealm",
    "GetReplicationStatus",
    "HeardInvalidation",
    "InvalidationCursorAdvanced",
    "InvalidationNoted",
    "PendingIndexBuilt",
    "RealmCursor",
    "RealmRefusal",
    "RecordConflicted",
    "RecordInvalidated",
    "RecordReplication",
    "RecordsRestored",
    "RecordsSynced",
    "ReplicationAttempted",
    "ReplicationCounts",
    "ReplicationStatus",
    "SyncNow",
]


class ReplicationStatus(Record, frozen=True):
    """How pushing one record to Realm has gone so far."""

    id: str
    attempts: int = 0
    last_error: str = ""
    last_attempt_at: float | None = None


class RealmCursor(Record, frozen=True):
    """Where the runtime is in Realm's invalidation feed (the next `since`)."""

    seq: int = 0


class AwaitingRealm(Record, frozen=True):
    """A record waiting for Realm's verdict: the pending index entry replication works from.

    Written in the same transaction as the record and removed with the verdict, so what must be
    pushed is known from LMDB alone, whatever tells were lost.
    """

    state: Literal["pending", "pending_review"] = "pending"
    since: float = 0.0


class RealmRefusal(Record, frozen=True):
    """A record Realm refused (`conflict`) or withdrew (`invalidated`): the index status reads."""

    state: Literal["conflict", "invalidated"]
    at: float = 0.0


# -- events --------------------------------------------------------------------------------------


class ReplicationAttempted(Event, frozen=True, tag="replication.attempted"):
    """One push of these records to Realm; `error` is empty when Realm answered."""

    ids: tuple[str, ...]
    error: str = ""


class RecordsSynced(Event, frozen=True, tag="records.synced"):
    """Realm accepted these records (written only after its answer arrived)."""

    ids: tuple[str, ...]


class RecordConflicted(Event, frozen=True, tag="record.conflicted"):
    """Realm governance rejected the record; it is withheld until reconciled.

    `rule` names the rule that refused it (see `resident.messages.realm.ConflictRule`), so a
    readmit knows what it has to change.
    """

    id: str
    reason: str
    rule: str = ""


class RecordInvalidated(Event, frozen=True, tag="record.invalidated"):
    """Realm governance invalidated the record; it is withheld until reconciled."""

    id: str
    reason: str
    realm_seq: int = 0


class InvalidationNoted(Event, frozen=True, tag="realm.invalidation.noted"):
    """Realm invalidated a record this home does not hold (yet): kept, so that the record, if it arrives later
    (by import), is withheld at once rather than served until Realm is asked again."""

    id: str
    reason: str
    realm_seq: int = 0


class HeardInvalidation(Record, frozen=True):
    """An invalidation polled from Realm for a record this home did not hold when it heard of it."""

    reason: str
    realm_seq: int = 0
    at: float = 0.0


class InvalidationCursorAdvanced(Event, frozen=True, tag="realm.cursor"):
    seq: int


class RecordsRestored(Event, frozen=True, tag="replication.restored"):
    """The home was restored from a backup: these records, synced when it was taken, await Realm again.

    Realm may have invalidated them since; until it has judged each one again, none is served as
    synced (it is served as pending, like a record not yet pushed). Applying it again changes nothing.
    """

    ids: tuple[str, ...]


class PendingIndexBuilt(Event, frozen=True, tag="replication.indexed"):
    """The pending and refusal indexes were built for records admitted before they existed.

    Written by the first replication actor that finds no index, in steps of a bounded number of
    records (`complete=False`), the last step marking the index whole (`complete=True`). Applying it
    again (a replay) changes nothing, since the projections of the records' own events built the same.
    """

    awaiting: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    complete: bool = True


# -- commands and replies ------------------------------------------------------------------------


class GetReplicationStatus(Message, frozen=True, tag="replication.status.get"):
    """Counts per state, or (with `id`) one record's replication."""

    id: str | None = None


class SyncNow(Message, frozen=True, tag="replication.sync"):
    """Push now (parked records too) and poll invalidations.

    Answered once nothing is pending and a polling round begun after the request has ended, or
    when `timeout` seconds have passed; without a timeout, also as soon as a push runs out of
    attempts.
    """

    timeout: float | None = None


class ReplicationCounts(Message, frozen=True, tag="replication.counts"):
    """Records per replication state, and how replication is doing.

    `pushes` and `requests` count the pushes started and the replicate requests sent since the
    replication actor last (re)started. `pusher` and `poller` name what each is doing now
    (`idle`, `requesting`, `committing`, `backoff`, `resting`; `idle`, `polling`, `committing`).
    """

    counts: dict[str, int]
    realm: str | None
    parked: int = 0
    retrying: bool = False
    last_error: str = ""
    note: str = ""
    pushes: int = 0
    requests: int = 0
    # The withheld (conflict or invalidated) records that still await reconciliation, oldest first.
    withheld: tuple[str, ...] = ()
    pusher: str = ""
    poller: str = ""

    @property
    def pending(self) -> int:
        """Records still waiting for Realm's verdict (`pending` and `pending_review`)."""
        return self.counts.get("pending", 0) + self.counts.get("pending_review", 0)


class RecordReplication(Message, frozen=True, tag="replication.record"):
    """One record's replication: its state, why, and how many pushes it took."""

    id: str
    state: str
    reason: str
    attempts: int
    last_error: str
    last_attempt_at: float | None = None
