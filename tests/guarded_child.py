"""A child program for tests of `resident.children`: reports itself ready, then waits for SIGTERM.

    python -m resident.children ... -- tests.guarded_child READY_FILE [--grandchild] [--stubborn]

READY_FILE receives `{"pid", "grandchild"}` once the handlers are set. `--grandchild` starts a
`sleep` in the same process group first; `--stubborn` ignores SIGTERM (only SIGKILL ends it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    ready = Path(argv[0])
    if "--stubborn" in argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    grandchild = subprocess.Popen(["sleep", "300"]).pid if "--grandchild" in argv else None
    temporary = ready.with_name(ready.name + ".part")
    temporary.write_text(json.dumps({"pid": os.getpid(), "grandchild": grandchild}))
    temporary.replace(ready)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
