"""What goes wrong under a store, named: a full disk, a full map, a damaged data file.

LMDB reports a full disk in two ways: `ENOSPC` from a write (`lmdb.DiskError`), or `EIO` when a
write came back short, which is what a filesystem that ran out of space mid-write does (tmpfs
does it). A short write on a disk with room is a real I/O error, so an `EIO` counts as a full disk
only when the filesystem has less free space than the write needs. A full map is a different
thing: the file may have room, but the memory map LMDB writes through is at its size limit.

A damaged data file shows up as LMDB's corruption errors on any read, as a value that no longer
decodes, or as a file shorter than the pages its metadata names (reading those would kill the
process with SIGBUS, so that is checked before any page is touched).
"""

from __future__ import annotations

import errno
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import lmdb
import lmdb.verify

from resident.errors import DiskFull, StoreCorrupted
from resident.messages.events import AnyEvent, encode_event
from resident.messages.store import Commit
from resident.store.checked import still_checked
from resident.store.environment import open_environment
from resident.store.isolation import Emit, deadline_for, run_isolated

__all__ = [
    "CORRUPTION_ERRORS",
    "DATA_FILE",
    "check_data_file",
    "corrupted",
    "disk_full",
    "format_bytes",
    "free_space",
    "is_disk_full",
    "space_needed",
    "structure_problems",
]

DATA_FILE = "data.mdb"
# LMDB's errors that mean the file itself is wrong, not the operation.
CORRUPTION_ERRORS: tuple[type[Exception], ...] = (
    lmdb.CorruptedError,
    lmdb.PageNotFoundError,
    lmdb.InvalidError,
    lmdb.VersionMismatchError,
    lmdb.BadChecksumError,
)
# Besides the payload itself, a commit rewrites the B-tree path to every leaf it touches (one
# copy-on-write page per level) and the free list; this many pages covers a batch of small writes.
_PAGE_OVERHEAD = 16
_EIO_TEXT = os.strerror(errno.EIO)
_QUOTA_TEXT = os.strerror(errno.EDQUOT)


def format_bytes(size: int) -> str:
    """`size` in the largest binary unit that keeps it at least 1 (`12 KiB`, `3.5 MiB`)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 10 else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def free_space(directory: Path) -> int:
    """Bytes this process may still write on the filesystem holding `directory`."""
    stats = os.statvfs(directory)
    # Blocks reserved for root are writable by root, so root's writes fail only when they are gone too.
    blocks = stats.f_bfree if os.geteuid() == 0 else stats.f_bavail
    return blocks * stats.f_frsize


def space_needed(writes: Sequence[Commit], page_size: int) -> int:
    """About how many bytes committing `writes` adds to the data file.

    Every event is stored twice (in the log and, projected, in a state table), the derived vectors
    and terms once, and each commit copies a few B-tree pages on top.
    """
    payload = 0
    for write in writes:
        payload += sum(len(key) + len(value) for key, value in (*write.vectors, *write.terms))
        payload += 2 * sum(_event_size(event) for event in write.events)
    return payload + _PAGE_OVERHEAD * page_size


def _event_size(event: AnyEvent) -> int:
    # Encoding again costs nothing that matters: this runs only after a commit failed.
    return len(encode_event(event))


def is_disk_full(error: lmdb.Error, directory: Path, needed: int) -> bool:
    """Whether LMDB's `error` from a commit means the disk under `directory` has no room."""
    if isinstance(error, lmdb.DiskError):
        return True
    text = str(error)
    if text.endswith(_QUOTA_TEXT):
        return True
    return text.endswith(_EIO_TEXT) and free_space(directory) < needed


def disk_full(directory: Path, needed: int) -> DiskFull:
    """The refusal of a write that did not fit, saying how much it needs and how much is free."""
    free = free_space(directory)
    return DiskFull(
        f"the disk holding {directory} is full: a write needs about {format_bytes(needed)} more and "
        f"{format_bytes(free)} is free; free space on that disk (or move the home) and writes resume "
        "by themselves — reads keep working meanwhile",
        needed=needed,
    )


def corrupted(directory: Path, detail: str) -> StoreCorrupted:
    """The error for a damaged data file of the store in `directory`, with the way out."""
    return StoreCorrupted(
        f"the data file {directory / DATA_FILE} is damaged ({detail}); close every runtime on this home, "
        "then run `resident doctor` to see what is lost and `resident salvage DEST` to copy what still "
        "reads into a new home, or `resident restore BACKUP`"
    )


def check_data_file(directory: Path, map_size: int) -> None:
    """Refuse a damaged data file before this process opens it: `StoreCorrupted` naming the damage.

    A child process (see `resident.store.isolation`) checks the file's length against the pages
    its metadata names (reading past a truncated end is SIGBUS), then reads every page of every
    table once, so damage shows up now rather than in the middle of a run. On some damage LMDB
    aborts instead of reporting it; the child's death is reported as damage too. The walk reads
    values as views into the map: 45 to 50 ms for a 114 MiB file here (bench/RESULTS.md). It runs
    before this process opens the environment, because py-lmdb refuses a second open of one
    environment in a process (and a forked child inherits that record).

    A file still as a clean close left it (`resident.store.checked`) is not walked again: the walk
    is proportional to the file, and that file was written only by LMDB from one already walked.
    """
    if still_checked(directory / DATA_FILE):
        return

    def check(_emit: Emit, note: Callable[[str], None]) -> None:
        try:
            # Registered as a reader, so a process writing beside it never reuses a page it reads
            # (an unregistered walk of a live store can see pages mid-reuse and cry damage).
            env = open_environment(directory, map_size=map_size, readonly=True)
        except lmdb.Error:
            # A lock file this process may not write (a read-only home): nothing can be writing.
            env = open_environment(directory, map_size=map_size, readonly=True, lock=False)
        try:
            length = (directory / DATA_FILE).stat().st_size
            expected = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
            if length < expected:
                note(f"it is {format_bytes(length)} long but its pages reach {format_bytes(expected)}; truncated")
                return
            with env.begin(write=False, buffers=True) as txn:
                names = [bytes(name) for name in txn.cursor().iternext(keys=True, values=False)]
                for name in names:
                    with txn.cursor(db=env.open_db(name, txn=txn, create=False)) as cursor:
                        deque(cursor.iternext(keys=False, values=True), maxlen=0)
        except lmdb.Error as error:
            note(f"{type(error).__name__}: {error}")
        finally:
            env.close()

    checked = run_isolated(check, deadline=deadline_for((directory / DATA_FILE).stat().st_size))
    if checked.notes or checked.crash:
        raise corrupted(directory, "; ".join([*checked.notes, *([checked.crash] if checked.crash else [])]))


def structure_problems(path: Path) -> list[str]:
    """What py-lmdb's offline verifier finds wrong with the data file at `path` (empty when sound)."""
    try:
        problems: list[str] = lmdb.verify.verify(str(path), subdir=False)  # type: ignore[no-untyped-call]
    except lmdb.verify.VerifyError as error:
        return [f"it is not an LMDB data file this resident can read: {error}"]
    return problems
