"""Realm governance as the runtime lives it: conflicts and invalidations are withheld from every
read surface (recall, get, `memory show`, export), reconciliation is explicit both ways, and the
`replication` and `realm invalidate` commands say where things stand."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from resident import Runtime
from resident.actors.replication import NO_REALM_NOTE
from resident.cli.main import cli
from resident.errors import InvalidInput, RecordNotFound, RecordWithheld
from resident.messages.digest import content_digest
from resident.messages.memory import Reconciled
from resident.messages.realm import DEFAULT_PAGE_LIMIT, MAX_REPLICATE_RECORDS, RealmRecord
from resident.messages.replication import ReplicationCounts
from resident.realm import DELEGATED_PROMOTION, RealmClient
from tests.faultproxy import FaultProxy
from tests.postgres_support import BACKENDS, database_for
from tests.realm_process import RealmProcess, start_realm
from tests.replication_support import (
    FAST,
    DelegatedWriter,
    accepted_by_realm,
    assert_synced_only_if_accepted,
    counts,
    delegated_promotion,
    local_records,
    open_runtime,
    record_status,
    use_home_token,
    verdicts_of_realm,
)

pytestmark = pytest.mark.timeout(60)

TEXT = "the deploy needs a database migration before the release"


@pytest.fixture(scope="module", params=BACKENDS)
def realm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    """A Realm process over LMDB, and one over PostgreSQL: governance holds the same on both."""
    data = tmp_path_factory.mktemp("realm") / "data"
    with start_realm(data, database=database_for(request, request.param, data)) as process:
        yield process


@pytest.fixture(autouse=True)
def _home_token(realm: RealmProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every runtime of these tests presents the token Realm issued to the test home."""
    use_home_token(monkeypatch, realm)


def realm_record(index: int) -> RealmRecord:
    """A record some other runtime replicated to the shared Realm."""
    body = f"someone else's note {index}"
    digest = content_digest(
        record_id=f"other-{index}", summary=body, body=body, kind="world", bank="agent_core/zoe", canonical=False,
        delegated=False, supersedes=None,
    )
    return RealmRecord(
        id=f"other-{index}", digest=digest, owner="zoe",
        bank="agent_core/zoe", scope="AGENT_CORE", kind="world", summary=body, body=body,
        canonical=False, delegated=False, recorded_at=1_780_000_000.0,
    )


def run(home: Path, *args: str) -> Result:
    """`resident --home HOME ARGS...`, in process."""
    return CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)


def exported_ids(runtime: Runtime, member: str, path: Path) -> set[str]:
    runtime.export_member(member, path)
    return {record["id"] for record in json.loads(path.read_bytes())["records"]}


def recalled_ids(runtime: Runtime, member: str, query: str) -> set[str]:
    hits = runtime.member(member).recall(query, k=50, include_inactive=True)
    return {hit.id for hit in hits}


def assert_withheld(runtime: Runtime, record_id: str, state: str, reason: str, tmp_path: Path) -> None:
    """Not served by get (which says why), recall (even with inactive records) or export."""
    with pytest.raises(RecordWithheld) as caught:
        runtime.member("deven").get(record_id)
    assert caught.value.state == state
    assert caught.value.reason == reason
    assert record_id in caught.value.message
    assert record_id not in recalled_ids(runtime, "deven", TEXT)
    assert record_id not in exported_ids(runtime, "deven", tmp_path / f"export-{record_id}.json")


@pytest.fixture
def conflicted(tmp_path: Path, realm: RealmProcess) -> Iterator[tuple[Runtime, str, str]]:
    """A runtime with one served record and one Realm put in conflict (canonical via delegation)."""
    with open_runtime(tmp_path / "home", realm.url) as runtime:
        member = runtime.member("deven")
        served = member.remember(TEXT).id
        bad = delegated_promotion(runtime, f"{TEXT} (promoted)")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        yield runtime, served, bad


