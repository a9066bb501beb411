"""Starting `resident up` in the background (`--detach`) and stopping it (`resident down`).

A detached server is a child in its own session, so the shell that started it can exit: its
standard input is /dev/null, its log (standard error) is `up.log` in the home, and its standard
output is a pipe read only until its first line, the ready announcement (or, with `--json`, the
error it failed with). `start_detached` returns once the server answers.

`stop` signals the process named in the home's discovery file only after checking that the pid is
alive and holds the home's lock, then waits until the lock is released (which happens when the
process has closed the runtime, or died).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from resident.api.discovery import DISCOVERY_FILE, Discovery, lock_holder, pid_alive, read_discovery
from resident.api.statuses import error_from_body
from resident.api.wire import READ_TIMEOUT, ErrorBody
from resident.errors import ApiError, RuntimeNotUp, ShutdownTimeout

__all__ = ["LOG_FILE", "START_TIMEOUT", "read_first_line", "start_detached", "stop"]

LOG_FILE = "up.log"
START_TIMEOUT = 60.0
_POLL = 0.05


def start_detached(
    home: Path, listen: str, timeout: float = START_TIMEOUT, *, read_timeout: float = READ_TIMEOUT
) -> Discovery:
    """Start `resident up` for `home` in its own session and return its announcement once it answers."""
    command = [
        sys.executable, "-m", "resident.cli", "--home", str(home), "up", "--listen", listen,
        "--read-timeout", repr(read_timeout), "--json",
    ]
    log = os.open(home / LOG_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        # Our own interpreter and module; the arguments are a path and a checked address.
        child = subprocess.Popen(  # noqa: S603
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, start_new_session=True
        )
    finally:
        os.close(log)
    assert child.stdout is not None
    try:
        line = read_first_line(child.stdout.fileno(), timeout)
    finally:
        child.stdout.close()
    if not line:
        status = child.poll()
        raise ApiError(
            f"resident up {'exited with status ' + str(status) if status is not None else 'did not answer'} "
            f"before it was ready; see {home / LOG_FILE}"
        )
    try:
        return msgspec.json.decode(line, type=Discovery)
    except msgspec.ValidationError:
        raise error_from_body(msgspec.json.decode(line, type=ErrorBody).error, 0) from None


def read_first_line(fd: int, timeout: float) -> bytes:
    """The first line written to `fd` (empty when it closed first, or after `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b""
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return b""
        chunk = os.read(fd, 65536)
        if not chunk:
            return b""
        data += chunk
    return data.split(b"\n", 1)[0]


def stop(home: Path, timeout: float) -> Discovery:
    """SIGTERM the runtime up for `home` and wait until it has let the home go; returns what it was.

    `RuntimeNotUp` when none is up (a stale discovery file is removed on the way);
    `ShutdownTimeout` when it still holds the home after `timeout` seconds.
    """
    found = read_discovery(home)
    if found is None:
        raise RuntimeNotUp(f"no runtime is up for {home} (no {DISCOVERY_FILE})")
    if not pid_alive(found.pid) or lock_holder(home) != found.pid:
        # Killed without cleaning up: its pid is gone (or now someone else's) and the lock is free.
        (home / DISCOVERY_FILE).unlink(missing_ok=True)
        raise RuntimeNotUp(f"no runtime is up for {home}: pid {found.pid} is gone; removed its stale {DISCOVERY_FILE}")
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    # The lock is released when the process has closed its runtime (or died): that is the signal.
    while lock_holder(home) == found.pid:
        if time.monotonic() >= deadline:
            raise ShutdownTimeout(
                f"pid {found.pid} is still stopping after {timeout:g} s (draining requests); "
                "wait longer with --timeout, or kill it"
            )
        time.sleep(_POLL)
    return found
