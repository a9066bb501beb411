"""Durable state: one LMDB environment per home, typed tables, projections and the event log."""

from resident.store.backup import backup, restore, verify_backup
from resident.store.home import HomeLock, ensure_home, resolve_home
from resident.store.store import Reader, Store
from resident.store.tables import SCHEMA_VERSION, Table

__all__ = [
    "SCHEMA_VERSION",
    "HomeLock",
    "Reader",
    "Store",
    "Table",
    "backup",
    "ensure_home",
    "resolve_home",
    "restore",
    "verify_backup",
]
