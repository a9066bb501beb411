"""`kill -9` of a replicating runtime between Realm's acceptance and the local write, repeated.

A child process (tests/replication_crash_child.py) writes records to a home replicating through a
proxy to a real Realm, printing each acknowledged id. The proxy forwards the k-th replicate request
to Realm, which judges and durably stores its verdicts, and then holds the answer: at that moment
Realm has accepted records the runtime has not heard of. The parent kills the child either right
then (the answer is never delivered) or after releasing the answer, at a random offset (around
the runtime's own commit of the verdicts). Between kills Realm invalidates some accepted records.

After every kill the home must hold every acknowledged record, mark nothing synced that Realm does
not hold as accepted, and serve nothing in conflict or invalidated; after a final sync against the
real Realm nothing is pending and the two sides agree.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Self

import pytest

from resident import Runtime
from resident.errors import RecordWithheld
from resident.messages.memory import MemoryRecord
from resident.realm import DELEGATED_PROMOTION, RealmClient
from tests.faultproxy import FaultProxy, _Handler
from tests.realm_process import RealmProcess, start_realm
from tests.replication_support import (
    FAST,
    accepted_by_realm,
    assert_synced_only_if_accepted,
    local_records,
    open_runtime,
    stored_records,
    use_home_token,
)

CHILD = Path(__file__).with_name("replication_crash_child.py")
KILLS = 12
RECORDS_PER_CHILD = 30
HOLD_LIMIT = 30.0
REPLICATE = "/v1/replicate"


class AnswerHoldingProxy(FaultProxy):
    """A fault proxy that can hold Realm's answer to one replicate request after Realm gave it."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.held = threading.Event()
        self._let_go = threading.Event()
        self._hold_lock = threading.Lock()
        self._pass_before_hold: int | None = None

    def start(self) -> Self:
        super().start()
        # The request handler class is looked up per connection, so swapping it is enough.
        assert self._server is not None
        self._server.RequestHandlerClass = _HoldingHandler
        return self

    def hold_answer(self, after: int) -> None:
        """Let `after` replicate answers through, then hold the next one until `release()`."""
        with self._hold_lock:
            self._pass_before_hold = after
        self.held.clear()
        self._let_go.clear()

    def release(self) -> None:
        self._let_go.set()

    def _take_hold(self) -> bool:
        with self._hold_lock:
            if self._pass_before_hold is None:
                return False
            if self._pass_before_hold > 0:
                self._pass_before_hold -= 1
                return False
            self._pass_before_hold = None
        return True

    def _wait_for_release(self) -> None:
        self.held.set()
        self._let_go.wait(HOLD_LIMIT)


class _HoldingHandler(_Handler):
    def _answer(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        proxy = self.server.proxy
        if (
            isinstance(proxy, AnswerHoldingProxy)
            and self.command == "POST"
            and self.path == REPLICATE
            and status == 200
            and proxy._take_hold()
        ):
            proxy._wait_for_release()
        super()._answer(status, body, content_type, extra)


def _run_until_held(
    home: Path, proxy: AnswerHoldingProxy, prefix: str, rng: random.Random, *, kill_while_held: bool, log: Path
) -> list[str]:
    """Run one child until Realm answered its k-th push, kill it; the ids it acknowledged."""
    # The child waits for a sync after each ten of its 30 records, so it makes at least three
    # replicate requests, whatever the machine's speed: the held one always comes.
    proxy.hold_answer(after=rng.randrange(3))
    with log.open("ab") as errors:
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(home), proxy.url, prefix, str(RECORDS_PER_CHILD)],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        if not proxy.held.wait(HOLD_LIMIT):
            raise AssertionError(f"the child made no replicate request within {HOLD_LIMIT} s:\n{log.read_text()}")
        if not kill_while_held:
            proxy.release()
            # A random offset around the child's receipt of the answer and its durable write of it.
            threading.Event().wait(rng.uniform(0.0, 0.03))
        child.kill()
        out, _ = child.communicate(timeout=10)
    finally:
        proxy.release()
        if child.poll() is None:
            child.kill()
            child.wait(10)
    assert child.returncode == -9, f"the child ended on its own ({child.returncode}):\n{log.read_text()}"
    # A line cut by the kill has no newline: it was never acknowledged to anyone.
    return [line[4:-1] for line in out.splitlines(keepends=True) if line.startswith("ack ") and line.endswith("\n")]


