"""Running a member's harness: a guarded child process in the working directory, with its environment.

The harness gets the caller's environment plus what makes it the member's session: the grant
token (`$RESIDENT_GRANT_TOKEN`), the home to call back into (`$RESIDENT_HOME`), the session id and
member, and its own home variable (`harness_env`). It runs through `resident.children` (its own
process group, a guard that stays its parent and stops it if this process dies) and, unless given a
log, in this terminal: the guard passes on a resized terminal (SIGWINCH). A Ctrl-C or SIGTERM here
stops the harness gracefully through its guard (SIGTERM, then SIGKILL after the grace) before the
interruption goes on, so the session still ends in recovery.

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

import platformdirs

from resident.children import STOP_GRACE, ChildProcess, spawn_command
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.messages.sessions import Harness
from resident.runtime.sandbox import sandboxed
from resident.store.home import HOME_ENV

__all__ = ["SESSION_ENV", "SessionLaunch", "session_variables"]

SESSION_ENV = "RESIDENT_SESSION"
MEMBER_ENV = "RESIDENT_MEMBER"
_SESSION_NAMES = frozenset({GRANT_TOKEN_ENV, HOME_ENV, SESSION_ENV, MEMBER_ENV})
# How long one wait for the harness lasts before it waits again (a long session is many waits).
_WAIT_SLICE = 60.0


def session_variables(
    *, home: Path, session: str, member: str, token: str, harness_home: tuple[str, str]
) -> dict[str, str]:
    """What makes a harness the member's session: its token, home, session, member and its own home variable."""
    variable, value = harness_home
    return {GRANT_TOKEN_ENV: token, HOME_ENV: str(home), SESSION_ENV: session, MEMBER_ENV: member, variable: value}


@dataclass
class SessionLaunch:
    """A projected session, ready to run its harness; `run()` returns the harness's exit status.

    The harness gets the environment of the process that runs it, with the session's `variables`
    over it (its own token replaces any other). A launch can be started by a runtime in another
    process (`resident up`) and run here. `stop()`, from any thread, asks a running harness to stop
    (as Ctrl-C does) and waits for it.
    """

    session: str
    member: str
    harness: Harness
    execution: str
    argv: tuple[str, ...]
    directory: Path
    variables: dict[str, str] = field(repr=False)
    token: str = field(repr=False)
    # Run in bubblewrap, hidden from the home and the user's own home (`resident.runtime.sandbox`).
    sandbox: bool = False
    # How the harness calls the runtime back when it cannot read api.json (the address of the API up
    # for the home and its session's proof key): set by the surface that serves the API, which alone
    # knows it; each name is set, empty when there is none, so nothing inherited stands in for it.
    callback: dict[str, str] = field(default_factory=dict, repr=False)
    _child: ChildProcess | None = field(default=None, init=False, repr=False)

    def run(self, *, log: Path | None = None, output_to_stderr: bool = False) -> int:
        """Run the harness until it exits; Ctrl-C or SIGTERM stop it first, then go on (see the module).

        Its output goes to `log` if given, else to this terminal (its standard error with
        `output_to_stderr`, so that standard output stays one JSON answer).
        """
        child = self._child = spawn_command(
            self._command(), cwd=self.directory, env=self.env, log=log, output_to_stderr=output_to_stderr
        )
        try:
            with _forwarding_resizes(child):
                while True:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        return child.wait(_WAIT_SLICE)
        except BaseException:
            _stop(child)
            raise

    def _command(self) -> tuple[str, ...]:
        if not self.sandbox:
            return self.argv
        home = Path(self.variables[HOME_ENV])
        own = next(Path(value) for name, value in self.variables.items() if name not in _SESSION_NAMES)
        if self.harness == "command":
            own = own.parent  # the transcript file is made there during the session: its folder is bound
        # The user's default home too (another home's api.json acts as the owner there).
        default = Path(platformdirs.user_data_dir("resident", appauthor=False))
        hidden = (default,) if default.is_dir() else ()
        return sandboxed(self.argv, home=home, directory=self.directory, own=own, hidden=hidden)

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
