"""Private files written whole: the one way the runtime replaces a small file it owns.

Every file the runtime writes outside LMDB (`resident.toml`, `CURRENT`, pid files of child
processes) is private to the user (`0600`) and replaced atomically: readers see the old content
or the new, never a part. The temporary file is created under a fresh random name with
`O_CREAT | O_EXCL | O_NOFOLLOW`, so a file or symlink planted at a predictable name beside the
target (by another local process) is never opened, followed or truncated: the open fails instead.

This module imports nothing from the project, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["fsync_dir", "private_dir", "private_file", "read_private_file", "write_private_file", "write_whole"]

_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def private_dir(path: Path) -> Path:
    """`path`, a folder made private (`0700`) if it was missing; one that exists is left as it is. Its parent
    must exist: a missing one is an error, not created with the default mode."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    return path


def private_file(path: Path) -> None:
    """Make a file the runtime wrote readable by its owner only."""
    with contextlib.suppress(FileNotFoundError):
        path.chmod(0o600)


def write_private_file(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: a new private (`0600`) file, fsync, rename, fsync.

    A failure leaves no temporary file behind and `path` as it was.
    """
    # A random name (os.urandom is what `secrets` reads): the `resident` command imports this module
    # on every start, and `secrets` brings `random` and `hmac` with it.
    temporary = path.with_name(f".{path.name}.{os.urandom(6).hex()}.tmp")
    fd = os.open(temporary, _CREATE_FLAGS, 0o600)
    try:
        try:
            # The mode of a new file is filtered by the umask; a file that holds memories'
            # configuration is 0600 whatever the umask or the directory's own mode.
            write_whole(fd, data, 0o600)
        finally:
            os.close(fd)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_whole(fd: int, data: bytes, mode: int) -> None:
    """Give the open, new file `fd` its `mode` and all of `data`, durably (fsync)."""
    os.fchmod(fd, mode)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def read_private_file(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of `path`, refusing to follow a symlink planted in its place.

    Raises `FileNotFoundError` when it is absent and `OSError` (ELOOP) when it is a symlink.
    """
    fd = os.open(path, _READ_FLAGS)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make the creations, renames and removals of entries in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
