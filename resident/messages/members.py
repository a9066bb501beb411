"""Members known to a home beyond its static roster (imported from another home)."""

from __future__ import annotations

from resident.messages.base import Record

__all__ = ["MemberEntry"]


class MemberEntry(Record, frozen=True):
    """A member that joined this home by import; the roster in `resident.toml` lists the rest."""

    name: str
    worlds: tuple[str, ...] = ()
    joined_at: float = 0.0
    role: str = "member"
