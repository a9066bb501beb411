"""Member portability: which records travel with a member, and checking an export file.

`AGENT_CORE` and `AGENT_DYADIC` belong to the member and move with it; `WORLD_SHARED` stays in its
world, app banks stay with the app, and withheld records (Realm `conflict` or `invalidated`, or a
version awaiting Realm's review) are never served, so never exported either; nor is a record
whose content no longer matches its digest.

An export file is input from outside: its checksum only shows it was not damaged, not that it is
honest. So an import checks every record as `remember` would have shaped it: ids well-formed and
bounded, text within the limits, the digest recomputed, the owner the member the file is about,
times not in the future, lifecycle fields that agree with each other. The first failing check
refuses the whole file, naming the record and the reason. Records that pass re-enter as `pending`
(the new home's Realm has not accepted them) and authored by the member they travel with.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from pathlib import Path

import msgspec

from resident.errors import ExportInvalid, InvalidInput
from resident.files import write_private_file
from resident.memory.banks import bank_name, check_part
from resident.memory.integrity import is_intact
from resident.memory.records import MAX_BODY_CHARS, MAX_SUMMARY_CHARS, check_unit, clean_text
from resident.memory.visibility import can_see, is_served
from resident.messages.limits import is_record_id
from resident.messages.memory import Bank, MemoryRecord, Principal
from resident.messages.portability import EXPORT_FORMAT, EXPORT_VERSION, MemberExport
from resident.user_files import read_user_file

__all__ = [
    "FUTURE_TOLERANCE",
    "MAX_EXPORT_BYTES",
    "PORTABLE_SCOPES",
    "build_export",
    "checksum",
    "imported_records",
    "parse_export",
    "portable",
    "read_export_file",
    "write_export_file",
]

PORTABLE_SCOPES = frozenset({"AGENT_CORE", "AGENT_DYADIC"})
# An export of 100,000 full-length memories is about 3.5 GB; anything near this is not a real export.
MAX_EXPORT_BYTES = 256 * 1024 * 1024
# Clocks of two machines disagree a little; a time further ahead than this was made up.
FUTURE_TOLERANCE = 300.0
# Provenance text (source, importance reason) is short by nature; a long one is padding.
MAX_NOTE_CHARS = 1_000
_DECODER = msgspec.json.Decoder(MemberExport)


def portable(member: str, record: MemoryRecord) -> bool:
    """Whether `record` travels with `member`: its own private memory (by the visibility rules), served."""
    owner = Principal(kind="member", name=member)
    return record.scope in PORTABLE_SCOPES and can_see(owner, record) and is_served(record)


def checksum(member: str, banks: tuple[Bank, ...], records: tuple[MemoryRecord, ...]) -> str:
    return hashlib.sha256(msgspec.msgpack.encode([member, banks, records])).hexdigest()


def build_export(
    member: str, role: str, banks: Iterable[Bank], records: Iterable[MemoryRecord], *, now: float, schema_version: int
) -> MemberExport:
    """The export of `member`'s portable, intact records (callers log those left out as corrupted)."""
    kept = tuple(r for r in records if portable(member, r) and is_intact(r))
    used = {r.bank for r in kept}
    kept_banks = tuple(b for b in banks if b.name in used and b.scope in PORTABLE_SCOPES and b.owner == member)
    return MemberExport(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        member=member,
        role=role,
        exported_at=now,
        schema_version=schema_version,
        banks=kept_banks,
        records=kept,
        checksum=checksum(member, kept_banks, kept),
    )


def parse_export(data: bytes, source: str, *, now: float) -> MemberExport:
    """A checked export (see the module docstring); `ExportInvalid` with the first reason otherwise."""
    if len(data) > MAX_EXPORT_BYTES:
        raise ExportInvalid(f"{source} is larger than {MAX_EXPORT_BYTES} bytes; it is not a member export")
    try:
        document = _DECODER.decode(data)
    except msgspec.DecodeError as error:
        raise ExportInvalid(f"{source} is not a member export (or it is truncated): {error}") from None
    if document.format != EXPORT_FORMAT:
        raise ExportInvalid(f"{source} is not a member export (format {document.format!r})")
    if document.version != EXPORT_VERSION:
        raise ExportInvalid(
            f"{source} is member export version {document.version}; this resident reads version {EXPORT_VERSION}"
        )
    if checksum(document.member, document.banks, document.records) != document.checksum:
        raise ExportInvalid(f"{source} does not match its checksum; it was changed or damaged after export")
    try:
        check_part("member", document.member)
    except InvalidInput:
        raise ExportInvalid(f"{source} names member {document.member!r}, which is not a valid member name") from None
    banks = {b.name: b for b in document.banks}
    for bank in document.banks:
        if bank.scope not in PORTABLE_SCOPES or bank.owner != document.member or not _named_right(bank):
            raise ExportInvalid(f"{source} holds bank {bank.name}, which does not travel with {document.member}")
    seen: set[str] = set()
    for record in document.records:
        problem = _record_problem(document.member, banks, seen, record, now)
        if problem is not None:
            shown = record.id if is_record_id(record.id) else repr(record.id[:40])
            raise ExportInvalid(f"{source}: record {shown} {problem}; nothing was imported")
        seen.add(record.id)
    return document


