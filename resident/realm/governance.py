"""Realm's governance rules as pure functions: which replicated records it accepts, and why not.

A record is judged once per (id, digest). The first verdict is final: asking again with the same
pair gets the same answer whatever else arrives with it, which is what makes pushes idempotent
and conflicts durable. Rules, in order, each naming itself in the verdict (`rule`):

0. `invalidated` — an id Realm invalidated: whatever it is pushed with, by this home or another that
   imported it, it is never accepted again (this comes before any earlier verdict on the same pair);
1. `different_content` — an id that was already accepted with another digest (content never
   changes under an accepted id; a corrected version needs a new id);
2. `delegated_promotion` — a canonical record that arrives through a delegated path (only the
   owner may promote a memory to canonical);
3. `supersedes_invalidated` — a version that supersedes a record Realm invalidated but carries the
   same content (a readmit has to correct what was invalidated);
4. `invalidated_content` — content equal to that of any record Realm invalidated;
5. anything else is accepted.

Content is compared by `content_key`, the hash of the body's normalized content (`resident.content`: NFKC,
case-folded, whitespace collapsed): a new id, summary, flags, case or spacing around the same body is the same
content.
"""

from __future__ import annotations

from dataclasses import dataclass

from resident.content import content_key as normalized_key
from resident.messages.realm import RealmRecord, Verdict

__all__ = [
    "DELEGATED_PROMOTION",
    "Precedent",
    "content_key",
    "different_content_reason",
    "judge",
    "next_cursor",
]

DELEGATED_PROMOTION = "non-canonical memory cannot be promoted through a delegated path"


def different_content_reason(record_id: str) -> str:
    """The conflict reason for a second digest under an id Realm has already accepted."""
    return f"record {record_id} already replicated with different content"


def content_key(record: RealmRecord) -> str:
    """What "the same content" means to Realm: the SHA-256 of the body's normalized content."""
    return normalized_key(record.body)


@dataclass(frozen=True, slots=True)
class Precedent:
    """What Realm already knows that bears on a record.

    `prior`: the verdict already given to its (id, digest); `accepted_digest`: the digest its id
    was accepted with; `invalidated_with_content`: the id of an invalidated record whose content
    equals this record's, if any; `invalidated_because`: the reason Realm invalidated this id, if it did.
    """

    prior: Verdict | None = None
    accepted_digest: str | None = None
    invalidated_with_content: str | None = None
    # Why Realm invalidated this very id, when it did.
    invalidated_because: str | None = None


def judge(record: RealmRecord, precedent: Precedent, *, at: float) -> Verdict:
    """Decide on `record` given what Realm knows; `at` stamps a new verdict, a prior one is returned as is
    (unless Realm invalidated the id since: an invalidation outranks every earlier verdict)."""
    if precedent.invalidated_because is not None:
        # The invalidation's own reason: a home that meets it here withholds the record as invalidated.
        return Verdict(status="conflict", reason=precedent.invalidated_because, at=at, rule="invalidated")
    if precedent.prior is not None:
        return precedent.prior
    if precedent.accepted_digest is not None and precedent.accepted_digest != record.digest:
        return Verdict(status="conflict", reason=different_content_reason(record.id), at=at, rule="different_content")
    if record.canonical and record.delegated:
        return Verdict(status="conflict", reason=DELEGATED_PROMOTION, at=at, rule="delegated_promotion")
    invalidated = precedent.invalidated_with_content
    if invalidated is not None and record.supersedes == invalidated:
        reason = f"supersedes record {invalidated}, which Realm invalidated, without new content"
        return Verdict(status="conflict", reason=reason, at=at, rule="supersedes_invalidated")
    if invalidated is not None:
        reason = f"its content equals that of record {invalidated}, which Realm invalidated"
        return Verdict(status="conflict", reason=reason, at=at, rule="invalidated_content")
    return Verdict(status="accepted", at=at)


def next_cursor(since: int, seqs: list[int]) -> int:
    """The cursor a client passes next: the last sequence number it was given, else `since` again."""
    return max([since, *seqs])
