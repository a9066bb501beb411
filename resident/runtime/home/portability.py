"""Export a member's portable memory (with its knowledge and recovered sessions), and import such an export.

Each is split at the file: building or loading the document needs the open runtime, reading or
writing the file does not (`resident.memory.portability`). These services answer the document and
take its bytes; the caller's side reads and writes the file (`resident.operations.portability`).
"""

from __future__ import annotations

import logging

import msgspec

from resident.config import DEFAULT_WORLD, validate_name
from resident.errors import ConfigError, KnowledgeDisabled
from resident.knowledge.portability import arriving_entry, check_member_knowledge, member_knowledge
from resident.memory.integrity import corruption_error, is_intact
from resident.memory.portability import (
    build_export,
    imported_records,
    parse_export,
    portable,
)
from resident.messages.knowledge import CatchUpIndex, EntryImported, KnowledgeBankCreated, PageAdmitted
from resident.messages.memory import BankCreated, MemberImported, RecordAdmitted
from resident.messages.memory_calls import WaitIndexed
from resident.messages.portability import MemberExport, MemberKnowledge
from resident.messages.portability_calls import ExportQuery, Imported, ImportMember
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.runtime.knowledge.ingest import held_in_bank
from resident.runtime.memory.switch import wait_indexed
from resident.runtime.sessions.portability import exported_sessions, imported_sessions, sessions_checksum
from resident.store.store import Reader
from resident.store.tables import BANKS, KNOWLEDGE_BANKS, KNOWLEDGE_ENTRIES, PAGES, RECORDS, SCHEMA_VERSION, USAGE
from resident.store.usage import served_usage

__all__ = ["export", "import_member"]

logger = logging.getLogger(__name__)


def export(context: Context, _call: Call, request: ExportQuery) -> MemberExport:
    """A member's export: its intact portable records, banks, knowledge and sessions (corrupted ones logged)."""
    context.check_open()
    config = context.config
    member = config.member(request.member)
    with context.store.reader() as reader:
        banks = [bank for _, bank in reader.items(BANKS)]
        records = [served_usage(record, reader.get(USAGE, record_id)) for record_id, record in reader.items(RECORDS)]
        knowledge = _member_knowledge(reader, member.name) if config.knowledge.enabled else None
    for record in records:
        if portable(member.name, record) and not is_intact(record):
            logger.error("left out of the export of %s: %s", member.name, corruption_error(record).message)
    document = build_export(
        member.name, member.role, banks, records, now=context.clock.time(), schema_version=SCHEMA_VERSION
    )
    if knowledge is not None:
        document = msgspec.structs.replace(document, knowledge=knowledge)
    sessions = exported_sessions(context, member.name)
    if sessions:
        document = msgspec.structs.replace(
            document, sessions=sessions, sessions_checksum=sessions_checksum(member.name, sessions)
        )
    return document


def import_member(context: Context, call: Call, request: ImportMember) -> Imported:
    """Load an export's bytes (`source` names them in errors) in one transaction; records already here are skipped.

    A member new to this home joins it (in `world`) and its actor starts.
    """
    context.check_open()
    source, world = request.source, request.world
    document = parse_export(request.data, source, now=context.clock.time())
    if world is not None:
        validate_name("world", world)
    config = context.config
    # Known: on the roster of resident.toml, or joined by an earlier import (its records are merged).
    known = document.member in config.member_names()
    if known and world is not None:
        worlds = config.member(document.member).worlds
        if world not in worlds:
            on_roster = document.member in {m.name for m in config.members}
            raise ConfigError(
                f"{document.member} is on this home's roster; add world {world!r} to its entry in resident.toml instead"
                if on_roster
                else f"{document.member} already joined this home in worlds {', '.join(worlds)}; "
                "import it again without --world"
            )
    now = context.clock.time()
    context.require_memory()
    # Checked whole before anything is written, and written in the same transaction as the memories.
    sessions = imported_sessions(context, document, source)
    with context.store.reader() as reader:
        fresh = [r for r in imported_records(document) if reader.get(RECORDS, r.id) is None]
    events: list[object] = [BankCreated(at=now, bank=bank) for bank in document.banks]
    events += [RecordAdmitted(at=now, record=record) for record in fresh]
    events += sessions
    joined = not known
    if joined:
        events.append(
            MemberImported(
                at=now, member=document.member, world=world or DEFAULT_WORLD, records=len(fresh), role=document.role
            )
        )
    events += _knowledge_events(context, document, source, now=now)
    context.write(Commit(events=tuple(events)))  # type: ignore[arg-type]
    if document.knowledge is not None and context.knowledge is not None:
        context.knowledge.ask(CatchUpIndex())
    # Recall right after an import should find the records: wait until the substrate has them. The import is
    # durable either way; a restarting substrate reads it.
    indexed = wait_indexed(context, call, WaitIndexed())
    if not indexed.done:
        logger.warning("imported %s, but the substrate did not confirm indexing in time: %s", document.member,
                       indexed.reason)
    if joined:
        context.add_member(document.member, document.role, (world or DEFAULT_WORLD,))
    return Imported(
        member=document.member, imported=len(fresh), skipped=len(document.records) - len(fresh), joined=joined,
        sessions=len(sessions),
    )


def _member_knowledge(reader: Reader, member: str) -> MemberKnowledge:
    return member_knowledge(
        member,
        (bank for _, bank in reader.items(KNOWLEDGE_BANKS)),
        (page for _, page in reader.items(PAGES)),
        (entry for _, entry in reader.items(KNOWLEDGE_ENTRIES)),
    )


def _knowledge_events(context: Context, document: MemberExport, source: str, *, now: float) -> list[object]:
    """The knowledge an import brings: the member's banks, their pages this home lacks, its entries as legacy."""
    knowledge = document.knowledge
    if knowledge is None:
        return []
    if not context.config.knowledge.enabled:
        raise KnowledgeDisabled(
            f"{source} carries knowledge and knowledge is off for this home; set `[knowledge] enabled = true` in "
            "its resident.toml and import again"
        )
    check_member_knowledge(document.member, knowledge, source)
    events: list[object] = [KnowledgeBankCreated(at=now, bank=bank) for bank in knowledge.banks]
    with context.store.reader() as reader:
        events += [
            PageAdmitted(at=now, page=page) for page in knowledge.pages
            if reader.get(PAGES, page.id) is None and held_in_bank(reader, page.bank, page.digest) is None
        ]
        events += [
            EntryImported(at=now, entry=arriving_entry(entry, now=now))
            for entry in knowledge.entries if reader.get(KNOWLEDGE_ENTRIES, entry.id) is None
        ]
    return events
