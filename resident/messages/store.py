"""What the store writer is asked to commit, and what it answers."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Message
from resident.messages.events import AnyEvent

__all__ = ["Commit", "Committed", "GetWriterStatistics", "Published", "WriterStatistics"]


class Commit(Message, frozen=True, tag="commit"):
    """One write: events to project and append together, plus derived cache entries (vectors, terms).

    The write is committed whole or refused whole; it shares its transaction with whatever else
    was queued at the writer (group commit).
    """

    events: tuple[AnyEvent, ...]
    vectors: tuple[tuple[str, bytes], ...] = ()
    # Each record's keyword term ids (`resident.memory.stored_terms`), so a rebuild need not analyse it.
    terms: tuple[tuple[str, bytes], ...] = ()


class Committed(Message, frozen=True, tag="committed"):
    """A write is durable. `last_seq` is its last event's sequence number (None if nothing changed)."""

    last_seq: int | None
    applied: int


class Published(Message, frozen=True, tag="published"):
    """Events that were just committed, sent by the writer to the actors subscribed to their types."""

    events: tuple[AnyEvent, ...]


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
