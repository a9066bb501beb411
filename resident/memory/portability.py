"""Member portability: which records travel with a member, and checking an export file.

`AGENT_CORE` and `AGENT_DYADIC` belong to the member and move with it; `WORLD_SHARED` stays in its
world, app banks stay with the app, and withheld records (Realm `conflict` or `invalidated`) are
never served, so never exported either. An import re-enters records as `pending`: the new home's
Realm has not accepted them yet.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import msgspec

from resident.errors import ExportInvalid, InvalidInput
from resident.memory.banks import bank_name, check_part
from resident.memory.visibility import can_see, is_served
from resident.messages.memory import Bank, MemoryRecord, Principal
from resident.messages.portability import EXPORT_FORMAT, EXPORT_VERSION, MemberExport

__all__ = ["PORTABLE_SCOPES", "build_export", "checksum", "parse_export", "portable"]

PORTABLE_SCOPES = frozenset({"AGENT_CORE", "AGENT_DYADIC"})
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
    kept = tuple(r for r in records if portable(member, r))
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


def parse_export(data: bytes, source: str) -> MemberExport:
    """A checked export: right format and version, intact checksum, only the member's portable records."""
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
    for record in document.records:
        home = banks.get(record.bank)
        if (
            not portable(document.member, record)
            or home is None
            or (record.scope, record.counterpart) != (home.scope, home.counterpart)
        ):
            raise ExportInvalid(f"{source} holds record {record.id}, which does not travel with {document.member}")
    return document


def _named_right(bank: Bank) -> bool:
    """Whether a bank's name is the one its scope, owner and counterpart give (valid names only).

    An import creates the banks it carries; one named for another member (`agent_core/alice` owned
    by deven) would capture that member's later writes where its owner cannot see them.
    """
    try:
        return bank.name == bank_name(bank.scope, bank.owner, counterpart=bank.counterpart)
    except InvalidInput:
        return False
