"""The operations of the loopback API, as one table that the server, the client and `/openapi.json` read.

Each `Operation` names its method, its path (with `{member}`, `{record}`, ... segments), the struct
its body decodes to and the struct it answers with. The server binds a handler to each name, the
clients build requests from it (the `resident` command runs every command through it, in-process or
over the wire), and the OpenAPI document is generated from it, so they cannot drift apart; adding a
route is one row here and one handler.

An operation is the owner's unless it says `member=True`: only those may be called by a member
session (a request presenting a grant token); any other refuses it with `OwnerOnlyAction`, so a
route added later is owner-only until someone decides otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from resident.api import wire
from resident.messages.portability import MemberExport
from resident.operations import DECLARED
from resident.operations.declaration import Operation as Declared

__all__ = [
    "EVENTS_PATH",
    "EXPORT",
    "IMPORT",
    "LEGACY",
    "OPENAPI_PATH",
    "OPERATIONS",
    "AnyOperation",
    "Operation",
]

_SEGMENT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One route: `name` is its OpenAPI operationId and the key of its server handler."""

    name: str
    method: Literal["GET", "POST"]
    path: str
    reply: type[Any]
    summary: str
    body: type[Any] | None = None
    # Whether a member session may call it (acting as its member, within its grant).
    member: bool = False
    # The largest body it reads.
    max_body: int = wire.MAX_BODY_BYTES

    @property
    def params(self) -> tuple[str, ...]:
        """The path's `{…}` segments, in order."""
        return tuple(_SEGMENT.findall(self.path))

    def url(self, **params: str) -> str:
        """The path with each segment filled in, escaped so a value stays one segment."""
        return self.path.format(**{name: quote(params[name], safe="") for name in self.params})


EXPORT = Operation(
    "member.export", "GET", "/v1/members/{member}/export", MemberExport,
    "A member's portable memory, as the export file holds it",
)
IMPORT = Operation(
    "members.import", "POST", "/v1/members/import", wire.Imported, "Load a member export into this home",
    wire.ImportMember, max_body=wire.MAX_IMPORT_BODY_BYTES,
)

LEGACY: tuple[Operation, ...] = (
    EXPORT, IMPORT,
)

# Served beside the table: the event stream (text/event-stream) and the document describing the API.
EVENTS_PATH = "/v1/events"
OPENAPI_PATH = "/openapi.json"

# Every route: the table above, and the operations declared once (`resident.operations`), which the rest of
# the table is moving to.
# A route of either kind.
AnyOperation = Operation | Declared[Any, Any, Any]
OPERATIONS: tuple[AnyOperation, ...] = (*LEGACY, *DECLARED)
