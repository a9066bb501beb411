"""Realm's governance rules as pure functions: which replicated records it accepts, and why not.

A record is judged once per (id, digest). The first verdict is final: asking again with the same
pair gets the same answer whatever else arrives with it, which is what makes pushes idempotent
and conflicts durable. Rules, in order:

1. an id that was already accepted with another digest is a conflict (content never changes
   under an accepted id; a corrected version needs a new id);
2. a canonical record that arrives through a delegated path is a conflict (only the owner may
   promote a memory to canonical);
3. anything else is accepted.
"""

from __future__ import annotations

from resident.messages.realm import RealmRecord, Verdict

__all__ = [
    "DELEGATED_PROMOTION",
    "different_content_reason",
    "judge",
    "next_cursor",
]

DELEGATED_PROMOTION = "non-canonical memory cannot be promoted through a delegated path"


def different_content_reason(record_id: str) -> str:
    """The conflict reason for a second digest under an id Realm has already accepted."""
    return f"record {record_id} already replicated with different content"


def judge(record: RealmRecord, *, prior: Verdict | None, accepted_digest: str | None, at: float) -> Verdict:
    """Decide on `record`, given the verdict already given to its (id, digest), if any, and the
    digest its id was accepted with, if any. `at` stamps a new verdict; a prior one is returned as is.
    """
    if prior is not None:
        return prior
    if accepted_digest is not None and accepted_digest != record.digest:
        return Verdict(status="conflict", reason=different_content_reason(record.id), at=at)
    if record.canonical and record.delegated:
        return Verdict(status="conflict", reason=DELEGATED_PROMOTION, at=at)
    return Verdict(status="accepted", at=at)


def next_cursor(since: int, seqs: list[int]) -> int:
    """The cursor a client passes next: the last sequence number it was given, else `since` again."""
    return max([since, *seqs])
