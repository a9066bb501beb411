"""What a dispatched execution runs: its harness, command, directory and sandbox, checked at dispatch and kept.

A dispatch that names a harness is checked whole before anything is recorded (the harness known, its program
on the runtime's PATH, the directory an absolute folder), and what to run is kept in `HOME/executions/EXEC`
(private, `resident.runtime.sessions.launch_files`) until the execution's session ends; a reassignment after
that reads what to run from the ended session's record.
"""

from __future__ import annotations

import os
from pathlib import Path

from resident.errors import InvalidInput
from resident.messages.coordination_calls import DispatchRequest
from resident.runtime.context import Call, Context
from resident.runtime.sessions.launch_files import (
    LaunchSpec,
    forget_launch,
    kept_launches,
    launches_root,
    load_launch,
    save_launch,
)
from resident.runtime.sessions.sandbox import sandbox_unavailable
from resident.runtime.sessions.start import check_harness, harness_command, working_directory

__all__ = [
    "LaunchSpec", "check_launch", "forget_launch", "kept_launches", "launches_root", "load_launch", "save_launch",
]


def check_launch(context: Context, call: Call, request: DispatchRequest) -> LaunchSpec:
    """The launch `request` asks for, checked (`InvalidInput`, `HarnessNotFound`) before anything is recorded."""
    harness = check_harness(request.harness)
    if not request.directory or not Path(request.directory).is_absolute():
        raise InvalidInput(
            f"a dispatched harness runs in a folder named by its absolute path (--dir), not {request.directory!r}"
        )
    program = request.command[0] if request.command else ""
    if call.remote and os.sep in program and not Path(program).is_absolute():
        raise InvalidInput(f"over the API, a program is named on PATH or by an absolute path, not {program!r}")
    harness_command(harness, tuple(request.command), os.environ.get("PATH"))
    directory = working_directory(request.directory)
    sandbox = context.config.session_sandbox and sandbox_unavailable() is None
    return LaunchSpec(harness=harness, command=tuple(request.command), directory=str(directory), sandbox=sandbox)
