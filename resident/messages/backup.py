"""The manifest of a backup: what a verifiable copy of a home holds, with a checksum per file."""

from __future__ import annotations

from resident.messages.base import Record

__all__ = ["BACKUP_FORMAT", "BackupFile", "BackupManifest"]

BACKUP_FORMAT = "resident-backup/1"


class BackupFile(Record, frozen=True):
    """One file of a backup: its path relative to the backup directory, size and SHA-256 (hex)."""

    path: str
    size: int
    sha256: str


class BackupManifest(Record, frozen=True):
    """Written last into a backup (`manifest.json`), so a backup without one is incomplete.

    `format` names this layout; `schema_version` is the store schema the copy was written with,
    checked before a restore replaces anything.
    """

    format: str
    schema_version: int
    created_at: float
    files: tuple[BackupFile, ...] = ()
