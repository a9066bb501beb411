"""The pure rules of supervision: the restart-intensity window and backoff delays.

`Backoff` is the one backoff policy of the runtime: the supervisor's restarts, the writer's checks
for room on a full disk, the substrate's retries of a failing embedder and replication's retries of
a push all wait by it, and an actor counts its consecutive failures with `Retries` (replication's
pusher lets tenacity count its attempts instead, and stop them).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Backoff", "RestartWindow", "Retries"]


class RestartWindow:
    """OTP's restart intensity as a sliding window: at most `intensity` restarts in any `period` s.

    A restart is counted *before* the child is started (`admit`), so a child whose start keeps
    failing exhausts the window just as a child that keeps crashing does. A restart that happened
    exactly `period` seconds ago still counts (OTP's `=<`); one older than that no longer does.
    """

    def __init__(self, intensity: int, period: float) -> None:
        if intensity < 0 or period <= 0:
            raise ValueError("restart intensity must be >= 0 and period > 0")
        self.intensity = intensity
        self.period = period
        self._times: deque[float] = deque()

    def _expire(self, now: float) -> None:
        while self._times and now - self._times[0] > self.period:
            self._times.popleft()

    def admit(self, now: float) -> bool:
        """Count a restart at `now`; False when that exceeds the intensity (give up, escalate)."""
        self._expire(now)
        self._times.append(now)
        return len(self._times) <= self.intensity

    def count(self, now: float) -> int:
        """Restarts counted in the window ending at `now`."""
        self._expire(now)
        return len(self._times)

    def clear(self) -> None:
        self._times.clear()


@dataclass(frozen=True, slots=True)
class Backoff:
    """Akka-style backoff: exponential from `min` to `max`, with jitter.

    The `n`-th consecutive failure waits `min * multiplier**(n-1)` capped at `max`, stretched by up
    to `jitter` (a fraction). A supervised child that stayed up for `reset_after` seconds starts
    again from `min`; an actor counting with `Retries` starts again at its first success.
    """

    min: float = 0.05
    max: float = 5.0
    jitter: float = 0.2
    reset_after: float = 30.0
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.min < 0 or self.max < self.min or self.jitter < 0 or self.reset_after < 0 or self.multiplier < 1:
            raise ValueError("backoff needs 0 <= min <= max, jitter >= 0, reset_after >= 0 and multiplier >= 1")

    def delay(self, consecutive: int, random_fraction: float) -> float:
        """Seconds to wait before attempt number `consecutive` (1-based); `random_fraction` in [0, 1)."""
        try:
            grown = self.min * self.multiplier ** max(consecutive - 1, 0)
        except OverflowError:  # a count so long that the power leaves the floats: capped anyway
            grown = math.inf if self.min > 0 else 0.0
        return min(self.max, grown) * (1.0 + self.jitter * random_fraction)


class Retries:
    """Consecutive failures of one recurring attempt, and the wait each earns under a `Backoff`.

    The `n`-th failure in a row waits `policy.delay(n)`; a success starts the count again.
    """

    def __init__(self, policy: Backoff, random_fraction: Callable[[], float] = random.random) -> None:
        self.policy = policy
        self.failures = 0
        self._random_fraction = random_fraction

    def failed(self) -> float:
        """Count a failure; the seconds to wait before the next attempt."""
        self.failures += 1
        return self.policy.delay(self.failures, self._random_fraction())

    def next_wait(self) -> float:
        """The wait the next failure would earn, without counting one (to retry a step after a failure elsewhere)."""
        return self.policy.delay(self.failures + 1, self._random_fraction())

    def succeeded(self) -> None:
        """The attempt worked: the next failure waits `policy.min` again."""
        self.failures = 0
