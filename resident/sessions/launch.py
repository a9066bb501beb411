"""Running a member's harness: a guarded child process in the working directory, with its environment.

`rt.sessions.start` (the runtime, in this process or another) answers what running the harness takes
(`Launched`: the command line, the directory, the session's own environment variables), and the process
that asked runs it here. The harness gets this process's environment plus what makes it the member's
session: its grant token, the home to call back into, the session id and member, and its own home
variable. It runs through `resident.children` (its own process group, a guard that stays its parent and
stops it if this process dies) and, unless given a log, in this terminal: the guard passes on a resized
terminal (SIGWINCH). A Ctrl-C or SIGTERM here stops the harness gracefully through its guard (SIGTERM,
then SIGKILL after the grace) before the interruption goes on, so the session still ends in recovery.

The token lives only in this process's memory and the child's environment (and, when a running
`resident up` started the session, in its answer to the launching process over loopback):
`SessionLaunch` never shows it, and nothing writes it down.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from resident.children import STOP_GRACE, ChildProcess, spawn_command
from resident.messages.sessions import Harness
from resident.messages.sessions_calls import Launched

__all__ = ["SessionLaunch"]

# How long one wait for the harness lasts before it waits again (a long session is many waits).
_WAIT_SLICE = 60.0


@dataclass
class SessionLaunch:
    """A projected session, ready to run its harness; `run()` returns the harness's exit status.

    The harness gets the environment of the process that runs it, with the session's `variables`
    over it (its own token replaces any other). `stop()`, from any thread, asks a running harness
    to stop (as Ctrl-C does) and waits for it.
    """

    session: str
    member: str
    harness: Harness
    execution: str
    argv: tuple[str, ...]
    directory: Path
    variables: dict[str, str] = field(repr=False)
    token: str = field(repr=False)
    # How the harness calls the runtime back when it cannot read api.json (the address of the API up
    # for the home and its session's proof key): set by the surface that serves the API, which alone
    # knows it; each name is set, empty when there is none, so nothing inherited stands in for it.
    callback: dict[str, str] = field(default_factory=dict, repr=False)
    _child: ChildProcess | None = field(default=None, init=False, repr=False)

    @classmethod
    def of(cls, launched: Launched, callback: dict[str, str] | None = None) -> SessionLaunch:
        """The launch of a session the runtime started (`rt.sessions.start`'s answer)."""
        return cls(
            session=launched.session, member=launched.member, harness=launched.harness, execution=launched.execution,
            argv=launched.argv, directory=Path(launched.directory), variables=dict(launched.variables),
            token=launched.token, callback=callback or {},
        )

    def run(self, *, log: Path | None = None, output_to_stderr: bool = False) -> int:
        """Run the harness until it exits; Ctrl-C or SIGTERM stop it first, then go on (see the module).

        Its output goes to `log` if given, else to this terminal (its standard error with
        `output_to_stderr`, so that standard output stays one JSON answer).
        """
        child = self._child = spawn_command(
            self.argv, cwd=self.directory, env=self.env, log=log, output_to_stderr=output_to_stderr
        )
        try:
            with _forwarding_resizes(child):
                while True:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        return child.wait(_WAIT_SLICE)
        except BaseException:
            _stop(child)
            raise

    @property
    def env(self) -> dict[str, str]:
        """The harness's environment: this process's, with the session's variables and `callback` set."""
        return {**os.environ, **self.variables, **self.callback}

    def stop(self) -> None:
        """Stop the harness if it runs (gracefully, then killed after the grace)."""
        if self._child is not None:
            _stop(self._child)


@contextlib.contextmanager
def _forwarding_resizes(child: ChildProcess) -> Iterator[None]:
    """Pass a terminal resize on to the harness while it runs (only the main thread can listen)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGWINCH, lambda _signum, _frame: child.signal(signal.SIGWINCH))
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, previous)


def _stop(child: ChildProcess) -> None:
    try:
        child.stop(STOP_GRACE)
    except subprocess.TimeoutExpired:
        child.kill(STOP_GRACE)
