"""Ending a session: the repository restored first, then the transcript recovered, then the execution.

The working directory is put back before anything else, so a failure later (a full disk) never
leaves the member behind in the repository. The transcript files the session wrote are then read,
redacted and parsed, and stored with the session in one event; every started session is recovered
this way, with whatever was found (no transcript is a note, not a failure). Last, the execution
the session worked on ends with the harness's outcome, unless it ended already. The session's
folder (manifest, copies, the command's transcript) goes only when all of that is durable; a copy
of a projected file the harness changed stays there.

A session whose process died (a crash, `kill -9`, a closed terminal) is ended the same way by the
next one to look (`recover_stale`): the next session start, or `resident session recover`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from resident.errors import InvalidInput, UnknownSession
from resident.messages.coordination import Outcome
from resident.messages.coordination_calls import FinishRequest
from resident.messages.sessions import SessionRecord, SessionRecovered
from resident.messages.sessions_calls import Ended, EndSession, Recovered, RecoverSessions
from resident.messages.store import Commit
from resident.runtime.caller import Caller
from resident.runtime.context import Call, Context
from resident.runtime.coordination import finish, result_digest
from resident.runtime.sessions.harness_config import restore_harness_home
from resident.runtime.sessions.harness_copies import settle_copies
from resident.runtime.sessions.launch_files import forget_launch
from resident.runtime.sessions.liveness import live
from resident.runtime.sessions.transcripts import file_cwd, layout, read_transcript, redaction_key, scan, session_files
from resident.runtime.sessions.tree import (
    MANIFEST_FILE,
    Manifest,
    ProjectionTree,
    is_session_id,
    load_manifest,
    manifests,
    save_manifest,
    sessions_root,
)
from resident.sessions.background import read_exit_status
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import MAX_FILE_BYTES, TranscriptFile, recover
from resident.store.tables import EXECUTIONS, SESSIONS

__all__ = ["MAX_SESSION_BYTES", "end", "end_session", "recover_sessions", "recover_stale"]

# What one session may bring back in all its transcript files together.
MAX_SESSION_BYTES = 2 * MAX_FILE_BYTES


def _same_directory(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _transcripts(manifest: Manifest, notes: list[str]) -> list[TranscriptFile]:
    """The transcript files this session wrote, read within the bounds."""
    if manifest.transcript:
        found = read_transcript(Path(manifest.transcript))
        if found is None and os.path.lexists(manifest.transcript):
            notes.append("$RESIDENT_TRANSCRIPT was made something other than a file (a folder, FIFO or link); not read")
        elif found is None:
            notes.append("the command wrote no transcript to $RESIDENT_TRANSCRIPT")
        return [found] if found is not None else []
    if not manifest.harness_home:
        return []
    root = Path(manifest.harness_home) / layout(manifest.harness).folder
    files: list[TranscriptFile] = []
    budget = MAX_SESSION_BYTES
    for relative, offset in session_files(manifest.snapshot, scan(root, manifest.harness)):
        path = root / relative
        cwd = file_cwd(path)
        if cwd and not _same_directory(cwd, manifest.directory):
            continue  # the same member at work in another directory at the same time
        found = read_transcript(path, offset, min(MAX_FILE_BYTES, budget))
        if found is None or not found.data:
            continue
        files.append(found)
        budget -= len(found.data)
        if budget <= 0:
            notes.append(f"transcripts past {MAX_SESSION_BYTES} bytes were left unread")
            break
    if not files:
        notes.append(f"no {manifest.harness} transcript of this directory was found in {root}")
    return files


def _outcome(exit_code: int | None, *, interrupted: bool, died: bool, failure: str) -> tuple[Outcome, str]:
    if failure:
        return "failed", failure
    if died:
        return "failed", "the process running the session died; it was recovered later"
    if interrupted:
        return "cancelled", "the session was interrupted"
    if exit_code == 0:
        return "succeeded", ""
    return "failed", f"the harness exited with status {exit_code}"


def _tidy(folder: Path, *, keep_originals: bool) -> None:
    """Remove the session's folder, keeping the copies of projected files the harness changed.

    With `keep_originals` (a restore that was not exact) the backed-up originals stay too: the
    session's note points the owner to them. The manifest goes either way, so no later start or
    recover tries this session again.
    """
    kept = ("changed-", "backup-") if keep_originals else ("changed-",)
    for item in folder.iterdir() if folder.is_dir() else ():
        if item.name.startswith(kept):
            continue
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def end_session(
    context: Context,
    session_id: str,
    exit_code: int | None,
    *,
    interrupted: bool = False,
    died: bool = False,
    failure: str = "",
    injected: Sequence[str] = (),
) -> SessionRecord | None:
    """End session `session_id` (see the module docstring): the session as stored, None if it never started."""
    context.check_open()
    if not is_session_id(session_id):
        # A name like `..` would make the session's folder another folder of the home (or above it).
        raise UnknownSession(f"{session_id[:40]!r} is not a session id; see `resident session list`")
    home = context.home
    folder = sessions_root(home) / session_id
    manifest = load_manifest(folder / MANIFEST_FILE)
    with context.store.reader() as reader:
        record = reader.get(SESSIONS, session_id)
    if manifest is None and record is None:
        raise UnknownSession(f"no session {session_id}; see `resident session list`")
    notes: list[str] = []
    unrestored: list[str] = []
    if manifest is not None:
        manifest.state = "ending"
        save_manifest(home, manifest)
        tree = ProjectionTree(home, manifest)
        notes += tree.restore()
        notes += restore_harness_home(manifest, folder)
        unrestored = tree.unrestored
    elif record is not None and record.state == "running":
        unrestored = [
            f"its manifest ({folder / MANIFEST_FILE}) was removed or corrupted, so what it projected into"
            f" {record.directory} (AGENTS.md, the harness's files) was not restored; the originals are kept in {folder}"
        ]
    if unrestored:
        # Either the directory is as it was, or the session says it failed and what was left.
        failure = "; ".join([failure, *unrestored] if failure else unrestored)
        notes = [note for note in notes if note not in unrestored]
    outcome, error = _outcome(exit_code, interrupted=interrupted, died=died, failure=failure)
    if record is not None and record.state == "running":
        files = _transcripts(manifest, notes) if manifest is not None else []
        if manifest is None:
            notes.append("its manifest was lost, so its transcript could not be found")
        redactor = Redactor(redaction_key(home), injected)
        transcript = recover(record.harness, files, redactor)
        # The harness's own copies: redacted the same way (a fresh count), kept, or removed, as configured.
        notes += settle_copies(
            manifest, files, Redactor(redaction_key(home), injected), context.config.harness_transcripts
        ) if manifest is not None else []
        # The note quotes failures and paths the harness chose: stored like the transcript, redacted.
        note = redactor.redact("; ".join([error, *notes] if error else notes)[:4000])
        event = SessionRecovered(
            at=context.clock.time(), id=session_id, ended_at=context.clock.time(), transcript=transcript,
            exit_code=exit_code, outcome=outcome, note=note,
        )
        context.write(Commit(events=(event,)))
        digest = result_digest(part.digest for part in transcript.parts)
    else:
        digest = ""
    execution = record.execution if record is not None else (manifest.execution if manifest else "")
    if execution:
        # What the runner ran is done with (a reassignment reads it from this session's record). Removed before
        # the finish, so whoever awaits the execution finds it gone.
        with contextlib.suppress(OSError, InvalidInput):
            forget_launch(home, execution)
    if execution and (record is not None or (manifest is not None and manifest.owns_execution)):
        _finish(context, execution, outcome, error, digest)
    _tidy(folder, keep_originals=bool(unrestored))
    with context.store.reader() as reader:
        return reader.get(SESSIONS, session_id)


def _finish(context: Context, execution_id: str, outcome: Outcome, error: str, digest: str) -> None:
    with context.store.reader() as reader:
        execution = reader.get(EXECUTIONS, execution_id)
    if execution is not None and execution.outcome == "running":
        finish(context, Call(Caller()), FinishRequest(execution_id, outcome, result_digest=digest, error=error))


def recover_stale(context: Context, session_id: str | None = None) -> list[SessionRecord]:
    """End every session whose process is gone (or just `session_id`); the sessions as stored.

    A session named by id whose manifest was corrupted is ended too (as failed, its originals kept):
    without the manifest no one can tell whether its process lives, so only the owner's word ends it.
    """
    ended: list[SessionRecord] = []
    if session_id is not None and is_session_id(session_id) and _manifest_unreadable(context, session_id):
        record = end_session(context, session_id, None, died=True)
        return [record] if record is not None else []
    for manifest in manifests(context.home):
        if session_id is not None and manifest.session != session_id:
            continue
        if live(manifest):
            continue
        # A session the execution runner ran in the background left its harness's exit status, if it ended.
        status = read_exit_status(sessions_root(context.home) / manifest.session)
        record = end_session(context, manifest.session, status, died=status is None)
        if record is not None:
            ended.append(record)
    return ended


def _manifest_unreadable(context: Context, session_id: str) -> bool:
    """Whether `session_id` is still running by the store while its manifest cannot be read."""
    if load_manifest(sessions_root(context.home) / session_id / MANIFEST_FILE) is not None:
        return False
    with context.store.reader() as reader:
        record = reader.get(SESSIONS, session_id)
    return record is not None and record.state == "running"


def end(context: Context, _call: Call, request: EndSession) -> Ended:
    """End a session (see `end_session`) with the harness's status; its grant token is redacted from the transcript."""
    injected = () if request.token is None else (request.token,)
    return Ended(session=end_session(
        context, request.session, request.exit_code, interrupted=request.interrupted, injected=injected
    ))


def recover_sessions(context: Context, _call: Call, request: RecoverSessions) -> Recovered:
    """End the sessions whose process died (or only the one named); the sessions as recovered."""
    return Recovered(recovered=tuple(recover_stale(context, request.session)))
