"""Whether the process that runs a session is still the one that started it (a pid alone may have been reused)."""

from __future__ import annotations

from resident.children.orphans import process_start
from resident.processes import pid_alive
from resident.runtime.sessions.tree import Manifest

__all__ = ["live"]


def live(manifest: Manifest) -> bool:
    """Whether the process that runs `manifest`'s session is still that process."""
    start = process_start(manifest.process)
    if start is not None or manifest.process_start is not None:
        return start is not None and start == manifest.process_start
    return pid_alive(manifest.process)
