"""Principles: member-level rules that stay candidates until the owner approves them."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Record

__all__ = [
    "Principle",
    "PrincipleDecided",
    "PrincipleProposed",
    "PrincipleReverted",
    "PrincipleState",
]

PrincipleState = Literal["candidate", "approved", "rejected"]


class Principle(Record, frozen=True):
    """A proposed rule for one member, why it was proposed, and the owner's decision."""

    id: str
    member: str
    text: str
    basis: str
    proposed_by: str
    proposed_at: float
    state: PrincipleState = "candidate"
    decided_at: float | None = None
    decided_by: str = ""
    reason: str = ""


class PrincipleProposed(Event, frozen=True, tag="principle.proposed"):
    principle: Principle


class PrincipleDecided(Event, frozen=True, tag="principle.decided"):
    """The owner approved or rejected a candidate (never automatic)."""

    id: str
    decision: Literal["approved", "rejected"]
    by: str
    reason: str = ""


class PrincipleReverted(Event, frozen=True, tag="principle.reverted"):
    """A decision rolled back: the principle is a candidate again."""

    id: str
    compensates: str
    by: str
    reason: str = ""
