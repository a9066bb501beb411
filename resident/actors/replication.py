"""Replication: pushes pending records to Realm, applies its verdicts and invalidations.

One push at a time: a batch of pending records goes to Realm; a transient fault (refused
connection, timeout, 5xx, garbage) is retried with tenacity's stop and wait policies — bounded
attempts, exponential backoff with jitter — each wait a scheduled message, never a sleep, so the
actor keeps answering status and sync while it waits. A scheduled attempt names its push and its
attempt number, so one that a sync made stale is dropped and no push sends more than
`max_attempts` requests. When the attempts run out the records stay `pending` and replication
rests for `retry_later`: records written meanwhile join the pending set and wait for that one
scheduled retry (or an explicit sync) instead of each starting a push against a Realm known to be
failing. A 4xx answer is not retried blindly: the batch is split to find the records Realm
refuses, and those are parked until an explicit sync.

A record becomes `synced` only once Realm's acceptance has come back *and* the verdict is durably
written (the push keeps the batch in flight until the writer's commit returns). If the process
dies in between, the record is still pending on restart and is pushed again; Realm's answer is
idempotent for the same id and digest.

Invalidations are polled from Realm's feed on a schedule, one round at a time (a round reads pages
until the feed is drained, committing each before reading the next); each moves a local record to
`invalidated`, and the cursor advances in the same transaction.

A sync ends any rest, pushes now (parked records too) and asks for a new polling round. It is
answered once nothing is pending and a round that began after it has ended, or when its timeout
passes, whichever comes first.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import tenacity

from resident.clock import Timer
from resident.errors import ActorUnavailable, RealmRejected, RealmUnavailable, RecordNotFound
from resident.memory.visibility import WITHHELD
from resident.messages.memory import MemoryRecord, RecordAdmitted
from resident.messages.realm import DEFAULT_PAGE_LIMIT, MAX_REPLICATE_RECORDS, RealmRecord
from resident.messages.replication import (
    GetReplicationStatus,
    InvalidationCursorAdvanced,
    RecordConflicted,
    RecordInvalidated,
    RecordReplication,
    RecordsSynced,
    ReplicationAttempted,
    ReplicationCounts,
    SyncNow,
)
from resident.messages.store import Commit, Published
from resident.realm.client import RealmClient
from resident.store.store import Store
from resident.store.tables import REALM_CURSOR, RECORDS, REPLICATION
from resident.supervisor import Address, ChildContext, Completed, ForwardReply, Reply, SupervisedActor, settle_all

__all__ = ["NO_REALM_NOTE", "Replication", "ReplicationSettings", "realm_record"]

logger = logging.getLogger(__name__)

NO_REALM_NOTE = "no Realm is configured, so records stay pending; run `resident init --realm URL`"


@dataclass(frozen=True)
class ReplicationSettings:
    """How hard and how often replication tries.

    A push makes at most `max_attempts` requests; the wait before attempt n+1 is
    `wait_initial * 2**(n-1)`, capped at `wait_max`, plus up to `jitter` seconds at random. After
    the last attempt replication rests `retry_later` seconds. Invalidations are polled every
    `poll_interval` seconds; every request gives up after `request_timeout` seconds.
    """

    batch_records: int = 200
    batch_bytes: int = 3_000_000
    max_attempts: int = 4
    wait_initial: float = 0.2
    wait_max: float = 5.0
    jitter: float = 0.3
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
        if min(self.retry_later, self.poll_interval, self.request_timeout) <= 0:
            raise ValueError("retry_later, poll_interval and request_timeout must be positive")


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


@dataclass(frozen=True, slots=True)
class _Push:
    """Start a push if none is in flight (queued by the actor to itself)."""


@dataclass(frozen=True, slots=True)
class _Attempt:
    """The next attempt of push `cycle`, due after its backoff wait."""

    cycle: int
    attempt: int


@dataclass(frozen=True, slots=True)
class _Wake:
    """The end of rest number `rest` (after a push ran out of attempts)."""

    rest: int


@dataclass(frozen=True, slots=True)
class _Poll:
    generation: int


@dataclass(frozen=True, slots=True)
class _SyncDeadline:
    """A sync's timeout passed: answer it with the counts as they are."""

    waiter: int


