"""Several "hosts" on this machine: network namespaces joined by veth pairs to one bridge, and a PostgreSQL in one.

Each host is a namespace `<tag>-<name>` with one interface `eth0` (address 10.77.0.N/24) whose peer sits on a
bridge in a switch namespace of its own, so nothing is added to this machine's own network. A link is cut by
setting a host's `eth0` down. Everything made is removed by `Network.close`, even after a failure; names carry
the test process's pid so concurrent runs do not meet.

`skip_reason()` says why the machine cannot run these tests (not root, no `ip`, namespaces refused), else None.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SUBNET = "10.77.0"
_CMD_TIMEOUT = 10.0


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=_CMD_TIMEOUT, check=check)


def skip_reason() -> str | None:
    """Why network namespaces cannot be made here, or None when they can."""
    if sys.platform != "linux":
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "making network namespaces needs root (CI runs these as root)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"rsprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` is refused here: {made.stderr.strip()}"
    _ip("netns", "delete", probe, check=False)
    return None


class Network:
    """Hosts on one bridge; `exec(host)` is the command prefix that runs a program on that host."""

    def __init__(self) -> None:
        self.tag = f"rs{os.getpid() % 100000}"
        self.switch = f"{self.tag}-sw"
        self.hosts: dict[str, str] = {}  # name -> address
        self._made: list[str] = []
        self._add_namespace(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def _add_namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def namespace(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def add_host(self, host: str) -> str:
        """Make `host` (a namespace with eth0 on the bridge); its address."""
        ns, address = self.namespace(host), f"{SUBNET}.{len(self.hosts) + 1}"
        self._add_namespace(ns)
        port = f"p{len(self.hosts) + 1}"
        _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", self.switch)
        _ip("-n", self.switch, "link", "set", port, "master", "br0", "up")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        self.hosts[host] = address
        return address

    def exec(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(host)]

    def link(self, host: str, up: bool) -> None:
        """Cut (`up=False`) or restore `host`'s only link."""
        _ip("-n", self.namespace(host), "link", "set", "eth0", "up" if up else "down")

    def close(self) -> None:
        # Deleting a namespace kills nothing in it: callers stop their processes first.
        for name in reversed(self._made):
            _ip("netns", "delete", name, check=False)
        self._made.clear()


def pgserver_bin() -> Path | None:
    """The directory of pgserver's PostgreSQL binaries, or None without the pgserver wheel."""
    try:
        import pgserver  # noqa: PLC0415 - optional: the dev extra installs it
    except ImportError:
        return None
    directory = Path(pgserver.__file__).parent / "pginstall" / "bin"
    return directory if (directory / "postgres").exists() else None


class NamespacedPostgres:
    """A PostgreSQL listening on a host's address, run as pgserver's system user (postgres refuses root).

    Its socket directory is its data directory: a path socket is not bound to a network namespace, so
    the test process reaches the database from outside the hosts while the Realms reach it over TCP.
    """

    USER = "pgserver"

    def __init__(self, bin_dir: Path, prefix: Sequence[str], address: str, port: int = 5432) -> None:
        from pgserver.utils import ensure_prefix_permissions, ensure_user_exists  # noqa: PLC0415 - the dev extra

        entry = ensure_user_exists(self.USER)
        assert entry is not None
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.bin_dir, self.prefix, self.address, self.port = bin_dir, list(prefix), address, port
        # Not under pytest's basetemp, whose root is private to this user: the server's user must reach it.
        self.directory = Path(tempfile.mkdtemp(prefix="resident-netns-pg-"))
        directory = self.directory
        directory.chmod(0o755)
        ensure_prefix_permissions(directory)
        ensure_prefix_permissions(bin_dir)
        self.data = directory / "pgdata"
        self.data.mkdir(mode=0o700)
        os.chown(self.data, self.uid, self.gid)
        self.log = directory / "postgres.log"
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            subprocess.run(
                [str(bin_dir / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                user=self.uid, group=self.gid, capture_output=True, timeout=60, check=True,
            )
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 trust\n")

    def tcp_url(self, database: str) -> str:
        return f"postgresql://postgres@{self.address}:{self.port}/{database}"

    def socket_url(self, database: str) -> str:
        return f"postgresql://postgres@/{database}?host={self.data}&port={self.port}"

    def start(self, timeout: float = 30.0) -> None:
        import psycopg  # noqa: PLC0415 - only where PostgreSQL is used

        # setpriv execs postgres in place, so the pid is the postmaster's own.
        argv = [
            *self.prefix, "setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
            str(self.bin_dir / "postgres"), "-D", str(self.data), "-p", str(self.port), "-k", str(self.data),
            "-c", f"listen_addresses={self.address}", "-c", "fsync=on",
        ]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"postgres exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with psycopg.connect(self.socket_url("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
            # Nothing to wait on but the server accepting connections.
            time.sleep(0.05)

    def remove(self) -> None:
        """Stop the server and delete its files."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def stop(self) -> None:
        """A fast shutdown (SIGINT): clients are cut off, committed transactions are kept."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
