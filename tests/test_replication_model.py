"""A Hypothesis state machine over replication: writes (plain, and canonical through a delegated
path), Realm faults, governance invalidations, reconciliations, syncs, replication crashes and
runtime restarts, against one real Realm process behind a fault proxy.

Invariants checked after every step:
* fail-closed: no `conflict`, `invalidated` or `pending_review` record is returned by recall, get or
  export;
* acknowledged writes are never lost: every receipt's id is in the store;
* nothing is `synced` that Realm's own store does not hold as accepted (same id and digest).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from resident import Runtime
from resident.errors import InvalidInput, RecordWithheld
from resident.messages.memory import MemoryRecord
from resident.realm import RealmClient
from tests.faultproxy import FaultProxy, Mode
from tests.realm_process import RealmProcess, start_realm
from tests.replication_support import (
    FAST,
    DelegatedWriter,
    assert_synced_only_if_accepted,
    local_records,
    use_home_token,
)

SETTINGS = dataclasses.replace(FAST, max_attempts=2, request_timeout=0.3, retry_later=0.3)
FAULTS: tuple[Mode, ...] = ("pass", "down", "slow", "error503", "garbage", "reset")
QUERY = "the model checked note about releases"
MAX_CRASHES = 3
_serial = itertools.count()
# Which record a rule acts on is drawn as a plain number: the candidates depend on how far
# background replication got, and Hypothesis needs the draws themselves not to depend on timing.
PICK = st.integers(0, 1_000)


def _choose(candidates: list[str], pick: int) -> str | None:
    return candidates[pick % len(candidates)] if candidates else None


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    with start_realm(tmp_path_factory.mktemp("realm") / "data") as process:
        yield process


@pytest.fixture(autouse=True)
def _home_token(realm: RealmProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every runtime of these tests presents the token Realm issued to the test home."""
    use_home_token(monkeypatch, realm)