@dataclass(frozen=True, slots=True)
class _Verdicts:
    """Context of the commit that records Realm's answers for a batch.

    Commit outcomes come back through the address, so one told by an incarnation that crashed
    reaches its successor; `incarnation` tells them apart.
    """

    incarnation: int
    cycle: int
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _PollCommitted:
    incarnation: int
    cursor: int
    more: bool


@dataclass
class _Flight:
    """The batch being pushed, across its attempts."""

    cycle: int
    ids: tuple[str, ...]
    state: tenacity.RetryCallState
    awaiting_commit: bool = False


@dataclass
class _Waiter:
    """A sync waiting for the pending set to drain and for polling round `round` to end."""

    reply: Reply | None
    round: int
    until_exhausted: bool
    deadline: Timer | None = None


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
        client_factory: Callable[[str, float], RealmClient] = RealmClient,
    ) -> None:
        super().__init__(context)
        self.store = store
        self.writer = writer
        self.realm_url = realm_url
        self.settings = settings or ReplicationSettings()
        self._client_factory = client_factory
        self._client: RealmClient | None = None
        # `wait_exponential + wait_random` rather than `wait_exponential_jitter`, whose `initial`
        # is deprecated in tenacity 9 and whose replacement (`multiplier`) tenacity 8 lacks.
        self._policy = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.settings.max_attempts),
            wait=tenacity.wait_exponential(multiplier=self.settings.wait_initial, max=self.settings.wait_max)
            + tenacity.wait_random(0, self.settings.jitter),
        )
        # pushing
        self._pending: dict[str, None] = {}  # insertion-ordered set: oldest first
        self._parked: dict[str, str] = {}
        self._singles: deque[str] = deque()
        self._flight: _Flight | None = None
        self._cycle = 0
        self._push_queued = False
        self._resting = False
        self._rest = 0
        # polling
        self._cursor = 0
        self._poll_generation = 0
        self._poll_busy = False
        self._paging = False
        self._poll_again = False
        self._round = 0
        self._rounds_started = 0
        self._rounds_ended = 0
        self._invalidating: frozenset[str] = frozenset()  # ids in the poll commit in flight
        # syncs and status
        self._waiters: dict[int, _Waiter] = {}
        self._waiter_ids = itertools.count(1)
        self._push_error = ""
        self._poll_error = ""
        self._retrying = False
        self._pushes = 0
        self._requests = 0

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        with self.store.reader() as reader:
            for record_id, record in reader.items(RECORDS):
                if record.replication == "pending":
                    self._pending[record_id] = None
            cursor = reader.get(REALM_CURSOR, "cursor")
        self._cursor = cursor.seq if cursor is not None else 0
        if self.realm_url is not None:
            self._client = self._client_factory(self.realm_url, self.settings.request_timeout)
            self._queue_push()
            self._schedule_poll(0.0)

    def teardown(self) -> None:
        self._release("replication stopped before the sync settled; the runtime is closing")

    def on_crash(self, error: BaseException) -> None:
        self._release(f"replication restarted ({type(error).__name__}) before the sync settled; sync again")

    def _release(self, why: str) -> None:
        waiters, self._waiters = list(self._waiters.values()), {}
        for waiter in waiters:
            if waiter.deadline is not None:
                waiter.deadline.cancel()
        settle_all((w.reply, None, ActorUnavailable(why)) for w in waiters if w.reply is not None)
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- messages ---------------------------------------------------------------------------------

    def handle(self, message: Any) -> Any:
        if isinstance(message, Published):
            for event in message.events:
                if isinstance(event, RecordAdmitted) and event.record.replication == "pending":
                    self._pending[event.record.id] = None
            self._queue_push()
            return None
        if isinstance(message, _Push):
            self._push_queued = False
            self._start_push()
            return None
        if isinstance(message, _Attempt):
            flight = self._flight
            if (
                flight is not None
                and not flight.awaiting_commit
                and (flight.cycle, flight.state.attempt_number) == (message.cycle, message.attempt)
            ):
                self._attempt(flight)
            return None
        if isinstance(message, _Wake):
            if self._resting and message.rest == self._rest:
                self._resting = False
                self._queue_push()
            return None
        if isinstance(message, Completed):
            mine = self.context.incarnation
            for context, _value, error in message.outcomes:
                # An outcome for an incarnation that crashed is dropped: its effect is in LMDB.
                if not isinstance(context, _Verdicts | _PollCommitted) or context.incarnation != mine:
                    continue
                if isinstance(context, _Verdicts):
                    self._verdicts_committed(context, error)
                else:
                    self._poll_committed(context, error)
            self._answer_waiters()
            return None
        if isinstance(message, _Poll):
            if message.generation == self._poll_generation:
                self._poll()
            return None
        if isinstance(message, _SyncDeadline):
            waiter = self._waiters.pop(message.waiter, None)
            if waiter is not None:
                settle_all(((waiter.reply, self._counts(), None),))
            return None
        if isinstance(message, GetReplicationStatus):
            return self._record_status(message.id) if message.id else self._counts()
        if isinstance(message, SyncNow):
            self._sync(self.defer(), message.timeout)
            return None
        return super().handle(message)

    # -- pushing ----------------------------------------------------------------------------------

    def _queue_push(self) -> None:
        if self._push_queued or self._flight is not None or self._client is None or self._resting:
            return
        self._push_queued = True
        self.tell_self(_Push())

    def _next_batch(self) -> tuple[str, ...]:
        if self._singles:
            return (self._singles.popleft(),)
        batch: list[str] = []
        size = 0
        with self.store.reader() as reader:
            for record_id in list(self._pending):
                if record_id in self._parked or record_id in self._invalidating:
                    continue
                record = reader.get(RECORDS, record_id)
                if record is None or record.replication != "pending":
                    del self._pending[record_id]
                    continue
                size += len(record.body.encode("utf-8")) + len(record.summary.encode("utf-8")) + 512
                if batch and size > self.settings.batch_bytes:
                    break
                batch.append(record_id)
                if len(batch) >= self.settings.batch_records:
                    break
        return tuple(batch)

    def _fresh_state(self) -> tenacity.RetryCallState:
        return tenacity.RetryCallState(retry_object=self._policy, fn=None, args=(), kwargs={})

    def _start_push(self) -> None:
        if self._flight is not None or self._client is None or self._resting:
            return
        ids = self._next_batch()
        if not ids:
            self._answer_waiters()
            return
        self._cycle += 1
        self._pushes += 1
        self._flight = _Flight(cycle=self._cycle, ids=ids, state=self._fresh_state())
        self._attempt(self._flight)

    def _attempt(self, flight: _Flight) -> None:
        if self._client is None:
            return
        # A record whose invalidation is being written is left out: it will not be pending for long.
        with self.store.reader() as reader:
            records = [
                r
                for r in (reader.get(RECORDS, i) for i in flight.ids if i not in self._invalidating)
                if r is not None and r.replication == "pending"
            ]
        if not records:
            self._flight = None
            self._queue_push()
            return
        flight.ids = tuple(r.id for r in records)
        self._requests += 1
        try:
            results = self._client.replicate([realm_record(r) for r in records])
        except RealmUnavailable as error:
            self._transient_failure(flight, str(error))
            return
        except RealmRejected as error:
            self._rejected(flight, str(error))
            return
        self._retrying = False
        self._push_error = ""
        now = self.clock.time()
        accepted = tuple(r.id for r in results if r.status == "accepted")
        events: list[Any] = [ReplicationAttempted(at=now, ids=flight.ids)]
        if accepted:
            events.append(RecordsSynced(at=now, ids=accepted))
        events += [RecordConflicted(at=now, id=r.id, reason=r.reason) for r in results if r.status == "conflict"]
        flight.awaiting_commit = True
        verdicts = _Verdicts(self.context.incarnation, flight.cycle, flight.ids)
        self.writer.tell(Commit(events=tuple(events)), ForwardReply(self.context.address, verdicts))

    def _transient_failure(self, flight: _Flight, error: str) -> None:
        self._push_error = error
        self._retrying = True
        self._record_attempt(flight.ids, error)
        state = flight.state  # attempt_number is the attempt that just failed (tenacity starts at 1)
        if self._policy.stop(state):
            logger.warning(
                "Realm push of %d records gave up after %d attempts (%s); retrying in %g s",
                len(flight.ids), state.attempt_number, error, self.settings.retry_later,
            )
            self._flight = None
            self._rest_for(self.settings.retry_later)
            self._answer_waiters(exhausted=True)
            return
        delay = float(self._policy.wait(state))
        state.attempt_number += 1
        self.schedule(delay, _Attempt(flight.cycle, state.attempt_number))

    def _rest_for(self, delay: float) -> None:
        """Push nothing until `delay` has passed (or a sync asks); one wake-up, whatever arrives."""
        self._resting = True
        self._rest += 1
        self.schedule(delay, _Wake(self._rest))

    def _rejected(self, flight: _Flight, error: str) -> None:
        self._push_error = error
        self._flight = None
        if len(flight.ids) > 1:
            # Find the records Realm refuses by sending them one at a time.
            self._singles.extend(flight.ids)
        else:
            self._parked[flight.ids[0]] = error
            self._record_attempt(flight.ids, error)
            logger.warning("Realm refused record %s: %s (parked until `replication sync`)", flight.ids[0], error)
        self._queue_push()

    def _record_attempt(self, ids: Sequence[str], error: str) -> None:
        self.writer.tell(Commit(events=(ReplicationAttempted(at=self.clock.time(), ids=tuple(ids), error=error),)))

    def _verdicts_committed(self, verdicts: _Verdicts, error: BaseException | None) -> None:
        flight = self._flight
        if flight is None or flight.cycle != verdicts.cycle:
            return
        self._flight = None
        if error is not None:
            # Realm's answer is not recorded: the records stay pending and are pushed again.
            logger.error("could not record Realm's verdicts: %s", error)
            self._push_error = f"recording Realm's answer failed: {error}"
            self._rest_for(self.settings.retry_later)
            self._answer_waiters(exhausted=True)
            return
        for record_id in verdicts.ids:
            self._pending.pop(record_id, None)
        self._queue_push()

    # -- invalidations ----------------------------------------------------------------------------

    def _poll(self) -> None:
        if self._client is None or self._poll_busy:
            return
        if not self._paging:
            self._rounds_started += 1
            self._round = self._rounds_started
            self._poll_again = False
        try:
            page = self._client.invalidations(since=self._cursor, limit=DEFAULT_PAGE_LIMIT)
        except (RealmUnavailable, RealmRejected) as error:
            self._poll_error = str(error)
            self._end_round()
            self._schedule_poll(self.settings.poll_interval)
            return
        self._poll_error = ""
        now = self.clock.time()
        with self.store.reader() as reader:
            known = [item for item in page.items if reader.get(RECORDS, item.id) is not None]
        events: list[Any] = [RecordInvalidated(at=now, id=i.id, reason=i.reason, realm_seq=i.seq) for i in known]
        # A full page may have more behind it; a shorter one drained the feed.
        more = len(page.items) >= DEFAULT_PAGE_LIMIT
        if page.cursor > self._cursor:
            events.append(InvalidationCursorAdvanced(at=now, seq=page.cursor))
        if not events:
            self._end_round()
            self._next_round()
            return
        self._poll_busy = True
        self._invalidating = frozenset(item.id for item in known)
        polled = _PollCommitted(self.context.incarnation, page.cursor, more)
        self.writer.tell(Commit(events=tuple(events)), ForwardReply(self.context.address, polled))

    def _poll_committed(self, polled: _PollCommitted, error: BaseException | None) -> None:
        self._poll_busy = False
        self._invalidating = frozenset()
        if error is not None:
            logger.error("could not record invalidations: %s", error)
            self._poll_error = f"recording invalidations failed: {error}"
            self._end_round()
            self._schedule_poll(self.settings.poll_interval)
            return
        self._cursor = max(self._cursor, polled.cursor)
        self._queue_push()  # records it held back are pushed now, if still pending
        if polled.more:
            self._paging = True
            self._schedule_poll(0.0)
            return
        self._end_round()
        self._next_round()

    def _end_round(self) -> None:
        """The current round ended (drained, or failed: `last_error` says so)."""
        self._paging = False
        self._rounds_ended = self._round
        self._answer_waiters()

    def _next_round(self) -> None:
        self._schedule_poll(0.0 if self._poll_again else self.settings.poll_interval)

    def _schedule_poll(self, delay: float) -> None:
        # Only the latest scheduled poll runs: an earlier timer finds its generation stale.
        self._poll_generation += 1
        message = _Poll(self._poll_generation)
        if delay <= 0:
            self.tell_self(message)
        else:
            self.schedule(delay, message)

    # -- sync and status --------------------------------------------------------------------------

    def _sync(self, reply: Reply | None, timeout: float | None) -> None:
        if self._client is None:
            settle_all(((reply, self._counts(), None),))
            return
        self._parked.clear()
        if self._resting:
            self._resting = False
            self._rest += 1  # its scheduled wake-up is stale now
        flight = self._flight
        if flight is not None and not flight.awaiting_commit:
            # The flight waits out a backoff: skip the wait with a new push of the same batch (its
            # own attempts). The pending `_Attempt` names the old push and will be dropped.
            self._cycle += 1
            self._pushes += 1
            flight.cycle = self._cycle
            flight.state = self._fresh_state()
            self.tell_self(_Attempt(flight.cycle, flight.state.attempt_number))
        else:
            self._queue_push()
        # The round that answers this sync must begin after it.
        needed = self._rounds_started + 1
        if self._poll_busy or self._paging:
            self._poll_again = True
        else:
            self._schedule_poll(0.0)
        waiter_id = next(self._waiter_ids)
        waiter = _Waiter(reply, needed, until_exhausted=timeout is None)
        if timeout is not None:
            waiter.deadline = self.schedule(timeout, _SyncDeadline(waiter_id))
        self._waiters[waiter_id] = waiter

    def _answer_waiters(self, *, exhausted: bool = False) -> None:
        if not self._waiters:
            return
        settled = self._flight is None and not self._pending_unparked()
        ready = [
            key
            for key, w in self._waiters.items()
            if (exhausted and w.until_exhausted) or (settled and self._rounds_ended >= w.round)
        ]
        if not ready:
            return
        counts = self._counts()
        answered = [self._waiters.pop(key) for key in ready]
        for waiter in answered:
            if waiter.deadline is not None:
                waiter.deadline.cancel()
        settle_all((w.reply, counts, None) for w in answered if w.reply is not None)

    def _pending_unparked(self) -> bool:
        """Whether any record still waits for a push; forgets those that left `pending` meanwhile
        (an invalidation can reach a record whose acceptance was never written down)."""
        with self.store.reader() as reader:
            for record_id in list(self._pending):
                record = reader.get(RECORDS, record_id)
                if record is None or record.replication != "pending":
                    del self._pending[record_id]
                elif record_id not in self._parked:
                    return True
        return False

    def _counts(self) -> ReplicationCounts:
        counts = {"pending": 0, "synced": 0, "conflict": 0, "invalidated": 0}
        withheld: list[str] = []
        with self.store.reader() as reader:
            for record_id, record in reader.items(RECORDS):
                counts[record.replication] = counts.get(record.replication, 0) + 1
                if record.replication in WITHHELD and record.lifecycle == "active":
                    withheld.append(record_id)
        note = "" if self.realm_url else NO_REALM_NOTE
        return ReplicationCounts(
            counts=counts,
            realm=self.realm_url,
            parked=len(self._parked),
            retrying=self._retrying,
            last_error=self._push_error or self._poll_error,
            note=note,
            pushes=self._pushes,
            requests=self._requests,
            withheld=tuple(withheld),
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
            reason=record.replication_reason or self._parked.get(record_id, ""),
            attempts=status.attempts if status else 0,
            last_error=status.last_error if status else "",
            last_attempt_at=status.last_attempt_at if status else None,
        )
