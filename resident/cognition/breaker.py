"""The bridge's circuit breaker, on the injectable clock: after `threshold` failures in a row the bridge is not
asked for `cooldown` seconds (recall answers from the runtime alone); then one call is let through (half open),
and its outcome closes the breaker or opens it again.

Not thread-safe on its own: the bridge holds it under its lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["BreakerState", "CircuitBreaker"]

BreakerState = Literal["closed", "open", "half_open"]


@dataclass
class CircuitBreaker:
    threshold: int = 3
    cooldown: float = 30.0
    failures: int = 0
    opened_at: float | None = None
    # While half open, whether the one trial call is out.
    trial_out: bool = False

    def state(self, now: float) -> BreakerState:
        if self.opened_at is None:
            return "closed"
        return "half_open" if now - self.opened_at >= self.cooldown else "open"

    def allow(self, now: float) -> bool:
        """Whether a call may go to the service now (a half-open breaker lets one trial through)."""
        match self.state(now):
            case "closed":
                return True
            case "open":
                return False
            case "half_open":
                if self.trial_out:
                    return False
                self.trial_out = True
                return True

    def succeeded(self) -> None:
        self.failures, self.opened_at, self.trial_out = 0, None, False

    def failed(self, now: float) -> None:
        self.failures += 1
        self.trial_out = False
        if self.opened_at is not None or self.failures >= self.threshold:
            self.opened_at = now
