"""How session events change state: the session row, its turns and raw transcript, the sources index.

A started session attaches to its execution (which then points to it) only while that execution
runs, belongs to the same member and has no session yet; it is recovered once. An imported
session is born recovered, and refused whole if any of its transcripts is attributed already.
"""

from __future__ import annotations

import msgspec

from resident.errors import InvalidInput, UnknownExecution, UnknownSession
from resident.messages.sessions import (
    RecoveredTranscript,
    SessionImported,
    SessionRecord,
    SessionRecovered,
    SessionSource,
    SessionStarted,
)
from resident.store.projecting import projection
from resident.store.tables import EXECUTIONS, SESSION_RAW, SESSION_SOURCES, SESSION_TURNS, SESSIONS
from resident.store.view import View

__all__ = ["raw_key", "source_key", "turn_key"]


def turn_key(session: str, index: int) -> str:
    return f"{session}/{index:08d}"


def raw_key(session: str, part: int) -> str:
    return f"{session}/{part:04d}"


def source_key(harness: str, external_id: str) -> str:
    return f"{harness}/{external_id}"


def _new_session(view: View, session: SessionRecord) -> None:
    if view.get(SESSIONS, session.id) is not None:
        raise InvalidInput(f"a session with id {session.id} already exists")


def _startable(view: View, event: SessionStarted) -> bool:
    session = event.session
    _new_session(view, session)
    if not session.execution:
        return True
    execution = view.get(EXECUTIONS, session.execution)
    if execution is None:
        raise UnknownExecution(f"no execution {session.execution}; see `resident progress` for the recorded ones")
    if execution.member != session.member:
        raise InvalidInput(f"execution {execution.id} was dispatched to {execution.member}, not {session.member}")
    if execution.outcome != "running":
        raise InvalidInput(f"execution {execution.id} already ended ({execution.outcome}); dispatch the task again")
    if execution.session:
        raise InvalidInput(f"execution {execution.id} is already worked on by session {execution.session}")
    return True


@projection(SessionStarted, check=_startable)
def _started(view: View, event: SessionStarted) -> None:
    session = event.session
    view.put(SESSIONS, session.id, session)
    if session.execution:
        execution = view.get(EXECUTIONS, session.execution)
        if execution is not None:
            view.put(EXECUTIONS, execution.id, msgspec.structs.replace(execution, session=session.id))


def _store_transcript(view: View, session: SessionRecord, transcript: RecoveredTranscript) -> None:
    for turn in transcript.turns:
        view.put(SESSION_TURNS, turn_key(session.id, turn.index), turn)
    for part, data in zip(transcript.parts, transcript.raw, strict=True):
        view.put(SESSION_RAW, raw_key(session.id, part.index), data)
        if part.external_id:
            key = source_key(session.harness, part.external_id)
            if view.get(SESSION_SOURCES, key) is None:
                view.put(SESSION_SOURCES, key, SessionSource(session=session.id, part=part.index))


def _consistent(transcript: RecoveredTranscript) -> None:
    if len(transcript.parts) != len(transcript.raw):
        raise InvalidInput("a recovered transcript needs one raw entry per part")


def _recoverable(view: View, event: SessionRecovered) -> bool:
    session = view.get(SESSIONS, event.id)
    if session is None:
        raise UnknownSession(f"no session {event.id}; see `resident session list`")
    if session.state != "running":
        raise InvalidInput(f"session {event.id} was already recovered")
    _consistent(event.transcript)
    return True


@projection(SessionRecovered, check=_recoverable)
def _recovered(view: View, event: SessionRecovered) -> None:
    session = view.get(SESSIONS, event.id)
    if session is None:
        return
    transcript = event.transcript
    recovered = msgspec.structs.replace(
        session, state="recovered", ended_at=event.ended_at, exit_code=event.exit_code, outcome=event.outcome,
        note=event.note, parts=transcript.parts, turns=len(transcript.turns), redactions=transcript.redactions,
    )
    view.put(SESSIONS, session.id, recovered)
    _store_transcript(view, recovered, transcript)


def _importable(view: View, event: SessionImported) -> bool:
    _new_session(view, event.session)
    _consistent(event.transcript)
    for part in event.transcript.parts:
        held = view.get(SESSION_SOURCES, source_key(event.session.harness, part.external_id))
        if part.external_id and held is not None:
            raise InvalidInput(
                f"{event.session.harness} session {part.external_id} is already in session {held.session}"
            )
    return True


@projection(SessionImported, check=_importable)
def _imported(view: View, event: SessionImported) -> None:
    transcript = event.transcript
    session = msgspec.structs.replace(
        event.session, state="recovered", parts=transcript.parts, turns=len(transcript.turns),
        redactions=transcript.redactions,
    )
    view.put(SESSIONS, session.id, session)
    _store_transcript(view, session, transcript)
