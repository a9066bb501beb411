"""Visibility and fail-closed serving, on every read surface (recall, get, the app surface, export).

The rules, stated here independently of `resident.memory.visibility`:
* a member sees its own AGENT_CORE and AGENT_DYADIC records, and WORLD_SHARED records of the worlds
  it belongs to — never another member's private records, never app or workspace records;
* an app sees only its own APP_PRIVATE banks, a workspace only its own WORKSPACE_PRIVATE banks;
* a record Realm put in `conflict` or `invalidated` is served to nobody: recall and export skip it
  and `get` raises `RecordWithheld` naming the state (to a principal that may see it at all).

The roster gives members different worlds: deven and alice are in `dev`, oliver and victor in
`ops`, samuel in both; world `team` has no members here.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, multiple, rule

from resident import Runtime
from resident.errors import InvalidInput, NotVisible, RecordNotFound, RecordWithheld
from resident.memory import visibility
from resident.messages.digest import content_digest
from resident.messages.memory import Bank, MemoryRecord, Principal, Scope
from resident.messages.portability import MemberExport
from resident.messages.replication import RecordConflicted, RecordInvalidated
from resident.messages.store import Commit
from tests.memory_helpers import WORLDS, open_runtime

MEMBERS = tuple(WORLDS)
APPS = ("notes", "crm")
WORKSPACES = ("acme",)
PRINCIPALS: tuple[tuple[str, str], ...] = (
    *(("member", m) for m in MEMBERS),
    *(("app", a) for a in APPS),
    *(("workspace", w) for w in WORKSPACES),
)
# A small vocabulary, so that queries match many records of every scope at once.
VOCABULARY = ("deploy", "harbour", "invoice", "supplier", "migration", "canary", "ledger", "despliegue", "部署")


@dataclass
class Known:
    """What the test knows of one record: who wrote it where, and what Realm did to it."""

    id: str
    text: str
    scope: Scope
    owner: str
    world: str | None
    replication: str = "pending"
    lifecycle: str = "active"


def may_see(kind: str, name: str, record: Known) -> bool:
    if kind == "member":
        if record.scope in ("AGENT_CORE", "AGENT_DYADIC"):
            return record.owner == name
        if record.scope == "WORLD_SHARED":
            return record.world in WORLDS[name]
        return False
    if kind == "app":
        return record.scope == "APP_PRIVATE" and record.owner == name
    return record.scope == "WORKSPACE_PRIVATE" and record.owner == name


def served(record: Known) -> bool:
    return record.replication not in ("conflict", "invalidated")


def recall(rt: Runtime, kind: str, name: str, query: str, *, include_inactive: bool = False) -> list[str]:
    if kind == "member":
        hits = rt.member(name).recall(query, k=100, char_budget=1_000_000, include_inactive=include_inactive)
    else:
        scope = "APP_PRIVATE" if kind == "app" else "WORKSPACE_PRIVATE"
        hits = rt.apps.recall(name, query, k=100, scope=scope, char_budget=1_000_000)
    return [hit.id for hit in hits]


def withhold(rt: Runtime, record_id: str, state: str) -> None:
    event = (
        RecordConflicted(at=time.time(), id=record_id, reason="delegated path promoted a non-canonical memory")
        if state == "conflict"
        else RecordInvalidated(at=time.time(), id=record_id, reason="realm invalidated the cached record")
    )
    rt._internal.write(Commit(events=(event,)))


class VisibilityMachine(RuleBasedStateMachine):
    """Random writes by members and apps, random withholding, and every read surface checked."""

    records = Bundle("records")

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="resident-visibility-"))
        self.rt = open_runtime(self.directory / "home", worlds=WORLDS)
        self.rt.memory.enable()
        for app in APPS:
            self.rt.apps.create_bank(app, "APP_PRIVATE", "cache")
        for workspace in WORKSPACES:
            self.rt.apps.create_bank(workspace, "WORKSPACE_PRIVATE", "drafts")
        self.known: dict[str, Known] = {}
        self.serial = itertools.count()

    def teardown(self) -> None:
        try:
            self.rt.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _check(self, record: str) -> None:
        """Every read surface, for every principal, treats `record` exactly as the rules say."""
        known = self.known[record]
        for kind, name in PRINCIPALS:
            found = record in recall(self.rt, kind, name, known.text)
            expected = may_see(kind, name, known) and served(known) and known.lifecycle == "active"
            assert found == expected, f"{kind} {name} {'recalled' if found else 'missed'} {known}"
        for member in MEMBERS:
            if not may_see("member", member, known):
                with pytest.raises(RecordNotFound):
                    self.rt.member(member).get(record)
            elif not served(known):
                with pytest.raises(RecordWithheld, match=known.replication) as caught:
                    self.rt.member(member).get(record)
                assert caught.value.state == known.replication
            else:
                assert self.rt.member(member).get(record).id == record
        if known.scope in ("AGENT_CORE", "AGENT_DYADIC"):
            self.export_carries_only_the_members_served_private_records(known.owner)

    def _text(self, words: list[str]) -> str:
        # A unique marker word lets an exact-text query find this one record among the others.
        return " ".join(words) + f" marker{next(self.serial)}"

    # -- writes -----------------------------------------------------------------------------------

    @rule(
        target=records,
        member=st.sampled_from(MEMBERS),
        scope=st.sampled_from(["AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED"]),
        counterpart=st.sampled_from(MEMBERS),
        world=st.sampled_from(["dev", "ops", "team"]),
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4),
    )
    def member_remembers(self, member: str, scope: Scope, counterpart: str, world: str, words: list[str]) -> object:
        text = self._text(words)
        deven = self.rt.member(member)
        if scope == "AGENT_DYADIC" and counterpart == member:
            with pytest.raises(InvalidInput):
                deven.remember(text, scope=scope, counterpart=counterpart)
            return multiple()
        if scope == "WORLD_SHARED" and world not in WORLDS[member]:
            with pytest.raises(NotVisible):
                deven.remember(text, scope=scope, world=world)
            return multiple()
        receipt = deven.remember(
            text,
            scope=scope,
            counterpart=counterpart if scope == "AGENT_DYADIC" else None,
            world=world if scope == "WORLD_SHARED" else None,
        )
        owner = world if scope == "WORLD_SHARED" else member
        self.known[receipt.id] = Known(
            receipt.id, text, scope, owner, world if scope == "WORLD_SHARED" else None
        )
        self._check(receipt.id)
        return receipt.id

    @rule(
        target=records,
        principal=st.sampled_from([p for p in PRINCIPALS if p[0] != "member"]),
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=4),
    )
    def app_remembers(self, principal: tuple[str, str], words: list[str]) -> str:
        kind, name = principal
        text = self._text(words)
        bank = f"app_private/{name}/cache" if kind == "app" else f"workspace_private/{name}/drafts"
        receipt = self.rt.apps.remember(name, bank, text)
        scope: Scope = "APP_PRIVATE" if kind == "app" else "WORKSPACE_PRIVATE"
        self.known[receipt.id] = Known(receipt.id, text, scope, name, None)
        self._check(receipt.id)
        return receipt.id

    @rule(record=consumes(records), state=st.sampled_from(["conflict", "invalidated"]))
    def realm_withholds(self, record: str, state: str) -> None:
        withhold(self.rt, record, state)
        self.known[record].replication = state
        self._check(record)

    @rule(record=records)
    def owner_forgets(self, record: str) -> None:
        known = self.known[record]
        if known.scope not in ("AGENT_CORE", "AGENT_DYADIC") or not served(known):
            return
        self.rt.member(known.owner).forget(record)
        known.lifecycle = "retracted"
        self._check(record)

    # -- reads ------------------------------------------------------------------------------------

    @rule(
        principal=st.sampled_from(PRINCIPALS),
        words=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3),
        include_inactive=st.booleans(),
    )
    def recall_serves_only_visible_served_records(
        self, principal: tuple[str, str], words: list[str], include_inactive: bool
    ) -> None:
        kind, name = principal
        if kind != "member":
            include_inactive = False
        for record_id in recall(self.rt, kind, name, " ".join(words), include_inactive=include_inactive):
            known = self.known[record_id]
            assert may_see(kind, name, known), f"{kind} {name} recalled {known}"
            assert served(known), f"{kind} {name} was served withheld {known}"
            assert include_inactive or known.lifecycle == "active", known

    @rule(member=st.sampled_from(MEMBERS))
    def export_carries_only_the_members_served_private_records(self, member: str) -> None:
        path = self.directory / f"{member}.json"
        count = self.rt.export_member(member, path)
        document = msgspec.json.decode(path.read_bytes(), type=MemberExport)
        exported = {record.id for record in document.records}
        expected = {
            k.id for k in self.known.values()
            if k.scope in ("AGENT_CORE", "AGENT_DYADIC") and k.owner == member and served(k)
        }
        assert exported == expected
        assert count == len(expected)
        assert all(record.replication not in ("conflict", "invalidated") for record in document.records)


TestVisibility = VisibilityMachine.TestCase
TestVisibility.settings = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
    # The explain phase traces every line on Python 3.11, which makes a failing run of this
    # machine (actor threads included) take minutes; shrinking alone gives a readable example.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)


# -- the one place visibility is decided -------------------------------------------------------------

SELF, OTHER = "deven", "alice"


def _bank(scope: Scope, owner: str, world: str | None = None) -> Bank:
    return Bank(name=f"{scope.lower()}/{owner}", scope=scope, owner=owner, world=world)


def _record(bank: Bank, replication: str = "pending") -> MemoryRecord:
    digest = content_digest(
        record_id="mem_1", summary="s", body="b", kind="world", bank=bank.name, canonical=False, delegated=False,
        supersedes=None,
    )
    return MemoryRecord(
        id="mem_1", summary="s", body="b", kind="world", bank=bank.name, scope=bank.scope, owner=bank.owner,
        occurred_at=0.0, recorded_at=0.0, digest=digest, world=bank.world, replication=replication,  # type: ignore[arg-type]
    )


MEMBER = Principal(kind="member", name=SELF, worlds=("dev",))
APP = Principal(kind="app", name="notes")
WORKSPACE = Principal(kind="workspace", name="acme")
# Every scope x owner combination, and who may see it: written out, not computed.
TABLE: list[tuple[Bank, set[Principal]]] = [
    (_bank("AGENT_CORE", SELF), {MEMBER}),
    (_bank("AGENT_CORE", OTHER), set()),
    (_bank("AGENT_DYADIC", SELF), {MEMBER}),
    (_bank("AGENT_DYADIC", OTHER), set()),
    (_bank("WORLD_SHARED", "dev", world="dev"), {MEMBER}),
    (_bank("WORLD_SHARED", "ops", world="ops"), set()),
    (_bank("WORLD_SHARED", SELF, world=None), set()),  # a world bank without a world is nobody's
    (_bank("APP_PRIVATE", "notes"), {APP}),
    (_bank("APP_PRIVATE", "crm"), set()),
    (_bank("APP_PRIVATE", SELF), set()),  # an app named like a member is still an app
    (_bank("WORKSPACE_PRIVATE", "acme"), {WORKSPACE}),
    (_bank("WORKSPACE_PRIVATE", "notes"), set()),  # a workspace named like an app is still a workspace
    (_bank("WORKSPACE_PRIVATE", SELF), set()),
]


@pytest.mark.parametrize(("bank", "readers"), TABLE, ids=[f"{b.scope}/{b.owner}" for b, _ in TABLE])
@pytest.mark.parametrize("principal", [MEMBER, APP, WORKSPACE], ids=["member", "app", "workspace"])
def test_visibility_rules_over_every_scope_and_principal(
    bank: Bank, readers: set[Principal], principal: Principal
) -> None:
    expected = principal in readers
    assert visibility.can_see_bank(principal, bank) is expected
    assert visibility.can_write(principal, bank) is expected
    assert visibility.can_see(principal, _record(bank)) is expected
    for state in ("pending", "synced", "conflict", "invalidated", "pending_review"):
        record = _record(bank, state)
        served_state = state in ("pending", "synced")
        assert visibility.is_served(record) is served_state
        if not expected:
            with pytest.raises(RecordNotFound):
                visibility.readable_record(principal, record.id, record)
        elif served_state:
            assert visibility.readable_record(principal, record.id, record) is record
        else:
            with pytest.raises(RecordWithheld, match=state):
                visibility.readable_record(principal, record.id, record)


def test_a_missing_record_reads_as_not_found() -> None:
    with pytest.raises(RecordNotFound, match="mem_x"):
        visibility.readable_record(MEMBER, "mem_x", None)


@pytest.fixture
def populated(tmp_path: Path) -> tuple[Runtime, dict[str, str]]:
    rt = open_runtime(tmp_path / "home", worlds=WORLDS)
    rt.memory.enable()
    rt.apps.create_bank("notes", "APP_PRIVATE", "cache")
    ids = {
        "core": rt.member("deven").remember("harbour core note").id,
        "dyadic": rt.member("deven").remember("harbour note on alice", scope="AGENT_DYADIC", counterpart="alice").id,
        "world": rt.member("deven").remember("harbour world note", scope="WORLD_SHARED", world="dev").id,
        "app": rt.apps.remember("notes", "app_private/notes/cache", "harbour app note").id,
    }
    return rt, ids


def test_every_read_surface_asks_the_visibility_module(
    populated: tuple[Runtime, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rt, ids = populated
    try:
        assert len(recall(rt, "member", "deven", "harbour")) == 3
        monkeypatch.setattr(visibility, "_visible", lambda *_args: False)
        assert recall(rt, "member", "deven", "harbour") == []
        assert recall(rt, "member", "samuel", "harbour") == []
        assert recall(rt, "app", "notes", "harbour") == []
        for record_id in ids.values():
            with pytest.raises(RecordNotFound):
                rt.member("deven").get(record_id)
        assert rt.export_member("deven", tmp_path / "deven.json") == 0
    finally:
        rt.close()


def test_every_read_surface_withholds_through_the_visibility_module(
    populated: tuple[Runtime, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rt, ids = populated
    try:
        monkeypatch.setattr(visibility, "WITHHELD", frozenset({"pending", "conflict", "invalidated"}))
        assert recall(rt, "member", "deven", "harbour") == []
        assert recall(rt, "app", "notes", "harbour") == []
        with pytest.raises(RecordWithheld, match="pending"):
            rt.member("deven").get(ids["core"])
        assert rt.export_member("deven", tmp_path / "deven.json") == 0
    finally:
        rt.close()
