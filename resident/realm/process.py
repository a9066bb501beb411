"""A Realm server as a child process: start, stop, kill and restart on the same port.

`resident run --realm auto` uses it to run a loopback Realm for the length of a run (and to take
it down for a moment to show an outage); the tests use it to put a real Realm beside a runtime.
The child runs `python -m resident.realm.server --ready-file F` and is ready once F names its pid;
every wait has a deadline. The port is kept across `restart()`, so clients pointed at it before
keep working. Its output goes to `<data_dir>.log`. It is started through `resident.children`, so it
stops by itself when the process that started it dies, even by `kill -9`. `admin_token()` reads the
token the server created, and `enroll(name)` issues a home's token (LMDB lets this process write
beside the server). With `database`, the child serves that PostgreSQL database instead; `data_dir` then
only names its ready and log files and holds the admin token `resident realm migrate` wrote there.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from types import TracebackType

from resident.children import ChildProcess, spawn_child
from resident.errors import RealmUnavailable
from resident.realm.tokens import ADMIN_TOKEN_FILE, read_token_file
from resident.realm.urls import realm_base_url, realm_url

__all__ = ["START_TIMEOUT", "STOP_TIMEOUT", "RealmProcess", "realm_for", "start_realm"]

START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
_POLL = 0.02


class RealmProcess:
    """One Realm server process over `data_dir`; `url` is valid while it runs."""

    def __init__(self, data_dir: Path, port: int = 0, *, database: str | None = None) -> None:
        self.data_dir = data_dir
        self.database = database
        self.port = port
        self.host = "127.0.0.1"
        self.ready_file = data_dir.with_name(f"{data_dir.name}.ready.json")
        self.log_file = data_dir.with_name(f"{data_dir.name}.log")
        self._proc: ChildProcess | None = None

    @property
    def url(self) -> str:
        return realm_url(self.host, self.port)

    def admin_token(self) -> str:
        """The admin token the server wrote into its data directory on its first start."""
        return read_token_file(self.data_dir / ADMIN_TOKEN_FILE)

    def enroll(self, name: str, *, rotate: bool = False) -> str:
        """Issue the token of home `name` (works while the server runs)."""
        from resident.realm.state import RealmState  # noqa: PLC0415 - LMDB only where a home is enrolled

        opened = RealmState.open(self.data_dir) if self.database is None else RealmState.connect(self.database)
        with opened as state:
            return state.enroll(name, rotate=rotate)

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RealmUnavailable("Realm was never started")
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the process and wait (bounded) until it accepts connections."""
        if self.running:
            return
        self.ready_file.unlink(missing_ok=True)
        store = ["--data", str(self.data_dir)] if self.database is None else ["--database", self.database]
        arguments = [*store, "--host", self.host, "--port", str(self.port), "--ready-file", str(self.ready_file)]
        self._proc = spawn_child("resident.realm.server", arguments, log=self.log_file)
        try:
            self._wait_ready(self._proc)
        except BaseException:
            # Not ready in time, or the caller was interrupted meanwhile: a half-started Realm is not left behind.
            self.kill()
            raise

    def _wait_ready(self, proc: ChildProcess) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RealmUnavailable(
                    f"Realm exited with status {proc.returncode} before it was ready; see {self.log_file}"
                )
            ready = self._read_ready_file()
            if ready is not None and ready[2] == proc.pid:
                self.host, self.port = ready[0], ready[1]
                return
            # The server writes the ready file atomically once it listens; nothing to wait on but it.
            time.sleep(_POLL)
        raise RealmUnavailable(f"Realm was not ready within {START_TIMEOUT:g} s; see {self.log_file}")

    def _read_ready_file(self) -> tuple[str, int, int] | None:
        """(host, port, pid) from the ready file, which the server writes atomically."""
        try:
            data = json.loads(self.ready_file.read_text())
        except FileNotFoundError:
            return None
        return str(data["host"]), int(data["port"]), int(data["pid"])

    def stop(self) -> int:
        """Send SIGTERM and wait (bounded) for a clean exit; returns the exit code."""
        proc = self._proc
        if proc is None:
            return 0
        try:
            return proc.stop(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RealmUnavailable(f"Realm did not stop within {STOP_TIMEOUT:g} s of SIGTERM; killed it") from None

    def kill(self) -> int:
        """SIGKILL the process (no chance to clean up) and reap it; returns the exit code."""
        proc = self._proc
        if proc is None:
            return 0
        return proc.kill(STOP_TIMEOUT)

    def restart(self) -> None:
        """Stop the process if it still runs, then start a new one on the same data and port."""
        self.stop()
        self.start()

    def __enter__(self) -> RealmProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.running:
            self.kill()


def realm_for(mode: str, data_dir: Path) -> tuple[str | None, RealmProcess | None]:
    """The Realm URL a run uses: `auto` starts one over `data_dir`, `none` means none, else a URL.

    The process is returned too when one was started, so the caller stops it when done.
    """
    if mode == "none":
        return None, None
    if mode == "auto":
        process = start_realm(data_dir)
        return process.url, process
    return realm_base_url(mode), None


def start_realm(data_dir: Path, *, port: int = 0, database: str | None = None) -> RealmProcess:
    """A started Realm over `data_dir`, or `database` (port 0: a free one); stop or kill it when done."""
    realm = RealmProcess(data_dir, port, database=database)
    realm.start()
    return realm
