"""`resident salvage DEST`: copy what still reads and verifies out of a damaged home into a new one.

The damaged home is locked and only read (through a private copy of its data file, see
`resident.store.rescue`). Its state comes from two sources that damage rarely hits in the same
place: the state tables, read row by row from both ends of each table (and record ids the log
names looked up by key), and the state the readable part of the event log rebuilds. For each
record, the first version that decodes and whose content matches its digest is kept — the live
row, else the one the log rebuilds; a record neither gives is lost and named in the report, with
why. Banks, members, the Realm cursor, grants, executions and corrections are kept the same way.

The new home is written like any other: each kept row becomes the event that creates it,
committed through the store (state and log together), so the new home's log rebuilds its state.
Records keep everything they had, their replication state included, so a record Realm withheld
stays withheld. Vectors and keyword terms are caches and are rebuilt by the substrate at the
first open; replication attempt counters start over. `resident.toml` is copied if it parses.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from resident.config import load_config
from resident.errors import ConfigError, DiskFull, InvalidInput, MapFull, StoreClosed, StoreFailed
from resident.messages.coordination import (
    Correction,
    CorrectionRecorded,
    Execution,
    ExecutionStarted,
    Grant,
    GrantIssued,
)
from resident.messages.events import AnyEvent
from resident.messages.members import MemberEntry
from resident.messages.memory import (
    Bank,
    BankCreated,
    MemberImported,
    MemoryConfig,
    MemoryRecord,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
)
from resident.messages.replication import InvalidationCursorAdvanced, RealmCursor
from resident.messages.store import Commit, SalvageReport
from resident.runtime.home.doctor import record_problem
from resident.store.home import CONFIG_FILE, HomeLock, ensure_home, write_private_file
from resident.store.replay import replay_rows
from resident.store.rescue import Damaged, TableRows, open_copy
from resident.store.store import Store
from resident.store.tables import (
    BANKS,
    CORRECTIONS,
    EXECUTIONS,
    GRANTS,
    MEMBERS,
    MEMORY_CONFIG,
    REALM_CURSOR,
    RECORDS,
    USAGE,
    Table,
)
from resident.store.usage import served_usage
from resident.store.view import DictView

__all__ = ["salvage"]

T = TypeVar("T")
# Events per commit into the new home: large enough to be quick, small enough to stay well inside the map.
_CHUNK = 500
_SCRATCH = ".salvage-source"


@dataclass
class _Kept:
    """What the salvage keeps, by kind, and what it could not."""

    config: MemoryConfig | None = None
    banks: dict[str, Bank] = field(default_factory=dict)
    records: dict[str, MemoryRecord] = field(default_factory=dict)
    members: dict[str, MemberEntry] = field(default_factory=dict)
    cursor: RealmCursor | None = None
    grants: dict[str, Grant] = field(default_factory=dict)
    executions: dict[str, Execution] = field(default_factory=dict)
    corrections: dict[str, Correction] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)


def salvage(home: Path, dest: Path) -> SalvageReport:
    """Copy every row of `home` that reads and verifies into a new home at `dest` (empty or absent)."""
    home, dest = home.absolute(), dest.absolute()
    _check_destination(home, dest)
    created = not dest.exists()
    ensure_home(dest)
    try:
        with open_copy(home, dest / _SCRATCH) as damaged:
            kept = _read(damaged)
        config_note = _copy_config(home, dest)
        _write(dest, kept)
    except BaseException:
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    if config_note:
        kept.lost.append(config_note)
    return SalvageReport(
        source=str(home),
        dest=str(dest),
        complete=not kept.lost and not kept.damage,
        saved=_counts(kept),
        lost=tuple(kept.lost),
        damage=tuple(kept.damage),
    )


def _check_destination(home: Path, dest: Path) -> None:
    if dest == home or home in dest.parents:
        raise InvalidInput(f"salvage into {dest}: give a new directory outside the damaged home")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInput(f"salvage destination {dest} is not an empty directory; pass a new one")


# -- reading what survived -----------------------------------------------------------------------


def _read(damaged: Damaged) -> _Kept:
    kept = _Kept()
    events = damaged.events()
    kept.damage += [f"events: {note}" for note in events.damage]
    rebuilt, problems = replay_rows(sorted(events.rows.items()))
    kept.damage += problems
    config_rows = _rows(damaged, MEMORY_CONFIG, kept)
    kept.config = _decoded(MEMORY_CONFIG, config_rows.get(b"memory"), kept) or rebuilt.get(MEMORY_CONFIG, "memory")
    kept.banks = _merged(damaged, BANKS, rebuilt, kept)
    _keep_records(damaged, rebuilt, kept)
    kept.members = _merged(damaged, MEMBERS, rebuilt, kept)
    cursor_rows = _rows(damaged, REALM_CURSOR, kept)
    kept.cursor = _decoded(REALM_CURSOR, cursor_rows.get(b"cursor"), kept) or rebuilt.get(REALM_CURSOR, "cursor")
    kept.grants = _merged(damaged, GRANTS, rebuilt, kept)
    kept.executions = _merged(damaged, EXECUTIONS, rebuilt, kept)
    kept.corrections = {
        key: correction
        for key, correction in _merged(damaged, CORRECTIONS, rebuilt, kept).items()
        if _has_execution(correction, kept)
    }
    return kept


def _rows(damaged: Damaged, table: Table[Any], kept: _Kept, probe: Iterable[bytes] = ()) -> dict[bytes, bytes]:
    found: TableRows = damaged.rows(table)
    damaged.probe(table, found, probe)
    kept.damage += [f"{table.name}: {note}" for note in found.damage]
    return found.rows


def _decoded(table: Table[T], raw: bytes | None, kept: _Kept, key: bytes = b"") -> T | None:
    if raw is None:
        return None
    try:
        return table.decode(raw)
    except msgspec.DecodeError as error:
        kept.damage.append(f"{table.name}/{key.decode('utf-8', 'backslashreplace')} does not decode: {error}")
        return None


def _merged(damaged: Damaged, table: Table[T], rebuilt: DictView, kept: _Kept) -> dict[str, T]:
    """The live rows of `table` that decode, completed by the rows the event log rebuilds."""
    merged: dict[str, T] = {}
    for key, raw in _rows(damaged, table, kept).items():
        value = _decoded(table, raw, kept, key)
        if value is not None:
            merged[key.decode("utf-8")] = value
    for key, raw in rebuilt.items(table):
        merged.setdefault(key.decode("utf-8"), table.decode(raw))
    return merged


def _keep_records(damaged: Damaged, rebuilt: DictView, kept: _Kept) -> None:
    replayed = {key.decode("utf-8"): RECORDS.decode(raw) for key, raw in rebuilt.items(RECORDS)}
    live = _rows(damaged, RECORDS, kept, probe=(record_id.encode("utf-8") for record_id in replayed))
    # Recall usage is counted beside the records, not in the log: what of it still reads is kept.
    usage = _rows(damaged, USAGE, kept)
    for record_id in sorted({key.decode("utf-8") for key in live} | replayed.keys()):
        candidates = (_decoded(RECORDS, live.get(record_id.encode("utf-8")), kept, record_id.encode("utf-8")),
                      replayed.get(record_id))
        verified = next((c for c in candidates if c is not None and c.id == record_id and not record_problem(c)), None)
        if verified is not None:
            kept.records[record_id] = served_usage(
                verified, _decoded(USAGE, usage.get(record_id.encode("utf-8")), kept, record_id.encode("utf-8"))
            )
            if candidates[0] is not None and verified is not candidates[0]:
                kept.damage.append(f"record {record_id}: its stored row does not verify; the version its events "
                                   "rebuild was kept")
            continue
        why = next((record_problem(c) for c in candidates if c is not None), None)
        kept.lost.append(why or f"record {record_id}: no readable copy (its row and its events are damaged)")
    unknown = damaged.recorded(RECORDS) - len({key.decode("utf-8") for key in live} | replayed.keys())
    if unknown > 0:
        kept.lost.append(
            f"{unknown} records could be read neither from their table nor from the event log; their ids are unknown"
        )


def _has_execution(correction: Correction, kept: _Kept) -> bool:
    if correction.execution in kept.executions:
        return True
    kept.lost.append(f"correction {correction.id}: the execution it corrects ({correction.execution}) was lost")
    return False


# -- writing the new home ------------------------------------------------------------------------


def _copy_config(home: Path, dest: Path) -> str:
    """Copy `resident.toml` if it parses; otherwise say why the new home starts with the default team."""
    source = home / CONFIG_FILE
    if not source.exists():
        return ""
    try:
        load_config(source)
    except (ConfigError, OSError) as error:
        return f"{CONFIG_FILE} was not copied ({error}); the new home starts with the default team"
    write_private_file(dest / CONFIG_FILE, source.read_bytes())
    return ""


def _write(dest: Path, kept: _Kept) -> None:
    """Commit the events that recreate what was kept; one the new home refuses is reported, not fatal."""
    with HomeLock(dest):
        store = Store.open(dest)
        try:
            for chunk in _chunks(_events(kept), _CHUNK):
                outcomes = store.commit([Commit(events=(event,)) for event in chunk])
                for event, (_, error, _) in zip(chunk, outcomes, strict=True):
                    if isinstance(error, StoreFailed | StoreClosed | DiskFull | MapFull):
                        raise error
                    if error is not None:
                        kept.lost.append(f"{type(event).__name__} was refused by the new home: {error}")
        finally:
            store.close()


def _events(kept: _Kept) -> Iterator[AnyEvent]:
    """The events that create, in a fresh home, every row the salvage keeps (in an order they apply)."""
    config = kept.config or MemoryConfig()
    # Records are admitted only while memory is on; it is switched off again at the end if it was off.
    yield MemorySwitchedOn(at=config.changed_at, provider=config.provider, embedder=config.embedder)
    banks = dict(kept.banks)
    for record in kept.records.values():
        if record.bank not in banks:
            banks[record.bank] = _bank_of(record)
            kept.damage.append(f"bank {record.bank} was rebuilt from its records")
    for bank in banks.values():
        yield BankCreated(at=bank.created_at, bank=bank)
    for record in kept.records.values():
        yield RecordAdmitted(at=record.recorded_at, record=record)
    for entry in kept.members.values():
        for world in entry.worlds or (None,):
            yield MemberImported(at=entry.joined_at, member=entry.name, world=world, records=0, role=entry.role)
    if kept.cursor is not None and kept.cursor.seq:
        yield InvalidationCursorAdvanced(at=0.0, seq=kept.cursor.seq)
    for grant in kept.grants.values():
        yield GrantIssued(at=grant.issued_at, grant=grant)
    for execution in kept.executions.values():
        # Each kept correction counts itself again as it is recorded.
        yield ExecutionStarted(at=execution.started_at, execution=msgspec.structs.replace(execution, corrections=0))
    for correction in kept.corrections.values():
        yield CorrectionRecorded(at=correction.at, correction=correction)
    if not config.enabled:
        yield MemorySwitchedOff(at=config.changed_at)


def _bank_of(record: MemoryRecord) -> Bank:
    return Bank(
        name=record.bank,
        scope=record.scope,
        owner=record.owner,
        counterpart=record.counterpart,
        world=record.world,
        created_at=record.recorded_at,
        created_by="salvage",
    )


def _chunks(events: Iterable[AnyEvent], size: int) -> Iterator[list[AnyEvent]]:
    chunk: list[AnyEvent] = []
    for event in events:
        chunk.append(event)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _counts(kept: _Kept) -> dict[str, int]:
    return {
        "records": len(kept.records),
        "banks": len(kept.banks),
        "members": len(kept.members),
        "grants": len(kept.grants),
        "executions": len(kept.executions),
        "corrections": len(kept.corrections),
    }
