"""Pid files of child processes, and the sweep that stops children whose parent is gone.

A child's pid file (`<children_dir>/<pid>.json`, private) names the child, its random token,
and its parent with the parent's start time. Its guard normally stops a child when the parent
dies; the sweep is the last line for the rest (a platform without a parent-death signal and a
child wedged before its guard ran, or a child that ignored SIGTERM).

The sweep signals a process only when all of these hold: the pid file is a regular file in the
private folder; its parent is gone (not running, or a different process reusing its pid); the
child is alive, owned by this user, and its command line carries the token. A pid file that
fails the last check is stale (the child exited and its pid went to someone else) and is removed
without signalling anything.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import msgspec

from resident.errors import InvalidInput
from resident.files import private_dir, read_private_file, write_private_file
from resident.processes import pid_alive

__all__ = [
    "GUARD_MODULE",
    "ChildRecord",
    "children_dir",
    "command_line",
    "forget_child",
    "process_start",
    "record_child",
    "stop_orphans",
    "wait_gone",
]

GUARD_MODULE = "resident.children"
# Sweeping waits this long for an orphan to stop after SIGTERM, then kills its group.
ORPHAN_GRACE = 5.0
_RECORD_LIMIT = 4096


class ChildRecord(msgspec.Struct, frozen=True):
    """What a pid file says about one child."""

    pid: int
    token: str
    module: str
    parent_pid: int
    parent_start: str | None
    started_at: float


def children_dir() -> Path:
    """The private folder of this user's pid files (created `0700`; refused if not safely ours).

    It lives in the temporary folder, shared with other users on most systems, so a folder of
    that name that someone else made, or a symlink put there, is refused rather than used.
    """
    path = private_dir(Path(tempfile.gettempdir()) / f"resident-{os.getuid()}-children")
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise InvalidInput(
            f"{path} is not a folder owned by this user (a symlink, a file or someone else's); "
            "remove it or set TMPDIR to a private folder"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    return path


def process_start(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (Linux); None when unknown or gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; the fields after its last `)`
    # are plain: state is field 3 and the start time field 22.
    fields = data[data.rindex(b")") + 2 :].split()
    return fields[19].decode("ascii")


def command_line(pid: int) -> str | None:
    """The command line of `pid` with arguments joined by spaces; None when it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None  # Linux: the process is gone
    except OSError:
        return None
    # No /proc (macOS, the BSDs): ask ps, which every Unix has.
    result = subprocess.run(  # noqa: S603 - a fixed program and a number
        ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, check=False  # noqa: S607 - ps is looked up on PATH on purpose
    )
    return result.stdout.strip() or None


def _owned_by_me(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}").stat().st_uid == os.getuid()
    except FileNotFoundError:
        # Without /proc, a signal to another user's process fails with EPERM instead.
        return not Path("/proc/self").exists()


def _parent_alive(record: ChildRecord) -> bool:
    if not pid_alive(record.parent_pid):
        return False
    # A live pid is the recorded parent only if it started at the same moment (pid reuse).
    return record.parent_start is None or process_start(record.parent_pid) == record.parent_start


def is_our_child(record: ChildRecord) -> bool:
    """Whether `record.pid` is, right now, the child that record describes."""
    line = command_line(record.pid)
    return (
        line is not None
        and f"-m {GUARD_MODULE} " in f"{line} "
        and f"--token {record.token} " in f"{line} "
        and _owned_by_me(record.pid)
    )


def record_child(record: ChildRecord) -> Path:
    """Write the pid file of a child just started; returns its path."""
    path = children_dir() / f"{record.pid}.json"
    write_private_file(path, msgspec.json.encode(record))
    return path


def forget_child(pid: int) -> None:
    """Remove the pid file of a child that has been reaped."""
    with contextlib.suppress(FileNotFoundError):
        (children_dir() / f"{pid}.json").unlink()


def _read_record(path: Path) -> ChildRecord | None:
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode):
            return None
        return msgspec.json.decode(read_private_file(path, _RECORD_LIMIT), type=ChildRecord)
    except (OSError, msgspec.DecodeError):
        return None


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until `pid` (not necessarily our child) has exited; True if it did within `timeout`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        fd = -1
    if fd >= 0:
        try:
            readable, _, _ = select.select([fd], [], [], timeout)
            return bool(readable)
        finally:
            os.close(fd)
    # No pidfd (macOS, old kernels): there is nothing to wait on but the pid itself.
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _stop(record: ChildRecord, grace: float) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(record.pid, sig)
        if wait_gone(record.pid, grace):
            return


def stop_orphans(grace: float = ORPHAN_GRACE) -> list[int]:
    """Stop every child of this user whose parent is gone; returns the pids it stopped.

    An orphan gets `grace` seconds after SIGTERM before its group is killed. Pid files whose
    child already exited are removed; those of children whose parent still runs are left alone.
    """
    stopped: list[int] = []
    folder = children_dir()
    for path in folder.glob("*.json"):
        record = _read_record(path)
        if record is None:
            path.unlink(missing_ok=True)
            continue
        if _parent_alive(record):
            continue
        if is_our_child(record):
            _stop(record, grace)
            stopped.append(record.pid)
        path.unlink(missing_ok=True)
    return stopped