def _assert_never_served(runtime: Runtime, records: dict[str, MemoryRecord]) -> None:
    """Withheld records: `get` says why, recall and export leave them out."""
    withheld = {r.id for r in records.values() if r.replication in ("conflict", "invalidated")}
    member = runtime.member("deven")
    for record_id in withheld:
        with pytest.raises(RecordWithheld):
            member.get(record_id)
    hits = member.recall("the deploy checklist changed note", k=100, include_inactive=True)
    assert not withheld & {hit.id for hit in hits}
    export = runtime.home / "export.json"
    runtime.export_member("deven", export)
    assert not withheld & {record["id"] for record in json.loads(export.read_bytes())["records"]}


def _realm_invalidations(realm: RealmProcess) -> dict[str, str]:
    with RealmClient(realm.url, token=realm.admin_token()) as client:
        return {item.id: item.reason for item in client.invalidations(since=0, limit=1000).items}


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_kill_9_around_realms_answer_loses_nothing_and_marks_nothing_synced_without_acceptance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    home = tmp_path / "home"
    log = tmp_path / "children.log"
    acknowledged: list[str] = []
    # Per kind of kill: records Realm had accepted that the killed runtime still held as pending.
    accepted_not_written = {True: 0, False: 0}
    with start_realm(tmp_path / "realm") as realm, AnswerHoldingProxy(realm.url) as proxy:
        use_home_token(monkeypatch, realm)  # the children inherit it
        for round_ in range(KILLS):
            kill_while_held = round_ % 2 == 0
            ids = _run_until_held(home, proxy, f"r{round_}", rng, kill_while_held=kill_while_held, log=log)
            acknowledged += ids
            records = stored_records(home)
            missing = [i for i in acknowledged if i not in records]
            assert not missing, f"acknowledged writes lost after kill {round_}: {missing}"
            assert_synced_only_if_accepted(records, realm.data_dir)
            accepted = accepted_by_realm(realm.data_dir)
            accepted_not_written[kill_while_held] += sum(
                1 for r in records.values() if r.replication == "pending" and accepted.get(r.id) == r.digest
            )
            # The governance side withdraws something Realm accepted, now and then.
            if round_ % 3 == 1:
                with RealmClient(realm.url, token=realm.admin_token()) as client:
                    client.invalidate(rng.choice(sorted(accepted)), f"withdrawn after kill {round_}")
            with open_runtime(home, "none", enable=False) as runtime:
                _assert_never_served(runtime, records)

        # Realm did accept records whose acceptance the killed runtime never wrote down.
        print(
            f"{KILLS} kills, {len(acknowledged)} acknowledged writes; accepted by Realm but pending locally "
            f"after a kill: {accepted_not_written[True]} (answer held), {accepted_not_written[False]} (released)"
        )
        assert accepted_not_written[True] > 0
        with open_runtime(home, realm.url, FAST) as runtime:
            final = runtime.replication.sync(timeout=30.0)
            assert final.pending == 0, final
            records = local_records(runtime)
            _assert_never_served(runtime, records)
        accepted = accepted_by_realm(realm.data_dir)
        invalidated = _realm_invalidations(realm)

    assert len(acknowledged) >= KILLS
    assert set(acknowledged) <= set(records)
    assert_synced_only_if_accepted(records, realm.data_dir)
    for record in records.values():
        expected: tuple[str, Any]
        if record.canonical and record.delegated:
            expected = ("conflict", DELEGATED_PROMOTION)
        elif record.id in invalidated:
            expected = ("invalidated", invalidated[record.id])
        else:
            expected = ("synced", "")
        assert (record.replication, record.replication_reason) == expected, record.id
        if record.replication != "conflict":
            assert accepted[record.id] == record.digest
