"""Child processes of the runtime: started one way, tied to their parent, never left running.

Every process the runtime starts (the Realm server of `resident run --realm auto`, a member's
harness session) goes through `spawn_child` (a Python module) or `spawn_command` (any program),
which give it three ties to its parent so it cannot outlive it:

1. **Its own process group and session**, so the parent stops the child and anything the child
   started with one signal, and a Ctrl-C in the terminal reaches only the parent, which then
   stops the child gracefully.
2. **A guard in the child** (`python -m resident.children`, see `guard.py`) that runs before the
   child's own code and stops it when the parent dies: it watches a pipe whose only writer is the
   parent (the kernel closes it when the parent dies, however it dies, on every platform) and,
   on Linux, also asks for a parent-death signal (`PR_SET_PDEATHSIG`).
3. **A pid file** in a private per-user folder, naming the child, its parent and a random token
   that is also on the child's command line. Each spawn first sweeps that folder: a child whose
   parent is gone is stopped, but only once its command line shows the token, so a forged or
   stale pid file never makes the runtime signal a process that is not its own.

This package imports nothing from the project but the leaf modules, so any layer may start a
child through it.
"""

from __future__ import annotations

from resident.children.orphans import ChildRecord, children_dir, stop_orphans
from resident.children.spawn import STOP_GRACE, ChildProcess, spawn_child, spawn_command

__all__ = ["STOP_GRACE", "ChildProcess", "ChildRecord", "children_dir", "spawn_child", "spawn_command", "stop_orphans"]
