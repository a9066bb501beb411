"""The harness's own copies of a recovered transcript: redacted in place, kept, or removed.

The store keeps a session's transcript redacted, but the harness wrote its own copy first, in the member's
harness home: Claude Code's project JSONL, Codex's rollout and its SQLite thread history, pi's session file.
`[sessions] harness_transcripts` says what becomes of them once the session is recovered:

* `redact` (the default): each transcript file the session wrote is rewritten with the same redaction the store
  applied, line for line (the harness can still resume it; a redacted value reads `[REDACTED:…]`), and every
  text column of Codex's SQLite thread history is redacted the same way;
* `keep`: left as the harness wrote them, secrets and all (the harness's own resume sees everything);
* `remove`: the session's transcript files are deleted (the harness cannot resume that session); the SQLite
  thread history, which holds every session of the member's Codex home, is redacted rather than deleted.

Nothing here fails the session: what cannot be done becomes a note on it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from resident.files import write_private_file
from resident.runtime.sessions.tree import Manifest
from resident.sessions.lines import redact_lines
from resident.sessions.redaction import Redactor
from resident.sessions.transcript import MAX_FILE_BYTES, TranscriptFile

__all__ = ["HARNESS_TRANSCRIPTS", "HarnessTranscripts", "settle_copies"]

HarnessTranscripts = Literal["redact", "keep", "remove"]
HARNESS_TRANSCRIPTS: tuple[HarnessTranscripts, ...] = ("redact", "keep", "remove")
# Codex's thread history databases in its home.
_THREAD_HISTORY = "thread_history_*.sqlite"


def settle_copies(
    manifest: Manifest, files: Sequence[TranscriptFile], redactor: Redactor, mode: HarnessTranscripts
) -> list[str]:
    """Redact, keep or remove the harness's copies of `files` (see the module); notes on what could not be done."""
    if not manifest.harness_home or mode == "keep":
        return []
    notes: list[str] = []
    for file in files:
        path = Path(file.source)
        try:
            if mode == "remove":
                path.unlink(missing_ok=True)
            else:
                _redact_file(path, redactor)
        except OSError as error:
            notes.append(f"the harness's copy {path.name} could not be {mode}ed ({error.strerror or error})")
    for database in sorted(Path(manifest.harness_home).glob(_THREAD_HISTORY)):
        try:
            _redact_database(database, redactor)
        except (OSError, sqlite3.Error) as error:
            notes.append(f"the harness's thread history {database.name} could not be redacted ({error})")
    return notes


def _redact_file(path: Path, redactor: Redactor) -> None:
    """Rewrite `path` redacted, line for line, if redaction changed anything (a file past the bounds is left)."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
        return
    data = path.read_bytes()
    _, redacted = redact_lines(data, redactor)
    if redacted != data:
        write_private_file(path, redacted)


def _redact_database(database: Path, redactor: Redactor) -> None:
    """Redact every text value of every rowid table of an SQLite database, in one transaction."""
    if database.is_symlink():
        return
    connection = sqlite3.connect(database, timeout=10.0)
    try:
        with connection:
            tables = [row[0] for row in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )]
            for table in tables:
                _redact_table(connection, table, redactor)
    finally:
        connection.close()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _redact_table(connection: sqlite3.Connection, table: str, redactor: Redactor) -> None:
    columns = [row[1] for row in connection.execute(f"PRAGMA table_info({_quoted(table)})")]
    if not columns:
        return
    listed = ", ".join(_quoted(column) for column in columns)
    with contextlib.suppress(sqlite3.OperationalError):  # a WITHOUT ROWID table has no rowid to update by
        rows = connection.execute(f"SELECT rowid, {listed} FROM {_quoted(table)}").fetchall()  # noqa: S608 - names quoted, from the database's own schema
        for rowid, *values in rows:
            changed = {
                column: redactor.redact(value) for column, value in zip(columns, values, strict=True)
                if isinstance(value, str) and redactor.redact(value) != value
            }
            if changed:
                assignments = ", ".join(f"{_quoted(column)} = ?" for column in changed)
                connection.execute(
                    f"UPDATE {_quoted(table)} SET {assignments} WHERE rowid = ?",  # noqa: S608 - names quoted, from the schema
                    (*changed.values(), rowid),
                )
