"""The syncs waiting on replication, and when each is answered.

A sync is answered once nothing is pending (parked records aside) and a polling round that began
after it has ended; or, without a timeout, as soon as a push runs out of attempts; or when its
timeout passes, with the counts as they are. A crash or stop releases every waiter at once.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from resident.clock import Timer
from resident.supervisor import Reply

__all__ = ["Waiter", "WaiterSet"]


@dataclass
class Waiter:
    reply: Reply | None
    round: int
    until_exhausted: bool
    deadline: Timer | None = None


class WaiterSet:
    """Waiting syncs by number; `ready()` takes out those whose condition holds."""

    def __init__(self) -> None:
        self._waiters: dict[int, Waiter] = {}
        self._numbers = itertools.count(1)

    def __bool__(self) -> bool:
        return bool(self._waiters)

    def add(self, waiter: Waiter) -> int:
        number = next(self._numbers)
        self._waiters[number] = waiter
        return number

    def take(self, number: int) -> Waiter | None:
        """The waiter numbered `number`, removed (None if it was answered already)."""
        waiter = self._waiters.pop(number, None)
        if waiter is not None and waiter.deadline is not None:
            waiter.deadline.cancel()
        return waiter

    def ready(self, *, settled: bool, rounds_ended: int, exhausted: bool) -> list[Waiter]:
        """The waiters answered now, removed: all settled after their round, or waiting for exhaustion."""
        numbers = [
            number
            for number, waiter in self._waiters.items()
            if (exhausted and waiter.until_exhausted) or (settled and rounds_ended >= waiter.round)
        ]
        return [waiter for number in numbers if (waiter := self.take(number)) is not None]

    def release(self) -> list[Waiter]:
        """Every waiter, removed (the actor is going away)."""
        return [waiter for number in list(self._waiters) if (waiter := self.take(number)) is not None]
