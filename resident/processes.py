"""Whether a process exists, and which holds a lock: the probes the runtime uses on pids it reads from files.

A pid read from a file (`resident.lock`, `api.json`) is a claim anyone who can write the file can
forge. Before the runtime signals one it asks the kernel instead: `flock_holders` reads which
processes hold a `flock` on a file from `/proc/locks`, which no process can forge.

This module imports nothing from the project, so every layer may use it (the `resident` command's
light client path included).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["flock_holders", "pid_alive", "process_arguments", "process_ended"]

_LOCKS = Path("/proc/locks")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user).

    A pid of 0 or below names no one process (`kill` would reach a whole group), so it is not alive.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def flock_holders(path: Path) -> set[int] | None:
    """The pids holding an exclusive `flock` on the file at `path`, as the kernel reports them.

    None where the kernel does not say (no `/proc/locks`: not Linux); an empty set when the file
    does not exist or nobody holds it exclusively.
    """
    try:
        status = path.lstat()
    except FileNotFoundError:
        return set()
    try:
        table = _LOCKS.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    exact = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    holders: dict[str, set[int]] = {"exact": set(), "inode": set()}
    for line in table.splitlines():
        # `N: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF`; a waiter's line has `->` after `N:`.
        fields = line.split()
        if len(fields) < 6 or fields[1:4] != ["FLOCK", "ADVISORY", "WRITE"] or not fields[4].isdigit():
            continue
        if fields[5] == exact:
            holders["exact"].add(int(fields[4]))
        elif fields[5].rpartition(":")[2] == str(status.st_ino):
            holders["inode"].add(int(fields[4]))
    # A stacked file system (overlayfs) may report the device of the layer below; the inode still agrees.
    return holders["exact"] or holders["inode"]


def process_ended(pid: int, started: str | None) -> bool:
    """Whether the process `pid` that started at `started` (clock ticks, Linux) has ended.

    A zombie (ended, not yet reaped by its parent) has ended; so has a pid now used by a process
    that started at another time.
    """
    if not pid_alive(pid):
        return True
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        # On Linux the process is gone; without /proc only `kill` can say, and it said alive.
        return Path("/proc/self").exists()
    except OSError:
        return False
    # The command name (field 2) may hold spaces and parentheses; the fields after its last `)`
    # are plain: state is field 3 and the start time field 22.
    fields = data[data.rindex(b")") + 2 :].split()
    return fields[0] in (b"Z", b"X") or (started is not None and fields[19].decode("ascii") != started)


def process_arguments(pid: int) -> list[str] | None:
    """The command line of process `pid`, one argument an item (Linux); None when it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [argument.decode("utf-8", "replace") for argument in raw.split(b"\0")[:-1]] or None
