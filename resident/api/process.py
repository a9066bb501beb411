"""Starting `resident up` in the background (`--detach`) and stopping it (`resident down`).

A detached server is a child in its own session, so the shell that started it can exit: its
standard input is /dev/null, its log (standard error) is `up.log` in the home, and its standard
output is a pipe read only until its first line, the ready announcement (or, with `--json`, the
error it failed with). `start_detached` returns once the server answers.

`stop` signals the process named in the home's discovery file only after the kernel confirms it:
the pid holds the home's lock (`/proc/locks`, not the pid written in `resident.lock`, which anyone
who can write the file can forge), its command line is a resident command, and it started when
the runtime that wrote `api.json` did. It then waits until the lock is released and the process
has ended: a process that let the home go but lingers (a thread stuck) is not reported stopped.
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

from resident.api.discovery import DISCOVERY_FILE, LOCK_FILE_NAME, Discovery, lock_holder, pid_alive, read_discovery
from resident.api.statuses import error_from_body
from resident.api.wire import READ_TIMEOUT, ErrorBody
from resident.children.orphans import command_line, process_start
from resident.errors import ApiError, RuntimeNotUp, ShutdownTimeout, shorten
from resident.processes import flock_holders, process_arguments, process_ended

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
        child = subprocess.Popen(  # noqa: S603 - argv built here from checked parts, no shell
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
    """SIGTERM the runtime up for `home` and wait until it has let the home go and ended; returns what it was.

    `RuntimeNotUp` when none is up (a stale discovery file is removed on the way) or the process
    named is not the one serving the home (nothing is signalled); `ShutdownTimeout` when it still
    holds the home, or still runs, after `timeout` seconds.
    """
    found = read_discovery(home)
    if found is None:
        raise RuntimeNotUp(f"no runtime is up for {home} (no {DISCOVERY_FILE})")
    if not pid_alive(found.pid):
        _remove_stale(home)
        raise RuntimeNotUp(f"no runtime is up for {home}: pid {found.pid} is gone; removed its stale {DISCOVERY_FILE}")
    refusal = serving_refusal(home, found)
    if refusal is not None:
        if lock_holder(home) is None:
            _remove_stale(home)
        raise RuntimeNotUp(f"no runtime is up for {home} that down may stop: {refusal}; nothing was signalled")
    started = process_start(found.pid)
    os.kill(found.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    # The lock is released when the process has closed its runtime (or died); it is stopped once it has ended.
    while lock_holder(home) == found.pid or not process_ended(found.pid, started):
        if time.monotonic() >= deadline:
            what = "is still stopping (draining requests)" if lock_holder(home) == found.pid else (
                "let the home go but has not ended (a thread is stuck; see up.log)"
            )
            raise ShutdownTimeout(
                f"pid {found.pid} {what} after {timeout:g} s; wait longer with --timeout, or kill it"
            )
        time.sleep(_POLL)
    return found


def serving_refusal(home: Path, found: Discovery) -> str | None:
    """Why process `found.pid` is not the runtime serving `home` (so it must not be signalled), or None if it is."""
    holders = flock_holders(home / LOCK_FILE_NAME)
    if holders is None:
        # No /proc/locks (not Linux): the pid the holder wrote in the lock is the best there is.
        if lock_holder(home) != found.pid:
            return f"pid {found.pid} does not hold the home's lock"
    elif found.pid not in holders:
        return f"pid {found.pid} does not hold the home's lock (the kernel names {sorted(holders) or 'no one'})"
    if not _is_resident_command(found.pid):
        return f"pid {found.pid} is not a resident command ({shorten(command_line(found.pid) or 'unknown')})"
    if found.started is not None and process_start(found.pid) != found.started:
        return f"pid {found.pid} started at another time than the runtime that wrote {DISCOVERY_FILE}"
    return None


def _is_resident_command(pid: int) -> bool:
    """Whether `pid` runs the `resident` command (`resident up`, `python -m resident.cli run`, ...)."""
    arguments = process_arguments(pid)
    if arguments is None:
        # No /proc (not Linux): the command line as `ps` shows it, split on spaces.
        arguments = (command_line(pid) or "").split()
    return any(Path(argument).name == "resident" or argument == "resident.cli" for argument in arguments)


def _remove_stale(home: Path) -> None:
    # Killed without cleaning up: its pid is gone (or now someone else's) and the lock is free.
    (home / DISCOVERY_FILE).unlink(missing_ok=True)
