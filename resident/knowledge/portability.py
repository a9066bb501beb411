"""What of knowledge travels with a member between homes, and checking it on arrival.

A member's own knowledge banks (owner `member:NAME`) travel with it, with their active pages, as
its AGENT_CORE memory does. Of verified knowledge only the member's `private` entries travel: a
`project` entry belongs to its project and stays. An entry's evidence (the execution records of
the old home) cannot travel, so whatever state it had, it arrives as `legacy_unverified` and is
never treated as fact in the new home. The knowledge part carries its own checksum.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from resident.errors import ExportInvalid
from resident.knowledge.gate import page_digest
from resident.messages.knowledge import KnowledgeBank, KnowledgeEntry, Page
from resident.messages.portability import MemberKnowledge

__all__ = ["arriving_entry", "check_member_knowledge", "checksum", "member_knowledge"]


def checksum(banks: tuple[KnowledgeBank, ...], pages: tuple[Page, ...], entries: tuple[KnowledgeEntry, ...]) -> str:
    return hashlib.sha256(msgspec.msgpack.encode([banks, pages, entries])).hexdigest()


def _travels(member: str, entry: KnowledgeEntry) -> bool:
    return entry.owner == member and entry.visibility == "private" and entry.state != "superseded"


def member_knowledge(
    member: str, banks: Iterable[KnowledgeBank], pages: Iterable[Page], entries: Iterable[KnowledgeEntry]
) -> MemberKnowledge:
    """The knowledge part of `member`'s export."""
    own = tuple(bank for bank in banks if (bank.owner_kind, bank.owner) == ("member", member))
    names = {bank.name for bank in own}
    kept_pages = tuple(page for page in pages if page.bank in names and page.state == "active")
    kept_entries = tuple(entry for entry in entries if _travels(member, entry))
    return MemberKnowledge(
        banks=own, pages=kept_pages, entries=kept_entries, checksum=checksum(own, kept_pages, kept_entries)
    )


def check_member_knowledge(member: str, knowledge: MemberKnowledge, source: str) -> None:
    """Refuse a knowledge part that was altered, or that holds what does not travel with `member`."""
    if checksum(knowledge.banks, knowledge.pages, knowledge.entries) != knowledge.checksum:
        raise ExportInvalid(f"the knowledge in {source} does not match its checksum; it was changed or damaged")
    names = set()
    for bank in knowledge.banks:
        if (bank.owner_kind, bank.owner) != ("member", member):
            raise ExportInvalid(f"{source} holds knowledge bank {bank.name}, which does not travel with {member}")
        names.add(bank.name)
    for page in knowledge.pages:
        if page.bank not in names or page.state != "active" or page.digest != page_digest(page.kind, page.title,
                                                                                            page.body):
            raise ExportInvalid(f"{source} holds page {page.id}, which does not travel with {member}")
    for entry in knowledge.entries:
        if not _travels(member, entry):
            raise ExportInvalid(f"{source} holds knowledge entry {entry.id}, which does not travel with {member}")


def arriving_entry(entry: KnowledgeEntry, *, now: float) -> KnowledgeEntry:
    """An exported entry as the new home keeps it: legacy, with no evidence, saying where it came from."""
    return msgspec.structs.replace(
        entry, state="legacy_unverified", version=1, changed_at=now, evidence=(), verified_at=None, checked_at=None,
        reason=f"imported with its member (it was {entry.state} in the home it left)",
    )
