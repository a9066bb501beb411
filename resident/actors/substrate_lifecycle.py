"""The substrate's index lifecycle: which recall index is current, how it came to be, and its build a chunk per turn.

A machine of its own because an index has a life apart from the records flowing into it: it is
built from the store a chunk per turn (`resident.actors.index_build`) or resumed from a snapshot
(`resident.actors.index_snapshot`) whose files are checked `VERIFY_AFTER` seconds later; each build
or load is a new generation, so a check that answers for an index since replaced is ignored; and
an index replaced or left behind has its graph thread stopped. The actor wires the rest (storing
the terms a chunk analysed, replaying the log after a load, saving); this class holds which index,
which generation and how far its build has gone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from resident.actors.index_build import IndexBuild, Unstored
from resident.actors.index_snapshot import Snapshot
from resident.clock import Timer
from resident.memory.index import RecallIndex
from resident.store.store import Store
from resident.supervisor import WakeUp

__all__ = ["GRAPH_STOP_WAIT", "VERIFY_AFTER", "IndexLifecycle", "Verify"]

# The persisted index's mapped files are checked against their checksums this long after a load
# (`resident.actors.index_snapshot`), once the first answers are out.
VERIFY_AFTER = 2.0
# How long letting go of an index waits for its graph thread to finish the chunk it is adding (about a second
# at 10,000 rows on 2 cores).
GRAPH_STOP_WAIT = 10.0


@dataclass(frozen=True, slots=True)
class Verify:
    """Check the mapped files of the snapshot loaded by build `generation` (on the I/O thread)."""

    generation: int
    unverified: tuple[tuple[str, int], ...]


class IndexLifecycle:
    """The current recall index, its generation and origin, the build in progress, and the event it reflects.

    `build_wake` brings the actor back for the next chunk; `schedule(delay, message)` tells the actor
    a `Verify` after a load.
    """

    def __init__(self, store: Store, build_wake: WakeUp, schedule: Callable[[float, Any], Timer]) -> None:
        self._store = store
        self._wake = build_wake
        self._schedule = schedule
        self.index = RecallIndex()
        self._build: IndexBuild | None = None
        # Which index this is (each build or load makes a new one): a check of a snapshot's files
        # answers for the index loaded from it only.
        self.generation = 0
        self.source: Literal["", "store", "snapshot"] = ""
        # The last event of the store's log the index reflects.
        self.covered_seq = 0
        # Events replayed after the last load, and how long the last build or load took.
        self.replayed = 0
        self.seconds = 0.0

    @property
    def building(self) -> bool:
        """Whether a build from the store is under way (the index lacks some stored records)."""
        return self._build is not None and not self._build.done

    def build_from_store(self, covered_seq: int, embedder: str) -> None:
        """Start a new index, built from the store from the next chunk on (the store is as of event
        `covered_seq` or later); vectors of another embedder than `embedder` count as missing."""
        self.covered_seq = covered_seq
        self.source = "store"
        self.let_go()
        self.index = RecallIndex()
        self.generation += 1
        self._build = IndexBuild(self._store, self.index, embedder)
        self._wake.now()

    def hurry(self) -> None:
        """Someone waits for the build: make sure its next chunk is on its way."""
        self._wake.now()

    def step(self) -> Unstored | None:
        """The build's wake-up arrived: index the next chunk (and ask for another if it is not done).

        The terms of records the chunk found stored without them; None if no build was under way.
        """
        self._wake.done()
        build = self._build
        if build is None or build.done:
            return None
        unstored = build.step()
        if self.building:
            self._wake.now()
        else:
            self.seconds = build.seconds
        return unstored

    def finish(self) -> Unstored | None:
        """Index every record not read yet, in one go; None if no build was under way."""
        build = self._build
        if build is None or build.done:
            return None
        unstored = build.finish()
        self.seconds = build.seconds
        return unstored

    def resumed(self, loaded: Snapshot) -> None:
        """Take the index loaded from a snapshot; its files are checked `VERIFY_AFTER` seconds from now."""
        self.let_go()
        self.index, self._build = loaded.index, None
        self.covered_seq = loaded.seq
        self.source = "snapshot"
        self.generation += 1
        if loaded.unverified:
            # Not at once: reading every mapped file would compete with the load's first answers.
            self._schedule(VERIFY_AFTER, Verify(self.generation, loaded.unverified))

    def covered(self, seq: int) -> None:
        """The index has heard of the store's events up to `seq`."""
        self.covered_seq = max(self.covered_seq, seq)

    def current(self, generation: int) -> bool:
        """Whether `generation` is the index now (else a check for it is about an index since replaced)."""
        return generation == self.generation

    def let_go(self) -> None:
        """Stop the index's graph thread (after its current chunk): an index replaced or left behind must not
        keep a core busy, nor be inside faiss when the process exits."""
        self.index.stop_building(timeout=GRAPH_STOP_WAIT)
