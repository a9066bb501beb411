"""What the store writer is asked to commit, and what it answers."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Message, Record
from resident.messages.events import AnyEvent
from resident.messages.memory import Receipt

__all__ = [
    "PROBLEM_LIMIT",
    "Commit",
    "CommitEach",
    "Committed",
    "DoctorReport",
    "Finding",
    "GetWriterStatistics",
    "Published",
    "SalvageReport",
    "WriterStatistics",
]

# Findings beyond this many per check are counted, not listed (a wrecked home has millions).
PROBLEM_LIMIT = 200


class Commit(Message, frozen=True, tag="commit"):
    """One write: events to project and append together, plus derived cache entries (vectors, terms).

    The write is committed whole or refused whole; it shares its transaction with whatever else
    was queued at the writer (group commit).
    """

    events: tuple[AnyEvent, ...]
    vectors: tuple[tuple[str, bytes], ...] = ()
    # Each record's keyword term ids (`resident.memory.stored_terms`), so a rebuild need not analyse it.
    terms: tuple[tuple[str, bytes], ...] = ()
    # Recall usage to count in place, with no event (`resident.store.usage`): (record id, times
    # served, when last served). A record that does not exist is not counted.
    usage: tuple[tuple[str, int, float], ...] = ()
    # What the writer answers once the write is durable, instead of its `Committed`: a remember's
    # receipt, so the caller hears from the writer itself and no stage has to pass the answer on.
    answer: Receipt | None = None


class CommitEach(Message, frozen=True, tag="commit.each"):
    """Independent writes sent as one message with one reply (a `remember_many`).

    They share a commit; the answer lists each write's outcome in order: its `answer` (else its
    `Committed`) or the error that refused it. One refused write does not hold back the others.
    """

    writes: tuple[Commit, ...]


class Committed(Message, frozen=True, tag="committed"):
    """A write is durable. `last_seq` is its last event's sequence number (None if nothing changed)."""

    last_seq: int | None
    applied: int


class Published(Message, frozen=True, tag="published"):
    """Events that were just committed, sent by the writer to the actors subscribed to their types.

    `stored_terms` names the admitted records whose commit stored their keyword terms (an import
    does): the substrate reads those from the store and analyses the others itself.
    """

    events: tuple[AnyEvent, ...]
    stored_terms: frozenset[str] = frozenset()
    # The sequence number of the last event this commit appended: a subscriber that has taken in
    # every `Published` up to here reflects the event log up to it (the substrate's persisted index).
    last_seq: int = 0


class WriterStatistics(Message, frozen=True, tag="writer.statistics"):
    """Counters of the group-commit writer (for benchmarks and status).

    `state` is `refusing` while the store has no room for writes (`refusal` says why and what to do).
    """

    commits: int
    writes: int
    refused: int
    failed_commits: int
    largest_commit: int
    state: Literal["running", "refusing"] = "running"
    refusal: str = ""


class GetWriterStatistics(Message, frozen=True, tag="writer.statistics.get"):
    pass


# -- maintenance reports -------------------------------------------------------------------------


class Finding(Record, frozen=True):
    """One check of `resident doctor`: what it looked at, how many items, and what it found wrong.

    `problems` lists at most the first `PROBLEM_LIMIT` findings; `problem_count` counts them all.
    `skipped` says why the check could not run (its problems are then unknown, not absent).
    """

    check: str
    checked: int = 0
    problem_count: int = 0
    problems: tuple[str, ...] = ()
    skipped: str = ""

    @property
    def sound(self) -> bool:
        return not self.problem_count and not self.skipped


class DoctorReport(Record, frozen=True):
    """Everything `resident doctor` checked in one home; `sound` only when every check ran and passed."""

    home: str
    data_file: str
    sound: bool
    findings: tuple[Finding, ...]


class SalvageReport(Record, frozen=True):
    """What `resident salvage` copied into a fresh home, and what it could not save.

    `saved` counts rows per kind (records, banks, members, ...); `lost` names each record or row
    that did not read or verify, with why; `damage` says where reading the old home stopped.
    """

    source: str
    dest: str
    complete: bool
    saved: dict[str, int]
    lost: tuple[str, ...] = ()
    damage: tuple[str, ...] = ()
