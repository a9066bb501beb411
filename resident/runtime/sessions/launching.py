"""What a dispatched execution runs: its harness, command, directory and sandbox, checked at dispatch and kept.

A dispatch that names a harness is checked whole before anything is recorded (the harness known, its program
on the runtime's PATH, the directory an absolute folder), and what to run is kept in `HOME/executions/EXEC`
(private) until the execution runner starts it: an execution waiting for a free slot survives a restart, and
a reassignment runs the same launch for another member.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from resident.errors import InvalidInput
from resident.files import read_private_file, write_private_file
from resident.ids import check_record_id
from resident.messages.coordination_calls import DispatchRequest
from resident.runtime.context import Call, Context
from resident.runtime.sessions.sandbox import sandbox_unavailable
from resident.runtime.sessions.start import check_harness, harness_command, working_directory

# A command line of 2,000 arguments of 64,000 characters is far above any harness's; a kept launch is read whole.
_MAX_LAUNCH = 1 << 27

__all__ = ["LaunchSpec", "check_launch", "forget_launch", "launches_root", "load_launch", "save_launch"]


class LaunchSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the runtime runs one execution's session."""

    harness: str
    command: tuple[str, ...]
    directory: str
    sandbox: bool


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


def launches_root(home: Path) -> Path:
    root = home / "executions"
    with contextlib.suppress(FileExistsError):
        root.mkdir(mode=0o700)
    return root


def _path(home: Path, execution_id: str) -> Path:
    name = check_record_id(execution_id, "execution id")
    if not name.startswith("exec_") or os.sep in name:
        raise InvalidInput(f"{name!r} is not an execution id; see `resident executions`")
    return launches_root(home) / name


def save_launch(home: Path, execution_id: str, launch: LaunchSpec) -> None:
    write_private_file(_path(home, execution_id), msgspec.json.encode(launch))


def load_launch(home: Path, execution_id: str) -> LaunchSpec | None:
    """The launch kept for `execution_id` (None when there is none, or it does not read)."""
    try:
        return msgspec.json.decode(read_private_file(_path(home, execution_id), _MAX_LAUNCH), type=LaunchSpec)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def forget_launch(home: Path, execution_id: str) -> None:
    _path(home, execution_id).unlink(missing_ok=True)
