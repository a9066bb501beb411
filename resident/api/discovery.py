"""How a client finds the runtime `resident up` serves for a home: the discovery file, and whether it is live.

`resident up` writes `api.json` in the home (0600, atomically) once it answers: its address, pid,
a random token and the API version. The home is 0700, so only its owner can read the token. The
file outlives a `kill -9`; such a stale file is recognised because its pid is gone, or because the
home's lock (`resident.lock`, an flock the kernel releases when the process dies) is not held by
that pid. `down` checks both before it signals anything, so a recycled pid is never signalled.

This module is light (no runtime, no LMDB): a client reads the file without opening the home, and
the `resident` command asks `running` before every command that touches a home.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from resident.coordination.callback_env import API_ADDRESS_ENV, SESSION_ENV
from resident.errors import InvalidInput, RuntimeNotUp
from resident.loopback import is_loopback_host
from resident.messages.home_calls import API_VERSION
from resident.processes import pid_alive

__all__ = [
    "API_ADDRESS_ENV",
    "DISCOVERY_FILE",
    "LOCK_FILE_NAME",
    "SESSION_ENV",
    "Discovery",
    "Listen",
    "SessionDiscovery",
    "check_version",
    "lock_holder",
    "parse_listen",
    "pid_alive",
    "read_discovery",
    "running",
    "session_discovery",
]

DISCOVERY_FILE = "api.json"
# The home's lock file (see `resident.store.home.LOCK_FILE`), named here to keep this module light.
LOCK_FILE_NAME = "resident.lock"
_MAX_FILE_BYTES = 64 * 1024
_MAX_UNIX_PATH = 100  # sockaddr_un holds 108 bytes on Linux, fewer elsewhere


class Discovery(msgspec.Struct, frozen=True, kw_only=True):
    """The facts `resident up` publishes: in `api.json`, and as its one line on stdout."""

    address: str
    pid: int
    token: str
    api_version: int
    home: str
    # When the serving process started (clock ticks since boot, Linux): `down` checks that the pid
    # it would signal is that process, not a later one that reused the pid.
    started: str | None = None

    @property
    def session(self) -> str:
        """The member session this view is for ("": the owner's view, from api.json)."""
        return ""

    @property
    def base_url(self) -> str:
        """The URL requests go to (`http://localhost` over a unix socket)."""
        return "http://localhost" if self.address.startswith("unix:") else self.address

    @property
    def unix_path(self) -> str | None:
        return self.address[len("unix:") :] if self.address.startswith("unix:") else None


@dataclass(frozen=True, slots=True)
class Listen:
    """Where `up` listens: a loopback TCP host and port (0: a free one), or a unix socket path."""

    kind: Literal["tcp", "unix"]
    host: str = ""
    port: int = 0
    path: Path | None = None


def parse_listen(text: str) -> Listen:
    """`127.0.0.1:PORT`, `[::1]:PORT`, `localhost:PORT` or `unix:PATH`; any other host is refused."""
    if text.startswith("unix:"):
        path = text[len("unix:") :]
        if not path or "\0" in path:
            raise InvalidInput("--listen unix:PATH needs a path, e.g. unix:/tmp/resident.sock")
        resolved = Path(path).expanduser().absolute()
        if len(os.fsencode(resolved)) > _MAX_UNIX_PATH:
            raise InvalidInput(f"--listen: the socket path {resolved} is too long for a unix socket; use a shorter one")
        return Listen("unix", path=resolved)
    host, colon, port_text = text.rpartition(":")
    if not colon or not host:
        raise InvalidInput(f"--listen must be HOST:PORT or unix:PATH, not {text!r}")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not is_loopback_host(bare):
        raise InvalidInput(
            f"--listen {bare!r} is not a loopback address; the API listens on 127.0.0.1, ::1 or localhost only"
        )
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5 and int(port_text) <= 65535):
        raise InvalidInput(f"--listen port must be a number from 0 to 65535 (0 picks a free one), not {port_text!r}")
    return Listen("tcp", host=bare, port=int(port_text))


def read_discovery(home: Path) -> Discovery | None:
    """The discovery file of `home` (None when there is none); a malformed one is `RuntimeNotUp`.

    The address must be loopback (or a unix socket): a forged file must not make a client send the
    token elsewhere.
    """
    path = home / DISCOVERY_FILE
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(data) > _MAX_FILE_BYTES:
        raise RuntimeNotUp(f"{path} is not a discovery file `resident up` wrote (too large); start it again")
    try:
        found = msgspec.json.decode(data, type=Discovery)
    except msgspec.DecodeError as error:
        raise RuntimeNotUp(f"{path} is not a discovery file `resident up` wrote ({error}); start it again") from None
    if found.unix_path is None:
        host = found.address.removeprefix("http://").rpartition(":")[0]
        if not found.address.startswith("http://") or not is_loopback_host(host):
            raise RuntimeNotUp(f"{path} names {found.address!r}, which is not a loopback address; start it again")
    return found


class SessionDiscovery(Discovery, frozen=True, kw_only=True):
    """A member session's own view of the runtime (never published): `token` is its session's proof
    key, never sent, and the server proves itself for `session_id` (see `resident.api.challenge`)."""

    session_id: str

    @property
    def session(self) -> str:
        return self.session_id


def session_discovery(address: str, home: Path, *, session: str = "", proof_key: str = "") -> Discovery:
    """Where a member session calls the runtime from `$RESIDENT_API`: the address, and no home token.

    `token` holds the session's proof key instead (`$RESIDENT_API_PROOF`), which the server must show
    it can make before the grant token is sent (`resident.api.challenge`).

    `RuntimeNotUp` for an address that is not loopback: the grant token is not sent anywhere else.
    """
    host = address.removeprefix("http://").rpartition(":")[0]
    if not address.startswith("http://") or not is_loopback_host(host):
        raise RuntimeNotUp(
            f"${API_ADDRESS_ENV} is {address[:80]!r}, not a loopback http address; the session that set it does"
            " not run here"
        )
    return SessionDiscovery(
        address=address, pid=0, token=proof_key, api_version=API_VERSION, home=str(home), session_id=session
    )


def check_version(found: Discovery) -> Discovery:
    """`found`, if it speaks this client's API version; `RuntimeNotUp` naming both versions otherwise."""
    if found.api_version != API_VERSION:
        raise RuntimeNotUp(
            f"the runtime up for {found.home} speaks API version {found.api_version}, this client {API_VERSION}; "
            "use a matching resident"
        )
    return found


def running(home: Path) -> Discovery | None:
    """The runtime `resident up` serves for `home` now, or None when none is up.

    One is up when the discovery file names a live pid that holds the home's lock. A file left by a
    killed process names a dead pid or one that no longer holds the lock: no runtime is up. A file
    that is not a discovery file is `RuntimeNotUp` while some process holds the home (it cannot be
    reached, and the home cannot be opened here either), and is ignored when none does.
    """
    try:
        found = read_discovery(home)
    except RuntimeNotUp:
        if lock_holder(home) is None:
            return None
        raise
    if found is None or not pid_alive(found.pid) or lock_holder(home) != found.pid:
        return None
    return found


def lock_holder(home: Path) -> int | None:
    """The pid holding `home`'s lock, or None when nobody holds it.

    It probes with a shared lock, which conflicts only with the holder's exclusive one, and writes
    nothing. (A runtime starting at that very instant can find the probe in its way and report the
    home in use; it is held for microseconds.)
    """
    try:
        fd = os.open(home / LOCK_FILE_NAME, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                raise
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else -1
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
