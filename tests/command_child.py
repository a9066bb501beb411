"""A command for tests of `spawn_command` (run as a program, not a module): records the signals it gets.

    python tests/command_child.py READY_FILE [--leave-behind] [--exit N]

READY_FILE receives `{"pid", "pgid", "sid", "left"}` once its handlers are set. Every SIGINT,
SIGWINCH, SIGHUP or SIGUSR1 it gets is appended to READY_FILE.signals, one name a line; SIGTERM is
written there too and ends it with status 3. `--leave-behind` starts a `sleep` in its process
group and reports its pid as `left`; `--exit N` exits with N at once, after reporting ready.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType

TERM_STATUS = 3


def main(argv: list[str]) -> int:
    ready = Path(argv[0])
    signals = ready.with_name(ready.name + ".signals")

    def note(signum: int, _frame: FrameType | None) -> None:
        with signals.open("a") as file:
            file.write(signal.Signals(signum).name + "\n")
        if signum == signal.SIGTERM:
            sys.exit(TERM_STATUS)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGWINCH, signal.SIGHUP, signal.SIGUSR1):
        signal.signal(sig, note)
    left = subprocess.Popen(["sleep", "300"]).pid if "--leave-behind" in argv else None
    temporary = ready.with_name(ready.name + ".part")
    temporary.write_text(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "left": left}))
    temporary.replace(ready)
    if "--exit" in argv:
        return int(argv[argv.index("--exit") + 1])
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
