"""The clocks a write benchmark reads: wall time and the process's CPU time, from one start."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

__all__ = ["Stopwatch", "thread_cpu"]

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_INCARNATION = re.compile(r"-\d+$")


def thread_cpu() -> dict[str, float]:
    """CPU seconds so far of each live thread of this process, summed by name (`StoreWriter-3` is
    `StoreWriter`), from /proc (Linux; empty elsewhere). Threads that have ended are not in it."""
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return {}
    names = {thread.native_id: _INCARNATION.sub("", thread.name) for thread in threading.enumerate()}
    cpu: dict[str, float] = {}
    for task in tasks.iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the thread ended meanwhile
        # After the command name: state is field 3 of stat, so utime (14) and stime (15) are 11 and 12 here.
        name = names.get(int(task.name), "other")
        cpu[name] = cpu.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / _TICK
    return cpu


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
