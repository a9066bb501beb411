"""The store writer: the single owner of LMDB write transactions, committing in groups.

Every durable write in the runtime is a `Commit` told to this actor with the caller's reply
slot. The writer buffers it and, if no flush is queued, queues one behind it; by the time the
flush runs, every write that arrived meanwhile is in the buffer, so one fsync serves them all.
Under load each commit carries whatever arrived during the previous one. Only after the
transaction is durable are the replies settled, together (one hand-off per waiting event loop),
and the applied events published to subscribers (e.g. replication hears of new records).

When a commit fails for want of room (`DiskFull`, `MapFull`), the writer stops trying: it
answers every write at once with the same refusal, and its statistics show it `degraded` with
the reason. A probe, scheduled on the clock with exponential backoff, asks the store whether a
write of the refused size fits now; once it does the writer takes writes again by itself. A
write that still does not fit starts the refusal over with the next, longer delay. Nothing is
held back meanwhile: a refused write was not committed, and its caller hears so.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resident.errors import ActorUnavailable, DiskFull, MapFull
from resident.messages.store import Commit, GetWriterStatistics, Published, WriterStatistics
from resident.store.store import Outcome, Store
from resident.supervisor import Address, Backoff, ChildContext, Reply, SupervisedActor, settle_all

__all__ = ["ROOM_BACKOFF", "StoreWriter"]

# How long a writer that ran out of room waits before it checks again: from a tenth of a second
# (space freed by a user shows up quickly) to half a minute (a full disk costs one statvfs then).
ROOM_BACKOFF = Backoff(min=0.1, max=30.0, jitter=0.2)


@dataclass(frozen=True, slots=True)
class _Flush:
    """Commit whatever is buffered (told by the writer to itself)."""


@dataclass(frozen=True, slots=True)
class _CheckRoom:
    """Time to ask the store whether a refused write fits now (scheduled by the writer)."""

    token: int


class StoreWriter(SupervisedActor):
    """Commits queued writes in one durable transaction each, then answers them all."""

    def __init__(
        self,
        context: ChildContext,
        store: Store,
        subscribers: Mapping[type, Sequence[Address]] | None = None,
    ) -> None:
        super().__init__(context)
        self.store = store
        self.subscribers = dict(subscribers or {})
        self._pending: list[tuple[Commit, Reply | None]] = []
        self._flush_queued = False
        self._commits = 0
        self._writes = 0
        self._refused = 0
        self._largest = 0
        # While out of room: the refusal every write gets, and how many checks in a row found none.
        self._no_room: DiskFull | MapFull | None = None
        self._checks = 0
        self._token = 0
        self._random = random.Random()

    def handle(self, message: Any) -> Any:
        match message:
            case Commit():
                return self._queue(message)
            case _Flush():
                self._flush()
            case _CheckRoom(token=token):
                self._check_room(token)
            case GetWriterStatistics():
                return self._statistics()
            case _:
                return super().handle(message)
        return None

    def _queue(self, write: Commit) -> None:
        reply = self.defer()
        if self._no_room is not None:
            # Settled rather than raised: a write told without a reply (recall counts, terms) is
            # dropped like any refused one, and must not crash the writer out of its refusal.
            self._refused += 1
            if reply is not None:
                settle_all([(reply, None, _again(self._no_room))])
            return
        self._pending.append((write, reply))
        if not self._flush_queued:
            self._flush_queued = True
            self.tell_self(_Flush())

    def _statistics(self) -> WriterStatistics:
        return WriterStatistics(
            commits=self._commits,
            writes=self._writes,
            refused=self._refused,
            failed_commits=self.store.failed_transactions,
            largest_commit=self._largest,
            state="running" if self._no_room is None else "refusing",
            refusal=self._no_room.message if self._no_room is not None else "",
        )

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        self._flush_queued = False
        if not batch:
            return
        try:
            outcomes = self.store.commit([write for write, _ in batch])
        except BaseException as error:
            # `commit` turns every Exception into outcomes, so this is an interrupt or an exit: the
            # actor dies of it, and its callers hear so now instead of waiting for their timeouts.
            failure = ActorUnavailable(
                f"{self.name} died while committing ({type(error).__name__}); the write may not be "
                "durable — read it back before retrying"
            )
            settle_all((reply, None, failure) for _, reply in batch if reply is not None)
            raise
        settle_all(
            (reply, committed, error)
            for (_, reply), (committed, error, _) in zip(batch, outcomes, strict=True)
            if reply is not None
        )
        self._commits += 1
        self._writes += len(batch)
        self._largest = max(self._largest, len(batch))
        self._refused += sum(1 for _, error, _ in outcomes if error is not None)
        self._note_room(outcomes)
        if self.subscribers:
            self._publish([event for _, _, applied in outcomes for event in applied])

    # -- out of room ------------------------------------------------------------------------------

    def _note_room(self, outcomes: list[Outcome]) -> None:
        """Start refusing after a batch that did not fit; a batch that committed resets the backoff."""
        error = outcomes[0][1]
        if isinstance(error, DiskFull | MapFull):
            self._refuse(error)
        elif self._checks and any(committed is not None for committed, _, _ in outcomes):
            self._checks = 0

    def _refuse(self, error: DiskFull | MapFull) -> None:
        self._no_room = error
        self._checks += 1
        self.set_condition(f"refusing writes: {type(error).__name__}: {error.message}")
        self._token += 1
        self.schedule(ROOM_BACKOFF.delay(self._checks, self._random.random()), _CheckRoom(self._token))

    def _check_room(self, token: int) -> None:
        refusal = self._no_room
        if refusal is None or token != self._token:
            return  # a check that a later refusal replaced
        if not self.store.has_room(refusal.needed):
            self._refuse(refusal)
            return
        # The next write is tried for real; if it still does not fit, the refusal starts over with
        # a longer delay, and a write that commits resets the delay.
        self._no_room = None
        self.set_condition("")

    def _publish(self, events: list[Any]) -> None:
        if not events or not self.subscribers:
            return
        per_target: dict[Address, list[Any]] = defaultdict(list)
        for event in events:
            for target in self.subscribers.get(type(event), ()):
                per_target[target].append(event)
        for target, batch in per_target.items():
            target.tell(Published(events=tuple(batch)))

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        # Buffered writes were never committed: hand them to the next incarnation, in order.
        pending, self._pending = self._pending, []
        self.context.address.rescue(pending)


def _again(refusal: DiskFull | MapFull) -> DiskFull | MapFull:
    """A fresh copy of `refusal` for one more caller (an exception instance is not shared between threads)."""
    return type(refusal)(refusal.message, needed=refusal.needed)
