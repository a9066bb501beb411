"""The mark of a data file already walked: what lets an open skip `check_data_file`'s page walk.

The open-time check reads every page of the file, which costs time in proportion to the home (2.2 s
for a 5.4 GB file of a million memories here). A file this process's LMDB wrote from a file that
was checked is as sound as LMDB keeps it, so a store closed cleanly leaves a mark beside its data
file: the file's device, inode, length and modification time. The next open compares
them with the file as it is; any difference (a write by anything, a crash mid-run after a write,
a truncation, a file copied or restored in its place) means the page walk runs as before.

A write right after the close would still get the kernel's coarse timestamp of that same tick,
equal to the one the mark holds. So at close the file's modification time is set to the precise
clock, which a later write's coarse timestamp equals only if a clock tick fell on that very
nanosecond. A filesystem that stores coarser times than nanoseconds gets no mark, and every open
there walks the pages. A store that saw damage while open leaves no mark either.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import msgspec

from resident.files import write_private_file

__all__ = ["CHECKED_FILE", "forget_checked", "mark_checked", "still_checked"]

logger = logging.getLogger(__name__)

CHECKED_FILE = "data.checked"


class _Mark(msgspec.Struct, frozen=True):
    device: int
    inode: int
    size: int
    modified_ns: int


def _mark_of(stats: os.stat_result) -> _Mark:
    # Not the change time: opening a store sets the file's mode again, which moves it without a write.
    return _Mark(stats.st_dev, stats.st_ino, stats.st_size, stats.st_mtime_ns)


def mark_checked(data: Path) -> None:
    """Record that `data`, a data file this process just closed cleanly, is sound as it is now."""
    mark = data.with_name(CHECKED_FILE)
    if still_checked(data):
        return  # nothing wrote to it since it was marked: the mark (and the file's times) stay as they are
    try:
        stamp = time.time_ns()
        os.utime(data, ns=(data.stat().st_atime_ns, stamp))
        stats = data.stat()
        if stats.st_mtime_ns != stamp:
            mark.unlink(missing_ok=True)  # the filesystem rounds times: no mark can be trusted there
            return
        write_private_file(mark, msgspec.json.encode(_mark_of(stats)))
    except OSError as error:
        # Only a cost (a full disk, say): without a mark the next open walks the pages.
        logger.debug("could not mark %s as checked: %s", data, error)
        forget_checked(data)


def forget_checked(data: Path) -> None:
    """Drop the mark of `data`, so the next open walks its pages."""
    try:
        data.with_name(CHECKED_FILE).unlink(missing_ok=True)
    except OSError as error:
        logger.debug("could not remove the checked mark of %s: %s", data, error)


def still_checked(data: Path) -> bool:
    """Whether `data` is, to the nanosecond, the file a clean close last marked sound."""
    try:
        raw = data.with_name(CHECKED_FILE).read_bytes()
        stats = data.stat()
    except OSError:
        return False
    try:
        mark = msgspec.json.decode(raw, type=_Mark)
    except msgspec.DecodeError:
        return False
    return mark == _mark_of(stats)
