"""Realm's bearer tokens: issuing them, storing only their hashes, checking them in constant time.

A token is `NAME.SECRET`: NAME is the home it was issued to (`admin` for Realm's own governance
token) and SECRET 32 random bytes, URL-safe base64. Realm stores the SHA-256 of a home's token
(a hash is enough for a random 256-bit secret: there is nothing to brute-force) and compares
digests with `hmac.compare_digest`, so the time a check takes says nothing about the token. The
admin token lives in `admin.token` in Realm's data directory, readable by its owner only, so the
governance side (`resident realm invalidate --token-file`) can read it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from resident.errors import InvalidInput
from resident.messages.realm import ADMIN
from resident.user_files import read_user_file

__all__ = [
    "ADMIN_TOKEN_FILE",
    "HOME_TOKEN_FILE",
    "MAX_TOKEN_FILE_BYTES",
    "TOKEN_ENV",
    "check_token",
    "ensure_admin_token",
    "new_token",
    "read_token_file",
    "token_digest",
    "token_name",
    "tokens_match",
]

# File and variable names, not secrets.
ADMIN_TOKEN_FILE = "admin.token"  # noqa: S105 - the name of a file or variable, not a secret
# Where a home keeps the token `resident init --realm-token-file` copied in; the variable overrides it.
HOME_TOKEN_FILE = "realm.token"  # noqa: S105 - the name of a file or variable, not a secret
TOKEN_ENV = "RESIDENT_REALM_TOKEN"  # noqa: S105 - the name of a file or variable, not a secret
MAX_TOKEN_FILE_BYTES = 4096
_TOKEN = re.compile(r"^([a-z][a-z0-9_-]{0,31})\.([A-Za-z0-9_-]{32,128})$")


def new_token(name: str) -> str:
    """A fresh token for home `name` (or `admin`)."""
    return f"{name}.{secrets.token_urlsafe(32)}"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def tokens_match(token: str, digest: str) -> bool:
    """Whether `token` hashes to `digest`, compared in constant time."""
    return hmac.compare_digest(token_digest(token).encode("ascii"), digest.encode("ascii"))


def token_name(token: str) -> str | None:
    """The home a well-formed token names (`admin` for the admin token); None for anything else."""
    match = _TOKEN.match(token)
    return match.group(1) if match else None


def check_token(token: str, source: str) -> str:
    """`token` stripped of surrounding whitespace, if it has a token's shape; `InvalidInput` naming `source`."""
    stripped = token.strip()
    if token_name(stripped) is None:
        raise InvalidInput(
            f"{source} does not hold a Realm token (NAME.SECRET, as `resident realm enroll` prints it)"
        )
    return stripped


def read_token_file(path: Path) -> str:
    """The token in `path` (a file `resident realm enroll` output or `admin.token`), checked."""
    data = read_user_file(path, limit=MAX_TOKEN_FILE_BYTES, what="token file")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidInput(f"token file {path} is not ASCII text; it does not hold a Realm token") from None
    return check_token(text, f"token file {path}")


def ensure_admin_token(data_dir: Path) -> str:
    """Realm's admin token from `data_dir/admin.token`, created (0600, random) on first use."""
    path = data_dir / ADMIN_TOKEN_FILE
    token = new_token(ADMIN)
    try:
        # O_EXCL: never truncate a token another process wrote; O_NOFOLLOW: never write through a link.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return read_token_file(path)
    try:
        os.write(fd, f"{token}\n".encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return token
