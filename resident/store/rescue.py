"""Reading a home that may be damaged: every row that still reads, without trusting the file.

`resident salvage` works on a home no runtime has open (it holds the home's lock) and never
writes to it: it reads a private copy of the data file, padded to the length its metadata names
(pages past a truncated end then read as zeros, a corruption error, instead of SIGBUS). Every
read of that copy runs in a child process (`resident.store.isolation`), because LMDB aborts the
process on some damage; rows read before a crash are kept.

A damaged page cuts a cursor walk short, so rows are read from both ends of each table, and then
by key for the keys known from elsewhere (record ids the event log names; event sequence numbers
between the first and the last that read).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import lmdb

from resident.errors import InvalidInput
from resident.store.environment import open_environment
from resident.store.faults import DATA_FILE, corrupted
from resident.store.home import HomeLock, current_store_dir
from resident.store.isolation import Emit, Isolated, deadline_for, run_isolated
from resident.store.reader import event_key
from resident.store.store import DEFAULT_MAP_SIZE
from resident.store.tables import EVENTS, Table

__all__ = ["Damaged", "TableRows", "data_file", "open_copy"]

# Notes the children send besides LMDB's errors.
_ENTRIES = "entries "
_LENGTH = "length "
_MISS = "miss"


@dataclass
class TableRows:
    """Every row of one table that still read (raw key → raw value), and where reading stopped."""

    rows: dict[bytes, bytes] = field(default_factory=dict)
    damage: list[str] = field(default_factory=list)


@dataclass
class Damaged:
    """A damaged home's data, as a private copy read only by child processes."""

    directory: Path
    map_size: int
    file_size: int

    def rows(self, table: Table[Any]) -> TableRows:
        """Every row of `table` that reads from either end, and how many its own record says it has."""
        found = TableRows()
        forward = self._read(table, _walk_forward)
        expected = _count(forward)
        found.rows.update(forward.rows)
        if _complete(forward):
            return found
        found.damage.append(f"a forward walk stopped after {len(forward.rows)} rows: {_why(forward)}")
        backward = self._read(table, _walk_backward)
        found.rows.update(backward.rows)
        if not _complete(backward):
            found.damage.append(f"a backward walk stopped after {len(backward.rows)} rows: {_why(backward)}")
        if expected > len(found.rows):
            found.damage.append(f"{expected - len(found.rows)} of its {expected} rows could not be read")
        return found

    def recorded(self, table: Table[Any]) -> int:
        """How many rows the table's own record says it holds (0 when that does not read either)."""
        return _count(self._read(table, lambda *_: None))

    def probe(self, table: Table[Any], found: TableRows, keys: Iterable[bytes]) -> None:
        """Add to `found` the rows of `keys` that a walk missed but a lookup by key still reaches."""
        if not found.damage:
            return
        wanted = [key for key in keys if key not in found.rows]
        while wanted:
            probed = self._read(table, partial(_look_up, keys=wanted))
            found.rows.update(probed.rows)
            if not probed.crash:
                return
            # The engine died on the key after the last one it answered for: skip that key, go on.
            answered = len(probed.rows) + sum(1 for note in probed.notes if note.startswith(_MISS))
            wanted = wanted[answered + 1 :]

    def events(self) -> TableRows:
        """The event log's rows; sequence numbers between the first and last readable one are probed."""
        found = self.rows(EVENTS)
        if found.rows:
            numbers = [int.from_bytes(key, "big") for key in found.rows]
            self.probe(EVENTS, found, (event_key(seq) for seq in range(min(numbers), max(numbers))))
        return found

    def _read(self, table: Table[Any], work: Any) -> Isolated:
        directory, map_size = self.directory, self.map_size

        def isolated(emit: Emit, note: Any) -> None:
            env = open_environment(directory, map_size=map_size, readonly=True, lock=False)
            try:
                name = table.name.encode("ascii")
                with env.begin(write=False) as txn:
                    absent = txn.get(name) is None
                if absent:
                    # A table newer than the home (usage, say): it was never written, so it holds no rows.
                    note(f"{_ENTRIES}0")
                    return
                db = env.open_db(name, create=False)
                with env.begin(write=False) as txn:
                    note(f"{_ENTRIES}{txn.stat(db)['entries']}")
                work(env, db, emit, note)
            except lmdb.Error as error:
                note(f"{type(error).__name__}: {error}")
            finally:
                env.close()

        return run_isolated(isolated, deadline=deadline_for(self.file_size))


