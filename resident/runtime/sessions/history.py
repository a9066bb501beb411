"""Importing history: harness sessions started outside the runtime, attributed by the owner.

A session started directly in a terminal has no member: nothing attributes it automatically.
`candidates` lists what a harness keeps on disk (its usual place, or a path the owner names) with
enough to recognise each one — its id, when, where, its title — and whether it is attributed
already. `import_sessions` takes the ones the owner picks into a member's experience, through the
same redaction and parsing as a session's end; a transcript already held by any session is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

from resident.errors import InvalidInput, UnknownSession
from resident.ids import new_id
from resident.memory.banks import bank_name
from resident.messages.sessions import Harness, SessionCandidate, SessionImported, SessionRecord
from resident.messages.sessions_calls import (
    Candidates,
    CandidatesQuery,
    ImportSessions,
    SessionsImported,
    SkippedSession,
)
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.runtime.sessions.start import check_harness
from resident.runtime.sessions.transcripts import layout, read_transcript, redaction_key, walk
from resident.sessions.entries import clean_id
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import parse_file, recover
from resident.store.session_projections import source_key
from resident.store.tables import SESSION_SOURCES, SESSIONS

__all__ = ["MAX_CANDIDATES", "candidates", "default_root", "import_sessions"]

MAX_CANDIDATES = 500
# A candidate is described from the start of its file; the rest is read only when it is imported.
_HEAD = 1 << 20
_PREFIX_MIN = 6


def default_root(harness: Harness, environ: Mapping[str, str], user_home: Path) -> Path:
    """Where `harness` keeps its sessions for this user (its own environment variables first)."""
    match harness:
        case "claude-code":
            return Path(environ.get("CLAUDE_CONFIG_DIR") or user_home / ".claude") / "projects"
        case "codex":
            return Path(environ.get("CODEX_HOME") or user_home / ".codex") / "sessions"
        case "pi":
            if environ.get("PI_CODING_AGENT_SESSION_DIR"):
                return Path(environ["PI_CODING_AGENT_SESSION_DIR"])
            return Path(environ.get("PI_CODING_AGENT_DIR") or user_home / ".pi" / "agent") / "sessions"
        case _:
            raise InvalidInput("the command harness keeps no history of its own; name the transcripts with --path")


def _root(harness: Harness, path: Path | None) -> Path:
    root = path.expanduser() if path else default_root(harness, os.environ, Path.home())
    if not root.exists():
        raise InvalidInput(f"{root} does not exist; name the folder or file of {harness} transcripts with --path")
    return root


def _files(harness: Harness, root: Path) -> list[tuple[Path, os.stat_result]]:
    if root.is_file() and not root.is_symlink():
        return [(root, root.stat())]
    # A folder the owner names may sit above the harness's own layout (`~/.claude` for `projects`).
    found = walk(root, harness, depth=layout(harness).depth + 2)
    return sorted(found, key=lambda item: item[1].st_mtime, reverse=True)[:MAX_CANDIDATES]


def _describe(context: Context, harness: Harness, path: Path, info: os.stat_result, key: bytes) -> SessionCandidate:
    head = read_transcript(path, 0, _HEAD)
    parsed, _, _ = parse_file(harness, head.data if head else b"", Redactor(key))
    meta = parsed.meta
    external = meta.external_id or clean_id(PurePath(path).stem)
    # Else the first thing the user asked (not the context a harness wraps in tags, like Codex's).
    title = meta.title or next(
        (
            d.text for e in parsed.entries for d in e.drafts
            if d.role == "user" and d.kind == "text" and not d.text.lstrip().startswith("<")
        ),
        "",
    )
    with context.store.reader() as reader:
        held = reader.get(SESSION_SOURCES, source_key(harness, external))
    return SessionCandidate(
        id=external, harness=harness, path=str(path), size=info.st_size, modified_at=info.st_mtime,
        title=" ".join(title.split())[:120], cwd=meta.cwd[:500], attributed_to=held.session if held else "",
    )


def candidates(context: Context, call: Call, request: CandidatesQuery) -> Candidates:
    """The historical sessions of a harness found on disk, newest first (titles redacted)."""
    return Candidates(candidates=tuple(_candidates(context, call, request.harness, request.path)))


def _candidates(context: Context, call: Call, harness: str, path: Path | None) -> list[SessionCandidate]:
    context.check_open()
    path = None if path is None else Path(path)  # a Python caller may name it as text
    if call.remote and path is not None and not path.is_absolute():
        raise InvalidInput(f"the harness's history must be an absolute path, not {str(path)!r}")
    chosen = check_harness(harness)
    key = redaction_key(context.home)
    return [_describe(context, chosen, file, info, key) for file, info in _files(chosen, _root(chosen, path))]


def _pick(found: Sequence[SessionCandidate], wanted: str) -> SessionCandidate:
    exact = [c for c in found if c.id == wanted]
    if exact:
        return exact[0]
    matches = [c for c in found if len(wanted) >= _PREFIX_MIN and c.id.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    why = "matches several sessions; give more of it" if matches else "is not among them"
    raise UnknownSession(f"{wanted!r} {why} (see `resident session candidates`)")


def import_sessions(context: Context, call: Call, request: ImportSessions) -> SessionsImported:
    """Attribute the picked historical sessions to a member's experience, redacted; one event each."""
    context.check_open()
    owner = context.config.member(request.member).name
    if not request.ids:
        raise InvalidInput("name the sessions to import (their ids, from `resident session candidates`)")
    chosen = check_harness(request.harness)
    found = _candidates(context, call, chosen, request.path)
    picked = [_pick(found, wanted) for wanted in request.ids]  # every id is checked before anything is imported
    imported: list[SessionRecord] = []
    skipped: list[SkippedSession] = []
    key = redaction_key(context.home)
    for candidate in dict.fromkeys(picked):
        if candidate.attributed_to:
            skipped.append(SkippedSession(id=candidate.id, why=f"already in session {candidate.attributed_to}"))
            continue
        file = read_transcript(Path(candidate.path))
        if file is None:
            skipped.append(SkippedSession(id=candidate.id, why="it is no longer a readable file"))
            continue
        transcript = recover(chosen, [file], Redactor(key))
        part = transcript.parts[0]
        now = context.clock.time()
        record = SessionRecord(
            id=new_id("ses"), member=owner, harness=chosen, origin="imported", state="recovered",
            started_at=part.started_at if part.started_at is not None else candidate.modified_at,
            bank=bank_name("AGENT_CORE", owner), task=part.title or candidate.title, directory=part.cwd,
            ended_at=candidate.modified_at, note=f"imported by the owner from {part.source}",
        )
        context.write(Commit(events=(SessionImported(at=now, session=record, transcript=transcript),)))
        with context.store.reader() as reader:
            stored = reader.get(SESSIONS, record.id)
        imported.append(stored if stored is not None else record)
    return SessionsImported(imported=tuple(imported), skipped=tuple(skipped))
