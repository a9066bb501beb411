"""Whether the process that runs a session is still the one that started it (a pid alone may have been reused)."""

from __future__ import annotations

from pathlib import Path

from resident.children.orphans import process_start
from resident.processes import pid_alive
from resident.runtime.sessions.tree import Manifest

__all__ = ["live"]


def _exited(pid: int) -> bool:
    """Whether `pid` is a zombie: it exited, and its parent has not collected it yet (a background process whose
    runtime was killed waits for whoever adopted it; it runs nothing any more)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :].split()[:1] == [b"Z"]


def live(manifest: Manifest) -> bool:
    """Whether the process that runs `manifest`'s session is still that process."""
    start = process_start(manifest.process)
    if start is not None or manifest.process_start is not None:
        return start is not None and start == manifest.process_start and not _exited(manifest.process)
    return pid_alive(manifest.process)
