"""The substrate's waiting recalls: those waiting for their query's vector, and those waiting for the build.

A machine of its own because a waiting recall has a life of its own: it is parked with a deadline,
and it ends exactly once — when its vector comes, when its deadline passes (it is answered from the
keyword index and the vectors indexed, the exact path), or when the actor stops — whatever order
those arrive in. Recalls that came during a build wait for the build instead and are handed back,
in order, once it is done. Each can be driven alone on a `ManualClock`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.clock import Timer
from resident.messages.memory import Principal, Recall
from resident.supervisor import Reply

__all__ = ["QueryDeadline", "Search", "Vector", "WaitingRecall", "WaitingRecalls"]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Search:
    """A recall, checked, with the banks its principal may see."""

    message: Recall
    principal: Principal
    query: str
    k: int
    banks: list[str]


@dataclass(slots=True)
class WaitingRecall:
    """A recall waiting for its query's vector, asked of the embedder `spec`."""

    search: Search
    reply: Reply | None
    spec: str


@dataclass(frozen=True, slots=True)
class QueryDeadline:
    """Recall `token` has waited long enough for its query's vector."""

    token: int


class WaitingRecalls:
    """Recalls parked until their query's vector comes (or their deadline), and recalls parked until the build ends.

    `schedule(delay, message)` tells the actor a `QueryDeadline` after `delay` seconds; `answer`
    searches for a waiting recall with the vector it got (None: by keyword and the indexed vectors)
    and settles its reply.
    """

    def __init__(
        self, schedule: Callable[[float, Any], Timer], answer: Callable[[WaitingRecall, Vector | None], None]
    ) -> None:
        self._schedule = schedule
        self._answer = answer
        self._for_vector: dict[int, tuple[WaitingRecall, Timer]] = {}
        self._for_build: list[tuple[Search, Reply | None]] = []

    def __len__(self) -> int:
        return len(self._for_vector) + len(self._for_build)

    # -- waiting for a query vector ---------------------------------------------------------------

    def wait_for_vector(self, token: int, waiting: WaitingRecall, wait: float) -> None:
        """Park `waiting` until the vector asked for by request `token` comes, or `wait` seconds pass."""
        self._for_vector[token] = (waiting, self._schedule(wait, QueryDeadline(token)))

    def waits(self, token: int) -> bool:
        """Whether request `token` is a recall's query still waiting (else the answer is for someone else)."""
        return token in self._for_vector

    def vector_came(self, token: int, vector: Vector | None) -> None:
        """The worker answered request `token` (None: it failed): the recall is answered now."""
        waiting = self._take(token)
        if waiting is not None:
            self._answer(waiting, vector)

    def due(self, token: int) -> None:
        """The deadline of request `token` passed: a recall still waiting is answered without its vector."""
        self.vector_came(token, None)

    def give_up(self) -> None:
        """The actor stops: every recall still waiting is answered without its vector, in the order it came."""
        for token in list(self._for_vector):
            self.vector_came(token, None)

    def _take(self, token: int) -> WaitingRecall | None:
        entry = self._for_vector.pop(token, None)
        if entry is None:
            return None
        waiting, deadline = entry
        deadline.cancel()
        return waiting

    # -- waiting for the build --------------------------------------------------------------------

    def wait_for_build(self, search: Search, reply: Reply | None) -> None:
        """Park a recall that came during the build until the build is done."""
        self._for_build.append((search, reply))

    def for_build(self) -> bool:
        """Whether some recall waits for the build."""
        return bool(self._for_build)

    def built(self) -> list[tuple[Search, Reply | None]]:
        """The build is done: the recalls that waited for it, in the order they came (none are left parked)."""
        waiting, self._for_build = self._for_build, []
        return waiting

    # -- a crash --------------------------------------------------------------------------------------

    def rescue(self) -> list[tuple[Recall, Reply | None]]:
        """The actor crashed: every parked recall, unanswered, for the next incarnation to take in order
        (those that waited for the build first)."""
        building = [(search.message, reply) for search, reply in self.built()]
        vector = [(waiting.search.message, waiting.reply) for waiting, _ in self._for_vector.values()]
        for _, deadline in self._for_vector.values():
            deadline.cancel()
        self._for_vector.clear()
        return [*building, *vector]
