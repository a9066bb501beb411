"""The substrate's vector filling: which records' vectors are being made or written, and the worker request out.

A machine of its own because it runs on its own schedule beside indexing and recall: one request
at a time to the embedding worker, a deadline for each (a worker that died never answers), and
after a failure a wait that grows by `EMBEDDER_BACKOFF` (`substrate_embedder.EmbedderState.failed`
says how long; this machine arms its wake-up for it). The actor does the reading and writing; this
class says when the next chunk is due and which records it must leave out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from resident.actors.substrate_embedder import FILL_DEADLINE
from resident.clock import Timer
from resident.supervisor import WakeUp

__all__ = ["FILL_DEADLINE_PER_TEXT", "FillDeadline", "VectorFilling"]

# A fill request is given up after `FILL_DEADLINE` and this long for each text it carries.
FILL_DEADLINE_PER_TEXT = 2.0


@dataclass(frozen=True, slots=True)
class FillDeadline:
    """The worker has had fill request `token` for too long."""

    token: int


class VectorFilling:
    """The fill in progress, and when the next chunk is due.

    `wake` brings the actor back to `due()`; `schedule(delay, message)` tells the actor a
    `FillDeadline` after `delay` seconds.
    """

    def __init__(self, wake: WakeUp, schedule: Callable[[float, Any], Timer]) -> None:
        self._wake = wake
        self._schedule = schedule
        # Records whose vectors are being made or written: the next chunk leaves them out.
        self.in_progress: set[str] = set()
        # The worker request out now: its token, and the ids it embeds (none for a probe).
        self.token: int | None = None
        self.ids: tuple[str, ...] = ()
        self._deadline: Timer | None = None

    def soon(self, delay: float = 0.0) -> None:
        """Ask for the next chunk `delay` seconds from now (unless a turn is already pending)."""
        self._wake.after(delay)

    def due(self) -> bool:
        """The wake-up arrived: whether a chunk may be asked for now (not while a request is out)."""
        self._wake.done()
        return self.token is None

    def asked(self, token: int, ids: tuple[str, ...], texts: int) -> None:
        """Request `token` for the vectors of `ids` (`texts` texts) went to the worker; it has a deadline."""
        self.token, self.ids = token, ids
        self.in_progress.update(ids)
        self._deadline = self._schedule(FILL_DEADLINE + FILL_DEADLINE_PER_TEXT * texts, FillDeadline(token))

    def asks(self, token: int) -> bool:
        """Whether `token` is the request out now (an answer or deadline for an older one is stale)."""
        return self.token is not None and token == self.token

    def answered(self) -> tuple[str, ...]:
        """The request out was answered: the ids it embedded (the next chunk may be asked for)."""
        ids = self.ids
        self.forget_request()
        return ids

    def failed(self, wait: float) -> None:
        """The request out (or the embedder) failed: try again after `wait` seconds."""
        self.forget_request()
        self.soon(wait)

    def writing(self, ids: Iterable[str]) -> None:
        """The vectors of `ids` are on their way to the store."""
        self.in_progress.update(ids)

    def written(self, ids: Iterable[str]) -> None:
        """The write of `ids`'s vectors finished (or failed): they may be filled again if still missing."""
        self.in_progress.difference_update(ids)

    def forget_request(self) -> None:
        """Drop the request out (answered, failed, or for an embedder switched away from)."""
        self.in_progress.difference_update(self.ids)
        self.token, self.ids = None, ()
        deadline, self._deadline = self._deadline, None
        if deadline is not None:
            deadline.cancel()

    def restart(self) -> None:
        """A build from the store starts over: nothing counts as in progress for its new index."""
        self.in_progress.clear()
