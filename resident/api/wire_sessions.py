"""Request and answer bodies of the session routes (`resident session …` and `resident curate`).

A session's harness runs in the process of the `resident session start` that launched it, never in
the runtime's: starting answers what that process needs to run it (the command, the directory, the
session's own environment variables, its grant token), and ending takes the harness's status back.
The start names the launching process (`process`), so a session whose launcher died is found and
recovered, and the launcher's `PATH` (`search_path`), where the harness's command is looked up.
Light: msgspec and the message structs only.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from resident.messages.bounds import Name, Named, Text, Unit
from resident.messages.sessions import Harness, SessionCandidate, SessionExcerpt, SessionRecord, SessionTurn

__all__ = [
    "Admit",
    "Candidates",
    "CandidatesQuery",
    "EndSession",
    "Ended",
    "Excerpts",
    "ExcerptsQuery",
    "ImportSessions",
    "Launched",
    "ListSessions",
    "RawPart",
    "RawQuery",
    "RecoverSessions",
    "Recovered",
    "SessionList",
    "SessionView",
    "SessionsImported",
    "SkippedSession",
    "StartSession",
    "TurnsQuery",
]

Path = Annotated[str, msgspec.Meta(min_length=1, max_length=4_096)]
Argument = Annotated[str, msgspec.Meta(max_length=64_000)]
# The runtime's own checks say the finer limits (1,000 arguments, a ttl of 60 s to 30 days, ...).
Count = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]


class _Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A request body: unknown fields are refused rather than ignored."""


class _Answer(msgspec.Struct, frozen=True, kw_only=True):
    """An answer body of the API itself."""


# -- requests ------------------------------------------------------------------------------------


class StartSession(_Request, frozen=True):
    """Start a member's session, to be run by process `process` (see the module docstring).

    `directory` is absolute; `command` is looked up on `search_path` (the launcher's PATH).
    """

    member: Named
    harness: Harness
    directory: Path
    process: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    command: Annotated[tuple[Argument, ...], msgspec.Meta(max_length=2_000)] = ()
    task: Text | None = None
    role: Annotated[str, msgspec.Meta(max_length=100)] = "implement"
    ttl: Annotated[float, msgspec.Meta(ge=0.0, le=1e9)] = 12 * 3600.0
    search_path: Annotated[str, msgspec.Meta(max_length=64_000)] | None = None


class EndSession(_Request, frozen=True):
    """End the session the path names: the harness's status (None when it never returned one).

    `token` is the session's grant token, redacted from the transcript wherever the harness wrote it.
    """

    exit_code: Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)] | None = None
    interrupted: bool = False
    token: Annotated[str, msgspec.Meta(max_length=200)] | None = None


class RecoverSessions(_Request, frozen=True):
    """End the sessions (or the one named) whose launching process died."""

    session: Named | None = None


class ListSessions(_Request, frozen=True):
    member: Named | None = None
    state: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class TurnsQuery(_Request, frozen=True):
    start: Count = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 200


class RawQuery(_Request, frozen=True):
    part: Count = 0


class CandidatesQuery(_Request, frozen=True):
    """Where to look for a harness's history: an absolute folder or file on the runtime's machine."""

    harness: Harness
    path: Path


class ImportSessions(_Request, frozen=True):
    ids: Annotated[tuple[Name, ...], msgspec.Meta(min_length=1, max_length=1_000)]
    member: Named
    harness: Harness
    path: Path


class ExcerptsQuery(_Request, frozen=True):
    session: Named | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 20


class Admit(_Request, frozen=True):
    """Admit the excerpt the path names into the member's memory (the owner may reword it)."""

    text: Text | None = None
    summary: Text | None = None
    importance: Unit = 0.5


# -- answers -------------------------------------------------------------------------------------


class Launched(_Answer, frozen=True):
    """A started session, as its launcher runs it: `variables` are the session's own environment
    (its grant token among them), set over the launcher's environment for the harness."""

    session: str
    member: str
    harness: Harness
    execution: str
    argv: tuple[str, ...]
    directory: str
    variables: dict[str, str]
    token: str


class Ended(_Answer, frozen=True):
    """The session as stored once ended (None if it never started)."""

    session: SessionRecord | None


class Recovered(_Answer, frozen=True):
    recovered: tuple[SessionRecord, ...]


class SessionList(_Answer, frozen=True):
    sessions: tuple[SessionRecord, ...]


class SessionView(_Answer, frozen=True):
    session: SessionRecord
    turns: tuple[SessionTurn, ...]


class RawPart(_Answer, frozen=True):
    """One transcript file of a session, as stored (redacted)."""

    data: bytes


class Candidates(_Answer, frozen=True):
    candidates: tuple[SessionCandidate, ...]


class SkippedSession(_Answer, frozen=True):
    id: str
    why: str


class SessionsImported(_Answer, frozen=True):
    imported: tuple[SessionRecord, ...]
    skipped: tuple[SkippedSession, ...]


class Excerpts(_Answer, frozen=True):
    excerpts: tuple[SessionExcerpt, ...]

