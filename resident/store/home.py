"""Where a runtime lives on disk: resolving the home, its permissions, and the one-writer lock.

Layout of a home::

    resident.toml      static configuration (roster, Realm URL), written by `resident init`
    resident.lock      held (flock) by the one process that has the home open; holds its pid
    CURRENT            names the live store directory; `restore` swaps it atomically
    store.N/           the LMDB environment (data.mdb, lock.mdb)
    .restore-PID-*/    a restore being staged (left behind only by a restore that was killed)

The home directory is `0700` and every file the runtime creates in it `0600`: memories are
private to the user who owns the home.

A directory becomes a home only if it is absent or empty: an existing directory holding other
files is never taken over (made private, given a store), since `--home` pointed at the wrong
folder should change nothing in it. Read-only commands need a home that already holds a store
and never create one. A home the user may not write to (its files or its file system read-only)
still opens, for reading only: the lock is shared and LMDB is opened read-only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from pathlib import Path

from resident.errors import HomeInUse, HomeNotFound, InvalidInput, NotAHome
from resident.files import fsync_dir, private_file, write_private_file
from resident.processes import pid_alive

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
    "home_writable",
    "is_home",
    "private_file",
    "require_home",
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
_MARKERS = frozenset({CONFIG_FILE, LOCK_FILE, CURRENT_FILE})


def resolve_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The home to use: the explicit one, then `$RESIDENT_HOME`, then the platform's user data dir."""
    if explicit is not None and str(explicit) != "":
        return Path(explicit).expanduser().absolute()
    from_env = os.environ.get(HOME_ENV, "")
    if from_env:
        return Path(from_env).expanduser().absolute()
    # Imported here: most commands name their home, and each one resolves it before anything else.
    import platformdirs  # noqa: PLC0415 - imported when needed: the command's help and light paths load none of it

    return Path(platformdirs.user_data_dir("resident", appauthor=False)).absolute()


def _names(directory: Path) -> list[str]:
    """The entries of `directory` (none when it does not exist)."""
    try:
        with os.scandir(directory) as entries:
            return [entry.name for entry in entries]
    except FileNotFoundError:
        return []


def is_home(directory: Path) -> bool:
    """Whether `directory` holds a home: its configuration, lock, store pointer or a store."""
    return any(name in _MARKERS or name.startswith("store.") for name in _names(directory))


def ensure_home(home: Path) -> Path:
    """The home, created private (`0700`, parents too) if absent; never a directory of other files."""
    if home.exists() and not home.is_dir():
        raise NotAHome(f"home {home} exists and is not a directory; pass another --home")
    if _names(home) and not is_home(home):
        raise NotAHome(
            f"{home} is a folder of other files, not a resident home; it was left as it was — "
            "pass an empty or new folder as --home"
        )
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if home_writable(home):
        home.chmod(0o700)
        # A resident.toml the user wrote (or copied in) with a looser mode holds the roster and
        # the Realm URL of private memories: it is made the owner's alone like everything else.
        if (home / CONFIG_FILE).is_file() and not (home / CONFIG_FILE).is_symlink():
            private_file(home / CONFIG_FILE)
    return home


def require_home(home: Path) -> Path:
    """The home, which must already hold a store (read-only commands never create one)."""
    if not (current_store_dir(home) / "data.mdb").exists():
        raise HomeNotFound(
            f"there is no resident home at {home}; create one with `resident init` (or pass --home)"
        )
    return home


def home_writable(home: Path) -> bool:
    """Whether this process may write the home: its folder, its store and the store's files.

    `os.access` answers for the real user and also says no on a read-only file system.
    """
    store = current_store_dir(home)
    paths = [home, store, store / "data.mdb", store / "lock.mdb"]
    return all(os.access(path, os.W_OK) for path in paths if path.exists())


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


# How long an opener waits for a lock whose recorded holder is dead (see `HomeLock._flock`).
DEAD_HOLDER_GRACE = 5.0
_DEAD_HOLDER_POLL = 0.01


class HomeLock:
    """A claim on a home, released by the kernel if the process dies.

    A writer's claim is exclusive; a process that may not write the home (see `home_writable`)
    takes a shared claim, which a writer's conflicts with. `flock` locks belong to the open file,
    so a second open in the same process conflicts too, and a `kill -9` never leaves a stale lock.
    The lock file is never followed through a symlink planted in its place.
    """

    def __init__(self, home: Path, *, shared: bool = False) -> None:
        self.home = home
        self.shared = shared
        self._fd: int | None = None

    def acquire(self) -> None:
        path = self.home / LOCK_FILE
        if self.shared:
            self._fd = self._acquire_shared(path)
            return
        fd = self._open(path, os.O_RDWR | os.O_CREAT)
        self._flock(fd, fcntl.LOCK_EX)
        # The pid only helps the message of a second opener; on a full disk the home still opens.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        private_file(path)
        self._fd = fd

    def _acquire_shared(self, path: Path) -> int | None:
        try:
            fd = self._open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None  # nobody ever opened this home for writing, and nobody can create the file now
        self._flock(fd, fcntl.LOCK_SH)
        return fd

    def _open(self, path: Path, flags: int) -> int:
        try:
            return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as error:
            if error.errno != errno.ELOOP:
                raise
            raise NotAHome(
                f"{path} is a symlink; the runtime never follows one there — remove it and open the home again"
            ) from None

    def _flock(self, fd: int, mode: int) -> None:
        deadline = time.monotonic() + DEAD_HOLDER_GRACE
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            else:
                return
            # A runtime killed while a child it forked (a damage check, see `resident.store.isolation`)
            # had not yet closed the inherited descriptor leaves the lock held for that child's first
            # moments: when the recorded holder is dead, the lock is waited for, briefly, not refused.
            if not (holder.isdigit() and not pid_alive(int(holder)) and time.monotonic() < deadline):
                break
            time.sleep(_DEAD_HOLDER_POLL)
        os.close(fd)
        raise HomeInUse(
            f"home {self.home} is in use by pid {holder}; close that runtime first or pass another --home"
        )

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            if not self.shared:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
            os.close(fd)

    def __enter__(self) -> HomeLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
