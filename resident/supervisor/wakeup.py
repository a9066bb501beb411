"""A wake-up: the message an actor sends itself to do recurring work, at most one pending at a time.

Actors batch work by telling themselves to do it soon: the writer flushes once for every write that
arrived meanwhile, the substrate indexes a burst of commits at once, fills vectors a chunk at a
time and writes recall counts every quarter second. Each of those is one `WakeUp`, which is

    idle ──now()──▶ queued (the message is in the inbox) ──┐
      │                                                     ├──done()──▶ idle
      └──after(delay)──▶ armed (a timer delivers it at `due`)┘

Asking again while one is queued or armed does nothing, so however many writes arrive, one flush
is pending. The handler calls `done()` when the message arrives (or when the work ran another way)
so that the next request schedules again. The timer runs on the actor's injectable clock, and an
actor cancels its wake-ups when it stops or crashes, so none outlives its incarnation.

A message may still arrive after `done()` or `cancel()` when it was queued already (the inbox keeps
it); the work it triggers must find nothing to do then, as a flush of an empty buffer does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from resident.clock import Clock, Timer

__all__ = ["WakeUp", "WakeUpState"]

WakeUpState = Literal["idle", "queued", "armed"]


class WakeUp:
    """One recurring message to self: idle, queued in the inbox, or armed to arrive at `due`."""

    def __init__(self, clock: Clock, deliver: Callable[[Any], None], message: Any) -> None:
        self.message = message
        self.state: WakeUpState = "idle"
        # When an armed wake-up is due, on the clock's monotonic time; None unless armed.
        self.due: float | None = None
        self._clock = clock
        self._deliver = deliver
        self._timer: Timer | None = None

    @property
    def pending(self) -> bool:
        """Whether the message is queued or armed (asking again does nothing until `done()`)."""
        return self.state != "idle"

    def now(self) -> bool:
        """Queue the message behind what is in the inbox, unless one is pending; whether it was queued."""
        if self.pending:
            return False
        self.state = "queued"
        self._deliver(self.message)
        return True

    def after(self, delay: float) -> bool:
        """Deliver the message `delay` seconds from now (at once if not positive), unless one is pending."""
        if delay <= 0:
            return self.now()
        if self.pending:
            return False
        self.state = "armed"
        self.due = self._clock.monotonic() + delay
        self._timer = self._clock.call_later(delay, self._fire)
        return True

    def done(self) -> None:
        """The work this wake-up asks for ran (its message arrived, or it ran anyway): idle again.

        A timer still pending (the work ran before it was due) is cancelled.
        """
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self.state = "idle"
        self.due = None

    def cancel(self) -> None:
        """Drop a pending wake-up: its actor is stopping (a message already queued stays in the inbox)."""
        self.done()

    def _fire(self) -> None:
        self._deliver(self.message)
