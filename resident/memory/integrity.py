"""Whether a stored record is still the version its digest names.

Every record carries the digest of its content, computed when it was shaped. A record whose
stored text, kind, bank or flags were changed afterwards (an edited or damaged data file) no
longer matches it, and every read surface withholds it instead of serving it: get and `memory
show` answer `RecordCorrupted`, recall and export leave it out, and each logs what it found.
"""

from __future__ import annotations

from resident.errors import RecordCorrupted
from resident.messages.digest import content_digest
from resident.messages.memory import MemoryRecord

__all__ = ["corruption_error", "is_intact"]


def is_intact(record: MemoryRecord) -> bool:
    """Whether `record`'s content still hashes to the digest it was stored with."""
    return record.digest == content_digest(
        record_id=record.id,
        summary=record.summary,
        body=record.body,
        kind=record.kind,
        bank=record.bank,
        canonical=record.canonical,
        delegated=record.delegated,
        supersedes=record.supersedes,
    )


def corruption_error(record: MemoryRecord) -> RecordCorrupted:
    """The error a read of a record that failed `is_intact` answers with (and logs)."""
    return RecordCorrupted(
        f"record {record.id} does not match its digest (its stored content was changed outside the runtime); "
        "it is withheld; restore the home from a backup",
        record_id=record.id,
        state="corrupted",
        reason="stored content does not match its digest",
    )
