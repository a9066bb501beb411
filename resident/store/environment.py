"""How every LMDB environment of a home is opened: durable commits, private files, room for the tables."""

from __future__ import annotations

from pathlib import Path

import lmdb

__all__ = ["open_environment"]


def open_environment(path: Path, *, map_size: int, readonly: bool = False, lock: bool = True) -> lmdb.Environment:
    """Open an LMDB environment the way every home is opened (durable commits, private files).

    `lock=False` only for a private copy no other process can reach (a salvage's working copy).
    """
    return lmdb.open(
        str(path),
        map_size=map_size,
        # Tables are added as the runtime grows (schema rule: adding one keeps the version).
        max_dbs=64,
        subdir=True,
        readonly=readonly,
        sync=True,
        metasync=True,
        lock=lock,
        mode=0o600,
        max_readers=256,
    )
