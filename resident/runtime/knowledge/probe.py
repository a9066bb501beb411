"""The authorized probe: what a repository's files and the store say about an entry's dependencies now.

A file dependency is checked by reading the file in the repository's registered work tree and
hashing it. The probe reads only regular files inside that tree: a path that is absolute, climbs
out with `..`, or resolves (through a symbolic link) outside the tree is never opened, and counts
as a failed probe, not as proof of a change. A file that is gone, or is no longer a file, is proof.
An `entry` dependency holds while that entry is verified at the recorded version; a `provider`
dependency records who wrote the entry and has nothing to probe.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from resident.knowledge.revalidation import Probe
from resident.messages.knowledge import Dependency, KnowledgeEntry, Repository

__all__ = ["ProbeFailed", "WorkTree", "probe_dependency"]

_CHUNK = 1 << 20


class ProbeFailed(Exception):
    """The probe could not look (outside the tree, unreadable): nothing is proved either way."""


class WorkTree:
    """The registered work tree of one repository, read only inside its root.

    A file is opened one path component at a time, each relative to the directory opened before
    and none through a symbolic link, so a link swapped in while the probe runs cannot lead it
    outside the tree either.
    """

    def __init__(self, repository: Repository) -> None:
        self.repository = repository
        self.root = Path(repository.path)

    def digest(self, relative: str) -> str | None:
        """The SHA-256 of the file at `relative` now, or None if there is no such file."""
        parts = self._parts(relative)
        try:
            directory = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            raise ProbeFailed(f"the work tree of {self.repository.id} cannot be read ({error.strerror})") from None
        try:
            fd = self._open(directory, parts, relative)
        finally:
            os.close(directory)
        if fd is None:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            hasher = hashlib.sha256()
            while chunk := handle.read(_CHUNK):
                hasher.update(chunk)
        return hasher.hexdigest()

    def _parts(self, relative: str) -> tuple[str, ...]:
        path = PurePosixPath(relative)
        if not relative or path.is_absolute() or "\0" in relative or any(p in ("..", ".") for p in path.parts):
            raise ProbeFailed(f"{relative!r} is not a path inside repository {self.repository.id}")
        return path.parts

    def _open(self, directory: int, parts: tuple[str, ...], relative: str) -> int | None:
        """The file's descriptor (None if it is gone), opened beneath `directory`, following no link."""
        opened: list[int] = []
        try:
            for part in parts[:-1]:
                directory = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
                opened.append(directory)
            return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=directory)
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            return None
        except OSError as error:
            # ELOOP (a link in the way), EACCES, ...: the probe could not look.
            raise ProbeFailed(f"{relative} cannot be read inside the work tree ({error.strerror})") from None
        finally:
            for fd in opened:
                os.close(fd)


def probe_dependency(dependency: Dependency, tree: WorkTree | None, entries: dict[str, KnowledgeEntry]) -> Probe:
    """One dependency's answer; `entries` holds the entries that `entry` dependencies name, as read."""
    match dependency.kind:
        case "file":
            if tree is None:
                return Probe("failed", "the repository is not registered")
            try:
                digest = tree.digest(dependency.ref)
            except ProbeFailed as error:
                return Probe("failed", str(error))
            if digest is None:
                return Probe("changed", f"{dependency.ref} was deleted")
            if digest != dependency.digest:
                return Probe("changed", f"{dependency.ref} changed")
            return Probe("unchanged")
        case "entry":
            other = entries.get(dependency.ref)
            if other is None or other.state != "verified" or str(other.version) != dependency.generation:
                return Probe("changed", f"entry {dependency.ref} it depends on changed")
            return Probe("unchanged")
        case _:
            return Probe("unchanged")
