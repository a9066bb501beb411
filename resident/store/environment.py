"""How every LMDB environment of a home is opened: durable commits, private files, room for the tables."""

from __future__ import annotations

from pathlib import Path

import lmdb

__all__ = ["MAX_DBS", "open_environment"]

# Tables are added as the runtime grows (schema rule: adding one keeps the version), so there is room.
MAX_DBS = 64


def open_environment(path: Path, *, map_size: int, readonly: bool = False, lock: bool = True) -> lmdb.Environment:
    """Open an LMDB environment the way every home is opened (durable commits, private files).

    `lock=False` only where no process can be writing: a private copy (a salvage's working copy), or
    a home on a read-only file system or lock file.
    """
    return lmdb.open(
        str(path),
        map_size=map_size,
        max_dbs=MAX_DBS,
        subdir=True,
        readonly=readonly,
        sync=True,
        metasync=True,
        lock=lock,
        mode=0o600,
        max_readers=256,
    )