def test_canonical_through_a_delegated_path_is_a_conflict_with_realms_reason_and_withheld_everywhere(
    tmp_path: Path, realm: RealmProcess, conflicted: tuple[Runtime, str, str]
) -> None:
    runtime, served, bad = conflicted
    status = record_status(runtime, bad)
    assert status.state == "conflict"
    assert status.reason == DELEGATED_PROMOTION
    stored = local_records(runtime)[bad]
    assert verdicts_of_realm(realm)[bad, stored.digest].reason == status.reason
    assert counts(runtime).counts == {"pending": 0, "pending_review": 0, "synced": 1, "conflict": 1, "invalidated": 0}

    assert_withheld(runtime, bad, "conflict", DELEGATED_PROMOTION, tmp_path)
    assert served in recalled_ids(runtime, "deven", TEXT)
    assert served in exported_ids(runtime, "deven", tmp_path / "export.json")
    assert runtime.member("deven").get(served).replication == "synced"
    assert_synced_only_if_accepted(local_records(runtime), realm)


def test_memory_show_prints_why_a_record_is_withheld(tmp_path: Path, realm: RealmProcess) -> None:
    home = tmp_path / "home"
    with open_runtime(home, realm.url) as runtime:
        bad = delegated_promotion(runtime, TEXT)
        assert runtime.replication.sync(timeout=15.0).counts["conflict"] == 1
    shown = run(home, "memory", "show", bad, "--as", "deven")
    assert shown.exit_code == 1
    assert shown.stdout == ""
    assert shown.stderr.count("\n") == 1
    assert "withheld (conflict: non-canonical memory cannot be promoted" in shown.stderr
    as_json = run(home, "memory", "show", bad, "--as", "deven", "--json")
    assert as_json.exit_code == 1
    error = json.loads(as_json.stdout)["error"]
    assert error["type"] == "RecordWithheld"
    assert DELEGATED_PROMOTION in error["message"]


def test_rollback_retracts_the_conflicting_write_and_it_stays_withheld(
    tmp_path: Path, realm: RealmProcess, conflicted: tuple[Runtime, str, str]
) -> None:
    runtime, _served, bad = conflicted
    verdicts_before = verdicts_of_realm(realm)
    counts = runtime.replication.status()
    assert isinstance(counts, ReplicationCounts)
    assert counts.withheld == (bad,)  # status names what awaits reconciliation
    result = runtime.reconcile(bad, rollback=True)  # as its author, without naming the member
    assert result == Reconciled(id=bad, action="rollback")
    record = local_records(runtime)[bad]
    assert record.lifecycle == "retracted"
    assert record.replication == "conflict"
    assert_withheld(runtime, bad, "conflict", DELEGATED_PROMOTION, tmp_path)
    # Explicit and once: a second reconciliation of the same record is refused.
    with pytest.raises(InvalidInput, match="already reconciled"):
        runtime.member("deven").reconcile(bad, rollback=True)
    # Rolling back is local: nothing new is sent to Realm, and Realm's verdict stands.
    settled = runtime.replication.sync(timeout=15.0)
    assert settled.pending == 0
    assert settled.withheld == ()
    assert verdicts_of_realm(realm) == verdicts_before


def test_readmit_writes_a_corrected_version_withheld_until_realm_accepts_it(
    tmp_path: Path, realm: RealmProcess
) -> None:
    with FaultProxy(realm.url) as proxy, open_runtime(tmp_path / "home", proxy.url) as runtime:
        bad = delegated_promotion(runtime, f"{TEXT} (promoted, then readmitted)")
        assert runtime.replication.sync(timeout=15.0).counts["conflict"] == 1
        # Realm is out of reach while the new version waits, so what it is until Realm answers shows.
        proxy.set_mode("down")
        # Through the member's session again: what it writes stays delegated, so only dropping
        # `canonical` changes what Realm objected to.
        session = DelegatedWriter(runtime).session
        with pytest.raises(InvalidInput, match="without canonical"):
            asyncio.run(session.reconcile(bad, readmit=True))
        result = asyncio.run(session.reconcile(bad, readmit=True, canonical=False))
        assert result.action == "readmit"
        assert result.replication == "pending_review"
        assert result.new_id is not None
        new_id = result.new_id
        fresh = local_records(runtime)[new_id]
        assert (fresh.canonical, fresh.delegated, fresh.supersedes) == (False, True, bad)
        # Withheld from every read surface, and shown by replication status, until Realm accepts it.
        assert_withheld(runtime, new_id, "pending_review", "awaiting Realm's review", tmp_path)
        during = runtime.replication.sync(timeout=0.5)
        assert (during.counts["pending_review"], during.pending) == (1, 1)
        old = local_records(runtime)[bad]
        assert (old.lifecycle, old.superseded_by, old.replication) == ("superseded", new_id, "conflict")
        assert_withheld(runtime, bad, "conflict", DELEGATED_PROMOTION, tmp_path)

        proxy.set_mode("pass")
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert record_status(runtime, new_id).state == "synced"
        assert runtime.member("deven").get(new_id).id == new_id
        assert accepted_by_realm(realm)[new_id] == fresh.digest
        assert new_id in recalled_ids(runtime, "deven", TEXT)
        assert new_id in exported_ids(runtime, "deven", tmp_path / "export.json")
        assert_synced_only_if_accepted(local_records(runtime), realm)


