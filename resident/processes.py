"""Whether a process exists: the one probe the runtime uses on pids it reads from files.

This module imports nothing from the project, so every layer may use it (the `resident` command's
light client path included).
"""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user).

    A pid of 0 or below names no one process (`kill` would reach a whole group), so it is not alive.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
