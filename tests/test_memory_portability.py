"""Member portability: a member's own memory leaves one home in a file and joins another.

An export holds the member's AGENT_CORE and AGENT_DYADIC records that are served (never
WORLD_SHARED, never withheld), in a versioned, checksummed, private file. An import checks the
whole file before it writes anything, skips records the home already has, and starts the actor of
a member new to the home so it can recall at once.
"""

from __future__ import annotations

import json
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from resident import Runtime
from resident.errors import ConfigError, ExportInvalid, InvalidInput, MemoryDisabled, UnknownMember
from resident.memory import portability
from resident.memory.portability import checksum
from resident.messages.digest import content_digest
from resident.messages.memory import MemberImported, RecordAdmitted
from resident.messages.portability import EXPORT_FORMAT, EXPORT_VERSION, MemberExport
from resident.messages.replication import RecordConflicted, RecordInvalidated, RecordsSynced
from resident.messages.store import Commit
from resident.store.tables import RECORDS
from tests.memory_helpers import event_count, events_of, open_runtime, write_roster


@pytest.fixture
def source(tmp_path: Path) -> Iterator[tuple[Runtime, dict[str, str]]]:
    """A home where deven has records of every kind it can have, some withheld, some synced."""
    rt = open_runtime(tmp_path / "source")
    rt.memory.enable()
    deven = rt.member("deven")
    ids = {
        "core": deven.remember("deploys need the migration first").id,
        "dyadic": deven.remember("alice reviews deploy PRs fast", scope="AGENT_DYADIC", counterpart="alice").id,
        "shared": deven.remember("the team deploys on tuesdays", scope="WORLD_SHARED", world="team").id,
        "conflict": deven.remember("a deploy memory realm rejected").id,
        "invalidated": deven.remember("a deploy memory realm invalidated", scope="AGENT_DYADIC",
                                      counterpart="oliver").id,
        "synced": deven.remember("the deploy dashboard is at /deploys").id,
        "other": rt.member("alice").remember("alice's own deploy notes").id,
    }
    old = deven.remember("the deploy window is friday")
    ids["superseded"] = old.id
    ids["current"] = deven.remember("the deploy window is thursday", supersedes=old.id).id
    now = time.time()
    rt._internal.write(
        Commit(
            events=(
                RecordConflicted(at=now, id=ids["conflict"], reason="non-canonical promotion"),
                RecordInvalidated(at=now, id=ids["invalidated"], reason="invalidated by realm"),
                RecordsSynced(at=now, ids=(ids["synced"],)),
            )
        )
    )
    yield rt, ids
    rt.close()


PORTABLE = {"core", "dyadic", "synced", "superseded", "current"}


def _export(rt: Runtime, path: Path, member: str = "deven") -> dict[str, Any]:
    rt.export_member(member, path)
    document: dict[str, Any] = json.loads(path.read_bytes())
    return document


