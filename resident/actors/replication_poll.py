"""The invalidation poller: where replication is in Realm's invalidation feed, round by round.

A round reads pages of the feed until it is drained, committing each page's invalidations (and
the advanced cursor, in the same transaction) before reading the next:

    idle ──begin──▶ polling ──page──▶ committing ──committed, more──▶ polling
                       │                  │
                       └──failed──────────┴──committed, drained──▶ idle (round ended)

Rounds are numbered, so a sync can wait for one that began after it. While a page's
invalidations are being committed, their records are kept out of pushes (they will not be
pending for long). This object holds state; the actor does the I/O and the scheduling.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["PollPhase", "Poller"]

PollPhase = Literal["idle", "polling", "committing"]


class Poller:
    """Polling state: the cursor, the phase, and which rounds have begun and ended."""

    def __init__(self, cursor: int) -> None:
        self.cursor = cursor
        self.phase: PollPhase = "idle"
        self.rounds_started = 0
        self.rounds_ended = 0
        self._round = 0
        self._paging = False
        self.again = False
        self.error = ""
        self.invalidating: frozenset[str] = frozenset()

    def begin(self) -> None:
        """A page request goes out (the first of a new round unless the round is paging)."""
        if not self._paging:
            self.rounds_started += 1
            self._round = self.rounds_started
            self.again = False
        self.phase = "polling"

    def failed(self, error: str) -> None:
        self.error = error
        self.invalidating = frozenset()
        self._end_round()

    def page(self, ids: frozenset[str]) -> None:
        """A page arrived with invalidations of these local records; they are being committed."""
        self.error = ""
        self.phase = "committing"
        self.invalidating = ids

    def committed(self, cursor: int, more: bool) -> None:
        self.cursor = max(self.cursor, cursor)
        self.invalidating = frozenset()
        if more:
            self._paging = True
            self.phase = "idle"
        else:
            self._end_round()

    def drained(self) -> None:
        """A page with nothing to commit: the round is over."""
        self.error = ""
        self._end_round()

    def wants_round_after(self) -> int:
        """The number of a round that begins after now; asks for one soon if a round is running."""
        if self.phase != "idle" or self._paging:
            self.again = True
        return self.rounds_started + 1

    @property
    def busy(self) -> bool:
        return self.phase != "idle" or self._paging

    def _end_round(self) -> None:
        self._paging = False
        self.phase = "idle"
        self.rounds_ended = self._round
