"""Injectable time: the wall clock, a monotonic clock and scheduled callbacks.

Every time-dependent rule in the runtime (restart windows, backoff, retry schedules, decay) reads
time and schedules future work through a `Clock`, so tests drive them with `ManualClock.advance()`
instead of sleeping. Scheduled callbacks must be short: they run on the clock's timer thread (or,
for `ManualClock`, in the thread that advances it) and are expected to do no more than tell an
actor a message.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock", "Timer"]

logger = logging.getLogger(__name__)


class Timer(Protocol):
    """A scheduled callback that can still be cancelled."""

    def cancel(self) -> None:
        """Prevent the callback from running if it has not run yet."""


class Clock(Protocol):
    """Where the runtime reads time and schedules future work."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; only differences are meaningful."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps stored in records and events)."""

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        """Run `callback` once, `delay` seconds from now."""


class _Entry:
    __slots__ = ("callback", "cancelled", "due", "seq")

    def __init__(self, due: float, seq: int, callback: Callable[[], None]) -> None:
        self.due = due
        self.seq = seq
        self.callback = callback
        self.cancelled = False

    def __lt__(self, other: _Entry) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)

    def cancel(self) -> None:
        self.cancelled = True


def _run_callback(entry: _Entry) -> None:
    try:
        entry.callback()
    except Exception:
        # A failing timer callback must not kill the timer thread that every other timer shares.
        logger.exception("scheduled callback %r failed", entry.callback)


class SystemClock:
    """Real time, with one lazily started daemon thread that runs scheduled callbacks."""

    def __init__(self) -> None:
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        entry = _Entry(time.monotonic() + max(0.0, delay), next(self._seq), callback)
        with self._cond:
            if self._closed:
                entry.cancelled = True
                return entry
            heapq.heappush(self._heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="resident-clock", daemon=True)
                self._thread.start()
            self._cond.notify()
        return entry

    def close(self) -> None:
        """Cancel every pending callback and stop the timer thread."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and (not self._heap or self._heap[0].due > time.monotonic()):
                    timeout = None if not self._heap else self._heap[0].due - time.monotonic()
                    self._cond.wait(timeout=timeout)
                if self._closed:
                    return
                entry = heapq.heappop(self._heap)
            if not entry.cancelled:
                _run_callback(entry)


class ManualClock:
    """A clock that only moves when a test calls `advance()`; due callbacks run inside `advance()`."""

    def __init__(self, start: float = 1_000.0, wall_start: float = 1_780_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start
        self._heap: list[_Entry] = []
        self._seq = itertools.count()
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def time(self) -> float:
        with self._lock:
            return self._now + self._wall_offset

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        with self._lock:
            entry = _Entry(self._now + max(0.0, delay), next(self._seq), callback)
            heapq.heappush(self._heap, entry)
        return entry

    def pending(self) -> int:
        """How many callbacks are scheduled and not cancelled."""
        with self._lock:
            return sum(1 for entry in self._heap if not entry.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward, running every callback that falls due, in due order."""
        with self._lock:
            target = self._now + seconds
        while True:
            with self._lock:
                if not self._heap or self._heap[0].due > target:
                    self._now = target
                    return
                entry = heapq.heappop(self._heap)
                self._now = max(self._now, entry.due)
            if not entry.cancelled:
                _run_callback(entry)
