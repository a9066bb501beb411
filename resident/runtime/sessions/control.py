"""`rt.sessions`: members at work in Claude Code, Codex, pi or any command, and their recovered experience.

    launch = rt.sessions.start("deven", harness="claude-code", directory="~/src/payments",
                               task="fix the flaky retry test")
    status = launch.run()                              # the harness, in this terminal
    session = rt.sessions.end(launch.session, status, injected=(launch.token,))

    rt.sessions.run(rt.sessions.start("alice", harness="command", command=("make", "test")))  # in-process
    rt.sessions.list(member="deven"); rt.sessions.turns(session.id)
    rt.sessions.candidates("codex"); rt.sessions.import_sessions(["019a2d7a"], member="deven", harness="codex")
    rt.sessions.excerpts("deven"); rt.sessions.admit("deven", "ses_…#17")

Starting projects the member into the working directory and leaves a manifest behind; ending
restores the directory, recovers the transcript (redacted) as the member's experience and ends the
execution. Between the two the runtime need not be open, nor be in the process that runs the
harness: the `resident session start` command closes it while the harness runs (so the member's
callbacks can open the home themselves), or asks a running `resident up` to start and end the
session and runs the harness itself in between (`process` names it). A session whose process
died is ended by `recover()` (and by every start). See `docs/sessions.md`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from resident.messages.memory import Receipt
from resident.messages.sessions import SessionCandidate, SessionExcerpt, SessionRecord, SessionTurn
from resident.runtime.sessions.end import end_session, recover_stale
from resident.runtime.sessions.history import ImportReport, candidates, import_sessions
from resident.runtime.sessions.launch import SessionLaunch
from resident.runtime.sessions.reads import (
    admit_excerpt,
    excerpts,
    list_sessions,
    raw_part,
    read_session,
    read_turns,
)
from resident.runtime.sessions.start import DEFAULT_TTL, SessionRequest, start_session

if TYPE_CHECKING:
    from resident.runtime.coordination import Session
    from resident.runtime.runtime import Runtime

__all__ = ["SessionsControl"]


class SessionsControl:
    """Member sessions: start, end, recover, read, import and curate."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    # -- running ------------------------------------------------------------------------------------

    def start(
        self,
        member: str,
        *,
        harness: str,
        command: Sequence[str] = (),
        directory: str = ".",
        task: str | None = None,
        role: str = "implement",
        ttl: float = DEFAULT_TTL,
        dispatched: Session | None = None,
        process: int | None = None,
        search_path: str | None = None,
    ) -> SessionLaunch:
        """Start `member`'s session (a new execution on `task`, or the running execution `task` names,
        or the one `dispatched` already records) and project it into `directory`.

        The harness runs in this process unless `process` names the one that will run it (the
        `resident session start` a running runtime serves); `search_path` is where its command is
        looked up (this process's PATH by default).
        """
        request = SessionRequest(
            member=member, harness=harness, command=tuple(command), directory=directory, task=task, role=role, ttl=ttl,
            process=process, search_path=search_path,
        )
        return start_session(self._runtime, request, dispatched=dispatched)

    def end(
        self, session_id: str, exit_code: int | None, *, interrupted: bool = False, injected: Sequence[str] = ()
    ) -> SessionRecord | None:
        """End a session: restore its directory, recover its transcript, end its execution."""
        return end_session(self._runtime, session_id, exit_code, interrupted=interrupted, injected=injected)

    def run(self, launch: SessionLaunch, *, log: Path | None = None) -> SessionRecord | None:
        """Run a started session's harness to the end (output to `log`, if given), then end the session."""
        interrupted = False
        status: int | None = None
        try:
            status = launch.run(log=log)
        except BaseException:
            interrupted = True
            raise
        finally:
            ended = self.end(launch.session, status, interrupted=interrupted, injected=(launch.token,))
        return ended

    def recover(self, session_id: str | None = None) -> list[SessionRecord]:
        """End the sessions whose process died (or only `session_id`); the sessions as recovered."""
        return recover_stale(self._runtime, session_id)

    # -- reading --------------------------------------------------------------------------------------

    def get(self, session_id: str, *, viewer: str | None = None) -> SessionRecord:
        return read_session(self._runtime, session_id, viewer=viewer)

    def turns(
        self, session_id: str, *, viewer: str | None = None, start: int = 0, limit: int | None = None
    ) -> list[SessionTurn]:
        """A session's redacted turns in conversation order."""
        return read_turns(self._runtime, session_id, viewer=viewer, start=start, limit=limit)

    def raw(self, session_id: str, part: int = 0, *, viewer: str | None = None) -> bytes:
        """The redacted raw bytes of one of a session's transcript files."""
        return raw_part(self._runtime, session_id, part, viewer=viewer)

    # -- history and curation -------------------------------------------------------------------------

    def candidates(self, harness: str, path: str | None = None) -> list[SessionCandidate]:
        """Historical sessions of `harness` on disk that the owner may import."""
        return candidates(self._runtime, harness, path)

    def import_sessions(
        self, ids: Sequence[str], *, member: str, harness: str, path: str | None = None
    ) -> ImportReport:
        """Attribute historical sessions to `member`'s experience (the owner's decision, never automatic)."""
        return import_sessions(self._runtime, ids, member=member, harness=harness, path=path)

    def excerpts(self, member: str, *, session: str | None = None, limit: int = 20) -> list[SessionExcerpt]:
        """Excerpts of `member`'s experience that could become memories, best first."""
        return excerpts(self._runtime, member, session=session, limit=limit)

    def admit(
        self, member: str, excerpt_id: str, *, text: str | None = None, summary: str | None = None,
        importance: float = 0.5,
    ) -> Receipt:
        """Admit an excerpt into `member`'s memory through the admission gate, citing its session."""
        return admit_excerpt(self._runtime, member, excerpt_id, text=text, summary=summary, importance=importance)

    # Last: below its definition, `list` in an annotation would name this method.
    def list(
        self, *, member: str | None = None, state: str | None = None, viewer: str | None = None
    ) -> list[SessionRecord]:
        """Sessions, oldest first; `viewer` (a member) sees only its own."""
        return list_sessions(self._runtime, member=member, state=state, viewer=viewer)
