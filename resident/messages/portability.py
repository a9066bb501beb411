"""The versioned file a member's portable memory travels in (`member export` / `member import`)."""

from __future__ import annotations

from resident.messages.base import Record
from resident.messages.memory import Bank, MemoryRecord

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "MemberExport"]

EXPORT_FORMAT = "resident-member-export"
EXPORT_VERSION = 1


class MemberExport(Record, frozen=True):
    """A member's AGENT_CORE and AGENT_DYADIC banks and records, with a checksum over them."""

    format: str
    version: int
    member: str
    role: str
    exported_at: float
    schema_version: int
    banks: tuple[Bank, ...]
    records: tuple[MemoryRecord, ...]
    checksum: str
