"""The store writer: the single owner of LMDB write transactions, committing in groups.

Every durable write in the runtime is a `Commit` told to this actor with the caller's reply
slot. The writer buffers it and, if no flush is queued, queues one behind it; by the time the
flush runs, every write that arrived meanwhile is in the buffer, so one fsync serves them all.
Under load each commit carries whatever arrived during the previous one. Only after the
transaction is durable are the replies settled, together (one hand-off per waiting event loop),
and the applied events published to subscribers (e.g. replication hears of new records).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from resident.errors import ActorUnavailable
from resident.messages.store import Commit, GetWriterStatistics, Published, WriterStatistics
from resident.store.store import Store
from resident.supervisor import Address, ChildContext, Reply, SupervisedActor, settle_all

__all__ = ["StoreWriter"]


@dataclass(frozen=True, slots=True)
class _Flush:
    """Commit whatever is buffered (told by the writer to itself)."""


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

    def handle(self, message: Any) -> Any:
        if isinstance(message, Commit):
            self._pending.append((message, self.defer()))
            if not self._flush_queued:
                self._flush_queued = True
                self.tell_self(_Flush())
            return None
        if isinstance(message, _Flush):
            self._flush()
            return None
        if isinstance(message, GetWriterStatistics):
            return WriterStatistics(
                commits=self._commits,
                writes=self._writes,
                refused=self._refused,
                failed_commits=self.store.failed_transactions,
                largest_commit=self._largest,
            )
        return super().handle(message)

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
        if self.subscribers:
            self._publish([event for _, _, applied in outcomes for event in applied])

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
