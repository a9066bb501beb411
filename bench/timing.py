"""The clocks a write benchmark reads: wall time and the process's CPU time, from one start."""

from __future__ import annotations

import time

__all__ = ["Stopwatch"]


class Stopwatch:
    """Started when made; `stop()` gives wall seconds and CPU seconds (every thread of this process).

    CPU per write is the figure that fsync's swings on a shared disk hardly move, so every write
    configuration reads both clocks over exactly the same span.
    """

    def __init__(self) -> None:
        self._cpu_started = time.process_time()
        self.started = time.perf_counter()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.started, time.process_time() - self._cpu_started