def data_file(home: Path) -> Path:
    """The data file of `home`'s live store (`InvalidInput` when the home has none)."""
    path = current_store_dir(home) / DATA_FILE
    if not path.is_file():
        raise InvalidInput(f"{home} has no store ({path} does not exist); pass the home to check with --home")
    return path


@contextmanager
def open_copy(home: Path, scratch: Path) -> Iterator[Damaged]:
    """Lock `home`, copy its data file into `scratch` (padded to full length) and read the copy.

    Raises `StoreCorrupted` when not even the copy's metadata reads.
    """
    with HomeLock(home):
        source = data_file(home)
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(source, scratch / DATA_FILE)
    try:
        yield _padded(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _padded(directory: Path) -> Damaged:
    copy = directory / DATA_FILE
    size = copy.stat().st_size
    map_size = max(DEFAULT_MAP_SIZE, size)

    def measure(_emit: Emit, note: Any) -> None:
        try:
            env = open_environment(directory, map_size=map_size, readonly=True, lock=False)
        except lmdb.Error as error:
            note(f"{type(error).__name__}: {error}")
            return
        note(f"{_LENGTH}{(env.info()['last_pgno'] + 1) * env.stat()['psize']}")
        env.close()

    measured = run_isolated(measure, deadline=deadline_for(size))
    lengths = [int(n[len(_LENGTH) :]) for n in measured.notes if n.startswith(_LENGTH)]
    if not lengths:
        raise corrupted(directory, f"not even its metadata reads: {_why(measured)}")
    if size < lengths[0]:
        with copy.open("r+b") as stream:
            stream.truncate(lengths[0])
    return Damaged(directory, max(map_size, lengths[0]), max(size, lengths[0]))


# -- what the children do ------------------------------------------------------------------------


def _walk_forward(env: lmdb.Environment, db: Any, emit: Emit, note: Any) -> None:
    del note
    with env.begin(write=False) as txn, txn.cursor(db=db) as cursor:
        for key, value in cursor:
            emit(bytes(key), bytes(value))


def _walk_backward(env: lmdb.Environment, db: Any, emit: Emit, note: Any) -> None:
    del note
    with env.begin(write=False) as txn, txn.cursor(db=db) as cursor:
        more = cursor.last()
        while more:
            emit(bytes(cursor.key()), bytes(cursor.value()))
            more = cursor.prev()


def _look_up(env: lmdb.Environment, db: Any, emit: Emit, note: Any, *, keys: list[bytes]) -> None:
    """Each key's row, or a miss: every key is answered for, so a crash points at the next one."""
    txn = env.begin(write=False)
    try:
        for key in keys:
            try:
                value = txn.get(key, db=db)
            except lmdb.Error:
                # LMDB's error leaves the transaction unusable; the next key gets a new one.
                txn.abort()
                txn = env.begin(write=False)
                value = None
            if value is None:
                note(_MISS)
            else:
                emit(key, bytes(value))
    finally:
        txn.abort()


# -- reading the children's notes ----------------------------------------------------------------


def _count(result: Isolated) -> int:
    counts = [int(n[len(_ENTRIES) :]) for n in result.notes if n.startswith(_ENTRIES)]
    return counts[0] if counts else 0


def _errors(result: Isolated) -> list[str]:
    return [n for n in result.notes if not n.startswith((_ENTRIES, _LENGTH, _MISS))]


def _complete(result: Isolated) -> bool:
    return not result.crash and not _errors(result)


def _why(result: Isolated) -> str:
    return "; ".join([*_errors(result), *([result.crash] if result.crash else [])]) or "unknown"
