"""Replication against a real Realm process behind a fault proxy: down, killed, slow, 5xx, garbage
and refusals. Records stay pending through every fault, each push makes at most `max_attempts`
requests, and nothing is marked synced that Realm's own store does not hold as accepted."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from resident import Runtime
from resident.actors.replication import ReplicationSettings
from resident.clock import ManualClock
from resident.errors import InvalidInput, RecordWithheld, RuntimeStopped
from resident.messages.replication import ReplicationCounts
from resident.realm import RealmClient
from tests.faultproxy import FaultProxy, Mode
from tests.realm_process import RealmProcess, start_realm
from tests.replication_support import (
    FAST,
    accepted_by_realm,
    assert_synced_only_if_accepted,
    counts,
    local_records,
    open_runtime,
    record_status,
    use_home_token,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)

REPLICATE = "/v1/replicate"
INVALIDATIONS = "/v1/invalidations"
# One push cycle, then a long rest: whatever the proxy counts inside a test is that one cycle.
ONE_CYCLE = dataclasses.replace(FAST, max_attempts=3, retry_later=60.0, poll_interval=60.0)
_texts = itertools.count()


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    with start_realm(tmp_path_factory.mktemp("realm") / "data") as process:
        yield process


@pytest.fixture(autouse=True)
def _home_token(realm: RealmProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every runtime of these tests presents the token Realm issued to the test home."""
    use_home_token(monkeypatch, realm)


@pytest.fixture
def proxy(realm: RealmProcess) -> Iterator[FaultProxy]:
    with FaultProxy(realm.url) as running:
        yield running


def write(runtime: Runtime, n: int, member: str = "deven") -> list[str]:
    """`n` acknowledged writes; each receipt says pending (Realm has not answered for it yet)."""
    ids = []
    for _ in range(n):
        receipt = runtime.member(member).remember(f"release note {next(_texts)}: the cache needs warming")
        assert receipt.replication == "pending"
        ids.append(receipt.id)
    return ids


def drive(runtime: Runtime, clock: ManualClock, *, requests: int, settings: ReplicationSettings = ONE_CYCLE) -> None:
    """Move the clock through backoff waits until the pusher has sent `requests` requests and is
    waiting again (backing off or resting). Each step waits for the actor's own report, not time."""

    def sent_and_waiting() -> bool:
        status = counts(runtime)
        return status.requests >= requests and status.pusher in ("backoff", "resting")

    def waiting() -> ReplicationCounts | None:
        status = counts(runtime)
        return status if status.pusher in ("backoff", "resting") else None

    while True:
        status = wait_until(waiting, 10.0, "the pusher to wait")
        assert status is not None
        if status.requests >= requests:
            break
        before = status.requests
        clock.advance(settings.wait_max * (1 + settings.jitter))  # past any backoff wait, short of any rest
        wait_until(lambda: counts(runtime).requests > before, 10.0, "the next attempt")  # noqa: B023 - the lambda runs at once inside this iteration
    wait_until(sent_and_waiting, 10.0, f"{requests} requests")


