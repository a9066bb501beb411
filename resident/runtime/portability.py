"""Export a member's portable memory to a file, and import such a file into this home.

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

from resident.config import DEFAULT_WORLD, validate_name
from resident.errors import ActorUnavailable, ConfigError
from resident.memory.integrity import corruption_error, is_intact
from resident.memory.portability import (
    build_export,
    imported_records,
    parse_export,
    portable,
    read_export_file,
    write_export_file,
)
from resident.messages.memory import BankCreated, MemberImported, RecordAdmitted
from resident.messages.portability import MemberExport
from resident.messages.store import Commit
from resident.store.tables import BANKS, RECORDS, SCHEMA_VERSION

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


def export_member(runtime: Runtime, name: str, path: Path) -> int:
    """Write `name`'s AGENT_CORE and AGENT_DYADIC records to `path` (atomically, 0600); the count."""
    document = export_document(runtime, name)
    write_export_file(path, document)
    return len(document.records)


def export_document(runtime: Runtime, name: str) -> MemberExport:
    """`name`'s export: its portable, intact records and their banks (records left out as corrupted are logged)."""
    runtime.check_open()
    member = runtime.config.member(name)
    with runtime._internal.store.reader() as reader:
        banks = [bank for _, bank in reader.items(BANKS)]
        records = [record for _, record in reader.items(RECORDS)]
    for record in records:
        if portable(member.name, record) and not is_intact(record):
            logger.error("left out of the export of %s: %s", member.name, corruption_error(record).message)
    return build_export(
        member.name, member.role, banks, records, now=runtime.clock.time(), schema_version=SCHEMA_VERSION
    )


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
    runtime.memory.require_enabled()
    with runtime._internal.store.reader() as reader:
        fresh = [r for r in imported_records(document) if reader.get(RECORDS, r.id) is None]
    events: list[object] = [BankCreated(at=now, bank=bank) for bank in document.banks]
    events += [RecordAdmitted(at=now, record=record) for record in fresh]
    joined = not known
    if joined:
        events.append(
            MemberImported(
                at=now, member=document.member, world=world or DEFAULT_WORLD, records=len(fresh), role=document.role
            )
        )
    runtime._internal.write(Commit(events=tuple(events)))  # type: ignore[arg-type]
    try:
        # Recall right after an import should find the records: wait until the substrate has them.
        runtime.memory.wait_indexed()
    except ActorUnavailable as error:  # the import is durable; a restarting substrate reads it
        logger.warning("imported %s, but the substrate did not confirm indexing in time: %s", document.member, error)
    if joined:
        runtime.add_member(document.member, document.role, (world or DEFAULT_WORLD,))
    return ImportResult(document.member, len(fresh), len(document.records) - len(fresh), joined)
