"""Durable state: one LMDB environment per home, typed tables, projections and the event log.

The names below are loaded on first use: `resident.store.home` (where a home is, its lock) is light,
and the `resident` command, which resolves a home before it knows whether it will open one here,
must not pay for LMDB to do so.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    "backup": "backup", "restore": "backup", "verify_backup": "backup", "HomeLock": "home", "ensure_home": "home",
    "resolve_home": "home", "Reader": "store", "Store": "store", "SCHEMA_VERSION": "tables", "Table": "tables",
}


def __getattr__(name: str) -> Any:
    module = _HOMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
