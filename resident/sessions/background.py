"""`python -m resident.sessions.background`: the process that runs one dispatched execution's harness.

The runtime's execution runner starts it in a session of its own (`setsid`), so it outlives the runtime that
started it (a `kill -9` of `resident up`, a closed terminal), then tells it on standard input what to run: the
command line, the directory, the environment, the log and where to write the exit status. It runs the harness
in a process group of its own, waits for it, and writes its exit status (128 + the signal, for a harness a
signal ended) to that file before it exits, so whoever ends the session later knows how the harness ended. A
SIGTERM is passed on to the harness's group. Nothing on standard input (the session did not start) means
nothing to run.

Standard library only: it is the whole of the process that stays behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

__all__ = ["EXIT_STATUS_FILE", "main", "read_exit_status"]

EXIT_STATUS_FILE = "exit-status"
_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def read_exit_status(folder: Path) -> int | None:
    """The exit status a background harness left in `folder` (None when it left none: it never ended there)."""
    try:
        return int((folder / EXIT_STATUS_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def _write_status(folder: Path, status: int) -> None:
    temporary = folder / f".{EXIT_STATUS_FILE}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, str(status).encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    temporary.replace(folder / EXIT_STATUS_FILE)


def main() -> int:
    raw = sys.stdin.buffer.read()
    if not raw.strip():
        return 0
    launch = json.loads(raw)
    folder = Path(launch["folder"])
    log = os.open(launch["log"], _LOG_FLAGS, 0o600)
    try:
        child = subprocess.Popen(  # noqa: S603 - the command the owner or its coordinator dispatched, as checked at dispatch
            launch["argv"], cwd=launch["directory"], env=launch["env"], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, process_group=0,
        )
    except OSError as error:
        os.write(log, f"the harness could not start: {error}\n".encode())
        _write_status(folder, 127)
        return 0
    finally:
        os.close(log)

    def stop(signum: int, _frame: FrameType | None) -> None:
        # Passed on to the harness's whole group; its exit is then written as any other.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signum)

    signal.signal(signal.SIGTERM, stop)
    status = child.wait()
    _write_status(folder, 128 - status if status < 0 else status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
