"""Helpers for session tests: the fake harness, a directory's exact state, and scanning bytes for secrets."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

__all__ = ["FAKE_HARNESS", "fake", "files_holding", "planted_file", "tree"]

FAKE_HARNESS = str(Path(__file__).with_name("fake_harness.py"))


def fake(*options: str) -> tuple[str, ...]:
    """The command line of the fake harness (a real program) with `options`."""
    return (sys.executable, FAKE_HARNESS, *options)


def tree(root: Path) -> dict[str, tuple[str, int, bytes]]:
    """Everything under `root` (links not followed): relative path → (kind, mode, bytes or link target)."""
    found: dict[str, tuple[str, int, bytes]] = {}
    for folder, folders, files in os.walk(root):
        for name in [*folders, *files]:
            path = Path(folder) / name
            info = path.lstat()
            relative = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", 0, str(path.readlink()).encode())
            elif stat.S_ISDIR(info.st_mode):
                found[relative] = ("folder", stat.S_IMODE(info.st_mode), b"")
            else:
                found[relative] = ("file", stat.S_IMODE(info.st_mode), path.read_bytes())
    return found


def planted_file(folder: Path, secrets: dict[str, str]) -> Path:
    """A JSON file of the secrets the fake harness plants (it prints them into its transcript)."""
    path = folder / "planted.json"
    path.write_text(json.dumps(secrets), encoding="utf-8")
    return path


def files_holding(root: Path, values: Iterable[str]) -> list[str]:
    """Every file under `root` whose bytes hold any of `values` (or a line of a multi-line value)."""
    needles = {piece.encode() for value in values for piece in value.split("\n") if len(piece) >= 12}
    hits: list[str] = []
    for folder, _folders, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if path.is_symlink():
                continue
            data = path.read_bytes()
            hits += [f"{path}: {needle[:8]!r}…" for needle in needles if needle in data]
    return hits


# `resident session start` runs the harness in bubblewrap, and refuses without it (unless told to run it
# unsandboxed): the tests that start sessions through the command need it, and skip, saying so, without.
def _sandbox_missing() -> str | None:
    from resident.runtime.sessions.sandbox import sandbox_unavailable  # noqa: PLC0415 - asked once, at collection

    return sandbox_unavailable()


_MISSING = _sandbox_missing()
requires_sandbox = pytest.mark.skipif(
    _MISSING is not None, reason=f"{_MISSING}: `resident session start` needs bubblewrap (apt-get install bubblewrap)"
)
