"""The principles operations' requests and replies (`rt.principles`): propose, list, read, approve, reject."""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import Named, Note, Text
from resident.messages.principles import Principle, PrincipleState

__all__ = ["DecidePrinciple", "GetPrinciple", "ListPrinciples", "Principles", "ProposePrinciple", "RejectPrinciple"]

PrincipleRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _ProposedFor(_Request, frozen=True):
    # The member it is for; a member session proposes for its own member only (leave it out).
    member: Named | None
    text: Text


class ProposePrinciple(_ProposedFor, frozen=True, kw_only=True):
    """A new candidate principle for `member`, on `basis`; only the owner approves it, never automatically."""

    basis: Text


class ListPrinciples(_Request, frozen=True, kw_only=True):
    """Principles, oldest first: of one member (a member session: its own), in one state."""

    member: Named | None = None
    state: PrincipleState | None = None


class Principles(msgspec.Struct, frozen=True, kw_only=True):
    """Principles, oldest first."""

    principles: tuple[Principle, ...]


class GetPrinciple(_Request, frozen=True):
    """One principle by id."""

    principle_id: PrincipleRef


class _Decided(_Request, frozen=True):
    principle_id: PrincipleRef


class DecidePrinciple(_Decided, frozen=True, kw_only=True):
    """The owner approves a candidate, with an optional reason: it becomes one of the member's principles."""

    reason: Note = ""


class RejectPrinciple(_Decided, frozen=True, kw_only=True):
    """The owner rejects a candidate, saying why."""

    reason: Note