def test_an_owner_may_readmit_a_delegated_promotion_as_canonical(
    realm: RealmProcess, conflicted: tuple[Runtime, str, str]
) -> None:
    runtime, _served, bad = conflicted
    # The owner is not a delegated path: the same canonical claim, made by the owner, is accepted.
    result = runtime.member("deven").reconcile(bad, readmit=True)
    assert result.new_id is not None
    assert runtime.replication.sync(timeout=15.0).pending == 0
    fresh = runtime.member("deven").get(result.new_id)
    assert (fresh.canonical, fresh.delegated, fresh.replication) == (True, False, "synced")


def test_readmit_with_corrected_text_through_the_cli(tmp_path: Path, realm: RealmProcess) -> None:
    home = tmp_path / "home"
    with open_runtime(home, realm.url) as runtime:
        bad = delegated_promotion(runtime, TEXT)
        assert runtime.replication.sync(timeout=15.0).counts["conflict"] == 1
    refused = run(home, "reconcile", bad)
    assert refused.exit_code == 1
    assert "choose one" in refused.stderr
    readmitted = run(home, "reconcile", bad, "--readmit", "--text", "corrected: migrate first", "--no-canonical",
                     "--json")
    assert readmitted.exit_code == 0, readmitted.output
    answer = json.loads(readmitted.stdout)
    assert answer["action"] == "readmit"
    assert answer["replication"] == "pending_review"
    # `memory show` withholds it until Realm accepts it, and says why.
    shown = run(home, "memory", "show", answer["new_id"], "--as", "deven")
    assert shown.exit_code == 1
    assert "pending_review" in shown.stderr
    with open_runtime(home, realm.url) as runtime:
        assert runtime.replication.sync(timeout=15.0).pending == 0
        fresh = runtime.member("deven").get(answer["new_id"])
        assert fresh.body == "corrected: migrate first"
        assert not fresh.canonical
        assert record_status(runtime, fresh.id).state == "synced"


def test_reconciling_a_served_or_unknown_record_is_refused_with_a_typed_error(
    conflicted: tuple[Runtime, str, str],
) -> None:
    runtime, served, bad = conflicted
    member = runtime.member("deven")
    with pytest.raises(InvalidInput, match="not withheld"):
        member.reconcile(served, rollback=True)
    with pytest.raises(InvalidInput, match="not withheld"):
        member.reconcile(served, readmit=True)
    with pytest.raises(InvalidInput, match="exactly one"):
        member.reconcile(bad, rollback=True, readmit=True)
    with pytest.raises(InvalidInput, match="exactly one"):
        member.reconcile(bad)
    with pytest.raises(RecordNotFound):
        member.reconcile("mem_nope", rollback=True)
    with pytest.raises(RecordNotFound):
        runtime.member("alice").reconcile(bad, rollback=True)
    # Nothing was changed by the refusals.
    assert member.get(served).lifecycle == "active"
    assert local_records(runtime)[bad].lifecycle == "active"


