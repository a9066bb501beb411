"""The launches kept in `HOME/executions/EXEC` (private): what the execution runner runs for each execution.

A launch is kept from the dispatch until the execution's session ends (`forget_launch`), so an execution
waiting for a free slot survives a restart; after a crash, the runner's recovery removes any left for an
execution that is no longer running (see `kept_launches`). This module holds the files only (no checks of a
harness), so a session's end can remove its launch without importing what starts one.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from resident.errors import InvalidInput
from resident.files import private_dir, read_private_file, write_private_file
from resident.ids import check_record_id

__all__ = ["LaunchSpec", "forget_launch", "kept_launches", "launches_root", "load_launch", "save_launch"]

# A command line of 2,000 arguments of 64,000 characters is far above any harness's; a kept launch is read whole.
_MAX_LAUNCH = 1 << 27


class LaunchSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the runtime runs one execution's session."""

    harness: str
    command: tuple[str, ...]
    directory: str
    sandbox: bool


def launches_root(home: Path) -> Path:
    return private_dir(home / "executions")


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
    """Remove the launch kept for `execution_id` (nothing when there is none)."""
    _path(home, execution_id).unlink(missing_ok=True)


def kept_launches(home: Path) -> list[str]:
    """The execution ids whose launch is kept in the home (each a file named for its execution)."""
    root = home / "executions"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.name.startswith("exec_") and "." not in p.name and p.is_file())
