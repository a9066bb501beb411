"""A member's sessions travel with it: into its export, and out of it into another home.

Experience lives in the member's `AGENT_CORE`, which is portable, so `member export` carries every
recovered session of the member (its record and its redacted raw transcript parts) under a
checksum of its own. An export is input from outside, so importing trusts none of it but the raw
bytes, and those only after checking: each part must decompress within bounds and match its
digest, and is then redacted again and parsed again here — turns, parts and counts are derived
anew, never taken from the file. A session whose id or transcript this home holds already is
skipped. The first problem refuses the whole import, before anything is written.
"""

from __future__ import annotations

import hashlib

import msgspec

from resident.errors import ExportInvalid, ResidentError
from resident.messages.limits import is_record_id
from resident.messages.portability import ExportedSession, MemberExport
from resident.messages.sessions import RecoveredTranscript, SessionImported, SessionRecord
from resident.runtime.context import Context
from resident.runtime.sessions.transcripts import MAX_SESSION_FILES, redaction_key
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import TranscriptFile, recover, unpack
from resident.store.session_projections import raw_key, source_key
from resident.store.tables import SESSION_RAW, SESSION_SOURCES, SESSIONS

__all__ = ["exported_sessions", "imported_sessions", "sessions_checksum"]


def sessions_checksum(member: str, sessions: tuple[ExportedSession, ...]) -> str:
    return hashlib.sha256(msgspec.msgpack.encode([member, sessions])).hexdigest()


def exported_sessions(context: Context, member: str) -> tuple[ExportedSession, ...]:
    """Every recovered session of `member`, as its export carries it."""
    exported: list[ExportedSession] = []
    with context.store.reader() as reader:
        for _, session in reader.items(SESSIONS):
            if session.member != member or session.state != "recovered":
                continue
            raw = tuple(reader.get(SESSION_RAW, raw_key(session.id, part.index)) or b"" for part in session.parts)
            exported.append(ExportedSession(session=session, raw=raw))
    return tuple(sorted(exported, key=lambda e: (e.session.started_at, e.session.id)))


def _problem(member: str, exported: ExportedSession) -> str | None:
    session = exported.session
    if not is_record_id(session.id):
        return "has a malformed id"
    if session.member != member:
        return f"belongs to {session.member!r}, not to {member}"
    if session.state != "recovered":
        return "was never recovered"
    if len(exported.raw) != len(session.parts) or len(session.parts) > MAX_SESSION_FILES:
        return "does not hold one raw transcript for each of its parts"
    return None


def imported_sessions(context: Context, document: MemberExport, source: str) -> list[SessionImported]:
    """The events that bring `document`'s sessions into this home (checked and derived anew; none held already)."""
    if not document.sessions:
        return []
    if sessions_checksum(document.member, document.sessions) != document.sessions_checksum:
        raise ExportInvalid(f"{source}: its sessions do not match their checksum; they were changed after export")
    key = redaction_key(context.home)
    events: list[SessionImported] = []
    for exported in document.sessions:
        session = exported.session
        problem = _problem(document.member, exported)
        shown = session.id if is_record_id(session.id) else repr(session.id[:40])
        if problem is not None:
            raise ExportInvalid(f"{source}: session {shown} {problem}; nothing was imported")
        try:
            files = [
                TranscriptFile(part.source, unpack(data, part), offset=part.offset, truncated=part.truncated)
                for part, data in zip(session.parts, exported.raw, strict=True)
            ]
        except ResidentError as error:
            raise ExportInvalid(f"{source}: session {shown}: {error.message}; nothing was imported") from None
        redactor = Redactor(key)
        transcript = recover(session.harness, files, redactor)
        if _held(context, session, transcript):
            continue
        record = msgspec.structs.replace(
            session, execution="", task=redactor.redact(session.task), note=redactor.redact(session.note),
            command=tuple(redactor.redact(arg) for arg in session.command),
        )
        events.append(SessionImported(at=context.clock.time(), session=record, transcript=transcript))
    return events


def _held(context: Context, session: SessionRecord, transcript: RecoveredTranscript) -> bool:
    """Whether this home holds the session already (by its id, or any of its transcripts)."""
    with context.store.reader() as reader:
        if reader.get(SESSIONS, session.id) is not None:
            return True
        return any(
            reader.get(SESSION_SOURCES, source_key(session.harness, part.external_id)) is not None
            for part in transcript.parts
            if part.external_id
        )
