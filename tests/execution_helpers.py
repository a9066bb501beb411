"""A harness the tests hold in place: it says it runs, then waits for the exit status the test hands it.

Both through FIFOs, so a test knows the harness runs (its open of `started` returns) and decides when it ends
(what it writes to `go`), with no sleep and no polling: each side blocks on the other.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["HeldHarness", "with_max_running"]

_SCRIPT = """
import pathlib, sys
open(sys.argv[1], "w").close()
status = open(sys.argv[2]).read().strip()
pathlib.Path("harness-output.txt").write_text("the held harness ran here")
sys.exit(int(status or 0))
"""


class HeldHarness:
    """A command harness held between two FIFOs in `folder`."""

    def __init__(self, folder: Path, name: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.started_path = folder / f"{name}.started"
        self.go_path = folder / f"{name}.go"
        os.mkfifo(self.started_path)
        os.mkfifo(self.go_path)

    @property
    def command(self) -> tuple[str, ...]:
        return (sys.executable, "-c", _SCRIPT, str(self.started_path), str(self.go_path))

    def started(self) -> None:
        """Return once the harness runs (bounded by the test's timeout)."""
        with self.started_path.open() as fifo:
            fifo.read()

    def go(self, status: int) -> None:
        """Let the harness end with `status`."""
        with self.go_path.open("w") as fifo:
            fifo.write(str(status))


def with_max_running(home: Path, limit: int) -> None:
    """Set `[sessions] max_running` in the home's resident.toml (which `Runtime.open` wrote)."""
    config = home / "resident.toml"
    config.write_text(config.read_text() + f"\n[sessions]\nmax_running = {limit}\n")
