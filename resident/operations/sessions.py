"""Sessions (`rt.sessions`): members at work in Claude Code, Codex, pi or any command, and their recovered experience.

    launch = rt.sessions.start("deven", harness="claude-code", directory="/home/me/src/payments",
                               task="fix the flaky retry test")
    status = launch.run()                              # the harness, in this process
    session = rt.sessions.end(launch.session, status, token=launch.token)

    rt.sessions.run(rt.sessions.start("alice", harness="command", command=("make", "test"), directory=...))
    rt.sessions.list(member="deven"); rt.sessions.show(session.id).turns
    rt.sessions.candidates("codex"); rt.sessions.import_sessions(["019a2d7a"], member="deven", harness="codex")
    rt.sessions.excerpts("deven"); rt.sessions.admit("deven", "ses_…#17")

Starting projects the member into the working directory and answers what running the harness takes; the
process that asked runs it (`resident.sessions.launch`), in `Runtime.open`'s process or `Runtime.connect`'s,
and ending restores the directory, recovers the transcript (redacted) as the member's experience and ends the
execution. A session whose process died is ended by `recover()` (and by every `resident session start`). A
member session may list, show and read the raw transcripts of its own sessions only. See `docs/sessions.md`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from resident.messages.memory import Receipt
from resident.messages.sessions import SessionCandidate, SessionExcerpt, SessionRecord
from resident.messages.sessions_calls import (
    AdmitExcerpt,
    Candidates,
    CandidatesQuery,
    Ended,
    EndSession,
    Excerpts,
    ExcerptsQuery,
    ImportSessions,
    Launched,
    ListSessions,
    RawPart,
    RawQuery,
    Recovered,
    RecoverSessions,
    SessionList,
    SessionsImported,
    SessionView,
    ShowSession,
    StartSession,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

if TYPE_CHECKING:
    from resident.sessions.launch import SessionLaunch

__all__ = [
    "ADMIT", "CANDIDATES", "END", "EXCERPTS", "IMPORT", "LIST", "OPERATIONS", "RAW", "RECOVER", "SHOW", "START",
    "SessionsSurface",
]

_SERVICES = "resident.runtime.sessions"
# Ending a session recovers its transcript, and an import recovers a history's: a client waits up to this long (s).
_LONG = 600.0


def _launch(reply: Launched) -> SessionLaunch:
    from resident.sessions.launch import SessionLaunch  # noqa: PLC0415 - only a start runs a harness

    return SessionLaunch.of(reply)


def _ended(reply: Ended) -> SessionRecord | None:
    return reply.session


def _recovered(reply: Recovered) -> list[SessionRecord]:
    return list(reply.recovered)


def _sessions(reply: SessionList) -> list[SessionRecord]:
    return list(reply.sessions)


def _data(reply: RawPart) -> bytes:
    return reply.data


def _candidates(reply: Candidates) -> list[SessionCandidate]:
    return list(reply.candidates)


def _excerpts(reply: Excerpts) -> list[SessionExcerpt]:
    return list(reply.excerpts)


START = declare(
    "sessions.start",
    "Start a member's session (record, grant token, projection); the launching process runs the harness",
    StartSession, Launched, route=Route("POST", "/v1/sessions/start"), service=f"{_SERVICES}.start:start",
    result=_launch,
)
END = declare(
    "sessions.end", "End a session: restore its directory, recover its transcript, end its execution", EndSession,
    Ended, route=Route("POST", "/v1/sessions/{session}/end", wait=_LONG), service=f"{_SERVICES}.end:end",
    result=_ended,
)
RECOVER = declare(
    "sessions.recover", "End the sessions whose launching process died", RecoverSessions, Recovered,
    route=Route("POST", "/v1/sessions/recover", wait=_LONG), service=f"{_SERVICES}.end:recover_sessions",
    result=_recovered,
)
LIST = declare(
    "sessions.list", "Sessions, oldest first (a member session: only its own)", ListSessions, SessionList,
    route=Route("POST", "/v1/sessions/list"), service=f"{_SERVICES}.reads:list_sessions", access=Access.MEMBER,
    result=_sessions,
)
SHOW = declare(
    "sessions.show", "A session and its redacted turns (a member session: only its own)", ShowSession, SessionView,
    route=Route("POST", "/v1/sessions/{session}/show"), service=f"{_SERVICES}.reads:show", access=Access.MEMBER,
)
RAW = declare(
    "sessions.raw", "One transcript file of a session as stored, redacted (a member session: only its own)",
    RawQuery, RawPart, route=Route("POST", "/v1/sessions/{session}/raw"), service=f"{_SERVICES}.reads:raw",
    access=Access.MEMBER, result=_data,
)
CANDIDATES = declare(
    "sessions.candidates", "Historical sessions of a harness found on disk (an absolute path the runtime reads)",
    CandidatesQuery, Candidates, route=Route("POST", "/v1/sessions/candidates"),
    service=f"{_SERVICES}.history:candidates", result=_candidates,
)
IMPORT = declare(
    "sessions.import", "Attribute historical sessions to a member's experience, redacted", ImportSessions,
    SessionsImported, route=Route("POST", "/v1/sessions/import", wait=_LONG),
    service=f"{_SERVICES}.history:import_sessions",
)
EXCERPTS = declare(
    "curate.excerpts", "Excerpts of a member's experience that could become memories", ExcerptsQuery, Excerpts,
    route=Route("POST", "/v1/members/{member}/excerpts"), service=f"{_SERVICES}.reads:excerpts", result=_excerpts,
)
ADMIT = declare(
    "curate.admit", "Admit an excerpt into the member's memory through the admission gate", AdmitExcerpt, Receipt,
    route=Route("POST", "/v1/members/{member}/excerpts/{excerpt}/admit"), service=f"{_SERVICES}.reads:admit",
)

OPERATIONS = (START, END, RECOVER, LIST, SHOW, RAW, CANDIDATES, IMPORT, EXCERPTS, ADMIT)


class SessionsSurface(Surface):
    """`rt.sessions`: start, end, recover, read, import and curate member sessions (see the module docstring)."""

    start = method(START)
    astart = awaitable(START)
    end = method(END)
    aend = awaitable(END)
    recover = method(RECOVER)
    arecover = awaitable(RECOVER)
    show = method(SHOW)
    ashow = awaitable(SHOW)
    raw = method(RAW)
    araw = awaitable(RAW)
    candidates = method(CANDIDATES)
    acandidates = awaitable(CANDIDATES)
    import_sessions = method(IMPORT)
    aimport_sessions = awaitable(IMPORT)
    excerpts = method(EXCERPTS)
    aexcerpts = awaitable(EXCERPTS)
    admit = method(ADMIT)
    aadmit = awaitable(ADMIT)

    def run(self, launch: SessionLaunch, *, log: Path | None = None) -> SessionRecord | None:
        """Run a started session's harness here to the end (output to `log`, if given), then end the session."""
        interrupted = True
        status: int | None = None
        try:
            status = launch.run(log=log)
            interrupted = False
        finally:
            ended = self.end(launch.session, status, interrupted=interrupted, token=launch.token)
        return ended

    # Last: below it, `list` in the class body would name this method.
    list = method(LIST)
    alist = awaitable(LIST)
