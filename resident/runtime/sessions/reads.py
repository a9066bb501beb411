"""Reading sessions back, and curating them into memory.

A session is its member's experience: the owner sees every session, a member (a caller acting in
one of its own sessions) only its own — another member's session is answered as unknown, so its
existence does not leak either. Curation offers excerpts of a member's recovered sessions
(`resident.sessions.excerpts`) and admits one through the same gate as every curated memory
(`rt.evolution.admit_memory`): a versioned change whose record names the session and turn it came
from (`source = session:<id>#<turn>`), so it can be traced back and rolled back.
"""

from __future__ import annotations

import msgspec

from resident.checks import clean_line
from resident.errors import InvalidInput, UnknownSession
from resident.memory.records import clean_text
from resident.messages.evolution_calls import AdmitMemory
from resident.messages.limits import MAX_BODY_CHARS
from resident.messages.memory import Receipt
from resident.messages.sessions import SessionExcerpt, SessionRecord, SessionState, SessionTurn
from resident.messages.sessions_calls import (
    AdmitExcerpt,
    Excerpts,
    ExcerptsQuery,
    ListSessions,
    RawPart,
    RawQuery,
    SessionList,
    SessionView,
    ShowSession,
)
from resident.runtime.context import Call, Context
from resident.runtime.evolution import admit_memory
from resident.sessions.excerpts import excerpts_of, parse_excerpt_id, ranked
from resident.sessions.transcript import unpack
from resident.store.session_projections import raw_key
from resident.store.tables import EVOLUTION, RECORDS, SESSION_RAW, SESSION_TURNS, SESSIONS

__all__ = ["MAX_EXCERPTS", "admit", "excerpts", "list_sessions", "raw", "show"]

MAX_EXCERPTS = 200
SOURCE_PREFIX = "session:"
_STATES: tuple[SessionState, ...] = ("running", "recovered")


def list_sessions(context: Context, call: Call, request: ListSessions) -> SessionList:
    """Sessions oldest first, of `member` and in `state` when named; a member session sees only its own."""
    call.caller.authorize("recall")
    return SessionList(sessions=tuple(_sessions(
        context, member=request.member, state=request.state, viewer=call.caller.member
    )))


def show(context: Context, call: Call, request: ShowSession) -> SessionView:
    """A session and its turns in conversation order; a member session sees only its own."""
    call.caller.authorize("recall")
    session = _session(context, request.session, viewer=call.caller.member)
    return SessionView(session=session, turns=tuple(_turns(context, session.id, start=request.start,
                                                           limit=request.limit)))


def raw(context: Context, call: Call, request: RawQuery) -> RawPart:
    """The redacted raw bytes of one transcript file of a session, checked against their digest."""
    call.caller.authorize("recall")
    session = _session(context, request.session, viewer=call.caller.member)
    part = request.part
    if not 0 <= part < len(session.parts):
        raise InvalidInput(f"session {session.id} has {len(session.parts)} transcript parts; parts count from 0")
    with context.store.reader() as reader:
        data = reader.get(SESSION_RAW, raw_key(session.id, part))
    if data is None:
        raise UnknownSession(f"the raw transcript of session {session.id} part {part} is not stored")
    return RawPart(data=unpack(data, session.parts[part]))


def _session(context: Context, session_id: str, *, viewer: str | None = None) -> SessionRecord:
    """One session, if `viewer` (a member, or None for the owner) may see it."""
    context.check_open()
    with context.store.reader() as reader:
        session = reader.get(SESSIONS, session_id) if session_id else None
    if session is None or (viewer is not None and session.member != viewer):
        raise UnknownSession(f"no session {session_id!r} of yours; see `resident session list`")
    return session


