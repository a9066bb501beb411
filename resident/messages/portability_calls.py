"""Member export and import (`rt.export_member`, `rt.import_member`): the document travels, never a path.

The export is answered as the document itself and an import carries the file's bytes (base64 in JSON), so the
file is read and written on the caller's side of the API (`resident.operations.portability`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import Named

__all__ = ["ExportQuery", "ImportMember", "Imported"]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class ExportQuery(_Request, frozen=True):
    """A member's portable memory as its export file holds it: its AGENT_CORE and AGENT_DYADIC records (none
    withheld), its banks, its knowledge and its recovered sessions."""

    member: Named


class _Import(_Request, frozen=True):
    data: bytes


class ImportMember(_Import, frozen=True, kw_only=True):
    """A member export file (its bytes, as `resident member export` wrote them) to load into this home.

    `source` names the file in error messages; `world` is the world a member new to this home joins.
    """

    source: Annotated[str, msgspec.Meta(max_length=4_096)] = "the export"
    world: Named | None = None


class Imported(msgspec.Struct, frozen=True, kw_only=True):
    """What a member import did: records imported and already here, whether the member joined, sessions brought."""

    member: str
    imported: int
    skipped: int
    joined: bool
    sessions: int = 0
