"""The versioned file a member's portable memory travels in (`member export` / `member import`)."""

from __future__ import annotations

from resident.messages.base import Record
from resident.messages.knowledge import KnowledgeBank, KnowledgeEntry, Page
from resident.messages.memory import Bank, MemoryRecord
from resident.messages.sessions import SessionRecord

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "ExportedSession", "MemberExport", "MemberKnowledge"]

EXPORT_FORMAT = "resident-member-export"
EXPORT_VERSION = 1


class MemberKnowledge(Record, frozen=True):
    """What of knowledge travels with a member: its own banks with their current pages, and its
    private entries (which arrive as `legacy_unverified`: their evidence stays in the old home)."""

    banks: tuple[KnowledgeBank, ...]
    pages: tuple[Page, ...]
    entries: tuple[KnowledgeEntry, ...]
    checksum: str


class ExportedSession(Record, frozen=True):
    """One of the member's recovered sessions (its experience), redacted: its record and raw parts (zlib).

    The turns are not carried: the importing home derives them again from the raw bytes, which it
    redacts again, so an edited export cannot bring in turns that say something else.
    """

    session: SessionRecord
    raw: tuple[bytes, ...]


class MemberExport(Record, frozen=True):
    """A member's AGENT_CORE and AGENT_DYADIC banks and records, with a checksum over them.

    Its recovered sessions travel with it too (experience lives in AGENT_CORE), with their own
    checksum, so an export written before sessions existed still reads and verifies.
    """

    format: str
    version: int
    member: str
    role: str
    exported_at: float
    schema_version: int
    banks: tuple[Bank, ...]
    records: tuple[MemoryRecord, ...]
    checksum: str
    # Absent from exports of homes without knowledge (and from those written before it existed).
    knowledge: MemberKnowledge | None = None
    sessions: tuple[ExportedSession, ...] = ()
    sessions_checksum: str = ""
