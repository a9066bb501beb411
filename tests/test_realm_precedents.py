"""What a real Realm process remembers of its decisions: invalidated content stays refused (across a
restart too), and a record id stays with the home that pushed it first, which the runtime on the
other home lives as a conflict it can readmit under a new id."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from resident.cli.main import cli
from resident.messages.digest import content_digest
from resident.messages.realm import RealmRecord
from resident.realm import RealmClient
from resident.realm.tokens import TOKEN_ENV
from tests.postgres_support import BACKENDS, database_for
from tests.realm_process import start_realm
from tests.replication_support import local_records, open_runtime, record_status

pytestmark = pytest.mark.timeout(90)


def realm_record(record_id: str, body: str, *, supersedes: str | None = None) -> RealmRecord:
    digest = content_digest(
        record_id=record_id, summary=body, body=body, kind="world", bank="agent_core/zoe", canonical=False,
        delegated=False, supersedes=supersedes,
    )
    return RealmRecord(
        id=record_id, digest=digest, owner="zoe", bank="agent_core/zoe", scope="AGENT_CORE", kind="world",
        summary=body, body=body, canonical=False, delegated=False, recorded_at=1_780_000_000.0,
        supersedes=supersedes,
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_invalidated_content_is_refused_from_any_home_and_after_realm_restarts(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    data = tmp_path / "realm"
    database = database_for(request, backend, data)
    body = "the payments key rotates every ninety days"
    with start_realm(data, database=database) as realm:
        first, second = realm.enroll("first"), realm.enroll("second")
        with RealmClient(realm.url, token=first) as home:
            assert home.replicate([realm_record("zoe-1", body)])[0].status == "accepted"
        with RealmClient(realm.url, token=realm.admin_token()) as admin:
            admin.invalidate("zoe-1", "the rotation policy changed")
        with RealmClient(realm.url, token=second) as other:
            # Another home, another id, the same content: refused by what Realm invalidated.
            (copied,) = other.replicate([realm_record("zoe-copy", body)])
            assert (copied.status, copied.rule) == ("conflict", "invalidated_content")
    # Realm's memory of the invalidated content is in its data directory, not in the process.
    with (
        start_realm(data, database=database) as realm,
        RealmClient(realm.url, token=realm.enroll("second", rotate=True)) as other,
    ):
        (again,) = other.replicate([realm_record("zoe-copy-2", body)])
        assert (again.status, again.rule) == ("conflict", "invalidated_content")
        (unchanged,) = other.replicate([realm_record("zoe-2", body, supersedes="zoe-1")])
        assert (unchanged.status, unchanged.rule) == ("conflict", "supersedes_invalidated")
        (corrected,) = other.replicate([realm_record("zoe-3", f"{body}, now every thirty", supersedes="zoe-1")])
        assert corrected.status == "accepted"


def test_a_home_pushing_an_id_another_home_owns_gets_a_conflict_and_readmits_under_a_new_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    text = "the release train leaves on thursdays"
    with start_realm(tmp_path / "realm") as realm:
        homes = {name: tmp_path / name for name in ("laptop", "desktop")}
        for name, home in homes.items():
            token_file = tmp_path / f"{name}.token"
            token_file.write_text(realm.enroll(name) + "\n")
            token_file.chmod(0o600)
            result = CliRunner().invoke(
                cli, ["--home", str(home), "init", "--realm", realm.url, "--realm-token-file", str(token_file)]
            )
            assert result.exit_code == 0, result.output
        export = tmp_path / "deven.json"
        with open_runtime(homes["laptop"], realm.url) as laptop:
            first = laptop.member("deven").remember(text).id
            assert laptop.replication.sync(timeout=15.0).pending == 0
            laptop.export_member("deven", export)
            owned_digest = local_records(laptop)[first].digest

        with open_runtime(homes["desktop"], realm.url) as desktop:
            desktop.import_member(export)
            settled = desktop.replication.sync(timeout=15.0)
            assert settled.counts["conflict"] == 1
            status = record_status(desktop, first)
            assert status.state == "conflict"
            assert "another home" in status.reason
            assert first not in {hit.id for hit in desktop.member("deven").recall(text, k=10)}
            # The owner settles it: the same text under a new id of this home, which Realm accepts.
            readmitted = desktop.member("deven").reconcile(first, readmit=True)
            assert readmitted.new_id is not None
            assert readmitted.new_id != first
            assert desktop.replication.sync(timeout=15.0).pending == 0
            assert record_status(desktop, readmitted.new_id).state == "synced"

        # The first home's record was never touched by the second home's push.
        with open_runtime(homes["laptop"], realm.url) as laptop:
            assert record_status(laptop, first).state == "synced"
            assert local_records(laptop)[first].digest == owned_digest
