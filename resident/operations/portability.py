"""A member's portable memory between homes: `rt.export_member(name, path)` and `rt.import_member(path)`.

The operations carry the document (an export answers it, an import sends the file's bytes); the file itself is
written and read here, in the caller's process, so `Runtime.connect` and the `resident` command need no path the
runtime could read.
"""

from __future__ import annotations

import os
from pathlib import Path

from resident.messages.portability import MemberExport
from resident.messages.portability_calls import ExportQuery, Imported, ImportMember
from resident.operations.declaration import Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = ["EXPORT", "IMPORT", "MAX_IMPORT_BODY_BYTES", "OPERATIONS", "PortabilitySurface"]

_SERVICES = "resident.runtime.home.portability"
# An import carries the export file itself (base64 in JSON: 4 bytes for every 3), up to the size an import accepts
# from a file (`resident.memory.portability.MAX_EXPORT_BYTES`, 256 MiB).
MAX_IMPORT_BODY_BYTES = (256 * 1024 * 1024) * 4 // 3 + 64 * 1024

EXPORT = declare(
    "member.export", "A member's portable memory, as the export file holds it", ExportQuery, MemberExport,
    route=Route("GET", "/v1/members/{member}/export"), service=f"{_SERVICES}:export",
)
IMPORT = declare(
    "members.import", "Load a member export into this home", ImportMember, Imported,
    route=Route("POST", "/v1/members/import", max_body=MAX_IMPORT_BODY_BYTES), service=f"{_SERVICES}:import_member",
)

OPERATIONS = (EXPORT, IMPORT)


class PortabilitySurface(Surface):
    """A member's export document and its import, and the same through a file on this side."""

    export_document = method(EXPORT)
    aexport_document = awaitable(EXPORT)
    import_document = method(IMPORT)
    aimport_document = awaitable(IMPORT)

    def export_member(self, name: str, path: str | os.PathLike[str]) -> int:
        """Write `name`'s portable records (AGENT_CORE, AGENT_DYADIC; none withheld) to `path` (atomically, 0600);
        the count."""
        from resident.memory.portability import write_export_file  # noqa: PLC0415 - the file is only for these two

        document = self.export_document(name)
        write_export_file(Path(path), document)
        return len(document.records)

    def import_member(self, path: str | os.PathLike[str], world: str | None = None) -> Imported:
        """Load a member export file into this home; a member new to it joins (in `world`) and starts."""
        from resident.memory.portability import read_export_file  # noqa: PLC0415 - the file is only for these two

        return self.import_document(read_export_file(Path(path)), source=str(path), world=world)
