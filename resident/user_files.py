"""Files a user names (an ingest, an import, a skill, a backup, a token file), opened safely.

A path given on the command line or to the Python API may name anything: a FIFO that no one will
ever write (a blocking open waits forever, and a server thread with it), a device that never ends,
a folder, or a symbolic link to a private file elsewhere. So every such file is opened
non-blocking (opening a FIFO returns at once), without following a link in its last component,
checked to be a regular file on the descriptor it was opened as (no gap between check and read),
and read no further than a bound. What fails becomes one line in the caller's own error type.

This module imports nothing from the project but `resident.errors`, so every layer may use it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from resident.errors import InvalidInput, ResidentError

__all__ = ["open_user_file", "read_user_file"]

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
ErrorType = Callable[[str], ResidentError]


@contextmanager
def open_user_file(
    path: str | os.PathLike[str], *, what: str = "the file", limit: int | None = None, error: ErrorType = InvalidInput
) -> Iterator[BinaryIO]:
    """The regular file at `path`, open for reading; anything else raises `error` with a one-line reason.

    `limit` refuses a file larger than that many bytes when it is opened (a reader that streams it
    still bounds what it reads itself).
    """
    name = Path(path)
    try:
        fd = os.open(name, _FLAGS)
    except FileNotFoundError:
        raise error(f"{what} {name} does not exist; give the path of an existing file") from None
    except IsADirectoryError:
        raise error(f"{what} {name} is a directory; give a file") from None
    except OSError as failure:
        if failure.errno == errno.ELOOP:
            raise error(f"{what} {name} is a symbolic link; give the file it points to") from None
        raise error(f"{what} {name} cannot be read ({failure.strerror}); check its permissions") from None
    try:
        refusal = _refusal(os.fstat(fd), limit)
        if refusal is None:
            # A regular file never blocks; the flag only mattered for the open.
            os.set_blocking(fd, True)
            handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    if refusal is not None:
        os.close(fd)
        raise error(f"{what} {name} {refusal}")
    with handle:
        yield handle


def _refusal(status: os.stat_result, limit: int | None) -> str | None:
    """Why a file of this status is not read (the end of a sentence naming it), or None to read it."""
    if stat.S_ISDIR(status.st_mode):
        return "is a directory; give a file"
    if not stat.S_ISREG(status.st_mode):
        return "is not a regular file (a FIFO, socket or device); give a regular file"
    if limit is not None and status.st_size > limit:
        return f"is {status.st_size:,} bytes, larger than {limit} bytes (the limit); give a smaller file"
    return None


def read_user_file(
    path: str | os.PathLike[str], *, limit: int, what: str = "the file", error: ErrorType = InvalidInput
) -> bytes:
    """All bytes of the regular file at `path`, at most `limit` of them; anything else raises `error`."""
    with open_user_file(path, what=what, limit=limit, error=error) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as failure:
            raise error(f"{what} {path} cannot be read ({failure.strerror})") from None
    if len(data) > limit:
        raise error(f"{what} {path} grew larger than {limit} bytes (the limit) while it was read; give a smaller file")
    return data
