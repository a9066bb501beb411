"""The pure rules of supervision: the restart-intensity window and backoff delays."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

__all__ = ["Backoff", "RestartWindow"]


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
    """Akka-style restart backoff for one child: exponential from `min` to `max`, with jitter.

    The `n`-th consecutive restart waits `min * 2**(n-1)` capped at `max`, stretched by up to
    `jitter` (a fraction). A child that stayed up for `reset_after` seconds starts again from `min`.
    """

    min: float = 0.05
    max: float = 5.0
    jitter: float = 0.2
    reset_after: float = 30.0

    def __post_init__(self) -> None:
        if self.min < 0 or self.max < self.min or self.jitter < 0 or self.reset_after < 0:
            raise ValueError("backoff needs 0 <= min <= max, jitter >= 0 and reset_after >= 0")

    def delay(self, consecutive: int, random_fraction: float) -> float:
        """Seconds to wait before restart number `consecutive` (1-based); `random_fraction` in [0, 1)."""
        exponent = min(max(consecutive - 1, 0), 62)
        base = min(self.max, self.min * (2.0**exponent))
        return base * (1.0 + self.jitter * random_fraction)
