"""A real, small filesystem for disk-full tests: a tmpfs mounted in the test's temporary directory.

Mounting needs root (or CAP_SYS_ADMIN); where the test cannot mount, it is skipped with the reason.
`fill` leaves a chosen amount of free space by writing a ballast file, which `drain` removes again.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["SmallFilesystem", "small_filesystem"]

BALLAST = "ballast"


class SmallFilesystem:
    """A mounted tmpfs of a fixed size."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def free(self) -> int:
        stats = os.statvfs(self.root)
        return stats.f_bfree * stats.f_frsize

    def fill(self, leave: int) -> None:
        """Write a ballast file so that about `leave` bytes stay free."""
        with (self.root / BALLAST).open("ab") as ballast:
            while (excess := self.free() - leave) > 0:
                ballast.write(b"\0" * min(excess, 1 << 20))
                ballast.flush()

    def drain(self) -> None:
        """Remove the ballast: the space it took is free again."""
        (self.root / BALLAST).unlink(missing_ok=True)


@contextmanager
def small_filesystem(directory: Path, size: str) -> Iterator[SmallFilesystem]:
    """Mount a tmpfs of `size` (e.g. `8m`) on `directory`; skip the test if this machine cannot."""
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if mount is None or umount is None:
        pytest.skip("no mount command here to make a small filesystem")
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for a disk-full test (needs root): {done.stderr.strip()}")
    try:
        yield SmallFilesystem(directory)
    finally:
        subprocess.run([umount, "-l", str(directory)], capture_output=True, check=False)
