"""Typed key/value views that projections read and write: one over an LMDB write transaction,
one over plain dicts (for rebuilding state from the event log in memory)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, TypeVar

import lmdb

from resident.store.tables import EVENTS, Table

__all__ = ["DictView", "TxnView", "View"]

T = TypeVar("T")
_UNSEEN = object()


class View(Protocol):
    """What a projection may do: read and write state tables. The event log is not reachable here."""

    def get(self, table: Table[T], key: str) -> T | None: ...

    def put(self, table: Table[T], key: str, value: T) -> None: ...

    def insert(self, table: Table[T], key: str, value: T) -> bool:
        """Put `value` under `key` unless the key is present; whether it was put."""
        ...

    def delete(self, table: Table[Any], key: str) -> None:
        """Remove `key` from `table` (an index entry whose reason is gone); absent is fine."""
        ...


def _refuse_events(table: Table[Any]) -> None:
    # The event log is append-only: projections never touch it, only the store's commit does.
    if table is EVENTS:
        raise PermissionError("the event log is append-only and cannot be written through a view")


class TxnView:
    """A view over one LMDB transaction (used only inside the writer's commit).

    It remembers every value it read or wrote, so a commit of many writes decodes the memory
    configuration and each bank once rather than once per write. A view over a nested
    transaction keeps its own layer on top of its parent's; `merge()` folds it into the parent
    when that transaction commits, and dropping it is enough when it aborts. Only projections
    write through views, and they never touch the event log, so nothing else can make a
    remembered value stale.
    """

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any], parent: TxnView | None = None) -> None:
        self._txn = txn
        self._dbs = dbs
        self._parent = parent
        self._seen: dict[tuple[str, str], Any] = {}

    def get(self, table: Table[T], key: str) -> T | None:
        entry = (table.name, key)
        value = self._remembered(entry)
        if value is not _UNSEEN:
            return value  # type: ignore[no-any-return]
        raw = self._txn.get(key.encode("utf-8"), db=self._dbs[table.name])
        decoded = None if raw is None else table.decode(bytes(raw))
        self._seen[entry] = decoded
        return decoded

    def put(self, table: Table[T], key: str, value: T) -> None:
        _refuse_events(table)
        self._txn.put(key.encode("utf-8"), table.encode(value), db=self._dbs[table.name])
        self._seen[(table.name, key)] = value

    def insert(self, table: Table[T], key: str, value: T) -> bool:
        _refuse_events(table)
        entry = (table.name, key)
        remembered = self._remembered(entry)
        if remembered is not _UNSEEN and remembered is not None:
            return False
        # One B-tree descent that refuses an existing key, instead of a lookup and then a put.
        if not self._txn.put(key.encode("utf-8"), table.encode(value), db=self._dbs[table.name], overwrite=False):
            return False
        self._seen[entry] = value
        return True

    def delete(self, table: Table[Any], key: str) -> None:
        _refuse_events(table)
        self._txn.delete(key.encode("utf-8"), db=self._dbs[table.name])
        self._seen[(table.name, key)] = None

    def _remembered(self, entry: tuple[str, str]) -> Any:
        """What this view or one it is nested in read or wrote under `entry`, else `_UNSEEN`."""
        view: TxnView | None = self
        while view is not None:
            value = view._seen.get(entry, _UNSEEN)
            if value is not _UNSEEN:
                return value
            view = view._parent
        return _UNSEEN

    def nested(self, txn: lmdb.Transaction) -> TxnView:
        """A view over `txn`, a transaction nested in this view's one."""
        return TxnView(txn, self._dbs, parent=self)

    def merge(self) -> None:
        """Fold what this nested view saw into its parent (its transaction committed)."""
        if self._parent is not None:
            self._parent._seen.update(self._seen)


class DictView:
    """A view over in-memory dicts of encoded values, keyed like the LMDB tables."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[bytes, bytes]] = {}

    def get(self, table: Table[T], key: str) -> T | None:
        raw = self.tables.get(table.name, {}).get(key.encode("utf-8"))
        return None if raw is None else table.decode(raw)

    def put(self, table: Table[T], key: str, value: T) -> None:
        _refuse_events(table)
        self.tables.setdefault(table.name, {})[key.encode("utf-8")] = table.encode(value)

    def insert(self, table: Table[T], key: str, value: T) -> bool:
        _refuse_events(table)
        rows = self.tables.setdefault(table.name, {})
        encoded_key = key.encode("utf-8")
        if encoded_key in rows:
            return False
        rows[encoded_key] = table.encode(value)
        return True

    def delete(self, table: Table[Any], key: str) -> None:
        _refuse_events(table)
        self.tables.get(table.name, {}).pop(key.encode("utf-8"), None)

    def items(self, table: Table[Any]) -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted(self.tables.get(table.name, {}).items()))
