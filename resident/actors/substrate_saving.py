"""The substrate's snapshot saving: when the recall index is persisted again, and one save at a time.

A machine of its own because its rule is about counts and turns, not about the index: a save is
due after a build, once `SNAPSHOT_EVERY` records were added since the last one, and at a stop
when anything is unsaved (or the vector graph grew on its own thread since); a save asked for
while one runs on the I/O thread follows it; and a failed write keeps its records counted as
unsaved. The actor takes the copy and writes it (`resident.actors.index_snapshot`); this class
says when, and keeps the counts.
"""

from __future__ import annotations

from resident.supervisor import WakeUp

__all__ = ["SNAPSHOT_EVERY", "SnapshotSaves"]

# The index is persisted again once this many records were added since it last was (besides after
# a build and at a stop), so that a restart replays at most about that many records' events.
SNAPSHOT_EVERY = 50_000


class SnapshotSaves:
    """How many records were added since the last save, whether a save is running, and whether another is owed.

    `wake` brings the actor back to save (`due()`).
    """

    def __init__(self, wake: WakeUp) -> None:
        self._wake = wake
        self.unsaved = 0
        # Rows the vector graph held in the last snapshot saved or loaded: the graph grows on its own thread
        # after the records arrived, so a close saves again when it grew even if no record came since.
        self._graph_rows = 0
        self._saving = False
        self._again = False

    def wanted(self) -> None:
        """Save soon (a build finished)."""
        self._wake.now()

    def added(self, records: int) -> None:
        """`records` were added to the index: a save is due once enough have been since the last."""
        self.unsaved += records
        if self.unsaved >= SNAPSHOT_EVERY:
            self._wake.now()

    def replayed(self, records: int) -> None:
        """`records` were indexed by replaying the log after a load: unsaved, but no reason to save at once."""
        self.unsaved += records

    def loaded(self, graph_rows: int) -> None:
        """A snapshot was loaded: its graph held `graph_rows` rows."""
        self._graph_rows = graph_rows

    def due(self) -> None:
        """The wake-up arrived (the actor saves now, if it may)."""
        self._wake.done()

    def may_start(self) -> bool:
        """Whether a save may start now: not while one runs (another then follows it)."""
        if self._saving:
            self._again = True
            return False
        return True

    def started(self, graph_rows: int) -> int:
        """A save started from a copy holding `graph_rows` graph rows; how many added records it covers."""
        self._saving = True
        self._graph_rows = graph_rows
        return self.unsaved

    def finished(self, covered: int, *, written: bool) -> None:
        """The save that covered `covered` added records ended (`written` or not); one owed meanwhile is due now."""
        self._saving = False
        if written:
            self.unsaved = max(0, self.unsaved - covered)
        if self._again:
            self._again = False
            self._wake.now()

    def wanted_at_close(self, graph_rows: int) -> bool:
        """Whether the stop must save: records unsaved, a save running or owed, or a graph grown to `graph_rows`."""
        return bool(self.unsaved or self._saving or self._again or graph_rows > self._graph_rows)
