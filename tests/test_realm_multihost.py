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
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trustme

from resident.messages.realm import AcceptedRecord
from resident.realm.state import RealmState
from resident.realm.tokens import TOKEN_ENV
from tests.netns_support import NamespacedPostgres, Network, pgserver_bin, skip_reason
from tests.replication_support import accepted_by_realm, wait_until
from tests.tls_realm import TlsRealm, write_server_pair

pytestmark = pytest.mark.timeout(150)

CHILD = Path(__file__).resolve().parent / "netns_home_child.py"
REALM_PORT = 8443
# Bounds each wait on a condition; every one is met in well under a second on a quiet machine.
CONVERGE = 30.0


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = CONVERGE) -> Any:
    """`wait_until` with this test's default deadline, polled as often as a cross-namespace check warrants."""
    return wait_until(predicate, timeout, what, interval=0.05)


class Home:
    """A home process on one host (`tests/netns_home_child.py`), driven over its stdin and stdout."""

    def __init__(
        self, name: str, directory: Path, prefix: list[str], url: str, ca_file: Path, token: str,
        acked: set[str] | None = None,
    ) -> None:
        # `acked` carries what an earlier process on the same home acknowledged.
        self.name, self.directory, self.acked = name, directory, set() if acked is None else acked
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

    def write(self, prefix: str, count: int, after_first: Callable[[], None] | None = None) -> list[str]:
        """Write `count` records; their ids, each acknowledged (durable) by the home.

        `after_first` runs once the first record is acknowledged, while the rest are still being written
        and pushed (to disturb a sync in flight).
        """
        self._send(f"write {prefix} {count}")
        ids = []
        while (line := self._next()) != "ok":
            ids.append(line.removeprefix("ack "))
            if after_first is not None and len(ids) == 1:
                after_first()
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


def refused_while_cut_off(home: Home, ids: set[str]) -> bool:
    """Every record of `ids` was pushed and failed at least once, and none is synced (checked by the caller)."""
    status = home.status()
    tries = status["tries"]
    return all(rid in tries and tries[rid][0] >= 1 and tries[rid][1] for rid in ids)


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
        wait_for(lambda: refused_while_cut_off(home, cut), "failed pushes of what was written while the link is down")
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


def accepted_in(database: str) -> dict[str, str]:
    """Realm's accepted records in PostgreSQL: id → digest."""
    import psycopg  # noqa: PLC0415 - only where PostgreSQL is used

    decode = msgspec.msgpack.Decoder(AcceptedRecord).decode
    with psycopg.connect(database) as conn:
        rows = conn.execute(b"SELECT id, record FROM realm_records").fetchall()
    accepted = {str(rid): decode(bytes(record)).record.digest for rid, record in rows}
    assert len(accepted) == len(rows), "an id accepted twice"
    return accepted


def test_two_homes_two_realms_and_postgresql_on_three_hosts_through_a_kill_a_restart_and_a_cut_link(
    network: Network, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    """Homes on hostA and hostB, two Realm processes on hostR, PostgreSQL on hostB; three disturbances."""
    bin_dir = pgserver_bin()
    if bin_dir is None:
        pytest.skip("no PostgreSQL binaries: install pgserver (the dev extra)")
    from resident.realm.pg_setup import migrate_database  # noqa: PLC0415 - psycopg only here

    authority, pinned = ca
    network.add_host("a")
    database_host = network.add_host("b")
    realm_address = network.add_host("r")
    (tmp_path / "certs").mkdir()
    pair = write_server_pair(authority, tmp_path / "certs", realm_address)
    realms: list[TlsRealm] = []
    homes: dict[str, Home] = {}
    postgres: NamespacedPostgres | None = None
    try:
        postgres = NamespacedPostgres(bin_dir, network.exec("b"), database_host)
        postgres.start()
        import psycopg  # noqa: PLC0415 - only where PostgreSQL is used

        with psycopg.connect(postgres.socket_url("postgres"), autocommit=True) as conn:
            conn.execute(b"CREATE DATABASE realm")
        local = postgres.socket_url("realm")
        migrate_database(local, tmp_path / "admin")
        with RealmState.connect(local) as state:
            tokens = {name: state.enroll(name) for name in ("a", "b")}
        # Both Realm processes reach the database across the bridge, not through the socket.
        for index, port in enumerate((REALM_PORT, REALM_PORT + 1)):
            realm = TlsRealm(
                tmp_path / f"realm{index}", realm_address, port, pair,
                database=postgres.tcp_url("realm"), prefix=network.exec("r"),
            )
            realms.append(realm)
            realm.start()
        # Each home names a process of its own (docs/realm.md: "one each").
        for name, realm in zip(("a", "b"), realms, strict=True):
            homes[name] = Home(name, tmp_path / f"home-{name}", network.exec(name), realm.url, pinned, tokens[name])

        def converged(what: str) -> None:
            wanted = {name: set(home.acked) for name, home in homes.items()}
            for name, home in homes.items():
                wait_for(partial(all_synced, home, wanted[name]), f"home {name} synced {what}")
            accepted = accepted_in(local)
            for home in homes.values():
                assert_fail_closed(home, accepted)
            # Every acknowledged record of every home, each exactly once, and nothing else.
            assert sorted(accepted) == sorted(set().union(*wanted.values()))

        for name, home in homes.items():
            home.write(f"{name}-start", 5)
        converged("at the start")

        # 1. Realm process one (home a's) is killed -9 while home a writes and pushes.
        killed = homes["a"].write("a-kill", 20, after_first=realms[0].kill)
        records = assert_fail_closed(homes["a"], accepted_in(local))
        unsynced = {rid for rid in killed if records[rid][0] != "synced"}
        # The kill came after the first record, so some of the twenty could not have reached Realm.
        assert unsynced, "every record synced although Realm was killed after the first one"
        wait_for(lambda: refused_while_cut_off(homes["a"], unsynced), "home a failing to reach the killed Realm")
        # Fail over: home a is restarted naming the other process, which serves the same database.
        homes["a"].close()
        homes["a"] = Home(
            "a", tmp_path / "home-a", network.exec("a"), realms[1].url, pinned, tokens["a"], acked=homes["a"].acked
        )
        homes["b"].write("b-after-kill", 3)
        converged("after a Realm process was killed")

        # 2. PostgreSQL is restarted; what is written while it is down is not synced before it is back.
        postgres.stop()
        down = {name: set(home.write(f"{name}-db-down", 4)) for name, home in homes.items()}
        for name, home in homes.items():
            wait_for(partial(refused_while_cut_off, home, down[name]), f"home {name} failing while the database is off")
            records = home.status()["records"]
            assert all(records[rid][0] == "pending" for rid in down[name]), f"{name} synced without a database"
        postgres.start()
        converged("after PostgreSQL restarted")

        # 3. Host a's link is cut for a while; host b keeps replicating meanwhile.
        network.link("a", up=False)
        cut = set(homes["a"].write("a-cut", 4))
        wait_for(lambda: refused_while_cut_off(homes["a"], cut), "home a failing while its link is down")
        homes["b"].write("b-during-cut", 4)
        wait_for(lambda: all_synced(homes["b"], homes["b"].acked), "home b syncing while a is cut off")
        records = assert_fail_closed(homes["a"], accepted_in(local))
        assert all(records[rid][0] == "pending" for rid in cut)
        network.link("a", up=True)
        converged("after the link came back")
    finally:
        for home in homes.values():
            home.close()
        for realm in realms:
            realm.stop()
        if postgres is not None:
            postgres.remove()
