"""Realm's durable state and its rules, written once over either storage backend.

Verdicts, accepted records, record owners and invalidations are write-once: never updated or
deleted, so an answer Realm gave once is the answer it gives after any restart or crash. Every
write transaction is committed durably before its caller sees the result, so an accepted record
survives `kill -9` the moment its response exists.

What Realm stores it checks first: each record's digest is recomputed from its content (the
limits on ids and text are checked as the request is decoded). A record id belongs to the home
that first pushed it; a push naming an id another home owns is refused whole, storing nothing.
A home's token is stored as its SHA-256 only; enrolling a home again needs `rotate`.

Invalidation cascades by content: invalidating a record also invalidates every other accepted record
with the same normalized content (under another id, from any home), so content Realm refuses is
withdrawn wherever it was accepted before. The backends (`lmdb_storage`, `pg_storage`) only store;
how each keeps these rules under concurrency is in docs/realm.md.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from resident.errors import InvalidInput, RecordNotFound
from resident.messages.digest import content_digest
from resident.messages.realm import (
    ADMIN,
    PROTOCOL_VERSION,
    AcceptedRecord,
    Health,
    HomeEntry,
    Invalidation,
    InvalidationPage,
    RealmRecord,
    RecordPage,
    RecordSummary,
    ReplicateResult,
    Verdict,
)
from resident.realm.governance import Precedent, content_key, judge, next_cursor
from resident.realm.lmdb_storage import DEFAULT_MAP_SIZE, LmdbStorage, make_private_dirs
from resident.realm.storage import RealmStorage, StorageTxn
from resident.realm.tokens import new_token, token_digest

__all__ = ["IdsOwnedElsewhere", "RealmState", "make_private_dirs"]

_HOME_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
# How many feed entries one page request may look at while it filters a home's own.
_SCAN_LIMIT = 5_000


class IdsOwnedElsewhere(Exception):
    """A push named record ids that belong to another home; nothing of it was stored."""

    def __init__(self, ids: tuple[str, ...]) -> None:
        super().__init__(f"{len(ids)} record ids belong to another home")
        self.ids = ids


def _check_digest(record: RealmRecord) -> None:
    expected = content_digest(
        record_id=record.id, summary=record.summary, body=record.body, kind=record.kind, bank=record.bank,
        canonical=record.canonical, delegated=record.delegated, supersedes=record.supersedes,
    )
    if record.digest != expected:
        raise InvalidInput(
            f"record {record.id}: its digest does not match its content; send the digest of what it says"
        )


@dataclass
class _Known:
    """What Realm knows about one push's records, read at once, and what judging them adds.

    Judging updates it record by record, so a later duplicate in the same push is judged against an
    earlier one, as it would be had each been stored before the next was read.
    """

    verdicts: dict[tuple[str, str], Verdict]
    accepted: dict[str, str]
    invalidated: dict[str, str]
    invalidated_content: dict[str, str]
    new_verdicts: list[tuple[str, str, Verdict]] = field(default_factory=list)
    new_accepted: list[tuple[AcceptedRecord, str]] = field(default_factory=list)


def _judge(known: _Known, home: str, record: RealmRecord, key: str, now: float) -> ReplicateResult:
    pair = (record.id, record.digest)
    precedent = Precedent(
        prior=known.verdicts.get(pair),
        accepted_digest=known.accepted.get(record.id),
        invalidated_with_content=known.invalidated_content.get(key),
        invalidated_because=known.invalidated.get(record.id),
    )
    verdict = judge(record, precedent, at=now)
    if precedent.prior is None and precedent.invalidated_because is None:
        known.verdicts[pair] = verdict
        known.new_verdicts.append((record.id, record.digest, verdict))
        if verdict.status == "accepted":
            known.accepted[record.id] = record.digest
            known.new_accepted.append((AcceptedRecord(record=record, accepted_at=now, home=home), key))
    return ReplicateResult(id=record.id, status=verdict.status, reason=verdict.reason, rule=verdict.rule)


def cascade_reason(first_id: str, reason: str) -> str:
    """The reason given to a record invalidated because its content equals that of `first_id`."""
    return f"{reason} (same content as record {first_id}, which Realm invalidated)"


class RealmState:
    """Realm's rules over one `RealmStorage`; thread-safe, and safe beside other processes on PostgreSQL."""

    def __init__(self, storage: RealmStorage, clock: Callable[[], float] = time.time) -> None:
        self.storage = storage
        self._clock = clock

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        map_size: int = DEFAULT_MAP_SIZE,
        clock: Callable[[], float] = time.time,
    ) -> RealmState:
        """Open (or create) the LMDB store in `data_dir`; refuses a store of another schema version."""
        return cls(LmdbStorage.open(data_dir, map_size=map_size), clock)

    @classmethod
    def connect(cls, url: str, *, clock: Callable[[], float] = time.time, pool_size: int = 8) -> RealmState:
        """Connect to the PostgreSQL database at `url`; refuses one whose schema this Realm does not know."""
        from resident.realm.pg_storage import PgStorage  # noqa: PLC0415 - psycopg only for a PostgreSQL Realm

        return cls(PgStorage.connect(url, pool_size=pool_size), clock)

    def replicate(self, home: str, records: Sequence[RealmRecord]) -> list[ReplicateResult]:
        """Judge each record of `home`'s push in order; store new verdicts, owners and accepted records in one commit.

        Refused whole, with nothing stored: a record whose digest does not match its content
        (`InvalidInput`), or ids that another home pushed first (`IdsOwnedElsewhere`).
        """
        for record in records:
            _check_digest(record)

        keys = [content_key(record) for record in records]

        def work(txn: StorageTxn) -> list[ReplicateResult]:
            # Stamped inside the work: a transaction run again gets a fresh time, as a new request would.
            now = self._clock()
            ids = list(dict.fromkeys(record.id for record in records))
            # Claimed before the owners are read: the read then sees whichever home won each id, whatever
            # raced it (the claim of an id another home holds changes nothing; a refusal undoes them all).
            txn.claim(ids, home)
            owners = txn.owners(ids)
            taken = tuple(record_id for record_id in ids if owners.get(record_id, home) != home)
            if taken:
                raise IdsOwnedElsewhere(taken)
            txn.lock_content(keys, exclusive=False)
            known = _Known(
                verdicts=txn.verdicts(list(dict.fromkeys((record.id, record.digest) for record in records))),
                accepted=txn.accepted_digests(ids),
                invalidated={record_id: item.reason for record_id, item in txn.invalidations_of(ids).items()},
                invalidated_content=txn.invalidated_with_content(list(dict.fromkeys(keys))),
            )
            results = [_judge(known, home, record, key, now) for record, key in zip(records, keys, strict=True)]
            txn.put_verdicts(known.new_verdicts)
            txn.put_accepted(known.new_accepted)
            return results

        return self.storage.run(work, write=True)

    def invalidate(self, record_id: str, reason: str) -> Invalidation:
        """Append an invalidation of an accepted record; a second call returns the first entry.

        Its content is remembered too: a later record with the same body is refused, and every record
        already accepted with that content (under another id, from any home) is invalidated with it.
        """

        def work(txn: StorageTxn) -> Invalidation:
            accepted = txn.accepted(record_id)
            if accepted is None:
                raise RecordNotFound(f"Realm has no accepted record {record_id}; nothing to invalidate")
            key = content_key(accepted.record)
            # Exclusive: a push of this content either committed before (and is found below) or waits, then
            # finds this invalidation.
            txn.lock_content([key], exclusive=True)
            existing = txn.invalidations_of([record_id]).get(record_id)
            if existing is not None:
                return existing
            now = self._clock()
            item = txn.append_invalidation(record_id, reason, now)
            same = sorted(set(txn.accepted_with_content(key)) - {record_id})
            done = txn.invalidations_of(same)
            for other in same:
                if other not in done:
                    txn.append_invalidation(other, cascade_reason(record_id, reason), now)
            return item

        return self.storage.run(work, write=True)

    def invalidations(self, since: int, limit: int, *, home: str | None = None) -> InvalidationPage:
        """At most `limit` invalidations with a sequence number above `since`, oldest first.

        With `home`, only invalidations of records that home owns; a page then stops after looking
        at `_SCAN_LIMIT` entries, with `more` set, so no request walks the whole feed.
        """

        def work(txn: StorageTxn) -> InvalidationPage:
            items: list[Invalidation] = []
            cursor_at = since
            more = False
            feed = txn.feed(since, _SCAN_LIMIT + 1)
            owners = {} if home is None else txn.owners([item.id for item in feed])
            for scanned, item in enumerate(feed):
                if len(items) >= limit or scanned >= _SCAN_LIMIT:
                    more = True
                    break
                cursor_at = item.seq
                if home is None or owners.get(item.id) == home:
                    items.append(item)
            cursor = next_cursor(since, [cursor_at, *(item.seq for item in items)])
            return InvalidationPage(items=tuple(items), cursor=cursor, more=more)

        return self.storage.run(work, write=False)

    def records(self, after: str, limit: int) -> RecordPage:
        """At most `limit` accepted records with ids after `after`, by id (a governance listing)."""

        def work(txn: StorageTxn) -> RecordPage:
            found = txn.accepted_after(after, limit + 1)
            invalidated = txn.invalidations_of([accepted.record.id for accepted in found[:limit]])
            items = tuple(
                RecordSummary(
                    id=accepted.record.id, home=accepted.home, digest=accepted.record.digest,
                    accepted_at=accepted.accepted_at, invalidated=accepted.record.id in invalidated,
                )
                for accepted in found[:limit]
            )
            return RecordPage(items=items, next=items[-1].id if len(found) > limit else None)

        return self.storage.run(work, write=False)

    def enroll(self, name: str, *, rotate: bool = False) -> str:
        """Issue the token of home `name` (shown once; only its hash is kept).

        Enrolling a home that already has a token needs `rotate`, which makes the old token stop working.
        """
        if not _HOME_NAME.match(name) or name == ADMIN:
            raise InvalidInput(
                f"home name {name!r} is not valid: use 1-32 lower-case letters, digits, '-' or '_', "
                f"starting with a letter (and not {ADMIN!r})"
            )
        token = new_token(name)
        entry = HomeEntry(name=name, token_sha256=token_digest(token), enrolled_at=self._clock())

        def work(txn: StorageTxn) -> None:
            if txn.home(name) is not None and not rotate:
                raise InvalidInput(
                    f"home {name} is already enrolled; pass --rotate to issue a new token (the old one stops working)"
                )
            txn.put_home(entry)

        self.storage.run(work, write=True)
        return token

    def home_token_digest(self, name: str) -> str | None:
        """The SHA-256 of home `name`'s token, or None if no such home is enrolled."""
        entry = self.storage.run(lambda txn: txn.home(name), write=False)
        return None if entry is None else entry.token_sha256

    def health(self) -> Health:
        """How many records Realm accepted and how many it invalidated."""
        records, invalidations = self.storage.run(lambda txn: txn.counts(), write=False)
        return Health(status="ok", records=records, invalidations=invalidations, version=PROTOCOL_VERSION)

    def close(self) -> None:
        """Close the store; later calls raise `StoreClosed`. Closing twice is harmless."""
        self.storage.close()

    def __enter__(self) -> RealmState:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