def test_records_written_while_realm_is_down_stay_pending_and_all_sync_once_it_is_back(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    proxy.set_mode("down")
    with open_runtime(tmp_path / "home", proxy.url) as runtime:
        ids = write(runtime, 20)
        during = runtime.replication.sync(timeout=1.0)
        assert during.pending == 20
        assert during.counts["synced"] == 0
        assert during.retrying
        assert "unreachable" in during.last_error
        # Pending records are served: the write is durable locally, only Realm has not answered.
        assert runtime.member("deven").get(ids[0]).replication == "pending"
        assert runtime.member("deven").recall("release note cache warming", k=20)

        proxy.set_mode("pass")
        after = runtime.replication.sync(timeout=15.0)
        assert after.pending == 0
        assert after.counts["synced"] == 20
        assert not after.retrying
        records = local_records(runtime)
    assert set(ids) <= set(records)
    assert_synced_only_if_accepted(records, realm.data_dir)
    assert set(ids) <= set(accepted_by_realm(realm.data_dir))


def test_a_killed_realm_process_loses_nothing_and_everything_syncs_after_its_restart(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    with open_runtime(tmp_path / "home", proxy.url) as runtime:
        before = write(runtime, 5)
        assert runtime.replication.sync(timeout=15.0).pending == 0
        realm.kill()
        try:
            during = write(runtime, 10)
            stalled = runtime.replication.sync(timeout=1.0)
            assert stalled.pending == 10
            assert "502" in stalled.last_error  # the proxy answers for the dead upstream
        finally:
            realm.start()
        after = runtime.replication.sync(timeout=15.0)
        assert after.pending == 0
        records = local_records(runtime)
    assert {r.replication for r in records.values()} == {"synced"}
    assert set(before + during) <= set(accepted_by_realm(realm.data_dir))
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_one_push_makes_at_most_max_attempts_requests_and_writes_during_the_rest_wait_for_it(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    clock = ManualClock()
    proxy.set_mode("error503")
    with open_runtime(tmp_path / "home", proxy.url, ONE_CYCLE, clock=clock) as runtime:
        first = write(runtime, 1)
        drive(runtime, clock, requests=3)
        status = counts(runtime)
        assert (status.pusher, status.requests, proxy.count(REPLICATE)) == ("resting", 3, 3)
        wait_until(lambda: record_status(runtime, first[0]).attempts == 3, 5.0, "three recorded attempts")

        # Realm is known to be failing: new writes join the pending set and wait for the rest to
        # end (on the clock, which has not moved), instead of each starting a push.
        later = write(runtime, 5)
        status = counts(runtime)
        assert (status.pusher, status.pending, status.requests, proxy.count(REPLICATE)) == ("resting", 6, 3, 3)

        # An explicit sync starts one new push now (all six records), again bounded.
        with ThreadPoolExecutor(1) as pool:
            syncing = pool.submit(runtime.replication.sync, 1.0)
            drive(runtime, clock, requests=6)
            assert counts(runtime).pusher == "resting"
            clock.advance(1.0)  # the sync's own deadline
            synced = syncing.result(timeout=10.0)
        assert synced.pending == 6
        assert proxy.count(REPLICATE) == 6
        wait_until(lambda: record_status(runtime, later[0]).attempts == 3, 5.0, "the sync's three attempts")
        assert record_status(runtime, first[0]).attempts == 6
        assert "503" in record_status(runtime, first[0]).last_error

        proxy.set_mode("pass")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        records = local_records(runtime)
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_a_sync_polls_at_once_and_the_poll_it_brought_forward_does_not_run_when_it_was_due(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    del realm
    clock = ManualClock()
    interval = ONE_CYCLE.poll_interval
    with open_runtime(tmp_path / "home", proxy.url, ONE_CYCLE, clock=clock) as runtime:
        runtime.replication.sync(timeout=5.0)  # a round has ended; the next is due a polling interval later
        clock.advance(interval / 2)
        before = proxy.count(INVALIDATIONS)
        runtime.replication.sync(timeout=5.0)  # it waits for a round that began after it: that round is now
        polled = proxy.count(INVALIDATIONS)
        assert polled > before
        clock.advance(interval / 2)  # when the round the sync brought forward was due
        # A poll told meanwhile would be handled before this status request, and still be out.
        assert counts(runtime).poller == "idle"
        clock.advance(interval / 2)  # a polling interval after the sync's round
        wait_until(lambda: proxy.count(INVALIDATIONS) > polled, 10.0, "the next round")


def test_a_sync_during_a_backoff_wait_starts_a_fresh_push_and_drops_the_old_wait(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    del realm
    clock = ManualClock()
    slow_backoff = dataclasses.replace(ONE_CYCLE, wait_initial=0.3, wait_max=0.3, jitter=0.0)
    proxy.set_mode("error503")
    with open_runtime(tmp_path / "home", proxy.url, slow_backoff, clock=clock) as runtime:
        write(runtime, 1)
        drive(runtime, clock, requests=1, settings=slow_backoff)
        # The actor waits for its backoff as a scheduled message, so it answers meanwhile.
        assert counts(runtime).pusher == "backoff"
        assert counts(runtime).retrying
        with ThreadPoolExecutor(1) as pool:
            syncing = pool.submit(runtime.replication.sync, 5.0)
            # The first push made one attempt; the sync's push makes its own three. Moving the clock
            # past the first push's pending wait must not add an attempt to the new push.
            drive(runtime, clock, requests=4, settings=slow_backoff)
            status = counts(runtime)
            assert (status.pusher, status.requests, status.pushes, proxy.count(REPLICATE)) == ("resting", 4, 2, 4)
            clock.advance(5.0)
            syncing.result(timeout=10.0)


@pytest.mark.parametrize(
    ("mode", "options", "error"),
    [
        pytest.param("error503", {}, "503", id="503"),
        pytest.param("reset", {}, "unreachable", id="reset"),
        pytest.param("garbage", {}, "not a ReplicateResponse", id="html"),
        pytest.param("garbage", {"body": b'{"results": []}'}, "do not match", id="no-results"),
        pytest.param(
            "garbage",
            {"body": b'{"results": [{"id": "someone-else", "status": "accepted"}]}'},
            "do not match",
            id="acceptance-of-another-record",
        ),
        pytest.param(
            "garbage",
            {"status": 500, "body": b'{"error": {"type": "InternalError", "message": "disk trouble"}}'},
            "disk trouble",
            id="500",
        ),
    ],
)
def test_transient_faults_are_retried_within_bounds_and_mark_nothing_synced(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy, mode: Mode, options: dict[str, object], error: str
) -> None:
    clock = ManualClock()
    proxy.set_mode(mode, **options)  # type: ignore[arg-type]
    with open_runtime(tmp_path / "home", proxy.url, ONE_CYCLE, clock=clock) as runtime:
        ids = write(runtime, 1)
        drive(runtime, clock, requests=3)
        status = counts(runtime)
        assert (status.pusher, proxy.count(REPLICATE)) == ("resting", 3)
        assert status.counts == {"pending": 1, "pending_review": 0, "synced": 0, "conflict": 0, "invalidated": 0}
        wait_until(lambda: record_status(runtime, ids[0]).attempts == 3, 5.0, "three recorded attempts")
        one = record_status(runtime, ids[0])
        assert one.state == "pending"
        assert error in one.last_error

        proxy.set_mode("pass")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        records = local_records(runtime)
    assert records[ids[0]].replication == "synced"
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_a_realm_slower_than_the_client_timeout_marks_nothing_synced_until_an_answer_arrives(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    settings = dataclasses.replace(ONE_CYCLE, max_attempts=2)
    proxy.set_mode("slow", delay=1.0)  # twice the client's request timeout
    with open_runtime(tmp_path / "home", proxy.url, settings) as runtime:
        ids = write(runtime, 1)
        wait_until(lambda: counts(runtime).pusher == "resting", 10.0, "two attempts, then a rest")
        # The proxy forwards what it held: Realm accepts the record, but its answer never reached
        # the runtime in time, so the record must still be pending.
        wait_until(lambda: ids[0] in accepted_by_realm(realm.data_dir), 5.0, "Realm to accept the record")
        assert (counts(runtime).requests, proxy.count(REPLICATE)) == (2, 2)
        status = record_status(runtime, ids[0])
        assert status.state == "pending"
        assert "did not answer" in status.last_error or "did not answer" in counts(runtime).last_error

        proxy.set_mode("pass")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        records = local_records(runtime)
    assert_synced_only_if_accepted(records, realm.data_dir)


REFUSAL = b'{"error": {"type": "InvalidInput", "message": "invalid ReplicateRequest: field `kind` is wrong"}}'


def test_a_refusal_is_parked_instead_of_retried_and_each_sync_tries_once_more(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    clock = ManualClock()
    settings = dataclasses.replace(FAST, retry_later=0.2, poll_interval=60.0)
    proxy.set_mode("down")
    with open_runtime(tmp_path / "home", proxy.url, settings, clock=clock) as runtime:
        ids = write(runtime, 3)
        proxy.set_mode("garbage", status=400, body=REFUSAL)
        proxy.reset_counts()
        refused = runtime.replication.sync(timeout=5.0)
        # One batch, refused; then each record alone, to find which ones Realm refuses; all are.
        assert proxy.count(REPLICATE) == 4
        assert refused.pending == 3
        assert refused.parked == 3
        status = record_status(runtime, ids[1])
        assert status.state == "pending"
        assert "field `kind` is wrong" in status.reason
        # Parked records are not retried when the retry timer fires, however often...
        requests = counts(runtime).requests
        for _ in range(3):
            clock.advance(settings.retry_later + settings.wait_max * (1 + settings.jitter))
            status_now = counts(runtime)
            assert (status_now.pusher, status_now.requests, proxy.count(REPLICATE)) == ("idle", requests, 4)
        # ...only by an explicit sync, once.
        again = runtime.replication.sync(timeout=5.0)
        assert again.parked == 3
        assert proxy.count(REPLICATE) == 8
        assert counts(runtime).pusher == "idle"

        proxy.set_mode("pass")
        settled = runtime.replication.sync(timeout=15.0)
        assert settled.pending == 0
        assert settled.parked == 0
        records = local_records(runtime)
    assert {records[i].replication for i in ids} == {"synced"}
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_a_sync_waits_through_exhausted_pushes_until_everything_settles_within_its_timeout(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    proxy.set_mode("error503")
    with open_runtime(tmp_path / "home", proxy.url) as runtime, ThreadPoolExecutor(1) as pool:
        ids = write(runtime, 3)
        syncing = pool.submit(runtime.replication.sync, 15.0)
        # Whatever the push before it had tried, the sync's own push has run out of attempts by
        # now (it starts afresh, with max_attempts of its own); the sync keeps waiting regardless.
        wait_until(lambda: proxy.count(REPLICATE) >= 2 * FAST.max_attempts, 5.0, "an exhausted push")
        assert not syncing.done()
        proxy.set_mode("pass")
        settled = syncing.result(timeout=20.0)
        assert settled.pending == 0
        records = local_records(runtime)
    assert {records[i].replication for i in ids} == {"synced"}
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_a_sync_with_nothing_pending_returns_after_one_polling_round_even_if_it_fails(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    del realm
    proxy.set_mode("down")
    with open_runtime(tmp_path / "home", proxy.url) as runtime:
        started = time.monotonic()
        down = runtime.replication.sync(timeout=10.0)
        assert time.monotonic() - started < 3.0
        assert down.pending == 0
        assert "unreachable" in down.last_error
        proxy.set_mode("pass")
        # A stale error does not outlive the fault it described.
        assert runtime.replication.sync(timeout=10.0).last_error == ""


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param(dataclasses.replace(FAST, batch_records=2), id="batch_records"),
        # Each record is estimated at its text plus 512 bytes, so 1300 bytes hold two of these.
        pytest.param(dataclasses.replace(FAST, batch_bytes=1300), id="batch_bytes"),
    ],
)
def test_pending_records_are_pushed_in_batches_within_the_configured_bounds(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy, settings: ReplicationSettings
) -> None:
    proxy.set_mode("down")
    with open_runtime(tmp_path / "home", proxy.url, settings) as runtime:
        ids = write(runtime, 5)
        proxy.set_mode("pass")
        proxy.reset_counts()
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert proxy.count(REPLICATE) == 3  # 2 + 2 + 1
        records = local_records(runtime)
    assert {records[i].replication for i in ids} == {"synced"}


def test_an_invalidation_of_a_record_whose_acceptance_never_arrived_withholds_it(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    settings = dataclasses.replace(FAST, max_attempts=1, retry_later=60.0, poll_interval=0.1)
    proxy.set_mode("slow", delay=1.0)
    with open_runtime(tmp_path / "home", proxy.url, settings) as runtime:
        ids = write(runtime, 1)
        # Realm accepts the record, but its answer comes after the client gave up.
        wait_until(lambda: ids[0] in accepted_by_realm(realm.data_dir), 5.0, "Realm to accept the record")
        assert record_status(runtime, ids[0]).state == "pending"
        proxy.set_mode("pass")
        with RealmClient(realm.url, token=realm.admin_token()) as client:
            client.invalidate(ids[0], "withdrawn before the runtime heard it was accepted")
        # Replication rests (60 s) after its one attempt, but polling goes on and finds it.
        wait_until(lambda: record_status(runtime, ids[0]).state == "invalidated", 5.0, "the invalidation")
        with pytest.raises(RecordWithheld):
            runtime.member("deven").get(ids[0])
        assert runtime.replication.sync(timeout=10.0).pending == 0
        records = local_records(runtime)
    assert records[ids[0]].replication == "invalidated"
    assert_synced_only_if_accepted(records, realm.data_dir)


def test_a_waiting_sync_is_answered_at_once_when_replication_crashes_or_the_runtime_closes(
    tmp_path: Path, realm: RealmProcess, proxy: FaultProxy
) -> None:
    del realm
    proxy.set_mode("error503")
    runtime = Runtime.open(tmp_path / "home", realm=proxy.url, replication=FAST)
    try:
        runtime.memory.enable()
        write(runtime, 2)
        with ThreadPoolExecutor(1) as pool:
            syncing = pool.submit(runtime.replication.sync, 30.0)
            wait_until(lambda: proxy.count(REPLICATE) >= 1, 5.0, "a push")
            runtime._internal.chaos.crash("replication")
            # The sync hears of the crash and reports where things stand, long before its timeout.
            assert syncing.result(timeout=10.0).pending == 2

            before = proxy.count(REPLICATE)
            syncing = pool.submit(runtime.replication.sync, 30.0)
            wait_until(lambda: proxy.count(REPLICATE) > before, 5.0, "the restarted actor's push")
            runtime.close()
            with pytest.raises(RuntimeStopped):
                syncing.result(timeout=10.0)
    finally:
        runtime.close()


def test_status_and_sync_answer_at_once_without_a_realm(tmp_path: Path) -> None:
    with open_runtime(tmp_path / "home", "none") as runtime:
        write(runtime, 2)
        started = time.monotonic()
        result = runtime.replication.sync(timeout=10.0)
        assert time.monotonic() - started < 2.0
        assert result.pending == 2
        assert result.realm is None
        assert "no Realm is configured" in result.note
        for bad in (0, -1.0, float("nan"), True):
            with pytest.raises(InvalidInput, match="timeout"):
                runtime.replication.sync(timeout=bad)


def test_settings_refuse_impossible_bounds() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        ReplicationSettings(max_attempts=0)
    with pytest.raises(ValueError, match="batch_records"):
        ReplicationSettings(batch_records=0)
    with pytest.raises(ValueError, match="batch_bytes"):
        ReplicationSettings(batch_bytes=0)
    with pytest.raises(ValueError, match="must not be negative"):
        ReplicationSettings(wait_initial=-1.0)
    with pytest.raises(ValueError, match="wait_max"):
        ReplicationSettings(wait_initial=2.0, wait_max=1.0)
    with pytest.raises(ValueError, match="must be positive"):
        ReplicationSettings(request_timeout=0.0)
