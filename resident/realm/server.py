"""Serving Realm: the `/v1` app (`resident.web`) under uvicorn, one server per data directory.

Over LMDB (`data_dir`), `serve()` takes a lock on the data directory first (a second `realm serve` on it
is refused with `RealmInUse`) and creates the admin token on first start. Over PostgreSQL (`database`),
any number of `serve()` share the database: it is checked to be at this Realm's schema (`resident realm
migrate`), and governance is checked against the admin token's digest kept there. Then it binds, and only
then reports that it serves (the ready file, the `on_started` callback with the real URL, `--port 0` included).

It is strict with slow clients and quick to stop. A connection that has not finished sending a
request's headers within the read timeout is closed, and a body that trickles is answered 408
(`resident.web`). On SIGTERM or SIGINT, connections still waiting for a client's body are
closed at once (their handlers see the client gone and end normally), requests Realm is already
working on get a second to finish, and the process exits 0 without a traceback.

Off loopback (`allow_remote`), Realm speaks only TLS: a certificate and key are required, as the
tokens already are for every route but health.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType

import uvicorn

from resident.errors import InvalidInput, RealmInUse, ResidentError, SchemaMismatch
from resident.files import write_private_file
from resident.loopback import is_loopback_host
from resident.realm.app import create_app
from resident.realm.state import RealmState, make_private_dirs
from resident.realm.tokens import ADMIN_TOKEN_FILE, ensure_admin_token, token_digest
from resident.realm.urls import realm_url
from resident.web import READ_TIMEOUT, ReadyServer, listen_tcp, stop_on_signals, strict_http

__all__ = ["GRACE_SECONDS", "LOCK_FILE", "main", "serve"]

logger = logging.getLogger(__name__)

LOCK_FILE = "serve.lock"
# What a request Realm is already handling gets to finish once a stop is asked for.
GRACE_SECONDS = 1


class _ServeLock:
    """An exclusive lock on a data directory, held for as long as one `serve()` runs there."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def __enter__(self) -> _ServeLock:
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RealmInUse(
                f"another `realm serve` already serves {self._path.parent}; stop it, or give this one another --data"
            ) from None
        self._fd = fd
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_ready_file(path: Path, url: str, host: str, port: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A reader sees either no file or the whole file, never a half-written one.
    ready = {"host": host, "port": port, "pid": os.getpid(), "url": url}
    write_private_file(path, json.dumps(ready).encode("utf-8"))


def _check_where(host: str, port: int, allow_remote: bool, tls: tuple[Path, Path] | None) -> None:
    if not allow_remote and not is_loopback_host(host):
        raise InvalidInput(
            f"Realm listens on loopback only and {host!r} is not loopback; "
            "pass --allow-remote (with --tls-cert and --tls-key) to expose it beyond this machine"
        )
    if allow_remote and tls is None:
        raise InvalidInput("--allow-remote needs TLS: pass --tls-cert and --tls-key (PEM files)")
    if not 0 <= port <= 65535:
        raise InvalidInput(f"port {port} is out of range; use 0..65535 (0 picks a free one)")
    for path in tls or ():
        if not path.is_file():
            raise InvalidInput(f"TLS file {path} does not exist")


def _open_state(stack: ExitStack, data_dir: Path | None, database: str | None) -> tuple[RealmState, str]:
    """Realm's state (closed with `stack`) and the digest of its admin token, from LMDB or PostgreSQL."""
    if data_dir is not None and database is not None:
        raise InvalidInput("Realm serves either a data directory (--data) or a database (--database): name one")
    if database is not None:
        from resident.realm.pg_storage import PgStorage  # noqa: PLC0415 - psycopg only for a PostgreSQL Realm

        storage = PgStorage.connect(database)
        state = stack.enter_context(RealmState(storage))
        admin_digest = storage.admin_digest()
        if admin_digest is None:
            raise SchemaMismatch(f"{storage.where} has no admin token; run `resident realm migrate --database URL`")
        return state, admin_digest
    if data_dir is None:
        raise InvalidInput("Realm needs a data directory (--data) or a database (--database)")
    make_private_dirs(data_dir)
    stack.enter_context(_ServeLock(data_dir))
    state = stack.enter_context(RealmState.open(data_dir))
    return state, token_digest(ensure_admin_token(data_dir))


def serve(
    data_dir: Path | None,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_remote: bool = False,
    ready_file: Path | None = None,
    *,
    database: str | None = None,
    tls: tuple[Path, Path] | None = None,
    read_timeout: float = READ_TIMEOUT,
    on_started: Callable[[str], None] | None = None,
) -> None:
    """Run Realm on `host:port` over the store in `data_dir`, or the PostgreSQL `database`, until SIGTERM or SIGINT.

    Port 0 picks a free port. Once the server accepts connections, `ready_file` (if given)
    receives `{"host", "port", "pid", "url"}` (and is removed on a clean exit) and `on_started`
    is called with the URL. `tls` is (certificate, key), both PEM; required with `allow_remote`.
    """
    _check_where(host, port, allow_remote, tls)
    if not 0 < read_timeout < float("inf"):
        raise InvalidInput(f"the read timeout must be a positive number of seconds, not {read_timeout!r}")
    with ExitStack() as stack:
        state, admin_digest = _open_state(stack, data_dir, database)
        sock = listen_tcp(host, port, "Realm")
        try:
            bound_host, bound_port = sock.getsockname()[:2]
            url = realm_url(bound_host, bound_port, tls=tls is not None)
            config = uvicorn.Config(
                create_app(
                    state, admin_digest=admin_digest, loopback_only=not allow_remote, read_timeout=read_timeout
                ),
                log_level="warning",
                lifespan="off",
                http=strict_http(read_timeout),
                timeout_graceful_shutdown=GRACE_SECONDS,
                ssl_certfile=None if tls is None else str(tls[0]),
                ssl_keyfile=None if tls is None else str(tls[1]),
            )

            def started() -> None:
                if ready_file is not None:
                    _write_ready_file(ready_file, url, bound_host, bound_port)
                if on_started is not None:
                    on_started(url)

            server = ReadyServer(config, on_started=started)
            with stop_on_signals(server):
                server.run(sockets=[sock])
        finally:
            sock.close()
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m resident.realm.server`: parse arguments, serve, and exit 0 after a clean stop."""
    parser = argparse.ArgumentParser(prog="python -m resident.realm.server", description="Run the Realm server.")
    parser.add_argument("--data", type=Path, help="directory of Realm's LMDB store")
    parser.add_argument("--database", help="postgresql:// URL of Realm's database (instead of --data)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on; 0 picks a free one")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (needs TLS)")
    parser.add_argument("--tls-cert", type=Path, help="PEM certificate (with --tls-key: serve https)")
    parser.add_argument("--tls-key", type=Path, help="PEM private key of --tls-cert")
    parser.add_argument("--read-timeout", type=float, default=READ_TIMEOUT, help="seconds a request may take to arrive")
    parser.add_argument("--ready-file", type=Path, help="write {host, port, pid, url} JSON here once listening")
    args = parser.parse_args(argv)
    try:
        tls = _tls_pair(args.tls_cert, args.tls_key)
        serve(
            args.data, args.host, args.port, args.allow_remote, args.ready_file, database=args.database, tls=tls,
            read_timeout=args.read_timeout, on_started=lambda url: print(_serving(args.data, url), flush=True),
        )
    except ResidentError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    return 0


def _serving(data_dir: Path | None, url: str) -> str:
    if data_dir is None:
        return f"Realm serving its PostgreSQL database on {url}"
    return f"Realm serving {data_dir} on {url}; admin token in {data_dir / ADMIN_TOKEN_FILE}"


def _tls_pair(cert: Path | None, key: Path | None) -> tuple[Path, Path] | None:
    """(certificate, key), None for neither; one without the other is an error."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise InvalidInput("TLS needs both --tls-cert and --tls-key")
    return cert, key


if __name__ == "__main__":
    sys.exit(main())