def test_export_writes_only_the_members_served_core_and_dyadic_records(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, ids = source
    path = tmp_path / "deven.json"
    assert rt.export_member("deven", path) == len(PORTABLE)
    document = msgspec.json.decode(path.read_bytes(), type=MemberExport)
    assert {record.id for record in document.records} == {ids[name] for name in PORTABLE}
    assert {record.scope for record in document.records} == {"AGENT_CORE", "AGENT_DYADIC"}
    assert {bank.name for bank in document.banks} == {"agent_core/deven", "agent_dyadic/deven/alice"}
    assert (document.format, document.version, document.member, document.role) == (
        EXPORT_FORMAT, EXPORT_VERSION, "deven", "development"
    )
    raw = json.loads(path.read_bytes())
    assert raw["format"] == "resident-member-export"
    assert raw["version"] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not list(tmp_path.glob(".deven.json*"))  # no temporary file left behind


def test_exporting_writes_nothing_to_the_home_and_refuses_bad_targets(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, _ = source
    before = event_count(rt)
    rt.export_member("deven", tmp_path / "deven.json")
    assert event_count(rt) == before
    with pytest.raises(UnknownMember):
        rt.export_member("nobody", tmp_path / "nobody.json")
    with pytest.raises(InvalidInput, match="directory"):
        rt.export_member("deven", tmp_path)
    with pytest.raises(InvalidInput, match="does not exist"):
        rt.export_member("deven", tmp_path / "missing" / "deven.json")
    assert not (tmp_path / "nobody.json").exists()


def test_importing_into_another_home_loads_the_records_as_pending(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, ids = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        result = target.import_member(path)
        assert (result.member, result.imported, result.skipped, result.joined) == ("deven", len(PORTABLE), 0, False)
        deven = target.member("deven")
        recalled = {hit.id for hit in deven.recall("deploy", k=100)}
        assert recalled == {ids["core"], ids["dyadic"], ids["synced"], ids["current"]}
        assert ids["superseded"] in {hit.id for hit in deven.recall("deploy", k=100, include_inactive=True)}
        # This home's Realm has not accepted them yet, whatever the other home's said.
        assert deven.get(ids["synced"]).replication == "pending"
        assert deven.get(ids["superseded"]).lifecycle == "superseded"
        assert target.member("alice").recall("deploy") == []


def test_importing_the_same_file_again_skips_what_is_already_there(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        target.import_member(path)
        records = _record_count(target)
        before = event_count(target)
        again = target.import_member(path)
        assert (again.imported, again.skipped, again.joined) == (0, len(PORTABLE), False)
        assert _record_count(target) == records
        assert event_count(target) == before


def _record_count(rt: Runtime) -> int:
    with rt._internal.store.reader() as reader:
        return reader.count(RECORDS)


def test_a_member_new_to_the_home_joins_starts_and_recalls_at_once(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, ids = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    home = tmp_path / "target"
    write_roster(home, {"samuel": ("ops",), "alice": ("ops",)})
    with open_runtime(home) as target:
        target.memory.enable()
        result = target.import_member(path, world="ops")
        assert (result.member, result.imported, result.joined) == ("deven", len(PORTABLE), True)
        assert target.statistics().child("members/deven").state == "running"
        deven = target.member("deven")
        assert ids["core"] in {hit.id for hit in deven.recall("deploys need the migration first")}
        assert deven.remember("deven now shares with ops", scope="WORLD_SHARED", world="ops").bank == (
            "world_shared/ops"
        )
        joined = [e for e in events_of(target) if isinstance(e, MemberImported)]
        assert [(e.member, e.world, e.records, e.role) for e in joined] == [
            ("deven", "ops", len(PORTABLE), "development")
        ]

        again = target.import_member(path)
        assert (again.imported, again.joined) == (0, False)
        assert target.statistics().child("members/deven").incarnation == 1
        assert ids["core"] in {hit.id for hit in deven.recall("deploys need the migration first")}
        with pytest.raises(ConfigError, match="already joined"):
            target.import_member(path, world="dev")
    with open_runtime(home) as reopened:
        assert reopened._internal.config.member("deven").worlds == ("ops",)
        assert reopened._internal.config.member("deven").role == "development"  # the role travels with the member
        assert ids["core"] in {hit.id for hit in reopened.member("deven").recall("deploys need the migration first")}


def test_a_roster_member_cannot_be_moved_to_another_world_by_import(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        with pytest.raises(ConfigError, match=r"resident\.toml"):
            target.import_member(path, world="elsewhere")
        assert _record_count(target) == 0


# -- damaged files -------------------------------------------------------------------------------


def _rewrite(path: Path, change: Callable[[dict[str, Any]], object]) -> Path:
    document = json.loads(path.read_bytes())
    change(document)
    damaged = path.with_name("damaged.json")
    damaged.write_text(json.dumps(document))
    return damaged


def _edit_body(document: dict[str, Any]) -> None:
    document["records"][0]["body"] = "something the member never remembered"


def _add_foreign_record(document: dict[str, Any]) -> None:
    foreign = dict(document["records"][0], id="mem_foreign", owner="alice", bank="agent_core/alice")
    document["records"].append(foreign)


def _reseal(document: dict[str, Any]) -> None:
    """Recompute the checksum, as a careful forger would."""
    decoded = msgspec.convert(document, MemberExport)
    document["checksum"] = checksum(decoded.member, decoded.banks, decoded.records)


def _foreign_record_resealed(document: dict[str, Any]) -> None:
    _add_foreign_record(document)
    _reseal(document)


def _shared_record_resealed(document: dict[str, Any]) -> None:
    document["records"][0]["scope"] = "WORLD_SHARED"
    _reseal(document)


def _bank_named_for_another_member_resealed(document: dict[str, Any]) -> None:
    # A bank that claims alice's name would capture alice's later writes where she cannot see them.
    for item in (*document["banks"], *document["records"]):
        if item.get("bank", item.get("name")) == "agent_core/deven":
            item["bank" if "bank" in item else "name"] = "agent_core/alice"
    _reseal(document)


def _member_name_invalid_resealed(document: dict[str, Any]) -> None:
    document.update(member="../deven", banks=[], records=[])
    _reseal(document)


DAMAGE: dict[str, Callable[[dict[str, Any]], object]] = {
    "modified": _edit_body,
    "wrong-version": lambda d: d.update(version=99),
    "wrong-format": lambda d: d.update(format="somebody-elses-export"),
    "record-dropped": lambda d: d["records"].pop(),
    "foreign-record-resealed": _foreign_record_resealed,
    "shared-record-resealed": _shared_record_resealed,
    "bank-named-for-another-member-resealed": _bank_named_for_another_member_resealed,
    "member-name-invalid-resealed": _member_name_invalid_resealed,
    "not-an-object": lambda d: d.clear(),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_export_raises_export_invalid_and_writes_nothing(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path, damage: str
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    damaged = _rewrite(path, DAMAGE[damage])
    with open_runtime(tmp_path / "target", worlds={"alice": ("team",)}) as target:
        target.memory.enable()
        before = event_count(target)
        with pytest.raises(ExportInvalid):
            target.import_member(damaged)
        assert event_count(target) == before
        assert _record_count(target) == 0
        assert "members/deven" not in target._internal.chaos.names()


def _forged(**changes: Any) -> Callable[[dict[str, Any]], object]:
    """Change the first record as a careful forger would: digest and checksum recomputed to match."""

    def forge(document: dict[str, Any]) -> None:
        record = document["records"][0]
        record.update(changes)
        record["digest"] = content_digest(
            record_id=record["id"], summary=record["summary"], body=record["body"], kind=record["kind"],
            bank=record["bank"], canonical=record["canonical"], delegated=record["delegated"],
            supersedes=record["supersedes"],
        )
        _reseal(document)

    return forge


def _digest_left_stale(document: dict[str, Any]) -> None:
    _edit_body(document)
    _reseal(document)


FORGED: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "a body of a million characters": (_forged(body="x" * 1_000_000), "the limit is 16000"),
    "an empty body": (_forged(body=""), "is empty"),
    "a digest that does not match": (_digest_left_stale, "does not match its digest"),
    "alice as the author of deven's record": (_forged(author="alice"), "claims author 'alice'"),
    "a record time far in the future": (_forged(recorded_at=1e18), "recorded_at in the future"),
    "superseded_by on an active record": (_forged(superseded_by="mem_other"), "is active but marked superseded"),
    "an id of 600 characters": (_forged(id="m" * 600), "malformed id"),
    "an importance above 1": (_forged(importance=7.0), "importance must be a number from 0 to 1"),
    "a retraction without a time": (_forged(lifecycle="retracted"), "retracted without a retraction time"),
}


@pytest.mark.parametrize("forgery", list(FORGED))
def test_an_import_checks_every_record_as_remember_would_and_refuses_the_whole_file(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path, forgery: str
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    change, reason = FORGED[forgery]
    forged = _rewrite(path, change)
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        before = event_count(target)
        with pytest.raises(ExportInvalid, match=re.escape(reason)) as caught:
            target.import_member(forged)
        assert "nothing was imported" in caught.value.message
        assert len(caught.value.message) < 400  # one line, the forged value not echoed whole
        assert event_count(target) == before
        assert _record_count(target) == 0


def test_an_imported_record_is_authored_by_the_member_it_travels_with(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    anonymous = _rewrite(path, _forged(author=""))
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        target.import_member(anonymous)
        with target._internal.store.reader() as reader:
            authors = {record.author for _, record in reader.items(RECORDS)}
    assert authors == {"deven"}


def test_an_export_file_larger_than_any_real_one_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    monkeypatch.setattr(portability, "MAX_EXPORT_BYTES", 1_000)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1_001)
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        with pytest.raises(ExportInvalid, match="larger than 1000 bytes"):
            target.import_member(big)


@pytest.mark.parametrize("cut", [0, 1, 100, -1, -20])
def test_a_truncated_or_missing_export_raises_export_invalid(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path, cut: int
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(path.read_bytes()[:cut])
    with open_runtime(tmp_path / "target") as target:
        target.memory.enable()
        before = event_count(target)
        with pytest.raises(ExportInvalid):
            target.import_member(truncated)
        with pytest.raises(ExportInvalid, match="does not exist"):
            target.import_member(tmp_path / "missing.json")
        with pytest.raises(ExportInvalid, match="directory"):
            target.import_member(tmp_path)
        assert event_count(target) == before


def test_importing_into_a_home_with_memory_off_is_refused_and_writes_nothing(
    source: tuple[Runtime, dict[str, str]], tmp_path: Path
) -> None:
    rt, _ = source
    path = tmp_path / "deven.json"
    rt.export_member("deven", path)
    with open_runtime(tmp_path / "target") as target:
        with pytest.raises(MemoryDisabled, match="resident memory enable"):
            target.import_member(path)
        assert event_count(target) == 0
        assert not any(isinstance(e, RecordAdmitted) for e in events_of(target))
