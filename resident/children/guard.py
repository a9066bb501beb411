"""The child side: stop this process when the parent that started it dies, then run its module.

`spawn_child` starts `python -m resident.children --parent PID --watch FD --token T -- MODULE
ARGS...`. Before MODULE runs (in this same process, as `__main__`), the guard:

* watches FD, the read end of a pipe whose write end only the parent holds: when the parent
  dies, however it dies, the kernel closes that end and the read returns;
* on Linux, asks the kernel for a parent-death signal (`PR_SET_PDEATHSIG`). The kernel sends it
  when the *thread* that started the child exits, not only the process, and the runtime starts
  children from worker threads; so the signal only wakes the guard, which stops the child only
  if its parent process really changed (`getppid()`).
* checks that the parent is still the one named by `--parent`: if it died before the guard was
  set up, no pipe or signal would ever tell.

Stopping means sending this process SIGTERM, which the module handles as its graceful stop; if
it is still running `STOP_GRACE` seconds later, the guard ends it. `--token` is not read here: it
is on the command line so that the parent's orphan sweep can recognise the process as its own.

**Any command** (`--exec`, for a harness session: Claude Code, Codex, a shell script) cannot run
inside the guard's interpreter, so the guard stays its parent instead. It starts the command in
its own process group, then passes on the signals the command's owner sends (SIGTERM, SIGINT,
SIGHUP, SIGQUIT, SIGUSR1, SIGWINCH: a stop, a Ctrl-C, a resized terminal), and exits with the
command's status (128 + N for a command killed by signal N). When the parent dies, the command
gets SIGTERM and, `STOP_GRACE` seconds later, the whole group SIGKILL. The command is tied to the
guard as the guard is to the parent (on Linux it gets SIGTERM if the guard itself is killed), and
whatever it left running in the group is stopped when it exits: nothing of a session outlives it.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

__all__ = ["EXIT_NOT_FOUND", "EXIT_PARENT_GONE", "FORWARDED_SIGNALS", "PARENT_DEATH_SIGNAL", "STOP_GRACE", "main"]

# The signal the kernel sends when the parent thread dies; the module's own handlers use SIGTERM
# and SIGINT, so this one is free to mean "look whether the parent is still there".
PARENT_DEATH_SIGNAL = signal.SIGUSR2
STOP_GRACE = 10.0
EXIT_PARENT_GONE = 75  # EX_TEMPFAIL: the parent went away before the child could start
EXIT_NOT_FOUND = 127  # what a shell answers for a command it cannot find
_PR_SET_PDEATHSIG = 1
# What a command's owner may send it through the guard: stopping, interrupting, a terminal resize.
FORWARDED_SIGNALS = (
    signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGWINCH,
)


class _Guard:
    """Watches the parent; `stop()` runs at most once."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self._stopping = threading.Event()
        # How to ask the child to stop: the module handles this process's SIGTERM; a command is sent
        # its own, directly (a signal to this process could land on the watching thread, and the main
        # thread, waiting for the command, would not run its handler in time).
        self.ask_to_stop: Callable[[], None] = lambda: os.kill(os.getpid(), signal.SIGTERM)
        # Past the grace, end the module (it runs in this process) or, for a command, its whole group.
        self.deadline: Callable[[], None] = lambda: os._exit(EXIT_PARENT_GONE)

    def parent_gone(self) -> bool:
        return os.getppid() != self.parent

    def stop(self, why: str) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        sys.stderr.write(f"resident child {os.getpid()}: {why}; stopping\n")
        sys.stderr.flush()
        _background(self._after_grace, "stop-deadline")
        self.ask_to_stop()

    def _after_grace(self) -> None:
        time.sleep(STOP_GRACE)  # the grace itself, in a thread of its own: nothing else waits on it
        self.deadline()

    def watch_pipe(self, fd: int) -> None:
        """Block until the parent's end of the pipe closes (it never writes), then stop."""
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        self.stop(f"the parent process {self.parent} is gone (its pipe closed)")

    def on_parent_death_signal(self, _signum: int, _frame: FrameType | None) -> None:
        if self.parent_gone():
            self.stop(f"the parent process {self.parent} is gone (parent-death signal)")


def _background(target: Callable[[], None], name: str) -> None:
    """Run `target` in a daemon thread that takes none of the signals the main thread must handle.

    A signal sent to this process lands on any thread that does not block it, and only the main
    thread runs Python handlers: one landing on a helper thread while the main thread waits in a
    system call (for the command) would wait with it.
    """

    def quiet() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {*FORWARDED_SIGNALS, PARENT_DEATH_SIGNAL})
        target()

    threading.Thread(target=quiet, name=name, daemon=True).start()


def _ask_for_parent_death_signal(sig: int = PARENT_DEATH_SIGNAL) -> None:
    """Linux only: have the kernel send `sig` to this process when its parent thread dies."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(errno)}")


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m resident.children", description=__doc__)
    parser.add_argument("--parent", type=int, required=True, help="pid of the process that started this one")
    parser.add_argument("--watch", type=int, required=True, help="read end of the pipe the parent holds open")
    parser.add_argument("--token", required=True, help="the parent's mark on this child (read by its orphan sweep)")
    parser.add_argument("--exec", action="store_true", help="run MODULE as a command (a program on PATH)")
    parser.add_argument("module", help="the module to run as __main__ (with --exec: the command)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return parser.parse_args(argv)


def _tie_to_guard() -> None:
    """In the command, before it runs: SIGTERM it if the guard dies (even killed with SIGKILL)."""
    _ask_for_parent_death_signal(signal.SIGTERM)


def _kill_group() -> None:
    os.killpg(0, signal.SIGKILL)


def _run_command(guard: _Guard, argv: list[str], watch: int) -> int:
    """Run `argv` as this guard's child, passing signals on; its exit status, as a shell reports it."""
    try:
        # Arguments given by the runtime that started the guard; no shell is involved. The command is
        # forked before the guard starts any thread, which is what makes `preexec_fn` safe here.
        command = subprocess.Popen(argv, preexec_fn=_tie_to_guard)  # noqa: S603, PLW1509 - argv built here, no shell; preexec ties the child to its guard before exec
    except OSError as error:
        sys.stderr.write(f"resident child: cannot run {argv[0]!r}: {error.strerror or error}\n")
        return EXIT_NOT_FOUND

    def forward(signum: int, _frame: FrameType | None) -> None:
        if command.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(command.pid, signum)

    for sig in FORWARDED_SIGNALS:
        signal.signal(sig, forward)
    guard.ask_to_stop = lambda: forward(signal.SIGTERM, None)
    guard.deadline = _kill_group
    _background(lambda: guard.watch_pipe(watch), "parent-watch")
    code = command.wait()
    # Whatever the command left running in its group ends with it (the guard itself ignores this).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(0, signal.SIGTERM)
    return code if code >= 0 else 128 - code


def main(argv: Sequence[str]) -> int:
    """Set up the guard, then run the module; returns only if the module returns."""
    args = _arguments(argv)
    guard = _Guard(args.parent)
    # The handler first: a signal arriving between prctl and the handler would kill at once.
    signal.signal(PARENT_DEATH_SIGNAL, guard.on_parent_death_signal)
    _ask_for_parent_death_signal()
    if guard.parent_gone():
        sys.stderr.write(f"resident child: the parent process {args.parent} is gone before the start\n")
        return EXIT_PARENT_GONE
    module_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    if args.exec:
        return _run_command(guard, [args.module, *module_args], args.watch)
    _background(lambda: guard.watch_pipe(args.watch), "parent-watch")
    sys.argv = [args.module, *module_args]
    runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    return 0