def test_an_invalidation_from_the_cli_withholds_the_record_after_the_next_sync(
    tmp_path: Path, realm: RealmProcess
) -> None:
    home = tmp_path / "home"
    reason = "superseded by the incident review of 2 May"
    with open_runtime(home, realm.url) as runtime:
        # Texts of their own: Realm refuses any later record with an invalidated record's content.
        target = runtime.member("deven").remember(f"{TEXT}, first note on the cli").id
        other = runtime.member("deven").remember(f"{TEXT}, second note on the cli").id
        assert runtime.replication.sync(timeout=15.0).pending == 0

        admin_token = str(realm.data_dir / "admin.token")
        invalidated = run(tmp_path / "elsewhere", "realm", "invalidate", target, "--reason", reason,
                          "--realm", realm.url, "--token-file", admin_token, "--json")
        assert invalidated.exit_code == 0, invalidated.output
        item = json.loads(invalidated.stdout)
        assert (item["id"], item["reason"]) == (target, reason)
        assert item["seq"] >= 1

        after = runtime.replication.sync(timeout=15.0)
        assert after.counts["invalidated"] == 1
        status = record_status(runtime, target)
        assert (status.state, status.reason) == ("invalidated", reason)
        assert_withheld(runtime, target, "invalidated", reason, tmp_path)
        assert runtime.member("deven").get(other).replication == "synced"

        # The same through the client, for the other record.
        with RealmClient(realm.url, token=realm.admin_token()) as client:
            client.invalidate(other, "withdrawn by the owner")
        assert runtime.replication.sync(timeout=15.0).counts["invalidated"] == 2
        assert_withheld(runtime, other, "invalidated", "withdrawn by the owner", tmp_path)

        # An invalidated record's content was refused: a readmit that does not change it is refused
        # here, and Realm would refuse it too.
        with pytest.raises(InvalidInput, match="corrected text"):
            runtime.member("deven").reconcile(target, readmit=True)
        with pytest.raises(InvalidInput, match="corrected text"):
            runtime.member("deven").reconcile(target, readmit=True, text=f"  {TEXT}, first note on the cli  ")
        # With corrected text, the new version is a new id Realm accepts.
        readmitted = runtime.member("deven").reconcile(target, readmit=True, text=f"{TEXT} (reviewed)")
        assert readmitted.new_id is not None
        assert runtime.replication.sync(timeout=15.0).pending == 0
        assert record_status(runtime, readmitted.new_id).state == "synced"
        assert_withheld(runtime, target, "invalidated", reason, tmp_path)


def test_an_invalidation_feed_longer_than_a_page_is_drained_by_one_sync(
    tmp_path: Path, realm: RealmProcess
) -> None:
    settings = dataclasses.replace(FAST, poll_interval=60.0)
    with open_runtime(tmp_path / "home", realm.url, settings) as runtime:
        ours = [runtime.member("deven").remember(f"{TEXT} #{i} of the long feed").id for i in range(3)]
        assert runtime.replication.sync(timeout=15.0).pending == 0
        others = [realm_record(i) for i in range(DEFAULT_PAGE_LIMIT + 20)]
        with (
            RealmClient(realm.url, timeout=10.0, token=realm.enroll("other-home", rotate=True)) as other_home,
            RealmClient(realm.url, timeout=10.0, token=realm.admin_token()) as client,
        ):
            for start in range(0, len(others), MAX_REPLICATE_RECORDS):
                other_home.replicate(others[start : start + MAX_REPLICATE_RECORDS])
            for record in others:
                client.invalidate(record.id, "bulk withdrawal")
            # Ours come last, past the first page of the feed (which this home sees filtered).
            for record_id in ours:
                client.invalidate(record_id, "withdrawn after the bulk")
        assert runtime.replication.sync(timeout=15.0).counts["invalidated"] == 3
        for record_id in ours:
            assert record_status(runtime, record_id).state == "invalidated"


