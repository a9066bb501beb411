"""Reading a home that may be damaged: its structure checked offline, and every row that still reads.

`resident doctor` and `resident salvage` work on a home no runtime has open (they hold its lock)
and never write to it. The structure is checked by py-lmdb's offline verifier, which walks the
file's pages in Python without handing them to the engine, so a hostile or wrecked file cannot
crash the process. Reading rows does go through the engine, so it is done on a private copy of
the data file, padded to the length its metadata names: pages past a truncated end then read as
zeros (a corruption error) instead of killing the process with SIGBUS.

A damaged page cuts a cursor walk short, so rows are read from both ends of each table, and then
by key for the keys known from elsewhere (record ids named by the event log; event sequence
numbers between the first and the last that read).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lmdb

from resident.errors import InvalidInput
from resident.store.faults import DATA_FILE, corrupted
from resident.store.home import HomeLock, current_store_dir
from resident.store.reader import event_key
from resident.store.store import DEFAULT_MAP_SIZE, open_environment
from resident.store.tables import EVENTS, TABLES, Table

__all__ = ["Damaged", "TableRows", "data_file", "open_copy", "read_rows"]


@dataclass
class TableRows:
    """Every row of one table that still read (raw key → raw value), and where reading stopped."""

    rows: dict[bytes, bytes] = field(default_factory=dict)
    damage: list[str] = field(default_factory=list)


@dataclass
class Damaged:
    """A read-only view of a damaged home's data (a private copy): its environment and tables."""

    env: lmdb.Environment
    dbs: dict[str, Any]
    missing: list[str]

    def rows(self, table: Table[Any]) -> TableRows:
        """Every row of `table` that reads from either end."""
        db = self.dbs.get(table.name)
        if db is None:
            return TableRows(damage=[f"table {table.name} does not open"])
        found = read_rows(self.env, db)
        expected = self.recorded(table)
        if expected > len(found.rows):
            found.damage.append(f"{expected - len(found.rows)} of its {expected} rows could not be read")
        return found

    def recorded(self, table: Table[Any]) -> int:
        """How many rows the table's own record says it holds (0 when that does not read either)."""
        db = self.dbs.get(table.name)
        try:
            with self.env.begin(write=False) as txn:
                return int(txn.stat(db)["entries"]) if db is not None else 0
        except lmdb.Error:
            return 0

    def probe(self, table: Table[Any], found: TableRows, keys: Iterable[bytes]) -> None:
        """Add to `found` the rows of `keys` that a walk missed but a lookup by key still reaches."""
        db = self.dbs.get(table.name)
        if db is None or not found.damage:
            return
        txn = self.env.begin(write=False)
        try:
            for key in keys:
                if key in found.rows:
                    continue
                try:
                    value = txn.get(key, db=db)
                except lmdb.Error:
                    # LMDB's error leaves the transaction unusable; the next key gets a new one.
                    txn.abort()
                    txn = self.env.begin(write=False)
                    continue
                if value is not None:
                    found.rows[key] = bytes(value)
        finally:
            txn.abort()

    def events(self) -> TableRows:
        """The event log's rows; sequence numbers between the first and last readable one are probed."""
        found = self.rows(EVENTS)
        if found.rows:
            numbers = [int.from_bytes(key, "big") for key in found.rows]
            self.probe(EVENTS, found, (event_key(seq) for seq in range(min(numbers), max(numbers))))
        return found


def data_file(home: Path) -> Path:
    """The data file of `home`'s live store (`InvalidInput` when the home has none)."""
    path = current_store_dir(home) / DATA_FILE
    if not path.is_file():
        raise InvalidInput(f"{home} has no store ({path} does not exist); pass the home to check with --home")
    return path


@contextmanager
def open_copy(home: Path, scratch: Path) -> Iterator[Damaged]:
    """Lock `home`, copy its data file into `scratch` (padded to full length) and open the copy read-only.

    Raises `StoreCorrupted` when not even the copy opens (its metadata is unreadable).
    """
    with HomeLock(home):
        source = data_file(home)
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        copy = scratch / DATA_FILE
        shutil.copyfile(source, copy)
    try:
        yield _open(copy)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _open(copy: Path) -> Damaged:
    size = copy.stat().st_size
    try:
        env = open_environment(copy.parent, map_size=max(DEFAULT_MAP_SIZE, size), readonly=True, lock=False)
    except lmdb.Error as error:
        raise corrupted(copy.parent, f"not even its metadata reads: {error}") from None
    needed = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    if size < needed:
        env.close()
        with copy.open("r+b") as stream:
            stream.truncate(needed)
        env = open_environment(copy.parent, map_size=max(DEFAULT_MAP_SIZE, needed), readonly=True, lock=False)
    dbs: dict[str, Any] = {}
    missing: list[str] = []
    for table in TABLES:
        try:
            # Without a transaction of ours: LMDB then commits the open, so the handle outlives it.
            dbs[table.name] = env.open_db(table.name.encode("ascii"), create=False)
        except lmdb.Error as error:
            missing.append(f"table {table.name} does not open: {error}")
    return Damaged(env, dbs, missing)


def read_rows(env: lmdb.Environment, db: Any) -> TableRows:
    """Every row of `db` that reads: forward until damage, then backward from the end until damage.

    Each walk has a transaction of its own: after LMDB reports damage, the one it happened in is unusable.
    """
    found = TableRows()
    try:
        with env.begin(write=False) as txn, txn.cursor(db=db) as cursor:
            for key, value in cursor:
                found.rows[bytes(key)] = bytes(value)
    except lmdb.Error as error:
        found.damage.append(f"a forward walk stopped after {len(found.rows)} rows: {error}")
    else:
        return found
    before = len(found.rows)
    try:
        with env.begin(write=False) as txn, txn.cursor(db=db) as cursor:
            more = cursor.last()
            while more and bytes(cursor.key()) not in found.rows:
                found.rows[bytes(cursor.key())] = bytes(cursor.value())
                more = cursor.prev()
    except lmdb.Error as error:
        found.damage.append(f"a backward walk stopped after {len(found.rows) - before} rows: {error}")
    return found
