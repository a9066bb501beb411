"""Maintenance of a closed home: restore a backup into it, check it whole, salvage what still reads.

Each needs the home closed (no runtime open on it), so none is an operation of a running runtime: they are
the same functions on `Runtime` and on a connected runtime, `Runtime.doctor(home)` and so on.
"""

from __future__ import annotations

import os
from pathlib import Path

from resident.config import load_config
from resident.errors import InvalidInput
from resident.messages.backup import BackupManifest
from resident.messages.store import DoctorReport, SalvageReport
from resident.runtime.home.doctor import examine
from resident.runtime.home.salvage import salvage as salvage_home
from resident.store.backup import restore as restore_home
from resident.store.home import ensure_home, resolve_home

__all__ = ["doctor", "restore", "salvage"]


def restore(src: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> BackupManifest:
    """Verify the backup at `src`, then switch `home` to it atomically (the home must be closed).

    Besides its checksums, the backup's `resident.toml` must parse and its data file must
    verify and open; otherwise it is refused (`BackupInvalid`) before anything is switched.
    """
    return restore_home(Path(src), ensure_home(resolve_home(home)), check_config=load_config)


def doctor(home: str | os.PathLike[str] | None = None) -> DoctorReport:
    """Check a closed home whole: configuration, structure, tables, event log, record digests."""
    return examine(_existing_home(home))


def salvage(dest: str | os.PathLike[str], home: str | os.PathLike[str] | None = None) -> SalvageReport:
    """Copy every record (and row) of a closed, damaged home that still reads and verifies into `dest`."""
    return salvage_home(_existing_home(home), Path(dest).expanduser())


def _existing_home(home: str | os.PathLike[str] | None) -> Path:
    """The home to check or salvage: it must exist already (checking one never creates it)."""
    path = resolve_home(home)
    if not path.is_dir():
        raise InvalidInput(f"there is no home at {path}; pass the one to use with --home")
    return path
