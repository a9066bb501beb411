"""The sandbox a member's harness runs in: hidden from the resident home and the user's own home.

A harness runs as the owner's OS user, so unsandboxed it could read `api.json` (whose token acts as
the owner), the store, and other members' harness homes. On Linux, bubblewrap (`bwrap`) runs it in
a user namespace where those folders are empty tmpfs mounts; the project directory it works in and
its own harness home (or, for a command harness, its session folder) are bound back, and the rest
of the file system and loopback networking stay as they are. Its only credential is then its grant
token (`$RESIDENT_GRANT_TOKEN`), and it reaches the runtime at `$RESIDENT_API`.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SANDBOX_PROGRAM", "sandbox_unavailable", "sandboxed"]

SANDBOX_PROGRAM = "bwrap"
_PROBE_TIMEOUT = 30.0


def _options(hidden: Sequence[Path], visible: Sequence[Path]) -> list[str]:
    options = ["--unshare-user", "--dev-bind", "/", "/", "--die-with-parent"]
    for folder in hidden:
        options += ["--tmpfs", str(folder)]
    for path in visible:
        options += ["--bind", str(path), str(path)]
    return options


@functools.cache
def sandbox_unavailable() -> str | None:
    """Why no harness can be sandboxed here (None when one can): bubblewrap is missing or refuses to run."""
    program = shutil.which(SANDBOX_PROGRAM)
    if program is None:
        return f"bubblewrap (`{SANDBOX_PROGRAM}`) is not installed"
    probe = Path("/")
    try:
        done = subprocess.run(  # noqa: S603 - bwrap found on PATH, fixed arguments
            [program, *_options([], []), "--chdir", str(probe), "true"],
            capture_output=True, timeout=_PROBE_TIMEOUT, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not run ({type(error).__name__})"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        return f"bubblewrap refuses to run here ({reason[0][:200]})"
    return None


def sandboxed(
    argv: Sequence[str], *, home: Path, directory: Path, own: Path, hidden: Sequence[Path] = ()
) -> tuple[str, ...]:
    """`argv` run in bubblewrap: `home` (and `hidden`, like the user's default home) hidden, `directory`
    and `own` (the harness's home, or its session folder) visible."""
    program = shutil.which(SANDBOX_PROGRAM) or SANDBOX_PROGRAM
    # The user's home first, then the project (which may lie inside it), then the resident home (which
    # may lie inside either), then the harness's own folder inside the resident home.
    covered = [folder for folder in hidden if folder != home]
    options = _options(covered, [directory]) + _options([home], [own])[5:]
    return (program, *options, "--chdir", str(directory), "--", *argv)
