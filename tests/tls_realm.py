"""A Realm server process speaking TLS, optionally inside a network namespace, for the TLS and multi-host tests.

`RealmProcess` (the product's) serves plain http on loopback; these tests need `--tls-cert`/`--tls-key`, a
chosen address, and a command prefix (`ip netns exec NS`) to run the server on another "host".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import trustme

from resident.realm.urls import realm_url

START_TIMEOUT = 20.0


def write_server_pair(ca: trustme.CA, directory: Path, *identities: str) -> tuple[Path, Path]:
    """A certificate for `identities` issued by `ca`, and its key, as PEM files in `directory`."""
    leaf = ca.issue_cert(*identities)
    cert, key = directory / "realm.pem", directory / "realm.key"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    for extra in leaf.cert_chain_pems[1:]:
        with cert.open("ab") as out:
            out.write(extra.bytes())
    leaf.private_key_pem.write_to_path(str(key))
    return cert, key


class TlsRealm:
    """`python -m resident.realm.server` over TLS on `host:port`, run under `prefix` (e.g. `ip netns exec NS`)."""

    def __init__(
        self, directory: Path, host: str, port: int, tls: tuple[Path, Path], *,
        database: str | None = None, prefix: Sequence[str] = (),
    ) -> None:
        self.directory, self.host, self.port, self.tls = directory, host, port, tls
        self.database, self.prefix = database, list(prefix)
        self.ready_file = directory.with_name(f"{directory.name}.ready.json")
        self.log_file = directory.with_name(f"{directory.name}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return realm_url(self.host, self.port, tls=True)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.ready_file.unlink(missing_ok=True)
        store = ["--data", str(self.directory)] if self.database is None else ["--database", self.database]
        remote = [] if self.host in ("127.0.0.1", "::1") else ["--allow-remote"]
        argv = [
            *self.prefix, sys.executable, "-m", "resident.realm.server", *store, "--host", self.host,
            "--port", str(self.port), *remote, "--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1]),
            "--ready-file", str(self.ready_file),
        ]
        with self.log_file.open("ab") as log:
            # `ip netns exec` execs its command, so the pid is the server's own: kill -9 reaches it.
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"Realm exited with {self.proc.returncode}: {self.log_file.read_text()[-2000:]}")
            try:
                ready = json.loads(self.ready_file.read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                ready = None
            if ready is not None and int(ready["pid"]) == self.proc.pid:
                self.port = int(ready["port"])
                return
            # The server writes the ready file once it listens; there is nothing else to wait on.
            time.sleep(0.02)
        self.kill()
        raise AssertionError(f"Realm not ready within {START_TIMEOUT} s: {self.log_file.read_text()[-2000:]}")

    def kill(self) -> None:
        """SIGKILL and reap (no chance to clean up)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
