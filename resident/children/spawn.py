"""The parent side: start a Python module or any command as a guarded child, and stop it with its group."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from resident.children.guard import STOP_GRACE
from resident.children.orphans import (
    GUARD_MODULE,
    ChildRecord,
    forget_child,
    process_start,
    record_child,
    stop_orphans,
)
from resident.errors import InvalidInput

__all__ = ["STOP_GRACE", "ChildProcess", "spawn_child", "spawn_command"]

# A child's log may hold what it was given; it is private, and never written through a planted symlink.
_LOG_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


class ChildProcess:
    """One running child: its own process group, its pipe to the guard, its pid file.

    Thread-safe enough for its uses: stop and kill may race with each other (both end in a
    reaped child and a removed pid file). A command child (`spawn_command`) is stopped through its
    guard, which passes the signal on to the command alone, as its owner would send it.
    """

    def __init__(self, popen: subprocess.Popen[bytes], watch_write_end: int, *, forwards: bool = False) -> None:
        self._popen = popen
        self._watch = watch_write_end
        self._forwards = forwards

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def poll(self) -> int | None:
        """The exit status once the child has exited (and is reaped), else None."""
        code = self._popen.poll()
        if code is not None:
            self._reaped()
        return code

    def signal_group(self, sig: int) -> None:
        """Send `sig` to the child's process group (the child and whatever it started)."""
        # Only while the child is not reaped: until then its pid (= its group id) cannot be reused.
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._popen.pid, sig)

    def signal(self, sig: int) -> None:
        """Send `sig` to the child itself (a command child's guard passes it on to the command)."""
        if self._popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._popen.pid, sig)

    def wait(self, timeout: float) -> int:
        """Wait (bounded) for the child to exit; raises `subprocess.TimeoutExpired` after `timeout`."""
        code = self._popen.wait(timeout=timeout)
        self._reaped()
        return code

    def stop(self, timeout: float) -> int:
        """SIGTERM the group (a command: the command) and wait; raises `TimeoutExpired` if it does not end."""
        if self._forwards:
            self.signal(signal.SIGTERM)
        else:
            self.signal_group(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self, timeout: float) -> int:
        """SIGKILL the group (no chance to clean up) and reap the child."""
        self.signal_group(signal.SIGKILL)
        return self.wait(timeout)

    def _reaped(self) -> None:
        watch, self._watch = self._watch, -1
        if watch >= 0:
            with contextlib.suppress(OSError):
                os.close(watch)
            forget_child(self._popen.pid)


def spawn_child(
    module: str,
    args: Sequence[str],
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> ChildProcess:
    """Run `python -m module args...` as a guarded child (see the package docstring).

    Orphans of earlier runs are stopped first. The child's standard output and error are
    appended to `log`; its standard input is empty.
    """
    return _spawn([module, *args], name=module, log=log, env=env, cwd=None, command=False, to_stderr=False)


def spawn_command(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    output_to_stderr: bool = False,
) -> ChildProcess:
    """Run the command `argv` as a guarded child: the guard stays its parent and forwards signals.

    Without `log` the command shares this process's standard input, output and error (an
    interactive harness in the user's terminal; `output_to_stderr` sends its output to this
    process's standard error, keeping standard output for a machine-readable answer); with it,
    output goes to `log` and input is empty.
    """
    if not argv or not argv[0]:
        raise InvalidInput("a command needs at least the program to run")
    return _spawn(
        list(argv), name=argv[0], log=log, env=env, cwd=cwd, command=True, to_stderr=output_to_stderr and log is None
    )


def _spawn(
    target: list[str], *, name: str, log: Path | None, env: Mapping[str, str] | None, cwd: Path | None, command: bool,
    to_stderr: bool,
) -> ChildProcess:
    stop_orphans()
    read_end, write_end = os.pipe()  # neither end is inheritable; only `read_end` is passed on
    token = secrets.token_hex(8)
    guard = [
        sys.executable, "-m", GUARD_MODULE, "--parent", str(os.getpid()), "--watch", str(read_end),
        "--token", token, *(["--exec"] if command else []), "--", *target,
    ]
    try:
        output = os.open(log, _LOG_FLAGS, 0o600) if log is not None else None
        try:
            # This interpreter running our own guard; what follows `--` is the caller's program, never a shell.
            popen = subprocess.Popen(  # noqa: S603 - argv built here from checked parts, no shell
                guard, stdin=subprocess.DEVNULL if output is not None else None,
                stdout=2 if to_stderr else output, stderr=output,  # 2: this process's standard error
                pass_fds=(read_end,), start_new_session=True, env=dict(env if env is not None else os.environ),
                cwd=cwd,
            )
        finally:
            if output is not None:
                os.close(output)
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    child = ChildProcess(popen, write_end, forwards=command)
    try:
        record_child(
            ChildRecord(
                pid=popen.pid, token=token, module=name[:200], parent_pid=os.getpid(),
                parent_start=process_start(os.getpid()), started_at=time.time(),
            )
        )
    except BaseException:
        child.kill(STOP_GRACE)
        raise
    return child
