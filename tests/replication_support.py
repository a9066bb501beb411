"""What the replication tests share: fast retry settings, bounded waits, and reading both sides' truth.

The runtime's truth is its own LMDB (read through an open runtime's store, or a closed home's
store); Realm's truth is Realm's LMDB, read here through a read-only LMDB environment so it can
be checked while the Realm process still runs (LMDB allows readers beside another process's
writer). "Synced only what Realm accepted" is then a comparison of the two.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import lmdb
import msgspec
import pytest

from resident import Runtime
from resident.actors.replication import ReplicationSettings
from resident.clock import Clock
from resident.messages.digest import content_digest
from resident.messages.memory import MemoryRecord, Receipt
from resident.messages.realm import AcceptedRecord, RealmRecord, Verdict
from resident.messages.replication import RecordReplication, ReplicationCounts
from resident.realm.process import RealmProcess
from resident.realm.tokens import TOKEN_ENV
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.store import Store
from resident.store.tables import RECORDS

__all__ = [
    "FAST",
    "DelegatedWriter",
    "accepted_by_realm",
    "assert_synced_only_if_accepted",
    "counts",
    "delegated_promotion",
    "local_records",
    "open_runtime",
    "record_status",
    "stored_records",
    "use_home_token",
    "verdicts_of_realm",
    "wait_until",
]

T = TypeVar("T")

# Small waits so that a whole push cycle (4 attempts) fits in well under a second.
FAST = ReplicationSettings(
    wait_initial=0.05, wait_max=0.2, jitter=0.05, retry_later=0.5, poll_interval=0.2, request_timeout=0.5
)


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.01) -> T:
    """Poll `predicate` until it returns something truthy (returned); AssertionError after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


@contextmanager
def open_runtime(
    home: Path, realm: str, settings: ReplicationSettings | None = FAST, *, enable: bool = True,
    clock: Clock | None = None,
) -> Iterator[Runtime]:
    """A runtime on `home` replicating to `realm` ("none": no Realm), memory on, closed afterwards."""
    runtime = Runtime.open(home, realm=realm, replication=settings, clock=clock)
    try:
        if enable:
            runtime.memory.enable()
        yield runtime
    finally:
        runtime.close()


class DelegatedWriter:
    """Writes as a member's session under a grant: the runtime marks each such write `delegated`."""

    def __init__(self, runtime: Runtime, member: str = "deven") -> None:
        actions = {"remember", "supersede", "recall", "reconcile"}
        grant = runtime.coordinator.issue_grant(actions=actions)
        self.session = dispatch_session(host_context(runtime),
            "delegated-writes", member, role="implement", parent_grant=grant, actions=actions
        )

    def remember(self, text: str, **options: object) -> Receipt:
        return asyncio.run(self.session.remember(text, **options))  # type: ignore[arg-type]


def delegated_promotion(runtime: Runtime, text: str, member: str = "deven") -> str:
    """A canonical memory written through a delegated path (Realm puts it in conflict); its id."""
    return DelegatedWriter(runtime, member).remember(text, canonical=True).id


def use_home_token(monkeypatch: pytest.MonkeyPatch, realm: RealmProcess, home: str = "tests") -> str:
    """Make every runtime this test opens (in process or in a child) present `home`'s Realm token."""
    token = realm.enroll(home, rotate=True)
    monkeypatch.setenv(TOKEN_ENV, token)
    return token


def counts(runtime: Runtime) -> ReplicationCounts:
    result = runtime.replication.status()
    assert isinstance(result, ReplicationCounts)
    return result


def record_status(runtime: Runtime, record_id: str) -> RecordReplication:
    result = runtime.replication.status(record_id)
    assert isinstance(result, RecordReplication)
    return result


def local_records(runtime: Runtime) -> dict[str, MemoryRecord]:
    """Every record of an open runtime's home, as stored (withheld ones too)."""
    with runtime._internal.store.reader() as reader:
        return dict(reader.items(RECORDS))


def stored_records(home: Path) -> dict[str, MemoryRecord]:
    """Every record of a home that no runtime has open (e.g. after its process was killed)."""
    store = Store.open(home)
    try:
        with store.reader() as reader:
            return dict(reader.items(RECORDS))
    finally:
        store.close()


def _read_realm(realm: Path | RealmProcess, table: str) -> list[tuple[bytes, bytes]]:
    """Every row of one of Realm's tables, read from its store as stored: key and value bytes.

    A PostgreSQL Realm's verdict keys are given as LMDB's (`id NUL digest`), so callers read both alike.
    """
    if isinstance(realm, RealmProcess) and realm.database is not None:
        import psycopg  # noqa: PLC0415 - only where a PostgreSQL Realm is read

        query = {
            "records": "SELECT convert_to(id, 'UTF8'), record FROM realm_records",
            "verdicts": (
                "SELECT convert_to(id, 'UTF8') || '\\x00'::bytea || convert_to(digest, 'UTF8'), verdict "
                "FROM realm_verdicts"
            ),
        }[table]
        with psycopg.connect(realm.database) as conn:
            return [(bytes(key), bytes(value)) for key, value in conn.execute(query.encode()).fetchall()]
    data_dir = realm if isinstance(realm, Path) else realm.data_dir
    env = lmdb.open(str(data_dir), readonly=True, max_dbs=16, lock=True)
    try:
        db = env.open_db(table.encode(), create=False)
        with env.begin() as txn:
            return [(bytes(key), bytes(value)) for key, value in txn.cursor(db=db)]
    finally:
        env.close()


def accepted_by_realm(realm: Path | RealmProcess) -> dict[str, str]:
    """Realm's accepted records: id → digest (the version Realm accepted)."""
    decode = msgspec.msgpack.Decoder(AcceptedRecord).decode
    return {key.decode(): decode(value).record.digest for key, value in _read_realm(realm, "records")}


def verdicts_of_realm(realm: Path | RealmProcess) -> dict[tuple[str, str], Verdict]:
    """Every verdict Realm gave: (id, digest) → verdict."""
    decode = msgspec.msgpack.Decoder(Verdict).decode
    verdicts: dict[tuple[str, str], Verdict] = {}
    for key, value in _read_realm(realm, "verdicts"):
        record_id, digest = key.decode().split("\x00", 1)
        verdicts[record_id, digest] = decode(value)
    return verdicts


def assert_synced_only_if_accepted(records: dict[str, MemoryRecord], realm: Path | RealmProcess) -> None:
    """Every locally `synced` record is one Realm accepted, with the same content digest."""
    accepted = accepted_by_realm(realm)
    wrong = [
        record.id
        for record in records.values()
        if record.replication == "synced" and accepted.get(record.id) != record.digest
    ]
    assert not wrong, f"synced locally but not accepted by Realm: {wrong}"


def realm_record(record_id: str, body: str | None = None) -> RealmRecord:
    """A record of deven's as a home pushes it to Realm, with its real content digest."""
    body = f"note {record_id}" if body is None else body
    digest = content_digest(
        record_id=record_id, summary="a note", body=body, kind="world", bank="agent_core/deven",
        canonical=False, delegated=False, supersedes=None,
    )
    return RealmRecord(
        id=record_id, digest=digest, owner="deven", bank="agent_core/deven", scope="AGENT_CORE", kind="world",
        summary="a note", body=body, canonical=False, delegated=False, recorded_at=1_780_000_000.0,
    )
