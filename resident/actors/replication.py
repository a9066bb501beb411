"""Replication: pushes pending records to Realm, applies its verdicts and invalidations.

Three small state objects do the thinking: the pusher (`replication_push`) works from the pending
index in LMDB, the invalidation poller (`replication_poll`) walks Realm's feed, and the waiter set
(`replication_waiters`) holds syncs until they can be answered. This actor owns them, and does
what they decide: Realm calls run on its I/O worker (`io_worker`), whose results come back as
messages, so the actor keeps answering status, sync and stop however slow Realm is; waits
(backoff, rest, the polling interval) are scheduled messages on the runtime's clock. Starting a
push and reading the next page of invalidations are wake-ups (`self.wake_up`): however many
admissions, verdicts and rounds ask for one, at most one of each is pending.

Nothing depends on a tell arriving: the pending index is written in the same transaction as each
record, a published admission only wakes the pusher early, and every polling round ends by waking
it too.

A record becomes `synced` only once Realm's acceptance has come back *and* the verdict is durably
written (the push stays `committing` until the writer's commit returns). If the process dies in
between, the record is still pending on restart and is pushed again; Realm's answer is idempotent
for the same id and digest. Records whose ids Realm says belong to another home (409) are put in
`conflict` (rule `id_owned`); a readmit gives them a new id.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from resident.actors.io_worker import Done, IoWorker
from resident.actors.replication_poll import Poller
from resident.actors.replication_push import Flight, Pusher, PushSettings
from resident.actors.replication_waiters import Waiter, WaiterSet
from resident.errors import (
    ActorUnavailable,
    DiskFull,
    MapFull,
    RealmIdTaken,
    RealmRejected,
    RealmUnauthorized,
    RealmUnavailable,
    RecordNotFound,
)
from resident.messages.memory import AWAITING_REALM, MemoryRecord, RecordAdmitted
from resident.messages.realm import (
    DEFAULT_PAGE_LIMIT,
    MAX_REPLICATE_RECORDS,
    InvalidationPage,
    RealmRecord,
    ReplicateResult,
)
from resident.messages.replication import (
    GetReplicationStatus,
    InvalidationCursorAdvanced,
    InvalidationNoted,
    PendingIndexBuilt,
    RecordConflicted,
    RecordInvalidated,
    RecordReplication,
    RecordsSynced,
    ReplicationAttempted,
    ReplicationCounts,
    SyncNow,
)
from resident.messages.store import Commit, Published
from resident.store.store import Store
from resident.store.tables import INDEXED_KEY, PENDING, REALM_CURSOR, RECORDS, REFUSED, REPLICATION
from resident.supervisor import (
    Address,
    Backoff,
    ChildContext,
    Completed,
    ForwardReply,
    Reply,
    SupervisedActor,
    settle_all,
)

if TYPE_CHECKING:
    from resident.realm.client import RealmClient

__all__ = ["NO_REALM_NOTE", "Replication", "ReplicationSettings", "realm_record"]

logger = logging.getLogger(__name__)

NO_REALM_NOTE = "no Realm is configured, so records stay pending; run `resident init --realm URL`"
# Records read per step of building the pending index of an older home (one short read, one commit).
INDEX_STEP = 5_000
ID_OWNED_REASON = "its id belongs to another home at Realm; readmit it (a new version gets a new id)"


@dataclass(frozen=True)
class ReplicationSettings:
    """How hard and how often replication tries.

    A push makes at most `max_attempts` requests; the wait before attempt n+1 is the runtime's
    `Backoff` from `wait_initial`, doubling each time up to `wait_max`, made up to `jitter` (a
    fraction) longer at random. After the last attempt replication rests `retry_later` seconds.
    Invalidations are polled every `poll_interval` seconds; every request gives up after
    `request_timeout` seconds.
    """

    batch_records: int = 200
    batch_bytes: int = 3_000_000
    max_attempts: int = 4
    wait_initial: float = 0.2
    wait_max: float = 5.0
    jitter: float = 0.2
    retry_later: float = 10.0
    poll_interval: float = 2.0
    request_timeout: float = 2.0

    def __post_init__(self) -> None:
        if not 1 <= self.batch_records <= MAX_REPLICATE_RECORDS:
            raise ValueError(f"batch_records must be 1..{MAX_REPLICATE_RECORDS}")
        if self.batch_bytes < 1:
            raise ValueError("batch_bytes must be positive")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min(self.wait_initial, self.wait_max, self.jitter) < 0:
            raise ValueError("wait_initial, wait_max and jitter must not be negative")
        if self.wait_max < self.wait_initial:
            raise ValueError("wait_max must not be less than wait_initial")
        if min(self.retry_later, self.poll_interval, self.request_timeout) <= 0:
            raise ValueError("retry_later, poll_interval and request_timeout must be positive")

    @property
    def backoff(self) -> Backoff:
        """The waits between a push's attempts."""
        return Backoff(min=self.wait_initial, max=self.wait_max, jitter=self.jitter)

    def push(self) -> PushSettings:
        return PushSettings(
            batch_records=self.batch_records, batch_bytes=self.batch_bytes, max_attempts=self.max_attempts,
            backoff=self.backoff,
        )


