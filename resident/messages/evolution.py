"""Versioned evolution: every change evolution makes to a member, with its version and basis.

Each evolution event (a skill given or forgotten, a weight changed by a use, a principle decided,
a memory admitted from curation, a rollback) appends one `EvolutionChange` for its member, numbered
by that member's next version. A change is undone only by a compensating event, which is a change
of its own and marks the one it undoes (`rolled_back_by`); nothing is ever deleted.
"""

from __future__ import annotations

import typing
from typing import Literal

from resident.messages.base import Event, Message, Record

__all__ = [
    "CHANGE_KINDS",
    "ChangeKind",
    "EvolutionChange",
    "MemberCommand",
    "MemberEvolution",
    "MemberWeek",
    "MemoryAdmissionRecorded",
    "MemoryAdmissionRetracted",
    "WeeklyReport",
]

ChangeKind = Literal[
    "give",
    "reclaim",
    "natives",
    "use",
    "rescore",
    "forget",
    "forget-dry-run",
    "remove",
    "restore",
    "principle-approve",
    "principle-reject",
    "principle-revert",
    "memory-admission",
    "memory-retract",
]
CHANGE_KINDS: tuple[ChangeKind, ...] = typing.get_args(ChangeKind)


class MemberCommand(Message, frozen=True):
    """A command the member actor hands to its evolution state (skill set, engagement)."""


class EvolutionChange(Record, frozen=True):
    """One versioned change: what changed (`subject`, `before` → `after`) and on what basis."""

    id: str
    member: str
    version: int
    kind: ChangeKind
    subject: str
    before: str
    after: str
    basis: str
    at: float
    # What the change is about beyond its subject: the execution of a use, for instance.
    ref: str = ""
    rolled_back_by: str = ""
    compensates: str = ""


class MemberEvolution(Record, frozen=True):
    """Per member: its evolution version (the number of its last change), how many sessions it had,
    since when it evolves (its first session or skill), and the native skills of its soul.md."""

    member: str
    version: int = 0
    sessions: int = 0
    since: float | None = None
    natives: tuple[str, ...] = ()
    natives_digest: str = ""


class MemoryAdmissionRecorded(Event, frozen=True, tag="evolution.memory.admitted"):
    """Curation admitted record `record` into the member's memory, on `basis`."""

    member: str
    record: str
    basis: str


class MemoryAdmissionRetracted(Event, frozen=True, tag="evolution.memory.retracted"):
    """A curated admission rolled back (written with the record's retraction)."""

    member: str
    record: str
    compensates: str
    basis: str


# -- the weekly report ---------------------------------------------------------------------------


class MemberWeek(Record, frozen=True):
    """One member's week: sessions, skill uses (by the score they hold now), forgetting, reclaims,
    and the principle candidates still awaiting the owner at the week's end."""

    member: str
    sessions: int
    uses: int
    uses_succeeded: int
    uses_failed: int
    uses_corrected: int
    forgotten: tuple[str, ...]
    would_forget: tuple[str, ...]
    reclaims: tuple[str, ...]
    awaiting_principles: tuple[str, ...]
    dry_run: bool


class WeeklyReport(Record, frozen=True):
    week: str
    start: float
    end: float
    members: tuple[MemberWeek, ...]
