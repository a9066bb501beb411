"""The store writer: the single owner of LMDB write transactions, committing in groups.

Every durable write in the runtime is a `Commit` told to this actor with the caller's reply
slot. The writer buffers it and, if no flush is queued, queues one behind it; by the time the
flush runs, every write that arrived meanwhile is in the buffer, so one fsync serves them all.
Under load each commit carries whatever arrived during the previous one. Only after the
transaction is durable are the applied events published to subscribers (the substrate indexes new
records, replication pushes them), and then the replies settled, together (one hand-off per
waiting event loop). A write may carry the answer its caller gets (a remember's receipt); the
caller then hears from the writer itself, with no stage in between.

A write of derived entries alone (no event) told without a reply (nobody waits for it: the
substrate's stored terms and hash vectors) does not start a commit of its own at once: it waits up
to `UNWAITED_DELAY` for a write somebody waits for and shares that commit. A single caller's
remember then costs one fsync, not two (its record, and the derived entries of the one before, in
one transaction). Asking for the writer's statistics, and stopping it, commit everything buffered.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resident.errors import ActorUnavailable, DiskFull, MapFull
from resident.messages.store import Commit, CommitEach, Committed, GetWriterStatistics, Published, WriterStatistics
from resident.store.store import Outcome, Store
from resident.supervisor import (
    Address,
    Backoff,
    ChildContext,
    Reply,
    Retries,
    SupervisedActor,
    flush_outbox,
    settle_all,
)

__all__ = ["ROOM_BACKOFF", "UNWAITED_DELAY", "StoreWriter"]

# How long a writer that ran out of room waits before it checks again: from a tenth of a second
# (space freed by a user shows up quickly) to half a minute (a full disk costs one statvfs then).
ROOM_BACKOFF = Backoff(min=0.1, max=30.0, jitter=0.2)
# How long derived entries nobody waits for (the substrate's stored terms and vectors) may wait for
# a write somebody does, to share its commit and fsync, before they are committed alone.
UNWAITED_DELAY = 0.05


@dataclass(frozen=True, slots=True)
class _Flush:
    """Commit whatever is buffered (told by the writer to itself)."""


@dataclass(frozen=True, slots=True)
class _FlushLater:
    """The delay given to writes nobody waits for is over: commit them (scheduled by the writer)."""


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
        *,
        unwaited_delay: float = UNWAITED_DELAY,
    ) -> None:
        super().__init__(context)
        self.store = store
        self.unwaited_delay = unwaited_delay
        self.subscribers = dict(subscribers or {})
        self._pending: list[tuple[Commit | CommitEach, Reply | None]] = []
        self._flush_soon = self.wake_up(_Flush())
        self._flush_later = self.wake_up(_FlushLater())
        self._commits = 0
        self._writes = 0
        self._refused = 0
        self._largest = 0
        # While out of room: the refusal every write gets, and the checks in a row that found none.
        self._no_room: DiskFull | MapFull | None = None
        self._room_checks = Retries(ROOM_BACKOFF, random.Random().random)
        self._token = 0

    def handle(self, message: Any) -> Any:
        match message:
            case Commit() | CommitEach():
                return self._queue(message)
            case _Flush():
                self._flush()
            case _FlushLater():
                self._flush_later.done()
                self._flush()
            case _CheckRoom(token=token):
                self._check_room(token)
            case GetWriterStatistics():
                # Answered once whatever was queued before it is committed: a caller that waits for
                # the statistics has waited for every write sent before its question.
                self._flush()
                return self._statistics()
            case _:
                return super().handle(message)
        return None

    def _queue(self, message: Commit | CommitEach) -> None:
        reply = self.defer()
        if self._no_room is not None:
            # Settled rather than raised: a write told without a reply (recall counts, terms) is
            # dropped like any refused one, and must not crash the writer out of its refusal.
            refusal = self._no_room
            writes = _writes_of(message)
            self._refused += len(writes)
            if reply is not None:
                answer = [_again(refusal) for _ in writes] if isinstance(message, CommitEach) else None
                settle_all([(reply, answer, None if answer is not None else _again(refusal))])
            return
        self._pending.append((message, reply))
        if self._flush_soon.pending:
            return
        if reply is not None or not isinstance(message, Commit) or message.events:
            self._flush_soon.now()
        else:
            # Derived entries nobody waits for (no event: they change no state anyone reads): they
            # ride with the next write somebody does wait for (a caller's remember is usually right
            # behind the derived entries of the one before), and are committed alone only if none
            # comes soon. One fsync then serves both.
            self._flush_later.after(self.unwaited_delay)

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
        self._flush_soon.done()
        if not batch:
            return
        writes = [write for message, _ in batch for write in _writes_of(message)]
        try:
            outcomes = self.store.commit(writes)
        except BaseException as error:
            # `commit` turns every Exception into outcomes, so this is an interrupt or an exit: the
            # actor dies of it, and its callers hear so now instead of waiting for their timeouts.
            failure = ActorUnavailable(
                f"{self.name} died while committing ({type(error).__name__}); the write may not be "
                "durable — read it back before retrying"
            )
            settle_all((reply, None, failure) for _, reply in batch if reply is not None)
            raise
        # Subscribers hear of the changes before any caller does: a caller that was answered and
        # asks the substrate next finds the substrate told already (it indexes before it reads).
        if self.subscribers:
            stored_terms = frozenset(
                key
                for write, (_, error, _) in zip(writes, outcomes, strict=True)
                if error is None
                for key, _ in write.terms
            )
            last_seq = max(
                (value.last_seq for value, _, _ in outcomes if isinstance(value, Committed) and value.last_seq),
                default=0,
            )
            self._publish([event for _, _, applied in outcomes for event in applied], stored_terms, last_seq)
            flush_outbox()
        settle_all(_settlements(batch, outcomes))
        self._commits += 1
        self._writes += len(writes)
        self._largest = max(self._largest, len(writes))
        self._refused += sum(1 for _, error, _ in outcomes if error is not None)
        self._note_room(outcomes, waited=any(reply is not None for _, reply in batch))

    # -- out of room ------------------------------------------------------------------------------

    def _note_room(self, outcomes: list[Outcome], *, waited: bool) -> None:
        """Start refusing after a batch that did not fit; a batch that committed resets the backoff.

        A batch of best-effort writes alone (derived entries, usage counts: nobody waits for them)
        that did not fit is dropped without refusing what comes next: a small write a caller waits
        for may still fit in the store's free pages, and is tried for real.
        """
        error = outcomes[0][1]
        if isinstance(error, DiskFull | MapFull):
            if waited:
                self._refuse(error)
        elif self._room_checks.failures and any(committed is not None for committed, _, _ in outcomes):
            self._room_checks.succeeded()

    def _refuse(self, error: DiskFull | MapFull) -> None:
        self._no_room = error
        self.set_condition(f"refusing writes: {type(error).__name__}: {error.message}")
        self._token += 1
        self.schedule(self._room_checks.failed(), _CheckRoom(self._token))

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

    def _publish(self, events: list[Any], stored_terms: frozenset[str], last_seq: int) -> None:
        if not events:
            return
        per_target: dict[Address, list[Any]] = defaultdict(list)
        for event in events:
            for target in self.subscribers.get(type(event), ()):
                per_target[target].append(event)
        for target, batch in per_target.items():
            target.tell(Published(events=tuple(batch), stored_terms=stored_terms, last_seq=last_seq))

    def teardown(self) -> None:
        # Writes told before the stop (the substrate's last derived entries, a final usage count)
        # are committed rather than dropped: the flush they queued would come after the stop.
        self._flush()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        # Buffered writes were never committed: hand them to the next incarnation, in order.
        pending, self._pending = self._pending, []
        self.context.address.rescue(pending)


def _writes_of(message: Commit | CommitEach) -> tuple[Commit, ...]:
    return message.writes if isinstance(message, CommitEach) else (message,)


def _answer(write: Commit, outcome: Outcome) -> Any:
    """What a write's caller gets: the refusal, else the write's own answer, else its `Committed`."""
    committed, error, _ = outcome
    if error is not None:
        return error
    return committed if write.answer is None else write.answer


def _settlements(batch: list[tuple[Commit | CommitEach, Reply | None]], outcomes: list[Outcome]) -> Iterator[Any]:
    """The replies of a committed batch: one per `Commit`, one list of answers per `CommitEach`."""
    at = 0
    for message, reply in batch:
        writes = _writes_of(message)
        mine = outcomes[at : at + len(writes)]
        at += len(writes)
        if reply is None:
            continue
        if isinstance(message, CommitEach):
            yield reply, [_answer(write, outcome) for write, outcome in zip(writes, mine, strict=True)], None
            continue
        error = mine[0][1]
        yield reply, None if error is not None else _answer(message, mine[0]), error


def _again(refusal: DiskFull | MapFull) -> DiskFull | MapFull:
    """A fresh copy of `refusal` for one more caller (an exception instance is not shared between threads)."""
    return type(refusal)(refusal.message, needed=refusal.needed)
