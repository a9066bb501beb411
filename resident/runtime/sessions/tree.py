"""Projecting files into a working directory and taking them back out, even after a crash.

A session writes a member's files into a repository it does not own, so every step is written
down first: the session's manifest (`HOME/sessions/<id>/manifest.json`, private) lists each path
*before* it is touched, with a private copy of what was there (a file's bytes and mode, a link's
target). Restoring walks the list backwards: a file that was there gets its bytes back, a link its
target, a path that was absent is removed, and so is every folder the projection created, once
empty. If the harness changed a projected file, its version is kept beside the manifest (and the
restore says so) rather than lost. Because the manifest is written before each change, a session
killed at any point can be restored by whoever finds its manifest later (`resident session
recover`, or the next session that starts); restoring twice changes nothing.

The repository is not trusted to be plain: every path is walked one folder at a time from the
working directory without following a symbolic link (a `.claude` that links to another place is
refused, never written through), files are replaced by rename (a link at `AGENTS.md` is replaced,
not followed) and a temporary name is created exclusively.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Literal

import msgspec

from resident.errors import InvalidInput, ProjectionRefused
from resident.files import private_dir, read_private_file, write_private_file, write_whole
from resident.messages.sessions import Harness

__all__ = [
    "MANIFEST_FILE",
    "Manifest",
    "ManifestEntry",
    "ProjectionTree",
    "is_session_id",
    "load_manifest",
    "manifests",
    "save_manifest",
    "session_dir",
    "sessions_root",
]

MANIFEST_FILE = "manifest.json"
# What `new_id("ses")` makes: a session's folder name is nothing else (never `..`, never a path).
_SESSION_ID = re.compile(r"ses_[0-9a-f]{28}")
# An instruction file larger than this is backed up and restored, but not quoted into AGENTS.md.
MAX_QUOTED = 256 * 1024
# A file to back up larger than this is refused: a projection never copies a repository's big files.
MAX_BACKUP = 16 << 20
_MANIFEST_LIMIT = 16 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
ManifestState = Literal["dispatching", "projecting", "running", "ending"]


class ManifestEntry(msgspec.Struct):
    """One projected path: what was there before (`absent`, a `file` with its mode, a `link`) and what was written."""

    path: str
    before: Literal["absent", "file", "link"]
    backup: str = ""
    mode: int = 0o644
    link: str = ""
    written: str = ""
    restored: bool = False
    # A file with other hard links keeps its inode under this name beside it while the session runs,
    # so the restore renames the very file back (its links intact) instead of writing a copy.
    kept_as: str = ""
    inode: tuple[int, int] = (0, 0)


class Manifest(msgspec.Struct):
    """Everything needed to end a session in another process: where it projected, what, and what was there.

    `process` and `process_start` name the process running the session: while it lives the session
    is its; once it is gone anyone may recover it. `snapshot` lists the harness's transcript files as
    they were before it started (relative path → size, modification time, inode).
    """

    session: str
    member: str
    harness: Harness
    directory: str
    process: int
    process_start: str | None
    started_at: float
    state: ManifestState = "dispatching"
    execution: str = ""
    # The execution was dispatched for this session (so it fails if the session never starts).
    owns_execution: bool = False
    harness_home: str = ""
    transcript: str = ""
    entries: list[ManifestEntry] = msgspec.field(default_factory=list)
    folders: list[str] = msgspec.field(default_factory=list)
    snapshot: dict[str, tuple[int, int, int]] = msgspec.field(default_factory=dict)
    notes: list[str] = msgspec.field(default_factory=list)
    # The session's grant token file (`$RESIDENT_GRANT_FILE`), and what the Codex home's config.toml was before
    # the session added to it ("absent", "kept" in the session's folder, or "" when it was not touched).
    grant_file: str = ""
    codex_config: str = ""


def is_session_id(value: str) -> bool:
    """Whether `value` is a session id the runtime made, and so names a folder of `sessions/`."""
    return _SESSION_ID.fullmatch(value) is not None


def sessions_root(home: Path) -> Path:
    """`HOME/sessions`, private, created on first use."""
    return private_dir(home / "sessions")


def session_dir(home: Path, session: str) -> Path:
    return private_dir(sessions_root(home) / session)


def save_manifest(home: Path, manifest: Manifest) -> None:
    write_private_file(session_dir(home, manifest.session) / MANIFEST_FILE, msgspec.json.encode(manifest))


def load_manifest(path: Path) -> Manifest | None:
    """The manifest at `path`, or None when it is absent, unreadable or not a manifest."""
    try:
        return msgspec.json.decode(read_private_file(path, _MANIFEST_LIMIT), type=Manifest)
    except (OSError, msgspec.DecodeError):
        return None


def manifests(home: Path) -> list[Manifest]:
    """Every session manifest in the home (sessions that have not ended cleanly), oldest first."""
    found = [load_manifest(path) for path in sorted((home / "sessions").glob(f"*/{MANIFEST_FILE}"))]
    return sorted((m for m in found if m is not None), key=lambda m: m.started_at)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _refuse(where: str, what: str) -> ProjectionRefused:
    return ProjectionRefused(
        f"{where} is {what}; the runtime never projects through one — move it, or start the session in another --dir"
    )


class ProjectionTree:
    """Writes into one working directory and restores it, recording every step in a manifest."""

    def __init__(self, home: Path, manifest: Manifest) -> None:
        self.home = home
        self.manifest = manifest
        self.root = Path(manifest.directory)
        self._store = session_dir(home, manifest.session)
        # What the last restore could not put back exactly, one line each: the session then failed.
        self.unrestored: list[str] = []

    # -- walking folders without following links ----------------------------------------------------

    @contextmanager
    def _folder(self, parts: tuple[str, ...], *, create: bool) -> Iterator[int]:
        """A descriptor of the folder `parts` below the root, each step refusing a link (made when `create`)."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for depth, part in enumerate(parts, start=1):
                where = "/".join(parts[:depth])
                try:
                    step = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(part, 0o755, dir_fd=fd)
                    self.manifest.folders.append(where)
                    save_manifest(self.home, self.manifest)
                    step = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    if error.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise _refuse(f"{self.root / where}", "a symbolic link or not a folder") from None
                    raise
                os.close(fd)
                fd = step
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _split(path: str) -> tuple[tuple[str, ...], str]:
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise InvalidInput(f"projected path {path!r} must stay inside the working directory")
        return pure.parts[:-1], pure.parts[-1]

    # -- reading what is there -----------------------------------------------------------------------

    def existing_text(self, path: str) -> str:
        """The text of a repository's own instruction file at `path` (through a link only if it stays inside)."""
        target = self.root / path
        try:
            real = Path(os.path.realpath(target))
            if not real.is_relative_to(os.path.realpath(self.root)) or not real.is_file():
                return ""
            fd = os.open(real, _READ_FLAGS)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return ""
            data = file.read(MAX_QUOTED + 1)
        return "" if len(data) > MAX_QUOTED else data.decode("utf-8", "replace")

    # -- projecting ----------------------------------------------------------------------------------

    def _back_up(self, fd: int, name: str, where: str) -> ManifestEntry:
        """What is at `name` now, copied aside; refused when it is a folder or anything but a file or a link."""
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return ManifestEntry(path=where, before="absent")
        if stat.S_ISLNK(info.st_mode):
            return ManifestEntry(path=where, before="link", link=os.readlink(name, dir_fd=fd))
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(str(self.root / where), "not a regular file")
        if info.st_size > MAX_BACKUP:
            raise ProjectionRefused(f"{self.root / where} is larger than {MAX_BACKUP} bytes; it is not replaced")
        source = os.open(name, _READ_FLAGS, dir_fd=fd)
        with os.fdopen(source, "rb") as file:
            data = file.read(MAX_BACKUP + 1)
        backup = f"backup-{len(self.manifest.entries)}"
        write_private_file(self._store / backup, data)
        entry = ManifestEntry(path=where, before="file", backup=backup, mode=stat.S_IMODE(info.st_mode))
        if info.st_nlink > 1:
            entry.kept_as = f".{name}.resident-{self.manifest.session}.original"
            entry.inode = (info.st_dev, info.st_ino)
        return entry

    def write(self, path: str, data: bytes) -> None:
        """Put `data` at `path`, after writing down (and copying aside) what was there."""
        folders, name = self._split(path)
        with self._folder(folders, create=True) as fd:
            entry = self._back_up(fd, name, path)
            entry.written = _digest(data)
            self.manifest.entries.append(entry)
            save_manifest(self.home, self.manifest)
            if entry.kept_as:
                self._keep_original(fd, name, entry)
            _replace(fd, name, data, entry.mode if entry.before == "file" else 0o644)

    def _keep_original(self, fd: int, name: str, entry: ManifestEntry) -> None:
        """Link a hard-linked file under its kept name, or refuse to project over it."""
        try:
            os.link(name, entry.kept_as, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        except OSError as error:
            raise ProjectionRefused(
                f"{self.root / entry.path} has other hard links and cannot be kept aside ({error.strerror});"
                " the runtime would break them — start the session in another --dir"
            ) from None

    # -- restoring ------------------------------------------------------------------------------------

    def restore(self) -> list[str]:
        """Put back everything the projection changed; what could not be, and kept copies, as notes.

        What could not be put back exactly is also listed in `unrestored`.
        """
        notes: list[str] = []
        for entry in reversed(self.manifest.entries):
            if not entry.restored:
                notes += self._restore_entry(entry)
                entry.restored = True
                save_manifest(self.home, self.manifest)
        for where in reversed(self.manifest.folders):
            notes += self._remove_folder(where)
        self.manifest.folders.clear()
        save_manifest(self.home, self.manifest)
        return notes

    def _restore_entry(self, entry: ManifestEntry) -> list[str]:
        try:
            folders, name = self._split(entry.path)
        except InvalidInput:
            return self._unrestored(f"{entry.path!r} was not touched: it is not a path inside the working directory")
        try:
            with self._folder(folders, create=False) as fd:
                notes = self._keep_changes(fd, name, entry)
                match entry.before:
                    case "file":
                        if not self._put_back_original(fd, name, entry):
                            notes += self._put_back_bytes(fd, name, entry)
                    case "link":
                        _remove(fd, name)
                        os.symlink(entry.link, name, dir_fd=fd)
                    case "absent":
                        _remove(fd, name)
                return notes
        except FileNotFoundError:
            if entry.before == "absent":
                return []
            return self._unrestored(
                f"{entry.path} could not be put back: its folder is gone (the original is in {self._store})"
            )
        except ProjectionRefused as error:
            return self._unrestored(f"{entry.path} was not restored: {error.message}")

    def _unrestored(self, note: str) -> list[str]:
        self.unrestored.append(note)
        return [note]

    def _put_back_bytes(self, fd: int, name: str, entry: ManifestEntry) -> list[str]:
        """Write the backed-up bytes at `name`; a note when that cannot keep the file's hard links."""
        data = read_private_file(self._store / entry.backup, MAX_BACKUP + 1)
        _replace(fd, name, data, entry.mode)
        if not entry.kept_as:
            return []
        return self._unrestored(
            f"{entry.path} had other hard links and its kept original {entry.kept_as} was gone or replaced:"
            " its bytes are back, but as a separate file"
        )

    @staticmethod
    def _put_back_original(fd: int, name: str, entry: ManifestEntry) -> bool:
        """Rename a hard-linked file's kept original back over the projection; False when there is none."""
        if not entry.kept_as:
            return False
        original = tuple(entry.inode)
        current = _identity(fd, name)
        if _identity(fd, entry.kept_as) != original:
            # Gone, or something else put under that name (not ours to move). The file itself is still
            # in place only when the session stopped before projecting over it.
            return current == original
        if current == original:
            # Two links of one file: a rename between them does nothing, so the kept name goes alone.
            os.unlink(entry.kept_as, dir_fd=fd)
        else:
            os.replace(entry.kept_as, name, src_dir_fd=fd, dst_dir_fd=fd)
        return True

    def _keep_changes(self, fd: int, name: str, entry: ManifestEntry) -> list[str]:
        """Copy aside a projected file the harness changed, so restoring it loses nothing."""
        try:
            source = os.open(name, _READ_FLAGS, dir_fd=fd)
        except OSError:
            return []
        with os.fdopen(source, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return []
            data = file.read(MAX_BACKUP + 1)
        if _digest(data) == entry.written or (entry.before == "file" and self._is_original(entry, data)):
            return []
        kept = self._store / f"changed-{secrets.token_hex(4)}-{PurePosixPath(entry.path).name}"
        write_private_file(kept, data)
        return [f"{entry.path} was changed during the session; that version is kept at {kept}"]

    def _is_original(self, entry: ManifestEntry, data: bytes) -> bool:
        try:
            return read_private_file(self._store / entry.backup, MAX_BACKUP + 1) == data
        except OSError:
            return False

    def _remove_folder(self, where: str) -> list[str]:
        parts = tuple(PurePosixPath(where).parts)
        if not parts or PurePosixPath(where).is_absolute() or ".." in parts:
            return [f"{where!r} was not touched: it is not a folder inside the working directory"]
        try:
            with self._folder(parts[:-1], create=False) as fd:
                os.rmdir(parts[-1], dir_fd=fd)
        except FileNotFoundError:
            return []
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return [f"{where}/ was left: something other than the projection was put in it"]
            return [f"{where}/ was left: {error.strerror}"]
        except ProjectionRefused as error:
            return [f"{where}/ was left: {error.message}"]
        return []


def _replace(fd: int, name: str, data: bytes, mode: int) -> None:
    """Replace `name` in folder `fd` with `data` whole: a fresh temporary file, fsync, rename."""
    temporary = f".{name}.resident-{secrets.token_hex(6)}.tmp"
    out = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
    try:
        try:
            write_whole(out, data, mode)
        finally:
            os.close(out)
        os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=fd)
        raise


def _identity(fd: int, name: str) -> tuple[int, int] | None:
    """The device and inode of the regular file `name` in folder `fd`; None for anything else or nothing."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def _remove(fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise ProjectionRefused(f"{name} became a folder during the session; it was left as it is")
        os.unlink(name, dir_fd=fd)
