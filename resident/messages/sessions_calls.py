"""The session operations' requests and replies (`rt.sessions`, `resident session …` and `resident curate`).

A session's harness runs in the process that starts it, never in the runtime's: `start` answers what that process
needs to run it (the command, the directory, the session's own environment variables, its grant token), and `end`
takes the harness's status back. A path names a file on the runtime's machine; over the API it is absolute. Bounds
are wide: the runtime's own checks say the finer limits (1,000 arguments, a ttl of 60 s to 30 days, ...).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated

import msgspec

from resident.messages.bounds import FilePath, Name, Named, Text, Unit
from resident.messages.sessions import Harness, SessionCandidate, SessionExcerpt, SessionRecord, SessionTurn

__all__ = [
    "AdmitExcerpt", "Candidates", "CandidatesQuery", "EndSession", "Ended", "Excerpts", "ExcerptsQuery",
    "ImportSessions", "Launched", "ListSessions", "RawPart", "RawQuery", "RecoverSessions", "Recovered",
    "SessionList", "SessionView", "SessionsImported", "ShowSession", "SkippedSession", "StartSession",
]

Argument = Annotated[str, msgspec.Meta(max_length=64_000)]
Count = Annotated[int, msgspec.Meta(ge=0, le=1_000_000)]
DEFAULT_TTL = 12 * 3600.0


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class _Reply(msgspec.Struct, frozen=True, kw_only=True):
    """A reply."""


class _Start(_Request, frozen=True):
    member: Named


class StartSession(_Start, frozen=True, kw_only=True):
    """Start `member`'s session in `harness` (a new execution on `task`, or the running execution of the member that
    `task` names) and project the member into `directory`.

    `command` is looked up on `search_path` (the runtime's PATH when left out). `process` is the process that runs
    the harness, so that its death is what recovery sees: this one in process; over the API it is required, with
    an absolute `directory`. `sandbox` makes the command run in bubblewrap, hidden from the home.
    """

    harness: Harness
    command: Annotated[tuple[Argument, ...], msgspec.Meta(max_length=2_000)] = ()
    directory: Annotated[str, msgspec.Meta(min_length=1, max_length=4_096)] = "."
    task: Text | None = None
    role: Annotated[str, msgspec.Meta(max_length=100)] = "implement"
    ttl: Annotated[float, msgspec.Meta(ge=0.0, le=1e9)] = DEFAULT_TTL
    process: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] | None = None
    search_path: Annotated[str, msgspec.Meta(max_length=64_000)] | None = None
    sandbox: bool = False


class Launched(_Reply, frozen=True):
    """A started session, as its launcher runs it: `variables` are the session's own environment (its grant token
    among them), set over the launcher's environment for the harness."""

    session: str
    member: str
    harness: Harness
    execution: str
    argv: tuple[str, ...]
    directory: str
    variables: dict[str, str]
    token: str


class _End(_Request, frozen=True):
    session: Named
    exit_code: Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)] | None = None


class EndSession(_End, frozen=True, kw_only=True):
    """End a session with the harness's status (None when it never returned one): its directory restored, its
    transcript recovered, its execution ended. `token` is its grant token, redacted from the transcript."""

    interrupted: bool = False
    token: Annotated[str, msgspec.Meta(max_length=200)] | None = None


class Ended(_Reply, frozen=True):
    """The session as stored once ended (None if it never started)."""

    session: SessionRecord | None


class RecoverSessions(_Request, frozen=True):
    """End the sessions (or the one named) whose launching process died."""

    session: Named | None = None


class Recovered(_Reply, frozen=True):
    recovered: tuple[SessionRecord, ...]


class ListSessions(_Request, frozen=True, kw_only=True):
    """Sessions oldest first, of `member` and in `state` when named (a member session sees only its own)."""

    member: Named | None = None
    state: Annotated[str, msgspec.Meta(max_length=100)] | None = None


class SessionList(_Reply, frozen=True):
    sessions: tuple[SessionRecord, ...]


class _Show(_Request, frozen=True):
    session: Named


class ShowSession(_Show, frozen=True, kw_only=True):
    """A session and its redacted turns in conversation order, `limit` of them from `start`."""

    start: Count = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=100_000)] = 200


class SessionView(_Reply, frozen=True):
    session: SessionRecord
    turns: tuple[SessionTurn, ...]


class RawQuery(_Request, frozen=True):
    """One transcript file of a session (its parts count from 0), as stored: redacted."""

    session: Named
    part: Count = 0


class RawPart(_Reply, frozen=True):
    """One transcript file of a session, as stored (redacted)."""

    data: bytes


class CandidatesQuery(_Request, frozen=True):
    """A harness's historical sessions found on disk, newest first: in `path` (a folder or file on the runtime's
    machine), else where the harness keeps them."""

    harness: Harness
    path: FilePath | None = None


class Candidates(_Reply, frozen=True):
    candidates: tuple[SessionCandidate, ...]


class _Import(_Request, frozen=True):
    ids: Annotated[Collection[Name], msgspec.Meta(min_length=1, max_length=1_000)]


class ImportSessions(_Import, frozen=True, kw_only=True):
    """Attribute historical sessions (their ids, or unambiguous prefixes, from `candidates`) to `member`'s experience,
    redacted; one held by a session already is skipped."""

    member: Named
    harness: Harness
    path: FilePath | None = None


class SkippedSession(_Reply, frozen=True):
    id: str
    why: str


class SessionsImported(_Reply, frozen=True):
    imported: tuple[SessionRecord, ...]
    skipped: tuple[SkippedSession, ...]


class _Excerpts(_Request, frozen=True):
    member: Named


class ExcerptsQuery(_Excerpts, frozen=True, kw_only=True):
    """Excerpts of `member`'s recovered sessions (or of one) that could become memories, best first."""

    session: Named | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1_000)] = 20


class Excerpts(_Reply, frozen=True):
    excerpts: tuple[SessionExcerpt, ...]


class _Admit(_Request, frozen=True):
    member: Named
    excerpt: Named


class AdmitExcerpt(_Admit, frozen=True, kw_only=True):
    """Admit an excerpt (`ses_…#12`) into `member`'s memory through the admission gate, citing its session; the
    owner may reword it (`text`)."""

    text: Text | None = None
    summary: Text | None = None
    importance: Unit = 0.5
