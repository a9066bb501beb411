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

from resident.api import wire, wire_sessions
from resident.messages.memory import Receipt
from resident.messages.portability import MemberExport
from resident.operations import DECLARED
from resident.operations.declaration import Operation as Declared

__all__ = [
    "EVENTS_PATH",
    "EXCERPTS",
    "EXCERPT_ADMIT",
    "EXPORT",
    "IMPORT",
    "LEGACY",
    "OPENAPI_PATH",
    "OPERATIONS",
    "SESSIONS",
    "SESSION_CANDIDATES",
    "SESSION_END",
    "SESSION_IMPORT",
    "SESSION_RAW",
    "SESSION_RECOVER",
    "SESSION_SHOW",
    "SESSION_START",
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

# -- knowledge, sessions and the MCP server ---------------------------------------------------------
# (their own block: `resident knowledge …`, `resident session …`, `resident curate`, `resident mcp serve`)

SESSION_START = Operation(
    "sessions.start", "POST", "/v1/sessions/start", wire_sessions.Launched,
    "Start a member's session (record, grant token, projection); the launching process runs the harness",
    wire_sessions.StartSession,
)
SESSION_END = Operation(
    "sessions.end", "POST", "/v1/sessions/{session}/end", wire_sessions.Ended,
    "End a session: restore its directory, recover its transcript, end its execution", wire_sessions.EndSession,
)
SESSION_RECOVER = Operation(
    "sessions.recover", "POST", "/v1/sessions/recover", wire_sessions.Recovered,
    "End the sessions whose launching process died", wire_sessions.RecoverSessions,
)
SESSIONS = Operation(
    "sessions.list", "POST", "/v1/sessions/list", wire_sessions.SessionList,
    "Sessions, oldest first (a member session: only its own)", wire_sessions.ListSessions, member=True,
)
SESSION_SHOW = Operation(
    "sessions.show", "POST", "/v1/sessions/{session}/show", wire_sessions.SessionView,
    "A session and its redacted turns (a member session: only its own)", wire_sessions.TurnsQuery, member=True,
)
SESSION_RAW = Operation(
    "sessions.raw", "POST", "/v1/sessions/{session}/raw", wire_sessions.RawPart,
    "One transcript file of a session as stored, redacted (a member session: only its own)", wire_sessions.RawQuery,
    member=True,
)
SESSION_CANDIDATES = Operation(
    "sessions.candidates", "POST", "/v1/sessions/candidates", wire_sessions.Candidates,
    "Historical sessions of a harness found on disk (an absolute path the runtime reads)",
    wire_sessions.CandidatesQuery,
)
SESSION_IMPORT = Operation(
    "sessions.import", "POST", "/v1/sessions/import", wire_sessions.SessionsImported,
    "Attribute historical sessions to a member's experience, redacted", wire_sessions.ImportSessions,
)
EXCERPTS = Operation(
    "curate.excerpts", "POST", "/v1/members/{member}/excerpts", wire_sessions.Excerpts,
    "Excerpts of a member's experience that could become memories", wire_sessions.ExcerptsQuery,
)
EXCERPT_ADMIT = Operation(
    "curate.admit", "POST", "/v1/members/{member}/excerpts/{excerpt}/admit", Receipt,
    "Admit an excerpt into the member's memory through the admission gate", wire_sessions.Admit,
)

LEGACY += (
    SESSION_START, SESSION_END, SESSION_RECOVER, SESSIONS, SESSION_SHOW, SESSION_RAW, SESSION_CANDIDATES,
    SESSION_IMPORT, EXCERPTS, EXCERPT_ADMIT,
)

# Every route: the table above, and the operations declared once (`resident.operations`), which the rest of
# the table is moving to.
# A route of either kind.
AnyOperation = Operation | Declared[Any, Any, Any]
OPERATIONS: tuple[AnyOperation, ...] = (*LEGACY, *DECLARED)
