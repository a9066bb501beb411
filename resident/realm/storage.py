"""What Realm's rules need from a store: a few reads and writes inside one transaction.

`resident.realm.state.RealmState` holds the rules once (who owns an id, which verdict stands, what
invalidation refuses, how the feed pages); a backend only stores. Two backends implement this: LMDB
(`lmdb_storage`, one process, the default) and PostgreSQL (`pg_storage`, any number of processes on one
database). A backend runs `work` in one transaction, all or nothing, and where the database may refuse a
transaction for having raced another (PostgreSQL's serializable isolation) it runs `work` again from the
start, so `work` must only read and write through its transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from resident.messages.realm import AcceptedRecord, HomeEntry, Invalidation, Verdict

__all__ = ["RealmStorage", "StorageTxn"]

T = TypeVar("T")


class StorageTxn(Protocol):
    """One transaction over Realm's tables; it sees its own writes.

    Reads and writes of a push take every record of it at once, so that a backend across a network
    answers a push in a few round trips rather than a few per record.
    """

    def lock_content(self, content_keys: Sequence[str], *, exclusive: bool) -> None:
        """Hold a lock on each content key until the transaction ends: shared for a push, exclusive for an
        invalidation, so that a push and an invalidation of the same content never interleave."""

    def owners(self, record_ids: Sequence[str]) -> dict[str, str]:
        """The home that first pushed each of these ids that has one."""

    def claim(self, record_ids: Sequence[str], home: str) -> None:
        """Record `home` as the owner of each id that has none yet."""

    def verdicts(self, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Verdict]:
        """The verdict given to each of these (id, digest) pairs that has one."""

    def put_verdicts(self, verdicts: Sequence[tuple[str, str, Verdict]]) -> None:
        """Store the first verdict of each (id, digest) pair (never replaced)."""

    def accepted(self, record_id: str) -> AcceptedRecord | None:
        """The record accepted under `record_id`."""

    def accepted_digests(self, record_ids: Sequence[str]) -> dict[str, str]:
        """The digest each of these ids was accepted with, for those accepted."""

    def put_accepted(self, accepted: Sequence[tuple[AcceptedRecord, str]]) -> None:
        """Store accepted records, each findable by its normalized content key."""

    def accepted_with_content(self, content_key: str) -> list[str]:
        """The ids of every accepted record with this content key."""

    def invalidated_with_content(self, content_keys: Sequence[str]) -> dict[str, str]:
        """For each of these content keys that has one, the id of the first invalidated record with it."""

    def invalidations_of(self, record_ids: Sequence[str]) -> dict[str, Invalidation]:
        """The feed entry that invalidated each of these ids, for those invalidated."""

    def append_invalidation(self, record_id: str, reason: str, at: float) -> Invalidation:
        """Append an entry for `record_id` at the next feed position."""

    def feed(self, since: int, count: int) -> list[Invalidation]:
        """At most `count` feed entries after position `since`, oldest first."""

    def accepted_after(self, after: str, count: int) -> list[AcceptedRecord]:
        """At most `count` accepted records with ids after `after`, by id."""

    def home(self, name: str) -> HomeEntry | None:
        """The enrolled home `name`."""

    def put_home(self, entry: HomeEntry) -> None:
        """Enroll (or re-enroll) a home."""

    def counts(self) -> tuple[int, int]:
        """(accepted records, feed entries)."""


class RealmStorage(Protocol):
    """A store Realm's rules run over."""

    where: str

    def run(self, work: Callable[[StorageTxn], T], *, write: bool) -> T:
        """`work` inside one transaction (committed durably before returning, for a write)."""

    def close(self) -> None:
        """Release the store; later calls raise `StoreClosed`."""

