"""`resident doctor`: check a closed home whole and say what is wrong with it.

Checks, in order (each one a `Finding`):

* configuration — `resident.toml` parses;
* structure — py-lmdb's offline verifier walks every page of the data file (in Python, so a
  wrecked file cannot crash the check); when it finds damage, the checks below are skipped,
  because they read through LMDB itself, and `resident salvage` is the way on;
* tables — every value of every table decodes as its table's type;
* event log — every event decodes and replays, and the state rebuilt from the log alone equals
  the live state, key by key;
* records — every memory record's digest matches its content;
* sessions — no member session was left running: with the home closed none can run, so a session
  folder with a manifest (readable or not), or a session stored as running, needs `resident session
  recover` (whose restore of the directory it also names).

The home is locked for the check (no runtime may have it open) and nothing in it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lmdb
import msgspec

from resident.config import load_config
from resident.errors import ConfigError
from resident.memory.integrity import is_intact
from resident.messages.memory import MemoryRecord
from resident.messages.store import PROBLEM_LIMIT, DoctorReport, Finding
from resident.runtime.sessions.tree import MANIFEST_FILE
from resident.store.faults import structure_problems
from resident.store.home import CONFIG_FILE, HomeLock
from resident.store.replay import replay_rows
from resident.store.rescue import data_file
from resident.store.store import DEFAULT_MAP_SIZE, open_environment
from resident.store.tables import EVENTS, RECORDS, SESSIONS, STATE_TABLES, TABLES, Table

__all__ = ["examine", "record_problem"]

_SKIPPED = "the data file's structure is damaged; `resident salvage DEST` copies out what still reads"


def examine(home: Path) -> DoctorReport:
    """Run every check on `home` (which must not be open) and report what each found."""
    with HomeLock(home):
        path = data_file(home)
        findings = [_configuration(home / CONFIG_FILE), _finding("structure", 1, structure_problems(path))]
        if findings[-1].problem_count:
            skipped = ("tables", "event log", "records", "sessions")
            findings += [Finding(check=name, skipped=_SKIPPED) for name in skipped]
        else:
            findings += _logical_checks(home, path)
    return DoctorReport(
        home=str(home), data_file=str(path), sound=all(f.sound for f in findings), findings=tuple(findings)
    )


def record_problem(record: MemoryRecord) -> str | None:
    """Why `record` does not verify (its content no longer matches its digest), or None."""
    if not is_intact(record):
        return f"record {record.id}: its content does not match its digest (changed or damaged on disk)"
    return None


def _finding(check: str, checked: int, problems: list[str]) -> Finding:
    return Finding(
        check=check, checked=checked, problem_count=len(problems), problems=tuple(problems[:PROBLEM_LIMIT])
    )


def _configuration(path: Path) -> Finding:
    try:
        load_config(path)
    except (ConfigError, OSError) as error:
        return _finding("configuration", 1, [str(error)])
    return _finding("configuration", 1, [])


def _logical_checks(home: Path, path: Path) -> list[Finding]:
    size = path.stat().st_size
    env = open_environment(path.parent, map_size=max(DEFAULT_MAP_SIZE, size), readonly=True)
    try:
        with env.begin(write=False) as txn:
            # A table newer than the home (usage, say) is not in its file: it holds no rows, which is no damage.
            present = [t for t in TABLES if txn.get(t.name.encode("ascii")) is not None]
            dbs = {t.name: env.open_db(t.name.encode("ascii"), txn=txn, create=False) for t in present}
            rows = {t.name: list(_raw_items(txn, dbs[t.name])) if t.name in dbs else [] for t in TABLES}
    finally:
        env.close()
    return [_tables(rows), _event_log(rows), _records(rows[RECORDS.name]), _sessions(home, rows)]


def _sessions(home: Path, rows: dict[str, list[tuple[bytes, bytes]]]) -> Finding:
    """Sessions left running (see the module docstring)."""
    folders = sorted(p.parent.name for p in (home / "sessions").glob(f"*/{MANIFEST_FILE}")) if home.is_dir() else []
    running: list[str] = []
    for key, value in rows[SESSIONS.name]:
        try:
            record = SESSIONS.decode(value)
        except msgspec.DecodeError:
            continue  # the tables check names it
        if record.state == "running":
            running.append(key.decode("utf-8", "replace"))
    problems = [
        f"session {name} was left running (its manifest is in {home / 'sessions' / name}); "
        "`resident session recover` ends it and restores its directory"
        for name in folders
    ]
    problems += [
        f"session {name} is stored as running but has no readable manifest; `resident session recover {name}` "
        "ends it"
        for name in running if name not in folders
    ]
    return _finding("sessions", len(set(folders) | set(running)), problems)


def _raw_items(txn: lmdb.Transaction, db: Any) -> Iterator[tuple[bytes, bytes]]:
    with txn.cursor(db=db) as cursor:
        for key, value in cursor:
            yield bytes(key), bytes(value)


def _tables(rows: dict[str, list[tuple[bytes, bytes]]]) -> Finding:
    problems: list[str] = []
    checked = 0
    for table in TABLES:
        for key, value in rows[table.name]:
            checked += 1
            problem = _undecodable(table, key, value)
            if problem:
                problems.append(problem)
    return _finding("tables", checked, problems)


def _undecodable(table: Table[Any], key: bytes, value: bytes) -> str | None:
    try:
        table.decode(value)
    except msgspec.DecodeError as error:
        return f"{table.name}/{_name(table, key)} does not decode: {error}"
    return None


def _event_log(rows: dict[str, list[tuple[bytes, bytes]]]) -> Finding:
    events = rows[EVENTS.name]
    rebuilt, problems = replay_rows(events)
    for table in STATE_TABLES:
        live = dict(rows[table.name])
        replayed = dict(rebuilt.items(table))
        for key in sorted(live.keys() | replayed.keys()):
            name = f"{table.name}/{_name(table, key)}"
            if key not in replayed:
                problems.append(f"{name} is in the live state but no event made it")
            elif key not in live:
                problems.append(f"{name} was made by the event log but is missing from the live state")
            elif live[key] != replayed[key]:
                problems.append(f"{name} differs from the state its events rebuild")
    return _finding("event log", len(events), problems)


def _records(rows: list[tuple[bytes, bytes]]) -> Finding:
    problems: list[str] = []
    for key, value in rows:
        try:
            record = RECORDS.decode(value)
        except msgspec.DecodeError:
            continue  # counted by the tables check
        problem = record_problem(record) if record.id == key.decode("utf-8", "replace") else (
            f"record {_name(RECORDS, key)} is stored under another id ({record.id})"
        )
        if problem:
            problems.append(problem)
    return _finding("records", len(rows), problems)


def _name(table: Table[Any], key: bytes) -> str:
    if table is EVENTS:
        return str(int.from_bytes(key, "big"))
    return key.decode("utf-8", "backslashreplace")
