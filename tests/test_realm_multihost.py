"""Homes and Realm on different hosts (network namespaces), replicating over TLS across real links.

Each host is a network namespace on one bridge (`tests/netns_support.py`); every home, Realm and PostgreSQL
is a real process on its host, started with `ip netns exec`. The homes pin the test's CA. Throughout, a home
is fail-closed (a record it reports `synced` is one Realm accepted with that digest, and what it wrote while
cut off stays pending) and converges (Realm ends with every acknowledged record of every home, each once).
Skipped with the reason where namespaces cannot be made (not root, no `ip`).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from resident.realm.state import RealmState
from resident.realm.tokens import TOKEN_ENV
from tests.netns_support import Network, skip_reason
from tests.replication_support import accepted_by_realm
from tests.tls_realm import TlsRealm, write_server_pair

pytestmark = pytest.mark.timeout(150)

CHILD = Path(__file__).resolve().parent / "netns_home_child.py"
REALM_PORT = 8443
# Bounds each wait on a condition; every one is met in well under a second on a quiet machine.
CONVERGE = 30.0


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = CONVERGE) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


class Home:
    """A home process on one host (`tests/netns_home_child.py`), driven over its stdin and stdout."""

    def __init__(self, name: str, directory: Path, prefix: list[str], url: str, ca_file: Path, token: str) -> None:
        self.name, self.directory, self.acked = name, directory, set[str]()
        env = {**os.environ, TOKEN_ENV: token, "PYTHONPATH": str(CHILD.parent.parent)}
        self.stderr = (directory.parent / f"{name}.stderr").open("ab")
        self.proc = subprocess.Popen(
            [*prefix, sys.executable, str(CHILD), str(directory), url, str(ca_file)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env, text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"home-{name}-stdout", daemon=True)
        self._reader.start()
        assert self._next(60.0) == "ready"

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _next(self, timeout: float = CONVERGE) -> str:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"home {self.name} said nothing for {timeout:g} s") from None
        if line is None:
            raise AssertionError(f"home {self.name} exited ({self.proc.poll()}); see {self.stderr.name}")
        return line

    def _send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def write(self, prefix: str, count: int) -> list[str]:
        """Write `count` records; their ids, each acknowledged (durable) by the home."""
        self._send(f"write {prefix} {count}")
        ids = []
        while (line := self._next()) != "ok":
            ids.append(line.removeprefix("ack "))
        self.acked.update(ids)
        return ids

    def status(self) -> dict[str, Any]:
        self._send("status")
        line = self._next()
        assert line.startswith("status "), line
        return dict(json.loads(line.removeprefix("status ")))

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._send("quit")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        self.stderr.close()


def assert_fail_closed(home: Home, accepted: dict[str, str]) -> dict[str, list[str]]:
    """Every record `home` reports synced is accepted by Realm with its digest; the home's records."""
    records: dict[str, list[str]] = home.status()["records"]
    wrong = [rid for rid, (state, digest) in records.items() if state == "synced" and accepted.get(rid) != digest]
    assert not wrong, f"{home.name} reports as synced what Realm never accepted: {wrong}"
    return records


def all_synced(home: Home, ids: set[str]) -> bool:
    records = home.status()["records"]
    return all(records.get(rid, [""])[0] == "synced" for rid in ids)


@pytest.fixture
def network() -> Iterator[Network]:
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    net = Network()
    try:
        yield net
    finally:
        net.close()


@pytest.fixture
def ca(tmp_path: Path) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    pinned = tmp_path / "realm-ca.pem"
    authority.cert_pem.write_to_path(str(pinned))
    return authority, pinned


def test_one_home_and_one_realm_across_one_link_with_tls(
    network: Network, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    """The single-link case: a home on hostA, an LMDB Realm on hostR, the link between them cut and restored."""
    authority, pinned = ca
    home_address = network.add_host("a")
    realm_address = network.add_host("r")
    assert home_address != realm_address
    (tmp_path / "certs").mkdir()
    realm = TlsRealm(
        tmp_path / "realm", realm_address, REALM_PORT, write_server_pair(authority, tmp_path / "certs", realm_address),
        prefix=network.exec("r"),
    )
    homes: list[Home] = []
    try:
        realm.start()
        with RealmState.open(realm.directory) as state:
            token = state.enroll("a")
        home = Home("a", tmp_path / "home-a", network.exec("a"), realm.url, pinned, token)
        homes.append(home)

        first = set(home.write("before", 5))
        wait_for(lambda: all_synced(home, first), "the first records synced across the link")
        assert_fail_closed(home, accepted_by_realm(realm.directory))

        network.link("a", up=False)
        cut = set(home.write("cut", 3))
        # Attempts fail while the link is down; what was written meanwhile is never synced.
        wait_for(lambda: home.status()["last_error"], "a failed push while the link is down")
        records = assert_fail_closed(home, accepted_by_realm(realm.directory))
        assert all(records[rid][0] == "pending" for rid in cut)
        assert not cut & set(accepted_by_realm(realm.directory))

        network.link("a", up=True)
        wait_for(lambda: all_synced(home, first | cut), "the records written while cut off synced once restored")
        accepted = accepted_by_realm(realm.directory)
        assert_fail_closed(home, accepted)
        assert set(accepted) == home.acked
    finally:
        for each in homes:
            each.close()
        realm.stop()
