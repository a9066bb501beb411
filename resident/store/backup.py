"""Verifiable copies of a home: `backup` writes one, `restore` checks it whole before it replaces anything.

A backup directory holds::

    store/data.mdb     a consistent, compacted copy of the live LMDB environment
    resident.toml      the home's static configuration, if it has one
    manifest.json      format, schema version, and the size and SHA-256 of every file above

The manifest is written last (temporary file, fsync, rename), so a directory without one is an
unfinished backup and is refused.

A restore first verifies the backup without touching the home: the manifest, the schema version,
every file's size and checksum, no unlisted store files. It then stages a copy inside the home
(checksummed again as it is copied, then opened read-only to check the schema the environment
itself carries) and, holding the home lock, renames the staged copy to `store.N+1` and switches
`CURRENT` to it. That switch is the one commit point: a restore killed before it leaves the old
store live, one killed after it the new store; the backup's configuration, waiting in the new
store directory, is installed right after the switch or by the next `Store.open` (see
`resident.store.home.finish_restore`). Leftovers of a killed restore — a staging directory, an
orphaned or old store directory — are never live and are removed by the next restore.

Realm may have invalidated records since the backup was taken, so the restored store carries a
marker until the first runtime that writes it has made the records the backup calls synced pending
again (`rejudge_restored`, before any actor reads the store): each is pushed and judged again, and
none is served as synced before that.

A backup without `resident.toml` restores the store only and leaves the home's configuration as
it is: deleting a user's configuration is never a side effect of a restore.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath

import lmdb
import msgspec

from resident.clock import Clock, SystemClock
from resident.errors import (
    BackupInvalid,
    ConfigError,
    DiskFull,
    InvalidInput,
    MapFull,
    SchemaMismatch,
    StoreCorrupted,
)
from resident.messages.backup import BACKUP_FORMAT, BackupFile, BackupManifest
from resident.messages.replication import RecordsRestored
from resident.messages.store import Commit
from resident.processes import pid_alive
from resident.store.faults import check_data_file, structure_problems
from resident.store.home import (
    CONFIG_FILE,
    RESTORED_CONFIG,
    HomeLock,
    current_store_dir,
    ensure_home,
    finish_restore,
    fsync_dir,
    private_file,
    set_current_store_dir,
    write_private_file,
)
from resident.store.store import DEFAULT_MAP_SIZE, Store, check_schema, open_environment
from resident.store.tables import RECORDS, SCHEMA_VERSION
from resident.user_files import open_user_file, read_user_file

__all__ = ["MANIFEST_FILE", "RESTORED_MARKER", "STORE_DATA", "backup", "rejudge_restored", "restore", "verify_backup"]

logger = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
STORE_DIR = "store"
STORE_DATA = f"{STORE_DIR}/data.mdb"
# Left in a restored store's folder until the records the backup calls synced are pending again.
RESTORED_MARKER = "restored-from-backup"
_ALLOWED = re.compile(r"(store/[A-Za-z0-9._-]+|resident\.toml)")
_STAGING_PREFIX = ".restore-"
_STORE_NAME = re.compile(r"store\.(\d+)")
_CHUNK = 1 << 20
_MAX_MANIFEST = 1 << 20
_UNTOUCHED = "the home was left untouched"


# -- backup --------------------------------------------------------------------------------------


def backup(store: Store, home: Path, dest: Path, *, clock: Clock | None = None) -> BackupManifest:
    """Write a verifiable copy of the live `store` (and the home's `resident.toml`) into `dest`.

    `dest` must not exist or be an empty directory. The store may keep committing meanwhile; the
    copy is one read transaction's snapshot. If the backup fails, what it wrote is removed.
    """
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInput(f"backup destination {dest} is not an empty directory; pass a new one")
    created = not dest.exists()
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        dest.chmod(0o700)
        store_dir = dest / STORE_DIR
        store_dir.mkdir(mode=0o700)
        store.copy_to(store_dir)
        files: list[BackupFile] = []
        for path in sorted(store_dir.iterdir()):
            private_file(path)
            _fsync_file(path)
            files.append(_describe(dest, path))
        fsync_dir(store_dir)
        config = home / CONFIG_FILE
        if config.is_file():
            files.append(_copy_file(config, dest / CONFIG_FILE, relative=CONFIG_FILE))
        manifest = BackupManifest(
            format=BACKUP_FORMAT,
            schema_version=SCHEMA_VERSION,
            created_at=(clock or SystemClock()).time(),
            files=tuple(files),
        )
        write_private_file(dest / MANIFEST_FILE, msgspec.json.format(msgspec.json.encode(manifest)) + b"\n")
        if created:
            fsync_dir(dest.parent)
    except BaseException:
        _remove_backup(dest, created=created)
        raise
    return manifest


def _remove_backup(dest: Path, *, created: bool) -> None:
    if created:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for entry in list(dest.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()


# -- verification --------------------------------------------------------------------------------


def verify_backup(src: Path) -> BackupManifest:
    """Check a backup whole (manifest, format, schema version, every file's size and checksum).

    Raises `BackupInvalid` naming what is wrong, or `SchemaMismatch` naming both versions.
    Reads only; writes nothing anywhere.
    """
    return _verify(Path(src), "")


def _verify(src: Path, suffix: str) -> BackupManifest:
    def invalid(problem: str) -> BackupInvalid:
        return BackupInvalid(f"backup {src} {problem}{suffix}")

    manifest_path = src / MANIFEST_FILE
    if not src.is_dir():
        raise invalid("is not a directory")
    if not manifest_path.is_file():
        raise invalid(f"has no {MANIFEST_FILE}: it is not a backup, or the backup did not finish")
    raw = read_user_file(manifest_path, limit=_MAX_MANIFEST, what=f"the manifest of backup {src}:", error=invalid)
    try:
        manifest = msgspec.json.decode(raw, type=BackupManifest)
    except msgspec.DecodeError as error:
        raise invalid(f"has a malformed {MANIFEST_FILE} ({error})") from None
    if manifest.format != BACKUP_FORMAT:
        raise invalid(f"is of format {manifest.format!r}, not {BACKUP_FORMAT!r}")
    if manifest.schema_version != SCHEMA_VERSION:
        raise SchemaMismatch(
            f"backup {src} has schema version {manifest.schema_version} but this resident reads version "
            f"{SCHEMA_VERSION}; restore it with a resident release that reads version "
            f"{manifest.schema_version}{suffix}"
        )
    listed: set[str] = set()
    for entry in manifest.files:
        if not _ALLOWED.fullmatch(entry.path) or PurePosixPath(entry.path).name in (".", ".."):
            raise invalid(f"lists {entry.path!r}, which is not a file a backup holds")
        if entry.path in listed:
            raise invalid(f"lists {entry.path} twice")
        listed.add(entry.path)
    if STORE_DATA not in listed:
        raise invalid(f"does not list {STORE_DATA}")
    for entry in manifest.files:
        path = src / entry.path
        if path.is_symlink() or not path.is_file():
            raise invalid(f"is missing {entry.path}, which its manifest lists")
        size = path.stat().st_size
        if size != entry.size:
            raise invalid(f"has {entry.path} of {size} bytes, but its manifest says {entry.size} (truncated?)")
        digest = _sha256(path)
        if digest != entry.sha256:
            raise invalid(f"has {entry.path} with checksum {digest[:16]}…, not {entry.sha256[:16]}… (corrupted)")
    store_dir = src / STORE_DIR
    for path in sorted(store_dir.iterdir()):
        if f"{STORE_DIR}/{path.name}" not in listed:
            raise invalid(f"holds {STORE_DIR}/{path.name}, which its manifest does not list")
    return manifest


# -- restore -------------------------------------------------------------------------------------


def restore(src: Path, home: Path, *, check_config: Callable[[Path], object] | None = None) -> BackupManifest:
    """Replace the store (and configuration) of `home` with the verified backup at `src`.

    Nothing in the home changes unless the whole backup verifies; the home must not be open
    (`HomeInUse` otherwise). Crash-safe: at every moment either the old or the new store is live.
    `check_config` reads the backup's `resident.toml` (raising `ConfigError` when it does not
    parse); the store layer does not know the configuration's format, so the caller passes it.
    """
    src, home = Path(src), Path(home)
    manifest = _verify(src, f"; {_UNTOUCHED}")
    ensure_home(home)
    staging = Path(tempfile.mkdtemp(prefix=f"{_STAGING_PREFIX}{os.getpid()}-", dir=home))
    try:
        _stage(src, manifest, staging, check_config)
        with HomeLock(home):
            _remove_leftovers(home, keep=staging)
            current = current_store_dir(home)
            match = _STORE_NAME.fullmatch(current.name)
            number = int(match.group(1)) if match else 0
            target = home / f"store.{number + 1}"
            staging.rename(target)
            fsync_dir(home)
            set_current_store_dir(home, target)
            # Committed: the new store is live. What follows completes the restore or tidies up,
            # and the next `Store.open` (or restore) redoes it if it fails here.
            try:
                finish_restore(home)
            except OSError as error:
                logger.warning("the restored configuration will be installed at the next open: %s", error)
            shutil.rmtree(current, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def rejudge_restored(store: Store, now: float) -> None:
    """After a restore, make the records the backup calls synced pending again (see `RecordsRestored`).

    Runs as a runtime opens a writable home, before its actors start: the store's one writer does
    not run yet, and nothing reads a restored record as synced in between. Realm may have
    invalidated them since the backup was taken; pending, each is pushed and judged again (an
    invalidated one is refused). On a full disk the marker stays for the next open with room; until
    then, as after any restore, records show what the backup held.
    """
    marker = store.path / RESTORED_MARKER
    if not marker.exists():
        return
    with store.reader() as reader:
        synced = tuple(i for i, r in reader.items(RECORDS) if r.replication == "synced")
    if synced:
        [(_, error, _)] = store.commit([Commit(events=(RecordsRestored(at=now, ids=synced),))])
        if isinstance(error, DiskFull | MapFull):
            logger.info("the restored records wait for room to be judged again (%s)", error.message)
            return
        if error is not None:
            raise error
    marker.unlink(missing_ok=True)


def _stage(
    src: Path, manifest: BackupManifest, staging: Path, check_config: Callable[[Path], object] | None
) -> None:
    """Copy the backup into `staging` (checksummed again) and check what was copied, as it will be used."""
    staging.chmod(0o700)
    for entry in manifest.files:
        name = RESTORED_CONFIG if entry.path == CONFIG_FILE else PurePosixPath(entry.path).name
        copied = _copy_file(src / entry.path, staging / name, relative=entry.path)
        if copied.size != entry.size or copied.sha256 != entry.sha256:
            raise BackupInvalid(f"backup {src} changed while it was restored ({entry.path}); {_UNTOUCHED}")
    fsync_dir(staging)
    config = staging / RESTORED_CONFIG
    if check_config is not None and config.exists():
        try:
            check_config(config)
        except ConfigError as error:
            raise BackupInvalid(
                f"backup {src} has a {CONFIG_FILE} that does not parse ({error}); {_UNTOUCHED}"
            ) from None
    _check_store(src, staging)
    # The read-only open made a lock file; the live store makes its own.
    (staging / "lock.mdb").unlink(missing_ok=True)
    # Inside the store's folder, so it goes live with the store in the same rename.
    os.close(os.open(staging / RESTORED_MARKER, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))


def _check_store(src: Path, staging: Path) -> None:
    """Refuse a staged store whose data file is damaged, does not open, or is of another schema.

    The offline verifier runs first: a checksum proves only that the file is the one the manifest
    names, not that whoever wrote both made a file the engine can open without crashing.
    """
    problems = structure_problems(staging / "data.mdb")
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise BackupInvalid(f"backup {src} has a damaged data file: {problems[0]}{more}; {_UNTOUCHED}")
    size = (staging / "data.mdb").stat().st_size
    try:
        check_data_file(staging, max(DEFAULT_MAP_SIZE, size))
        env = open_environment(staging, map_size=max(DEFAULT_MAP_SIZE, size), readonly=True)
    except (lmdb.Error, StoreCorrupted) as error:
        raise BackupInvalid(f"backup {src} has a data file that does not read ({error}); {_UNTOUCHED}") from None
    try:
        check_schema(env, initialize=False, where=src)
    except SchemaMismatch as error:
        raise SchemaMismatch(f"{error}; {_UNTOUCHED}") from None
    finally:
        env.close()


def _remove_leftovers(home: Path, *, keep: Path) -> None:
    """Remove what killed restores left behind: staging of dead processes, store dirs not live.

    Called with the home lock held, so no runtime is using any of them.
    """
    current = current_store_dir(home)
    for entry in home.iterdir():
        if entry in (keep, current) or not entry.is_dir():
            continue
        if _STORE_NAME.fullmatch(entry.name) or (
            entry.name.startswith(_STAGING_PREFIX) and not _alive(entry.name[len(_STAGING_PREFIX) :])
        ):
            shutil.rmtree(entry, ignore_errors=True)


def _alive(pid_and_suffix: str) -> bool:
    """Whether the process that named a staging folder `<pid>-<suffix>` still runs."""
    pid, _, _ = pid_and_suffix.partition("-")
    return pid.isdigit() and pid_alive(int(pid))


# -- files ---------------------------------------------------------------------------------------


def _chunks(path: Path) -> Iterator[bytes]:
    # A backup's files may have been swapped for a FIFO or a link after they were listed.
    with open_user_file(path, what="the backup's file", error=BackupInvalid) as stream:
        while chunk := stream.read(_CHUNK):
            yield chunk


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    for chunk in _chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def _describe(root: Path, path: Path) -> BackupFile:
    return BackupFile(path=path.relative_to(root).as_posix(), size=path.stat().st_size, sha256=_sha256(path))


def _copy_file(source: Path, target: Path, *, relative: str) -> BackupFile:
    """Copy `source` to a new private file `target`, fsynced; describe what was written."""
    digest = hashlib.sha256()
    size = 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for chunk in _chunks(source):
            digest.update(chunk)
            size += len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    private_file(target)
    return BackupFile(path=relative, size=size, sha256=digest.hexdigest())


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
