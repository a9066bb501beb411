"""The substrate's waiting recalls: those waiting for their query's vector, and those waiting for the build.

A machine of its own because a waiting recall has a life of its own: it is parked with a deadline,
and it ends exactly once — when its vector comes, when its deadline passes (it is answered from the
keyword index and the vectors indexed, the exact path), or when the actor stops — whatever order
those arrive in. Recalls that came during a build wait for the build instead and are handed back,
in order, once it is done; one that would wait longer than `BUILD_WAIT` is refused at that deadline
instead (`MemoryIndexing`, "recall again in a minute"), like a knowledge search during its build: a home
of a million memories without a usable persisted index takes 35-70 s to build here, longer than a
caller's default 30 s, and a clear refusal beats a timeout. Each can be driven alone on a `ManualClock`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from resident.clock import Timer
from resident.messages.memory import Principal, Recall
from resident.supervisor import Reply

__all__ = ["BUILD_WAIT", "BuildDeadline", "QueryDeadline", "Search", "Vector", "WaitingRecall", "WaitingRecalls"]

Vector = npt.NDArray[np.float32]

# How long a recall waits for a build from the store before it is refused as `MemoryIndexing`: a
# home of some 300,000 memories builds within it on this machine, so only larger ones refuse.
BUILD_WAIT = 10.0


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


@dataclass(frozen=True, slots=True)
class BuildDeadline:
    """Recall `token`, parked for the build, has waited `BUILD_WAIT`."""

    token: int


class WaitingRecalls:
    """Recalls parked until their query's vector comes (or their deadline), and recalls parked until the build ends.

    `schedule(delay, message)` tells the actor a `QueryDeadline` or `BuildDeadline` after `delay`
    seconds; `answer` searches for a waiting recall with the vector it got (None: by keyword and the
    indexed vectors) and settles its reply.
    """

    def __init__(
        self, schedule: Callable[[float, Any], Timer], answer: Callable[[WaitingRecall, Vector | None], None]
    ) -> None:
        self._schedule = schedule
        self._answer = answer
        self._for_vector: dict[int, tuple[WaitingRecall, Timer]] = {}
        # In the order they came (a dict keeps it), each with its deadline.
        self._for_build: dict[int, tuple[Search, Reply | None, Timer]] = {}
        self._build_tokens = itertools.count(1)

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

    def wait_for_build(self, search: Search, reply: Reply | None, wait: float | None = None) -> None:
        """Park a recall that came during the build until the build is done, or `wait` seconds pass
        (`BUILD_WAIT` unless given)."""
        token = next(self._build_tokens)
        delay = BUILD_WAIT if wait is None else wait
        self._for_build[token] = (search, reply, self._schedule(delay, BuildDeadline(token)))

    def for_build(self) -> bool:
        """Whether some recall waits for the build."""
        return bool(self._for_build)

    def built(self) -> list[tuple[Search, Reply | None]]:
        """The build is done: the recalls that waited for it, in the order they came (none are left parked)."""
        waiting, self._for_build = self._for_build, {}
        for _, _, deadline in waiting.values():
            deadline.cancel()
        return [(search, reply) for search, reply, _ in waiting.values()]

    def build_due(self, token: int) -> tuple[Search, Reply | None] | None:
        """The deadline of build waiter `token` passed: the recall to refuse (None: answered already)."""
        entry = self._for_build.pop(token, None)
        return None if entry is None else (entry[0], entry[1])

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
