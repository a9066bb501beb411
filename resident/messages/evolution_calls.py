"""The evolution operations' requests and replies (`rt.evolution`): the versioned changes, rollback, the report."""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import Named, Note, Text, Timestamp, Unit
from resident.messages.evolution import EvolutionChange

__all__ = ["AdmitMemory", "ChangeQuery", "EvolutionLog", "LogQuery", "RollbackRequest", "WeekQuery"]

ChangeRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _Whose(_Request, frozen=True):
    # The member; a member session's own when left out.
    member: Named | None = None


class LogQuery(_Whose, frozen=True, kw_only=True):
    """A member's evolution changes, oldest first (the last `limit` only, when given)."""

    limit: Annotated[int, msgspec.Meta(ge=1)] | None = None


class EvolutionLog(msgspec.Struct, frozen=True, kw_only=True):
    member: str
    changes: tuple[EvolutionChange, ...]


class ChangeQuery(_Request, frozen=True):
    """One evolution change, by id (`member@N`)."""

    change_id: ChangeRef


class _Undone(_Request, frozen=True):
    change_id: ChangeRef


class RollbackRequest(_Undone, frozen=True, kw_only=True):
    """Undo a change by a compensating change (returned); the original stays, marked."""

    reason: Note = ""


class _Admitted(_Request, frozen=True):
    member: Named
    text: Text


class AdmitMemory(_Admitted, frozen=True, kw_only=True):
    """Admit `text` into a member's memory from curation, as a versioned change on `basis` (which rolls back)."""

    basis: Note
    summary: Text | None = None
    importance: Unit = 0.5
    occurred_at: Timestamp | None = None
    source: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] = "curation"


class WeekQuery(_Request, frozen=True):
    """The weekly report of an ISO week like 2026-W49 (UTC), one row per member; this week when left out."""

    week: Annotated[str, msgspec.Meta(max_length=20)] | None = None