def read_export_file(path: Path) -> bytes:
    """The file's bytes, refusing (without reading it all) one larger than any real export, and any
    path that is not a regular file (a FIFO would block the import forever)."""
    return read_user_file(path, limit=MAX_EXPORT_BYTES, what="the export", error=ExportInvalid)


def write_export_file(path: Path, document: MemberExport) -> None:
    """Write an export to `path`, atomically and private to its owner."""
    if path.is_dir():
        raise InvalidInput(f"{path} is a directory; give a file name for the export")
    if not path.parent.is_dir():
        raise InvalidInput(f"cannot write {path}: its directory does not exist")
    write_private_file(path, msgspec.json.encode(document))


def imported_records(document: MemberExport) -> tuple[MemoryRecord, ...]:
    """The records of a checked export as this home admits them: pending, authored by the member."""
    return tuple(
        msgspec.structs.replace(
            record, author=document.member, replication="pending", replication_reason="", replication_rule=""
        )
        for record in document.records
    )


def _record_problem(
    member: str, banks: dict[str, Bank], seen: set[str], record: MemoryRecord, now: float
) -> str | None:
    """Why `record` may not be imported for `member`, or None; checks run in the order listed."""
    return (
        _ids_problem(record, seen)
        or _travel_problem(member, banks, record)
        or _text_problem(record)
        or _weights_problem(record)
        or _times_problem(record, now)
        or _lifecycle_problem(record)
        or (None if is_intact(record) else "does not match its digest (its content was changed)")
    )


def _ids_problem(record: MemoryRecord, seen: set[str]) -> str | None:
    if not is_record_id(record.id):
        return "has a malformed id (printable ASCII without spaces, at most 200 characters)"
    if record.id in seen:
        return "appears twice"
    linked = [record.supersedes, record.superseded_by, *record.cites]
    if any(link is not None and not is_record_id(link) for link in linked):
        return "refers to a malformed record id (supersedes, superseded_by or cites)"
    return None


def _travel_problem(member: str, banks: dict[str, Bank], record: MemoryRecord) -> str | None:
    home = banks.get(record.bank)
    if (
        record.scope not in PORTABLE_SCOPES
        or record.owner != member
        or home is None
        or (record.scope, record.counterpart) != (home.scope, home.counterpart)
    ):
        return f"does not travel with {member}"
    if record.author not in ("", member):
        return f"claims author {record.author!r}; a member's export holds only what {member} wrote"
    if not is_served(record):
        return f"is {record.replication}, which is never exported"
    return None


def _text_problem(record: MemoryRecord) -> str | None:
    try:
        clean_text(record.body, "its body", MAX_BODY_CHARS)
        clean_text(record.summary, "its summary", MAX_SUMMARY_CHARS)
    except InvalidInput as error:
        return f"is refused: {error.message}"
    if len(record.source) > MAX_NOTE_CHARS or len(record.importance_reason) > MAX_NOTE_CHARS:
        return f"carries a source or importance reason longer than {MAX_NOTE_CHARS} characters"
    if record.kind == "observation" and not record.cites:
        return "is an observation that cites nothing"
    return None


def _weights_problem(record: MemoryRecord) -> str | None:
    try:
        check_unit("importance", record.importance)
        check_unit("confidence", record.confidence)
    except InvalidInput as error:
        return f"is refused: {error.message}"
    if record.recall_count < 0:
        return "has a negative recall count"
    return None


def _times_problem(record: MemoryRecord, now: float) -> str | None:
    times = {
        "occurred_at": record.occurred_at,
        "recorded_at": record.recorded_at,
        "retracted_at": record.retracted_at,
        "last_recalled_at": record.last_recalled_at,
    }
    for name, value in times.items():
        if value is None:
            continue
        if not math.isfinite(value) or value < 0:
            return f"has {name} {value!r}, which is not a time"
        if value > now + FUTURE_TOLERANCE:
            return f"has {name} in the future ({value:.0f}, now is {now:.0f})"
    return None


def _lifecycle_problem(record: MemoryRecord) -> str | None:
    match record.lifecycle:
        case "active" if record.superseded_by is not None or record.retracted_at is not None:
            return "is active but marked superseded or retracted"
        case "superseded" if record.superseded_by is None or record.retracted_at is not None:
            return "is superseded without the record that superseded it (or is also retracted)"
        case "retracted" if record.retracted_at is None:
            return "is retracted without a retraction time"
    return None


def _named_right(bank: Bank) -> bool:
    """Whether a bank's name is the one its scope, owner and counterpart give (valid names only).

    An import creates the banks it carries; one named for another member (`agent_core/alice` owned
    by deven) would capture that member's later writes where its owner cannot see them.
    """
    try:
        return bank.name == bank_name(bank.scope, bank.owner, counterpart=bank.counterpart)
    except InvalidInput:
        return False
