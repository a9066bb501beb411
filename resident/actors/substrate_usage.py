"""The substrate's usage flushing: recall counts gathered, then written to the store in small commits.

A machine of its own because it shares nothing with the index: it only collects the ids each recall
served and decides when they go to the writer — at once when a batch is full, else a short while
after the first count — so its timing can be checked alone with a `ManualClock`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from resident.supervisor import WakeUp

__all__ = ["USAGE_BATCH", "USAGE_FLUSH_SECONDS", "UsageFlush"]

# Recall counts go to the writer in small, frequent commits: each rewrites the records it counts,
# and a short commit never holds the GIL long enough to delay a recall running beside it.
USAGE_FLUSH_SECONDS = 0.25
USAGE_BATCH = 64


class UsageFlush:
    """Ids served since the last usage commit, once per time served (each counts one recall).

    `wake` brings the actor back to `due()` after `USAGE_FLUSH_SECONDS`; `write` commits a batch
    (best effort: nobody waits for it, and a lost batch only undercounts).
    """

    def __init__(self, wake: WakeUp, write: Callable[[Sequence[str]], None]) -> None:
        self._wake = wake
        self._write = write
        self._recalled: list[str] = []

    def __len__(self) -> int:
        return len(self._recalled)

    def note(self, ids: Iterable[str]) -> None:
        """Count one recall of each of `ids`: written at once when a batch is full, else soon."""
        self._recalled.extend(ids)
        if len(self._recalled) >= USAGE_BATCH:
            self.flush()
        elif self._recalled:
            self._wake.after(USAGE_FLUSH_SECONDS)

    def due(self) -> None:
        """The wake-up arrived: write what was counted since."""
        self._wake.done()
        self.flush()

    def flush(self) -> None:
        """Write every count gathered so far (a stop does, without waiting for the wake-up)."""
        if not self._recalled:
            return
        ids, self._recalled = self._recalled, []
        self._write(ids)
