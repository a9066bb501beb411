"""Where a runtime lives on disk: resolving the home, its permissions, and the one-writer lock.

Layout of a home::

    resident.toml      static configuration (roster, Realm URL), written by `resident init`
    resident.lock      held (flock) by the one process that has the home open; holds its pid
    CURRENT            names the live store directory; `restore` swaps it atomically
    store.N/           the LMDB environment (data.mdb, lock.mdb)
    .restore-PID-*/    a restore being staged (left behind only by a restore that was killed)

The home directory is `0700` and every file the runtime creates in it `0600`: memories are
private to the user who owns the home.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import platformdirs

from resident.errors import HomeInUse, InvalidInput

__all__ = [
    "CONFIG_FILE",
    "CURRENT_FILE",
    "HOME_ENV",
    "LOCK_FILE",
    "RESTORED_CONFIG",
    "HomeLock",
    "current_store_dir",
    "ensure_home",
    "finish_restore",
    "fsync_dir",
    "private_file",
    "resolve_home",
    "set_current_store_dir",
    "write_private_file",
]

CONFIG_FILE = "resident.toml"
LOCK_FILE = "resident.lock"
CURRENT_FILE = "CURRENT"
HOME_ENV = "RESIDENT_HOME"
# A restored `resident.toml` waits inside the new store directory until `CURRENT` names it.
RESTORED_CONFIG = "resident.toml.restored"


def resolve_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The home to use: the explicit one, then `$RESIDENT_HOME`, then the platform's user data dir."""
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser().absolute()
    from_env = os.environ.get(HOME_ENV, "")
    if from_env:
        return Path(from_env).expanduser().absolute()
    return Path(platformdirs.user_data_dir("resident", appauthor=False)).absolute()


def ensure_home(home: Path) -> Path:
    """Create the home (and parents) if needed and make it private (`0700`)."""
    if home.exists() and not home.is_dir():
        raise InvalidInput(f"home {home} exists and is not a directory; pass another --home")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.chmod(0o700)
    return home


def private_file(path: Path) -> None:
    """Make a file the runtime wrote readable by its owner only."""
    with contextlib.suppress(FileNotFoundError):
        path.chmod(0o600)


def current_store_dir(home: Path) -> Path:
    """The live LMDB directory of `home` (named by `CURRENT`; `store.1` for a new home)."""
    pointer = home / CURRENT_FILE
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return home / "store.1"
    if not name.startswith("store.") or "/" in name or "\\" in name:
        raise InvalidInput(f"{pointer} is corrupted (it names {name!r}); restore the home from a backup")
    return home / name


def write_private_file(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically: a private (`0600`) temporary file, fsync, rename, fsync.

    Readers see the old content or the new, never a part; a failure leaves no temporary file behind.
    """
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def set_current_store_dir(home: Path, store_dir: Path) -> None:
    """Point `CURRENT` at `store_dir` atomically."""
    write_private_file(home / CURRENT_FILE, store_dir.name.encode("utf-8"))


def finish_restore(home: Path) -> None:
    """Install the configuration of a restore whose store is already live (the caller holds the lock).

    A restore switches `CURRENT` first (its one commit point) and moves the backup's
    `resident.toml` into the home after; if it was killed in between, this completes it, so the
    store and its configuration are always restored together.
    """
    pending = current_store_dir(home) / RESTORED_CONFIG
    if not pending.exists():
        return
    private_file(pending)
    pending.replace(home / CONFIG_FILE)
    fsync_dir(home)
    fsync_dir(pending.parent)


def fsync_dir(directory: Path) -> None:
    """Make the creations, renames and removals of entries in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class HomeLock:
    """An exclusive, process-wide claim on a home, released by the kernel if the process dies.

    `flock` locks belong to the open file, so a second open in the same process conflicts too,
    and a `kill -9` never leaves a stale lock behind.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self._fd: int | None = None

    def acquire(self) -> None:
        path = self.home / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise HomeInUse(
                f"home {self.home} is in use by pid {holder}; close that runtime first or pass another --home"
            ) from None
        # The pid only helps the message of a second opener; on a full disk the home still opens.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        private_file(path)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)

    def __enter__(self) -> HomeLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