def _realm_client_class() -> type[RealmClient]:
    """The HTTP client of Realm, loaded only for a home that has a Realm (httpx costs ~15 MB and a
    quarter second at import; a home without a Realm never talks HTTP)."""
    from resident.realm.client import RealmClient  # noqa: PLC0415 - loaded on first use, see above

    return RealmClient


def realm_record(record: MemoryRecord) -> RealmRecord:
    """The part of a record Realm governs."""
    return RealmRecord(
        id=record.id,
        digest=record.digest,
        owner=record.owner,
        bank=record.bank,
        scope=record.scope,
        kind=record.kind,
        summary=record.summary,
        body=record.body,
        canonical=record.canonical,
        delegated=record.delegated,
        recorded_at=record.recorded_at,
        supersedes=record.supersedes,
    )


# -- messages the actor sends itself -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Push:
    """Start a push if the pusher is idle (the push wake-up)."""


@dataclass(frozen=True, slots=True)
class _Attempt:
    """The next attempt of push `cycle`, due after its backoff wait."""

    cycle: int
    attempt: int


@dataclass(frozen=True, slots=True)
class _RestOver:
    rest: int


@dataclass(frozen=True, slots=True)
class _Poll:
    """Read the next page of Realm's invalidation feed if the poller is idle (the poll wake-up)."""


@dataclass(frozen=True, slots=True)
class _SyncDeadline:
    """A sync's timeout passed: answer it with the counts as they are."""

    waiter: int


@dataclass(frozen=True, slots=True)
class _Sent:
    """Tag of a replicate request: which push and attempt it belongs to."""

    cycle: int
    attempt: int


@dataclass(frozen=True, slots=True)
class _Fetched:
    """Tag of an invalidation page request."""


@dataclass(frozen=True, slots=True)
class _Verdicts:
    """Context of the commit of Realm's answers for push `cycle`.

    Commit outcomes come back through the address, so one told by an incarnation that crashed
    reaches its successor; `incarnation` tells them apart.
    """

    incarnation: int
    cycle: int


@dataclass(frozen=True, slots=True)
class _Indexed:
    """Context of the commit of one step of the pending index that `incarnation` builds as it starts.

    `after` is the last record the step read, or None when the step was the last.
    """

    incarnation: int
    after: str | None


@dataclass(frozen=True, slots=True)
class _IndexNext:
    """Index the records after `after` (the next step of the pending index, told to this incarnation)."""

    after: str


@dataclass(frozen=True, slots=True)
class _PollCommitted:
    incarnation: int
    cursor: int
    more: bool


