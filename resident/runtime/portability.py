"""Export a member's portable memory (with its knowledge and recovered sessions), and import such an export.

Each is split at the file: building or loading the document needs the open runtime, reading or
writing the file does not (`resident.memory.portability`). The loopback API serves the document
itself (an export's answer, an import's body), and the `resident` command reads and writes the
file on its side of the wire.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from resident.config import DEFAULT_WORLD, validate_name
from resident.errors import ActorUnavailable, ConfigError, KnowledgeDisabled
from resident.knowledge.portability import arriving_entry, check_member_knowledge, member_knowledge
from resident.memory.integrity import corruption_error, is_intact
from resident.memory.portability import (
    build_export,
    imported_records,
    parse_export,
    portable,
    read_export_file,
    write_export_file,
)
from resident.messages.knowledge import CatchUpIndex, EntryImported, KnowledgeBankCreated, PageAdmitted
from resident.messages.memory import BankCreated, MemberImported, RecordAdmitted
from resident.messages.portability import MemberExport, MemberKnowledge
from resident.messages.store import Commit
from resident.runtime.knowledge_ingest import held_in_bank
from resident.runtime.sessions.portability import exported_sessions, imported_sessions, sessions_checksum
from resident.store.store import Reader
from resident.store.tables import BANKS, KNOWLEDGE_BANKS, KNOWLEDGE_ENTRIES, PAGES, RECORDS, SCHEMA_VERSION

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = [
    "ImportResult",
    "export_document",
    "export_member",
    "import_document",
    "import_member",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    member: str
    imported: int
    skipped: int
    joined: bool
    sessions: int = 0


def export_member(runtime: Runtime, name: str, path: Path) -> int:
    """Write `name`'s AGENT_CORE and AGENT_DYADIC records to `path` (atomically, 0600); the count."""
    document = export_document(runtime, name)
    write_export_file(path, document)
    return len(document.records)


def export_document(runtime: Runtime, name: str) -> MemberExport:
    """`name`'s export: its intact portable records, banks, knowledge and sessions (corrupted ones logged)."""
    runtime.check_open()
    member = runtime.config.member(name)
    with runtime._internal.store.reader() as reader:
        banks = [bank for _, bank in reader.items(BANKS)]
        records = [record for _, record in reader.items(RECORDS)]
        knowledge = _member_knowledge(reader, member.name) if runtime.config.knowledge.enabled else None
    for record in records:
        if portable(member.name, record) and not is_intact(record):
            logger.error("left out of the export of %s: %s", member.name, corruption_error(record).message)
    document = build_export(
        member.name, member.role, banks, records, now=runtime.clock.time(), schema_version=SCHEMA_VERSION
    )
    if knowledge is not None:
        document = msgspec.structs.replace(document, knowledge=knowledge)
    sessions = exported_sessions(runtime._services, member.name)
    if sessions:
        document = msgspec.structs.replace(
            document, sessions=sessions, sessions_checksum=sessions_checksum(member.name, sessions)
        )
    return document


def import_member(runtime: Runtime, path: Path, world: str | None = None) -> ImportResult:
    """Load an export file into this home in one transaction; records already here are skipped."""
    runtime.check_open()
    return import_document(runtime, read_export_file(path), str(path), world)


def import_document(runtime: Runtime, data: bytes, source: str, world: str | None = None) -> ImportResult:
    """Load an export's bytes (`source` names them in errors) in one transaction; records already here are skipped."""
    runtime.check_open()
    document = parse_export(data, source, now=runtime.clock.time())
    if world is not None:
        validate_name("world", world)
    # Known: on the roster of resident.toml, or joined by an earlier import (its records are merged).
    known = document.member in runtime.config.member_names()
    if known and world is not None:
        worlds = runtime.config.member(document.member).worlds
        if world not in worlds:
            on_roster = document.member in {m.name for m in runtime.config.members}
            raise ConfigError(
                f"{document.member} is on this home's roster; add world {world!r} to its entry in resident.toml instead"
                if on_roster
                else f"{document.member} already joined this home in worlds {', '.join(worlds)}; "
                "import it again without --world"
            )
    now = runtime.clock.time()
    runtime._services.require_memory()
    # Checked whole before anything is written, and written in the same transaction as the memories.
    sessions = imported_sessions(runtime._services, document, source)
    with runtime._internal.store.reader() as reader:
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
    events += _knowledge_events(runtime, document, source, now=now)
    runtime._internal.write(Commit(events=tuple(events)))  # type: ignore[arg-type]
    if document.knowledge is not None and runtime._internal.wiring.knowledge is not None:
        runtime._internal.wiring.knowledge.ask(CatchUpIndex())
    try:
        # Recall right after an import should find the records: wait until the substrate has them.
        runtime.memory.wait_indexed()
    except ActorUnavailable as error:  # the import is durable; a restarting substrate reads it
        logger.warning("imported %s, but the substrate did not confirm indexing in time: %s", document.member, error)
    if joined:
        runtime.add_member(document.member, document.role, (world or DEFAULT_WORLD,))
    return ImportResult(document.member, len(fresh), len(document.records) - len(fresh), joined, len(sessions))


def _member_knowledge(reader: Reader, member: str) -> MemberKnowledge:
    return member_knowledge(
        member,
        (bank for _, bank in reader.items(KNOWLEDGE_BANKS)),
        (page for _, page in reader.items(PAGES)),
        (entry for _, entry in reader.items(KNOWLEDGE_ENTRIES)),
    )


def _knowledge_events(runtime: Runtime, document: MemberExport, source: str, *, now: float) -> list[object]:
    """The knowledge an import brings: the member's banks, their pages this home lacks, its entries as legacy."""
    knowledge = document.knowledge
    if knowledge is None:
        return []
    if not runtime.config.knowledge.enabled:
        raise KnowledgeDisabled(
            f"{source} carries knowledge and knowledge is off for this home; set `[knowledge] enabled = true` in "
            "its resident.toml and import again"
        )
    check_member_knowledge(document.member, knowledge, source)
    events: list[object] = [KnowledgeBankCreated(at=now, bank=bank) for bank in knowledge.banks]
    with runtime._internal.store.reader() as reader:
        events += [
            PageAdmitted(at=now, page=page) for page in knowledge.pages
            if reader.get(PAGES, page.id) is None and held_in_bank(reader, page.bank, page.digest) is None
        ]
        events += [
            EntryImported(at=now, entry=arriving_entry(entry, now=now))
            for entry in knowledge.entries if reader.get(KNOWLEDGE_ENTRIES, entry.id) is None
        ]
    return events