class ReplicationModel(RuleBasedStateMachine):
    """One fresh home per example; the Realm process and the proxy are shared by all examples."""

    realm: RealmProcess
    proxy: FaultProxy
    base: Path

    def __init__(self) -> None:
        super().__init__()
        self.proxy.set_mode("pass")
        self.home = Path(tempfile.mkdtemp(dir=self.base))
        self.runtime = self._open()
        self.runtime.memory.enable()
        self.acknowledged: set[str] = set()
        self.crashes = 0

    def _open(self) -> Runtime:
        return Runtime.open(self.home, realm=self.proxy.url, replication=SETTINGS)

    def teardown(self) -> None:
        self.runtime.close()
        self.proxy.set_mode("pass")

    # -- what the model knows -----------------------------------------------------------------------

    def _records(self) -> dict[str, MemoryRecord]:
        return local_records(self.runtime)

    def _withheld(self) -> list[MemoryRecord]:
        return [r for r in self._records().values() if r.replication in ("conflict", "invalidated", "pending_review")]

    def _synced(self) -> list[str]:
        return sorted(r.id for r in self._records().values() if r.replication == "synced")

    def _reconcilable(self) -> list[str]:
        return sorted(
            r.id for r in self._withheld() if r.lifecycle == "active" and r.replication != "pending_review"
        )

    # -- rules ----------------------------------------------------------------------------------------

    @initialize()
    def start_with_synced_and_conflicting_records(self) -> None:
        """Every run starts with something to invalidate and something to reconcile."""
        self.write(conflicting=False, n=2)
        self.write(conflicting=True, n=1)
        assert self.runtime.replication.sync(timeout=15.0).pending == 0

    @rule(conflicting=st.booleans(), n=st.integers(1, 3))
    def write(self, conflicting: bool, n: int) -> None:
        for _ in range(n):
            text = f"{QUERY} {next(_serial)}"
            if conflicting:
                receipt = DelegatedWriter(self.runtime).remember(text, canonical=True)
            else:
                receipt = self.runtime.member("deven").remember(text)
            assert receipt.replication == "pending"
            self.acknowledged.add(receipt.id)

    @rule(mode=st.sampled_from(FAULTS))
    def fault(self, mode: Mode) -> None:
        self.proxy.set_mode(mode, delay=0.6)

    @rule()
    def sync(self) -> None:
        healthy = self.proxy.mode == "pass"
        result = self.runtime.replication.sync(timeout=15.0 if healthy else 0.4)
        if healthy:
            assert result.pending == 0, result
        event(f"sync while {'healthy' if healthy else 'faulty'}: {'settled' if result.pending == 0 else 'pending'}")

    @rule(pick=PICK)
    def invalidate(self, pick: int) -> None:
        record_id = _choose(self._synced(), pick)
        if record_id is None:
            return
        with RealmClient(self.realm.url, token=self.realm.admin_token()) as client:
            client.invalidate(record_id, f"withdrawn in step {next(_serial)}")
        event("invalidated a record")

    @rule(pick=PICK, readmit=st.booleans())
    def reconcile(self, pick: int, readmit: bool) -> None:
        record_id = _choose(self._reconcilable(), pick)
        if record_id is None:
            return
        member = self.runtime.member("deven")
        if readmit:
            text = f"{QUERY} {next(_serial)} (corrected)"
            result = member.reconcile(record_id, readmit=True, canonical=False, text=text)
            assert result.new_id is not None
            # The new version is withheld until Realm accepts it.
            assert result.replication == "pending_review"
            self.acknowledged.add(result.new_id)
        else:
            assert member.reconcile(record_id, rollback=True).action == "rollback"
        with pytest.raises(InvalidInput):
            member.reconcile(record_id, rollback=True)
        event(f"reconciled by {'readmit' if readmit else 'rollback'}")

    @rule(pick=PICK)
    def reconcile_served(self, pick: int) -> None:
        served = sorted(r.id for r in self._records().values() if r.replication in ("pending", "synced"))
        record_id = _choose(served, pick)
        if record_id is None:
            return
        with pytest.raises(InvalidInput):
            self.runtime.member("deven").reconcile(record_id, rollback=True)

    @rule()
    def crash_replication(self) -> None:
        # A few per runtime: many in a row would (rightly) exhaust the root supervisor's restart
        # intensity and stop the runtime, which is the supervisor's business, not replication's.
        if self.crashes < MAX_CRASHES:
            self.crashes += 1
            self.runtime._internal.chaos.crash("replication")

    @rule()
    def restart(self) -> None:
        self.runtime.close()
        self.runtime = self._open()
        self.crashes = 0

    # -- invariants -----------------------------------------------------------------------------------

    @invariant()
    def acknowledged_writes_are_never_lost(self) -> None:
        missing = self.acknowledged - set(self._records())
        assert not missing, missing

    @invariant()
    def nothing_is_synced_that_realm_did_not_accept(self) -> None:
        assert_synced_only_if_accepted(self._records(), self.realm.data_dir)

    def _served_only_once_accepted(self, served: set[str]) -> None:
        """Records withheld a moment ago and served now: only a readmitted version Realm has since
        accepted may be one (conflict and invalidated are final)."""
        records = self._records()
        assert {records[i].replication for i in served} <= {"synced"}, served

    @invariant()
    def withheld_records_are_never_served(self) -> None:
        withheld = {r.id for r in self._withheld()}
        member = self.runtime.member("deven")
        served: set[str] = set()
        for record_id in withheld:
            try:
                member.get(record_id)
            except RecordWithheld:
                continue
            served.add(record_id)
        hits = member.recall(QUERY, k=100, include_inactive=True)
        served |= withheld & {hit.id for hit in hits}
        export = self.home / "export.json"
        self.runtime.export_member("deven", export)
        served |= withheld & {record["id"] for record in json.loads(export.read_bytes())["records"]}
        self._served_only_once_accepted(served)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_fail_closed_and_no_lost_writes_hold_in_every_run(tmp_path: Path, realm: RealmProcess) -> None:
    with FaultProxy(realm.url) as proxy:
        machine = type(
            "Machine", (ReplicationModel,), {"realm": realm, "proxy": proxy, "base": tmp_path}
        )
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=15,
                stateful_step_count=20,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