class Replication(SupervisedActor):
    """The only Realm client inside the runtime."""

    def __init__(
        self,
        context: ChildContext,
        *,
        store: Store,
        writer: Address,
        realm_url: str | None,
        settings: ReplicationSettings | None = None,
        realm_token: str | None = None,
        client_factory: Callable[..., RealmClient] | None = None,
        realm_ca: str | None = None,
    ) -> None:
        super().__init__(context)
        self.store = store
        self.writer = writer
        self.realm_url = realm_url
        self.settings = settings or ReplicationSettings()
        self._token = realm_token
        self._ca_file = realm_ca
        self._client_factory = client_factory
        self._client: RealmClient | None = None
        self._io: IoWorker | None = None
        self.pusher = Pusher(self.settings.push())
        self.poller = Poller(cursor=0)
        self.waiters = WaiterSet()
        self._push_soon = self.wake_up(_Push())
        self._poll_due = self.wake_up(_Poll())
        # While the pending index of older records is being committed: the callers waiting for
        # counts, which are read from that index.
        self._indexing = False
        self._awaiting_index: list[Reply] = []

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        with self.store.reader() as reader:
            cursor = reader.get(REALM_CURSOR, "cursor")
        self.poller.cursor = cursor.seq if cursor is not None else 0
        if self.store.readonly:
            # A read-only home could not record a verdict or an invalidation, so it talks to no
            # Realm: its records keep the state they had, and status still reads them.
            return
        self._index_older_records()
        if self.realm_url is not None:
            factory = self._client_factory or _realm_client_class()
            # The pin is passed only when there is one, so test factories without the argument still fit.
            pin = {"ca_file": self._ca_file} if self._ca_file is not None else {}
            self._client = factory(self.realm_url, self.settings.request_timeout, token=self._token, **pin)
            self._io = IoWorker(self.name, self._from_worker)
            self._queue_push()
            self._poll_due.now()

    def _index_older_records(self) -> None:
        """Start building the pending index for records admitted before it existed (once per home).

        Nothing here is proportional to the home's size: a home without the index gets it in
        steps of `INDEX_STEP` records (`_index_step`), each a message this actor tells itself and a
        commit it is told the end of, so the start ping, status and pushes of new records are
        answered between steps. A home whose memory was switched on after the index existed is
        marked indexed by that switch (`store/projections.py`), so it never needs the walk. Until
        the last step is committed, counts and syncs wait (both read the index), and the records it
        adds are pushed as each step is committed (`_index_committed`).
        """
        with self.store.reader() as reader:
            if reader.get(REALM_CURSOR, INDEXED_KEY) is not None or reader.count(RECORDS) == 0:
                return
        self._indexing = True
        self._index_step(None)

    def _index_step(self, after: str | None) -> None:
        """Index the next `INDEX_STEP` records after `after`; the last step marks the index whole."""
        with self.store.reader() as reader:
            rows = reader.items_after(RECORDS, after, INDEX_STEP)
        awaiting = tuple(i for i, r in rows if r.replication in AWAITING_REALM)
        refused = tuple(i for i, r in rows if r.replication in ("conflict", "invalidated"))
        last = rows[-1][0] if len(rows) == INDEX_STEP else None
        event = PendingIndexBuilt(at=self.clock.time(), awaiting=awaiting, refused=refused, complete=last is None)
        step = _Indexed(self.context.incarnation, last)
        self.writer.tell(Commit(events=(event,)), ForwardReply(self.context.address, step))

    def _index_committed(self, step: _Indexed, error: BaseException | None) -> None:
        if isinstance(error, DiskFull | MapFull):
            # A home on a full disk still opens for reading (status, recall): the index is built at
            # the next start with room, and until then nothing new is admitted to push anyway.
            logger.info("replication: the pending index waits for room (%s)", error.message)
        elif error is not None:
            # As a start that failed: the next incarnation builds the index again.
            raise error
        elif step.after is not None:
            self.actor_ref.tell(_IndexNext(step.after))
            self._queue_push()  # the records this step indexed may go now
            return
        self._indexing = False
        waiting, self._awaiting_index = self._awaiting_index, []
        self._answer_counts(waiting)
        self._queue_push()

    def _from_worker(self, done: Done) -> None:
        self.actor_ref.tell(done)

    def teardown(self) -> None:
        self._release("replication stopped before the sync settled; the runtime is closing")

    def on_crash(self, error: BaseException) -> None:
        self._release(f"replication restarted ({type(error).__name__}) before the sync settled; sync again")

    def _release(self, why: str) -> None:
        settle_all((w.reply, None, ActorUnavailable(why)) for w in self.waiters.release() if w.reply is not None)
        waiting, self._awaiting_index = self._awaiting_index, []
        settle_all((reply, None, ActorUnavailable(why)) for reply in waiting)
        client, self._client = self._client, None
        if self._io is not None:
            # The worker closes the client once its running call (bounded by the timeout) returns.
            self._io.close(client.close if client is not None else None)
            self._io = None
        elif client is not None:
            client.close()

    # -- messages ---------------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        match message:
            case Published():
                self._published(message)
            case _IndexNext(after=after):
                self._index_step(after)
            case _Push():
                self._push_soon.done()
                self._start_push()
            case Done(tag=_Sent()):
                self._replicated(message)
            case Done(tag=_Fetched()):
                self._polled(message)
            case _Attempt():
                self._retry(message)
            case _RestOver(rest=rest):
                if self.pusher.rest_over(rest):
                    self._queue_push()
            case _Poll():
                self._poll_due.done()
                self._poll()
            case Completed():
                self._committed(message)
            case _SyncDeadline(waiter=number):
                waiter = self.waiters.take(number)
                if waiter is not None:
                    self._answer_counts([waiter.reply])
            case GetReplicationStatus(id=None):
                self._answer_counts([self.defer()])
            case GetReplicationStatus(id=str() as record_id):
                return self._record_status(record_id)
            case SyncNow(timeout=timeout):
                self._sync(self.defer(), timeout)
            case _:
                return super().handle(message)
        return None

    def _published(self, message: Published) -> None:
        # A wake-up only: what to push is read from the pending index.
        if any(isinstance(event, RecordAdmitted) for event in message.events):
            self._queue_push()

    def _committed(self, message: Completed) -> None:
        mine = self.context.incarnation
        for context, _value, error in message.outcomes:
            # An outcome for an incarnation that crashed is dropped: its effect is in LMDB.
            match context:
                case _Verdicts(incarnation=incarnation) if incarnation == mine:
                    self._verdicts_committed(context, error)
                case _PollCommitted(incarnation=incarnation) if incarnation == mine:
                    self._poll_committed(context, error)
                case _Indexed(incarnation=incarnation) if incarnation == mine:
                    self._index_committed(context, error)
        self._answer_waiters()

    # -- pushing ----------------------------------------------------------------------------------

    def _queue_push(self) -> None:
        if self.pusher.phase != "idle" or self._client is None:
            return
        self._push_soon.now()

    def _start_push(self) -> None:
        if self.pusher.phase != "idle" or self._client is None:
            return
        with self.store.reader() as reader:
            batch = self.pusher.next_batch(reader, self.poller.invalidating)
        if not batch:
            self._answer_waiters()
            return
        flight = self.pusher.start(tuple(r.id for r in batch))
        self._send(flight, batch)

    def _send(self, flight: Flight, records: Sequence[MemoryRecord]) -> None:
        client, io = self._client, self._io
        if client is None or io is None:
            return
        body = [realm_record(r) for r in records]
        io.run(_Sent(flight.cycle, flight.retry.attempt_number), lambda: client.replicate(body))

    def _retry(self, message: _Attempt) -> None:
        # A retry names its push and attempt: one a sync made stale finds another flight.
        if self.pusher.phase != "backoff" or not self.pusher.is_current(message.cycle, message.attempt):
            return
        flight = self.pusher.flight
        if flight is not None:
            self._resend(flight)

    def _resend(self, flight: Flight) -> None:
        """Send `flight` again with the records still pending (an invalidation may have taken some)."""
        with self.store.reader() as reader:
            records = [
                r for r in (reader.get(RECORDS, i) for i in flight.ids if i not in self.poller.invalidating)
                if r is not None and r.replication in ("pending", "pending_review")
            ]
        if not records:
            self.pusher.done()
            self._queue_push()
            return
        self.pusher.attempt(flight, tuple(r.id for r in records))
        self._send(flight, records)

    def _replicated(self, done: Done) -> None:
        tag = done.tag
        if self.pusher.phase != "requesting" or not self.pusher.is_current(tag.cycle, tag.attempt):
            return
        flight = self.pusher.flight
        if flight is None:
            return
        match done.error:
            case None:
                self._record_verdicts(flight, done.value)
            case RealmIdTaken(ids=ids):
                self._ids_owned_elsewhere(flight, ids, str(done.error))
            case RealmUnauthorized():
                self._unauthorized(flight, str(done.error))
            case RealmRejected():
                self._refused(str(done.error))
            case RealmUnavailable():
                self._transient_failure(flight, str(done.error))
            case _:
                raise done.error

    def _record_verdicts(self, flight: Flight, results: list[ReplicateResult]) -> None:
        self.pusher.answered()
        now = self.clock.time()
        accepted = tuple(r.id for r in results if r.status == "accepted")
        events: list[Any] = [ReplicationAttempted(at=now, ids=flight.ids)]
        if accepted:
            events.append(RecordsSynced(at=now, ids=accepted))
        for r in results:
            if r.status != "conflict":
                continue
            # An id Realm invalidated, pushed again (after an import, a restore or a crash before its answer):
            # withheld as invalidated, for the invalidation's reason, as the poll would have.
            if r.rule == "invalidated":
                events.append(RecordInvalidated(at=now, id=r.id, reason=r.reason))
            else:
                events.append(RecordConflicted(at=now, id=r.id, reason=r.reason, rule=r.rule))
        self._commit_verdicts(flight, events)

    def _ids_owned_elsewhere(self, flight: Flight, ids: tuple[str, ...], error: str) -> None:
        taken = tuple(i for i in flight.ids if i in set(ids))
        if not taken:
            self._refused(error)  # a 409 that names none of ours: nothing to learn from it
            return
        logger.warning("Realm says %d record ids belong to another home: %s", len(taken), ", ".join(taken[:5]))
        self.pusher.answered()
        now = self.clock.time()
        events: list[Any] = [ReplicationAttempted(at=now, ids=flight.ids, error=error)]
        events += [RecordConflicted(at=now, id=i, reason=ID_OWNED_REASON, rule="id_owned") for i in taken]
        self._commit_verdicts(flight, events)

    def _commit_verdicts(self, flight: Flight, events: list[Any]) -> None:
        verdicts = _Verdicts(self.context.incarnation, flight.cycle)
        self.writer.tell(Commit(events=tuple(events)), ForwardReply(self.context.address, verdicts))

    def _transient_failure(self, flight: Flight, error: str) -> None:
        self._record_attempt(flight.ids, error)
        delay = self.pusher.failed(error)
        if delay is None:
            logger.warning(
                "Realm push of %d records gave up after %d attempts (%s); retrying in %g s",
                len(flight.ids), flight.retry.attempt_number, error, self.settings.retry_later,
            )
            self._rest_started(exhausted=True)
            return
        self.schedule(delay, _Attempt(flight.cycle, flight.retry.attempt_number))

    def _unauthorized(self, flight: Flight, error: str) -> None:
        # Retrying at once cannot help; an operator has to enroll the home or fix its token.
        self._record_attempt(flight.ids, error)
        logger.warning("Realm refused this home's token: %s", error)
        self.pusher.rest_now(error)
        self.pusher.retrying = True
        self._rest_started(exhausted=True)

    def _rest_started(self, *, exhausted: bool) -> None:
        self.schedule(self.settings.retry_later, _RestOver(self.pusher.rest))
        self._answer_waiters(exhausted=exhausted)

    def _refused(self, error: str) -> None:
        parked = self.pusher.refused(error)
        if parked is not None:
            self._record_attempt((parked,), error)
            logger.warning("Realm refused record %s: %s (parked until `replication sync`)", parked, error)
        self._queue_push()

    def _record_attempt(self, ids: Sequence[str], error: str) -> None:
        self.writer.tell(Commit(events=(ReplicationAttempted(at=self.clock.time(), ids=tuple(ids), error=error),)))

    def _verdicts_committed(self, verdicts: _Verdicts, error: BaseException | None) -> None:
        flight = self.pusher.flight
        if self.pusher.phase != "committing" or flight is None or flight.cycle != verdicts.cycle:
            return
        if error is not None:
            # Realm's answer is not recorded: the records stay pending and are pushed again.
            logger.error("could not record Realm's verdicts: %s", error)
            self.pusher.rest_now(f"recording Realm's answer failed: {error}")
            self._rest_started(exhausted=True)
            return
        self.pusher.done()
        self._queue_push()

    # -- invalidations ----------------------------------------------------------------------------

    def _poll(self) -> None:
        client, io = self._client, self._io
        if client is None or io is None or self.poller.phase != "idle":
            return
        self.poller.begin()
        since = self.poller.cursor
        io.run(_Fetched(), lambda: client.invalidations(since=since, limit=DEFAULT_PAGE_LIMIT))

    def _polled(self, done: Done) -> None:
        if self.poller.phase != "polling":
            return
        if isinstance(done.error, RealmUnavailable | RealmRejected):
            self.poller.failed(str(done.error))
            self._round_ended()
            return
        if done.error is not None:
            raise done.error
        page: InvalidationPage = done.value
        now = self.clock.time()
        with self.store.reader() as reader:
            held = {item.id for item in page.items if reader.get(RECORDS, item.id) is not None}
        # Every invalidation is kept: of a record held here it withholds it now; of one not held yet, it is
        # noted, so that the record is withheld the moment it arrives (an import of another home's export).
        events: list[Any] = [
            RecordInvalidated(at=now, id=i.id, reason=i.reason, realm_seq=i.seq) if i.id in held
            else InvalidationNoted(at=now, id=i.id, reason=i.reason, realm_seq=i.seq)
            for i in page.items
        ]
        if page.cursor > self.poller.cursor:
            events.append(InvalidationCursorAdvanced(at=now, seq=page.cursor))
        # A full page may have more behind it; Realm also says so when it filtered a long stretch.
        more = page.more or len(page.items) >= DEFAULT_PAGE_LIMIT
        if not events:
            self.poller.drained()
            self._round_ended()
            return
        self.poller.page(frozenset(held))
        committed = _PollCommitted(self.context.incarnation, page.cursor, more)
        self.writer.tell(Commit(events=tuple(events)), ForwardReply(self.context.address, committed))

    def _poll_committed(self, polled: _PollCommitted, error: BaseException | None) -> None:
        if error is not None:
            logger.error("could not record invalidations: %s", error)
            self.poller.failed(f"recording invalidations failed: {error}")
            self._round_ended()
            return
        self.poller.committed(polled.cursor, polled.more)
        self._queue_push()  # records it held back are pushed now, if still pending
        if polled.more:
            self._poll_due.now()
            return
        self._round_ended()

    def _round_ended(self) -> None:
        failed = bool(self.poller.error)
        self._poll_due.after(self.settings.poll_interval if failed or not self.poller.again else 0.0)
        self._queue_push()  # whatever tells were lost, each round looks at the pending index again
        self._answer_waiters()

    # -- sync and status --------------------------------------------------------------------------

    def _sync(self, reply: Reply | None, timeout: float | None) -> None:
        if self._client is None:
            self._answer_counts([reply])
            return
        flight = self.pusher.sync()
        if flight is not None:
            # It waited out a backoff: the new push goes at once; the scheduled attempt is stale.
            self._resend(flight)
        else:
            self._queue_push()
        # The round that answers this sync must begin after it.
        needed = self.poller.wants_round_after()
        if not self.poller.busy:
            # The next round begins now rather than when the polling interval is over.
            self._poll_due.done()
            self._poll_due.now()
        waiter = Waiter(reply, needed, until_exhausted=timeout is None)
        number = self.waiters.add(waiter)
        if timeout is not None:
            waiter.deadline = self.schedule(timeout, _SyncDeadline(number))

    def _answer_waiters(self, *, exhausted: bool = False) -> None:
        if not self.waiters or self._indexing:
            return
        with self.store.reader() as reader:
            settled = self.pusher.flight is None and not self.pusher.has_unparked(reader)
        answered = self.waiters.ready(settled=settled, rounds_ended=self.poller.rounds_ended, exhausted=exhausted)
        if answered:
            self._answer_counts([w.reply for w in answered])

    def _answer_counts(self, replies: Sequence[Reply | None]) -> None:
        """Answer with the counts, now, or once the pending index they are read from is committed."""
        waiting = [reply for reply in replies if reply is not None]
        if self._indexing:
            self._awaiting_index += waiting
            return
        if waiting:
            counts = self._counts()
            settle_all((reply, counts, None) for reply in waiting)

    def _counts(self) -> ReplicationCounts:
        """Counts from the indexes (records awaiting Realm, records it refused), never a scan of every record."""
        with self.store.reader() as reader:
            total = reader.count(RECORDS)
            counts = {"pending": 0, "pending_review": 0, "synced": 0, "conflict": 0, "invalidated": 0}
            for _, awaiting in reader.items(PENDING):
                counts[awaiting.state] += 1
            withheld: list[str] = []
            for record_id, refusal in reader.items(REFUSED):
                counts[refusal.state] += 1
                record = reader.get(RECORDS, record_id)
                if record is not None and record.lifecycle == "active":
                    withheld.append(record_id)
        counts["synced"] = total - sum(counts.values())
        return ReplicationCounts(
            counts=counts,
            realm=self.realm_url,
            parked=len(self.pusher.parked),
            retrying=self.pusher.retrying,
            last_error=self.pusher.error or self.poller.error,
            note="" if self.realm_url else NO_REALM_NOTE,
            pushes=self.pusher.pushes,
            requests=self.pusher.requests,
            withheld=tuple(withheld),
            pusher=self.pusher.phase,
            poller=self.poller.phase,
        )

    def _record_status(self, record_id: str) -> RecordReplication:
        with self.store.reader() as reader:
            record = reader.get(RECORDS, record_id)
            status = reader.get(REPLICATION, record_id)
        if record is None:
            raise RecordNotFound(f"no memory record {record_id}")
        return RecordReplication(
            id=record_id,
            state=record.replication,
            reason=record.replication_reason or self.pusher.parked.get(record_id, ""),
            attempts=status.attempts if status else 0,
            last_error=status.last_error if status else "",
            last_attempt_at=status.last_attempt_at if status else None,
        )