def test_realm_invalidate_refuses_unknown_records_and_missing_realms_in_one_line(
    tmp_path: Path, realm: RealmProcess
) -> None:
    admin = ("--token-file", str(realm.data_dir / "admin.token"))
    unknown = run(
        tmp_path / "home", "realm", "invalidate", "mem_unknown", "--reason", "x", "--realm", realm.url, *admin
    )
    assert unknown.exit_code == 1
    assert "no accepted record mem_unknown" in unknown.stderr
    assert unknown.stderr.count("\n") == 1
    no_realm = run(tmp_path / "home", "realm", "invalidate", "mem_unknown", "--reason", "x", *admin)
    assert no_realm.exit_code == 1
    assert "--realm URL" in no_realm.stderr
    no_token = run(tmp_path / "home", "realm", "invalidate", "mem_unknown", "--reason", "x", "--realm", realm.url)
    assert no_token.exit_code == 1
    assert "--token-file" in no_token.stderr
    home_token = tmp_path / "home.token"
    home_token.write_text(realm.enroll("not-admin", rotate=True))
    forbidden = run(tmp_path / "home", "realm", "invalidate", "mem_unknown", "--reason", "x", "--realm", realm.url,
                    "--token-file", str(home_token), "--json")
    assert forbidden.exit_code == 1
    assert json.loads(forbidden.stdout)["error"]["type"] == "RealmUnauthorized"
    with FaultProxy(realm.url) as proxy:
        proxy.set_mode("down")
        down = run(tmp_path / "home", "realm", "invalidate", "mem_x", "--reason", "x", "--realm", proxy.url, *admin,
                   "--json")
    assert down.exit_code == 1
    assert json.loads(down.stdout)["error"]["type"] == "RealmUnavailable"


def test_without_a_realm_records_stay_pending_and_status_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_runtime(home, "none") as runtime:
        receipt = runtime.member("deven").remember(TEXT)
        assert runtime.memory.status().replication_note == NO_REALM_NOTE
        result = runtime.replication.sync(timeout=5.0)
        assert (result.pending, result.note) == (1, NO_REALM_NOTE)
        assert record_status(runtime, receipt.id).state == "pending"

    status = run(home, "replication", "status")
    assert status.exit_code == 0
    assert "pending 1" in status.stdout
    assert "no Realm is configured" in status.stdout
    memory = run(home, "memory", "status")
    assert "no Realm is configured" in memory.stdout
    sync = run(home, "replication", "sync", "--timeout", "2")
    assert sync.exit_code != 0
    assert "1 record" in sync.stderr
    assert "pending" in sync.stderr


def test_replication_status_and_sync_print_json_and_exit_by_what_is_pending(
    tmp_path: Path, realm: RealmProcess
) -> None:
    home = tmp_path / "home"
    with FaultProxy(realm.url) as proxy:
        assert run(home, "init", "--realm", proxy.url).exit_code == 0
        proxy.set_mode("down")
        with Runtime.open(home) as runtime:
            runtime.memory.enable()
            record_id = runtime.member("deven").remember(TEXT).id

        pending = run(home, "replication", "sync", "--timeout", "1")
        assert pending.exit_code == 1
        assert pending.stderr.startswith("error: 1 record")
        pending_json = run(home, "replication", "sync", "--timeout", "1", "--json")
        assert pending_json.exit_code == 1
        answer = json.loads(pending_json.stdout)
        assert (answer["pending"], answer["settled"]) == (1, False)

        proxy.set_mode("pass")
        settled = run(home, "replication", "sync", "--timeout", "15", "--json")
        assert settled.exit_code == 0, settled.output
        answer = json.loads(settled.stdout)
        assert (answer["pending"], answer["settled"], answer["counts"]["synced"]) == (0, True, 1)
        assert run(home, "replication", "sync", "--timeout", "15").exit_code == 0

        overall = json.loads(run(home, "replication", "status", "--json").stdout)
        assert overall["counts"] == {"pending": 0, "pending_review": 0, "synced": 1, "conflict": 0, "invalidated": 0}
        assert overall["realm"] == proxy.url
        one = json.loads(run(home, "replication", "status", record_id, "--json").stdout)
        assert (one["id"], one["state"]) == (record_id, "synced")
        assert one["attempts"] >= 1
        missing = run(home, "replication", "status", "mem_missing", "--json")
        assert missing.exit_code == 1
        assert json.loads(missing.stdout)["error"]["type"] == "RecordNotFound"