def _sessions(
    context: Context, *, member: str | None = None, state: str | None = None, viewer: str | None = None
) -> list[SessionRecord]:
    """Sessions oldest first: of `member` if named, in `state` if named, and only `viewer`'s own for a member."""
    context.check_open()
    if member is not None:
        context.config.member(member)
    if state is not None and state not in _STATES:
        raise InvalidInput(f"a session's state is one of {', '.join(_STATES)}, not {state!r}")
    with context.store.reader() as reader:
        found = [s for _, s in reader.items(SESSIONS)]
    return sorted(
        (
            s for s in found
            if (member is None or s.member == member) and (viewer is None or s.member == viewer)
            and (state is None or s.state == state)
        ),
        key=lambda s: (s.started_at, s.id),
    )


def _turns(context: Context, session_id: str, *, start: int = 0, limit: int | None = None) -> list[SessionTurn]:
    """The turns of a session in conversation order, from `start`, at most `limit`."""
    if start < 0 or (limit is not None and limit < 1):
        raise InvalidInput("turns are read from a start of 0 or more, at least 1 at a time")
    turns: list[SessionTurn] = []
    with context.store.reader() as reader:
        for _, turn in reader.items(SESSION_TURNS, f"{session_id}/"):
            if turn.index >= start:
                turns.append(turn)
            if limit is not None and len(turns) >= limit:
                break
    return turns


def _admitted(context: Context, member: str) -> dict[str, str]:
    """Excerpt id → the memory record curation admitted from it, for `member`."""
    found: dict[str, str] = {}
    with context.store.reader() as reader:
        for _, change in reader.items(EVOLUTION, f"{member}/"):
            if change.kind != "memory-admission" or change.rolled_back_by:
                continue
            record = reader.get(RECORDS, change.subject)
            if record is not None and record.source.startswith(SOURCE_PREFIX):
                found[record.source.removeprefix(SOURCE_PREFIX)] = record.id
    return found


def excerpts(context: Context, _call: Call, request: ExcerptsQuery) -> Excerpts:
    """The excerpts of a member's recovered sessions (or of one) that could become memories, best first."""
    member, limit = request.member, request.limit
    context.config.member(member)
    if not 1 <= limit <= MAX_EXCERPTS:
        raise InvalidInput(f"list from 1 to {MAX_EXCERPTS} excerpts, not {limit}")
    if request.session is not None:
        sessions = [_session(context, request.session, viewer=member)]
    else:
        sessions = _sessions(context, member=member, state="recovered")
    admitted = _admitted(context, member)
    found: list[SessionExcerpt] = []
    for record in sessions:
        for excerpt in excerpts_of(record, _turns(context, record.id)):
            mark = admitted.get(excerpt.id, "")
            found.append(msgspec.structs.replace(excerpt, admitted=mark) if mark else excerpt)
    return Excerpts(excerpts=tuple(ranked(found, {s.id: s.started_at for s in sessions})[:limit]))


def admit(context: Context, call: Call, request: AdmitExcerpt) -> Receipt:
    """Admit one excerpt (or the owner's rewording of it) into a member's memory, citing its session."""
    member, excerpt_id = request.member, request.excerpt
    parsed = parse_excerpt_id(excerpt_id)
    if parsed is None:
        raise InvalidInput(f"{excerpt_id!r} is not an excerpt id; they look like ses_…#12 (see `resident curate`)")
    session_id, turn_index = parsed
    record = _session(context, session_id, viewer=member)
    offered = {e.turn: e for e in excerpts_of(record, _turns(context, session_id))}
    excerpt = offered.get(turn_index)
    if excerpt is None:
        raise InvalidInput(f"turn {turn_index} of {session_id} is not an excerpt curation offers (`resident curate`)")
    already = _admitted(context, member).get(excerpt.id)
    if already:
        raise InvalidInput(f"{excerpt.id} was admitted already, as {already}; roll that back first to admit it again")
    body = clean_text(request.text, "the memory's text", MAX_BODY_CHARS) if request.text is not None else excerpt.text
    basis = clean_line(f"curated from {record.harness} session {session_id}, turn {turn_index}", "basis", 2_000)
    return admit_memory(context, call, AdmitMemory(
        member, body, basis=basis, source=f"{SOURCE_PREFIX}{excerpt.id}", occurred_at=excerpt.at,
        summary=request.summary, importance=request.importance,
    ))
