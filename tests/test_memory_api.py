"""The memory API of the runtime, as a caller sees it: off by default, the record's life, scopes,
the app surface, input checking, and the awaitable twins.

Every test runs against a real runtime on a fresh home (no Realm, so records stay `pending`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import (
    ActorUnavailable,
    EmbedderNotLoopback,
    ExportInvalid,
    InvalidInput,
    MemoryDisabled,
    NotVisible,
    RecordNotFound,
    RecordWithheld,
    ResidentError,
    RuntimeStopped,
    ScopeNotAllowed,
    SubstrateUnavailable,
    TextInvalid,
    UnknownBank,
    UnknownMember,
    UnknownScope,
)
from resident.memory.records import MAX_BODY_CHARS, MAX_FUTURE_SECONDS, MAX_SUMMARY_CHARS
from resident.messages.memory import (
    Activation,
    BankCreated,
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordSuperseded,
)
from resident.messages.replication import RecordConflicted, RecordInvalidated
from resident.messages.store import Commit
from resident.store.tables import RECORDS
from tests.memory_helpers import event_count, events_of, open_runtime, wait_until


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    runtime = open_runtime(tmp_path / "home")
    yield runtime
    runtime.close()


@pytest.fixture
def on(rt: Runtime) -> Runtime:
    """A runtime with memory enabled."""
    rt.memory.enable()
    return rt


def _withhold(rt: Runtime, record_id: str, state: str) -> None:
    event = (
        RecordConflicted(at=time.time(), id=record_id, reason="governance said no")
        if state == "conflict"
        else RecordInvalidated(at=time.time(), id=record_id, reason="realm invalidated it")
    )
    rt._internal.write(Commit(events=(event,)))


# -- off by default ------------------------------------------------------------------------------


def test_a_fresh_home_refuses_remember_and_recall_naming_the_enable_command_and_writes_nothing(
    rt: Runtime,
) -> None:
    before = event_count(rt)
    deven = rt.member("deven")
    with pytest.raises(MemoryDisabled, match="resident memory enable"):
        deven.remember("the deploy needs a migration first")
    with pytest.raises(MemoryDisabled, match="resident memory enable"):
        deven.recall("deploy")
    with pytest.raises(MemoryDisabled, match="resident memory enable"):
        rt.apps.remember("notes", "app_private/notes/cache", "an app note")
    with pytest.raises(MemoryDisabled, match="resident memory enable"):
        rt.apps.recall("notes", "note")
    assert event_count(rt) == before
    with rt._internal.store.reader() as reader:
        assert reader.count(RECORDS) == 0
    assert rt.memory.status().enabled is False


def test_forget_and_get_are_refused_while_memory_is_off_and_write_nothing(on: Runtime) -> None:
    deven = on.member("deven")
    receipt = deven.remember("kept while memory is off")
    on.memory.disable()
    before = event_count(on)
    with pytest.raises(MemoryDisabled):
        deven.forget(receipt.id)
    with pytest.raises(MemoryDisabled):
        deven.get(receipt.id)
    assert event_count(on) == before
    on.memory.enable()
    assert deven.get(receipt.id).lifecycle == "active"


def test_enable_and_disable_are_events_and_enabling_twice_is_a_no_op(rt: Runtime) -> None:
    assert rt.memory.enable() is True
    count = event_count(rt)
    assert rt.memory.enable() is False
    assert event_count(rt) == count
    status = rt.memory.status()
    assert (status.enabled, status.provider, status.embedder) == (True, "hindsight", "hash")
    assert status.substrate == "running"
    assert rt.memory.disable() is True
    assert rt.memory.disable() is False
    kinds = [type(event) for event in events_of(rt)]
    assert kinds.count(MemorySwitchedOn) == 1
    assert kinds.count(MemorySwitchedOff) == 1
    assert rt.memory.status().enabled is False


def test_enable_refuses_an_unknown_provider_and_writes_nothing(rt: Runtime) -> None:
    with pytest.raises(InvalidInput, match="hindsight"):
        rt.memory.enable(provider="mem0")
    assert event_count(rt) == 0


def test_disable_deletes_nothing_and_re_enabling_recalls_the_old_records(on: Runtime) -> None:
    deven = on.member("deven")
    receipt = deven.remember("the billing service deploys on tuesdays")
    on.memory.disable()
    with pytest.raises(MemoryDisabled):
        deven.recall("billing deploys")
    with pytest.raises(MemoryDisabled):
        deven.remember("written while off")
    with on._internal.store.reader() as reader:
        assert reader.get(RECORDS, receipt.id) is not None
        assert reader.count(RECORDS) == 1
    assert on.memory.enable() is True
    assert [hit.id for hit in deven.recall("billing deploys")] == [receipt.id]


# -- the record's life -----------------------------------------------------------------------------


def test_remember_returns_a_receipt_only_once_the_record_and_its_event_are_durable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        receipt = rt.member("deven").remember("staging deploys need the migration first", summary="migrate first")
        assert receipt.replication == "pending"
        assert receipt.bank == "agent_core/deven"
        with rt._internal.store.reader() as reader:
            stored = reader.get(RECORDS, receipt.id)
        assert stored is not None
        assert stored.replication == "pending"
        assert any(isinstance(e, RecordAdmitted) and e.record.id == receipt.id for e in events_of(rt))
    with open_runtime(home) as reopened:
        record = reopened.member("deven").get(receipt.id)
    assert (record.summary, record.body) == ("migrate first", "staging deploys need the migration first")
    assert (record.scope, record.owner, record.kind) == ("AGENT_CORE", "deven", "experience")
    assert record.lifecycle == "active"
    assert record.author == "deven"
    assert record.source == "manual"


def test_a_record_carries_the_four_groups_of_fields(on: Runtime) -> None:
    receipt = on.member("deven").remember(
        "the supplier meeting moved to thursdays",
        summary="supplier meeting moved",
        kind="world",
        importance=0.8,
        confidence=0.6,
        activation=Activation(domain="work", project="supply"),
        source="session/42",
        occurred_at=1_700_000_000.0,
    )
    record = on.member("deven").get(receipt.id)
    # content
    assert (record.summary, record.body, record.kind) == (
        "supplier meeting moved", "the supplier meeting moved to thursdays", "world"
    )
    # scope and activation
    assert (record.bank, record.scope, record.owner) == ("agent_core/deven", "AGENT_CORE", "deven")
    assert (record.activation.domain, record.activation.project) == ("work", "supply")
    # time and provenance
    assert record.occurred_at == 1_700_000_000.0
    assert record.recorded_at >= record.occurred_at
    assert record.source == "session/42"
    assert (record.superseded_by, record.retracted_at) == (None, None)
    # weight and state
    assert (record.importance, record.confidence) == (0.8, 0.6)
    assert (record.lifecycle, record.replication, record.recall_count) == ("active", "pending", 0)


def test_recall_returns_results_with_their_fields_and_per_channel_scores(on: Runtime) -> None:
    deven = on.member("deven")
    wanted = deven.remember("the deploy pipeline needs the database migration first", summary="deploy needs migration")
    deven.remember("lunch is at noon on fridays")
    hits = deven.recall("deploy migration", k=5)
    assert hits
    top = hits[0]
    assert top.id == wanted.id
    assert top.summary == "deploy needs migration"
    assert top.body == "the deploy pipeline needs the database migration first"
    assert (top.scope, top.bank) == ("AGENT_CORE", "agent_core/deven")
    assert (top.kind, top.replication) == ("experience", "pending")
    assert top.score > 0
    assert top.keyword > 0
    assert top.semantic > 0
    assert top.temporal >= 0
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_every_recall_that_serves_a_record_counts_in_its_usage(on: Runtime) -> None:
    deven = on.member("deven")
    served = deven.remember("the on-call rota lives in the ops wiki")
    unrelated = deven.remember("lunch is at noon")
    for _ in range(3):
        assert served.id in [hit.id for hit in deven.recall("on-call rota wiki", k=1)]
    assert wait_until(lambda: deven.get(served.id).recall_count == 3, timeout=10.0), deven.get(served.id)
    assert deven.get(served.id).last_recalled_at is not None
    assert deven.get(unrelated.id).recall_count == 0


def test_get_returns_the_record_and_unknown_ids_are_not_found(on: Runtime) -> None:
    deven = on.member("deven")
    receipt = deven.remember("a record to read back")
    assert deven.get(receipt.id).id == receipt.id
    with pytest.raises(RecordNotFound, match="mem_nope"):
        deven.get("mem_nope")


def test_forget_retracts_without_deleting_and_the_record_is_no_longer_recalled(on: Runtime) -> None:
    deven = on.member("deven")
    receipt = deven.remember("the old office wifi password is hunter2")
    deven.forget(receipt.id, reason="it changed")
    record = deven.get(receipt.id)
    assert record.lifecycle == "retracted"
    assert record.retracted_at is not None
    assert receipt.id not in [hit.id for hit in deven.recall("office wifi password")]
    assert receipt.id in [hit.id for hit in deven.recall("office wifi password", include_inactive=True)]
    retracted = [e for e in events_of(on) if isinstance(e, RecordRetracted)]
    assert [(e.id, e.by, e.reason) for e in retracted] == [(receipt.id, "deven", "it changed")]


def test_remember_with_supersedes_marks_the_old_record_and_recall_skips_it_by_default(on: Runtime) -> None:
    deven = on.member("deven")
    old = deven.remember("the standup is at nine in room blue")
    new = deven.remember("the standup is at ten in room green", supersedes=old.id)
    previous = deven.get(old.id)
    assert (previous.lifecycle, previous.superseded_by) == ("superseded", new.id)
    assert deven.get(new.id).supersedes == old.id
    assert any(isinstance(e, RecordSuperseded) and (e.id, e.by) == (old.id, new.id) for e in events_of(on))
    assert [hit.id for hit in deven.recall("standup room")] == [new.id]
    assert {hit.id for hit in deven.recall("standup room", include_inactive=True)} == {old.id, new.id}
    before = event_count(on)
    with pytest.raises(InvalidInput, match="already superseded"):
        deven.remember("a third version", supersedes=old.id)
    assert event_count(on) == before


def test_a_withheld_record_cannot_be_read_or_superseded_but_names_its_state(on: Runtime) -> None:
    deven = on.member("deven")
    receipt = deven.remember("promote this memory to canonical")
    _withhold(on, receipt.id, "conflict")
    with pytest.raises(RecordWithheld, match="conflict") as caught:
        deven.get(receipt.id)
    assert (caught.value.state, caught.value.record_id) == ("conflict", receipt.id)
    with pytest.raises(RecordWithheld):
        deven.remember("replace it quietly", supersedes=receipt.id)


# -- scopes and banks ------------------------------------------------------------------------------


def test_the_five_scopes_write_to_readable_bank_names(on: Runtime) -> None:
    deven = on.member("deven")
    assert deven.remember("about myself", scope="AGENT_CORE").bank == "agent_core/deven"
    assert deven.remember("about alice", scope="AGENT_DYADIC", counterpart="alice").bank == (
        "agent_dyadic/deven/alice"
    )
    assert deven.remember("about the team", scope="WORLD_SHARED", world="team").bank == "world_shared/team"
    # The signature names the canonical scopes; any case still works at run time.
    lower = deven.remember("lower-case scope names work too", scope="agent_core")  # type: ignore[arg-type]
    assert lower.bank == "agent_core/deven"
    app = on.apps.create_bank("notes", "APP_PRIVATE", "cache")
    assert (app.name, app.scope) == ("app_private/notes/cache", "APP_PRIVATE")
    assert (app.owner, app.created_by) == ("notes", "app")
    workspace = on.apps.create_bank("acme", "WORKSPACE_PRIVATE", "drafts")
    assert (workspace.name, workspace.scope) == ("workspace_private/acme/drafts", "WORKSPACE_PRIVATE")
    assert workspace.owner == "acme"
    assert on.apps.remember("notes", "app_private/notes/cache", "an app note").bank == "app_private/notes/cache"
    assert on.apps.remember("acme", "workspace_private/acme/drafts", "a draft").bank == "workspace_private/acme/drafts"
    created = {e.bank.name for e in events_of(on) if isinstance(e, BankCreated)}
    assert created == {
        "agent_core/deven", "agent_dyadic/deven/alice", "world_shared/team",
        "app_private/notes/cache", "workspace_private/acme/drafts",
    }


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"scope": "AGENT_DYADIC"}, InvalidInput),  # no counterpart
        ({"scope": "AGENT_DYADIC", "counterpart": "deven"}, InvalidInput),  # about itself
        ({"scope": "WORLD_SHARED"}, InvalidInput),  # no world
        ({"scope": "WORLD_SHARED", "world": "elsewhere"}, NotVisible),  # not its world
        ({"scope": "APP_PRIVATE"}, ScopeNotAllowed),
        ({"scope": "WORKSPACE_PRIVATE"}, ScopeNotAllowed),
        ({"scope": "GLOBAL"}, UnknownScope),
        ({"kind": "dream"}, InvalidInput),
        ({"kind": "observation"}, InvalidInput),  # cites nothing
        ({"importance": 1.5}, InvalidInput),
        ({"confidence": -0.1}, InvalidInput),
        ({"occurred_at": float("nan")}, InvalidInput),
        ({"occurred_at": float("inf")}, InvalidInput),
        ({"occurred_at": "yesterday"}, InvalidInput),
        ({"activation": {"domain": "hobby"}}, InvalidInput),
        ({"activation": {"team": "x"}}, InvalidInput),
    ],
)
def test_a_member_remember_with_a_bad_scope_or_field_is_refused_and_writes_nothing(
    on: Runtime, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    before = event_count(on)
    with pytest.raises(error):
        on.member("deven").remember("some text", **kwargs)
    assert event_count(on) == before


@pytest.mark.parametrize("scope", ["AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED", "agent_core"])
def test_the_app_surface_refuses_to_create_runtime_banks(rt: Runtime, scope: str) -> None:
    before = event_count(rt)
    with pytest.raises(ScopeNotAllowed, match="APP_PRIVATE or WORKSPACE_PRIVATE"):
        rt.apps.create_bank("notes", scope, "mine")
    assert event_count(rt) == before


def test_creating_an_existing_app_bank_is_a_no_op(rt: Runtime) -> None:
    first = rt.apps.create_bank("notes", "APP_PRIVATE", "cache")
    count = event_count(rt)
    assert rt.apps.create_bank("notes", "APP_PRIVATE", "cache") == first
    assert event_count(rt) == count


def test_apps_remember_and_recall_only_in_their_own_banks(on: Runtime) -> None:
    on.apps.create_bank("notes", "APP_PRIVATE", "cache")
    on.apps.create_bank("crm", "APP_PRIVATE", "cache")
    on.apps.create_bank("acme", "WORKSPACE_PRIVATE", "drafts")
    mine = on.apps.remember("notes", "app_private/notes/cache", "the invoice template lives in the shared drive")
    theirs = on.apps.remember("crm", "app_private/crm/cache", "the invoice template was updated in march")
    draft = on.apps.remember("acme", "workspace_private/acme/drafts", "invoice template draft for acme")
    member = on.member("deven").remember("the invoice template needs a new logo")
    before = event_count(on)
    with pytest.raises(NotVisible):
        on.apps.remember("crm", "app_private/notes/cache", "writing into another app's bank")
    with pytest.raises(ScopeNotAllowed):
        on.apps.remember("notes", "agent_core/deven", "writing into a member's bank")
    with pytest.raises(UnknownBank):
        on.apps.remember("notes", "app_private/notes/missing", "no such bank")
    assert event_count(on) == before

    assert {hit.id for hit in on.apps.recall("notes", "invoice template")} == {mine.id}
    assert {hit.id for hit in on.apps.recall("crm", "invoice template")} == {theirs.id}
    assert {hit.id for hit in on.apps.recall("acme", "invoice template", scope="WORKSPACE_PRIVATE")} == {draft.id}
    assert on.apps.recall("acme", "invoice template") == []  # acme as an app owns no bank
    assert {hit.id for hit in on.member("deven").recall("invoice template")} == {member.id}
    assert [b.name for b in on.apps.banks("notes")] == ["app_private/notes/cache"]
    with pytest.raises(InvalidInput):
        on.apps.recall("notes", "invoice", scope="AGENT_CORE")


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("", None),
        ("   \n\t  ", None),
        ("x" * (MAX_BODY_CHARS + 1), None),
        ("a fine body", "s" * (MAX_SUMMARY_CHARS + 1)),
        ("a fine body", "   "),
        (b"caf\xe9 is latin-1, not utf-8", None),
        ("a fine body", b"\xc3\x28"),
        ("a lone surrogate \ud800 slipped in", None),
        ("a fine body", "summary with \udfff"),
    ],
    ids=[
        "empty", "whitespace", "oversized-body", "oversized-summary", "blank-summary",
        "invalid-utf8-bytes", "invalid-utf8-summary", "lone-surrogate", "lone-surrogate-summary",
    ],
)
def test_bad_text_is_refused_with_text_invalid_and_writes_nothing(
    on: Runtime, text: str | bytes, summary: str | bytes | None
) -> None:
    before = event_count(on)
    with pytest.raises(TextInvalid):
        on.member("deven").remember(text, summary=summary)  # type: ignore[arg-type]  # bytes, checked at run time
    with on._internal.store.reader() as reader:
        assert reader.count(RECORDS) == 0
    assert event_count(on) == before


def test_text_at_the_limits_is_accepted(on: Runtime) -> None:
    receipt = on.member("deven").remember("b" * MAX_BODY_CHARS, summary="s" * MAX_SUMMARY_CHARS)
    record = on.member("deven").get(receipt.id)
    assert (len(record.body), len(record.summary)) == (MAX_BODY_CHARS, MAX_SUMMARY_CHARS)
    assert on.member("deven").remember("valid utf-8 bytes: caf\u00e9".encode()).id  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   ", b"\xff\xfe", "lone \ud800 surrogate", "q" * 2_001])
def test_a_bad_query_is_refused_with_text_invalid(on: Runtime, query: str | bytes) -> None:
    with pytest.raises(TextInvalid):
        on.member("deven").recall(query)  # type: ignore[arg-type]  # bytes, checked at run time
    with pytest.raises(TextInvalid):
        # The request struct declares text (what the wire carries); bytes are a Python caller's, checked as UTF-8.
        on.apps.recall("notes", query)  # type: ignore[arg-type]


def test_an_unknown_member_or_scope_is_a_typed_error(on: Runtime) -> None:
    with pytest.raises(UnknownMember, match="samuel, deven, alice, oliver, victor"):
        on.member("zed")
    with pytest.raises(UnknownScope, match="AGENT_CORE"):
        on.member("deven").remember("text", scope="PLANET_WIDE")  # type: ignore[arg-type]
    with pytest.raises(UnknownScope):
        on.apps.create_bank("notes", "PLANET_WIDE", "x")


@pytest.mark.parametrize("k", [0, -1, 101, 2.5, True, "10"])
def test_k_outside_one_to_a_hundred_is_invalid_input(on: Runtime, k: Any) -> None:
    with pytest.raises(InvalidInput, match="k must be"):
        on.member("deven").recall("anything", k=k)
    with pytest.raises(InvalidInput, match="k must be"):
        on.apps.recall("notes", "anything", k=k)


def test_k_bounds_the_number_of_results(on: Runtime) -> None:
    deven = on.member("deven")
    for i in range(12):
        deven.remember(f"harbour crane note number {i}")
    assert len(deven.recall("harbour crane", k=1)) == 1
    assert len(deven.recall("harbour crane", k=5)) == 5
    assert len(deven.recall("harbour crane", k=100)) == 12


@pytest.mark.parametrize("budget", [5, 60, 250, 1_000])
def test_the_character_budget_bounds_the_results(on: Runtime, budget: int) -> None:
    deven = on.member("deven")
    for i in range(8):
        deven.remember(f"river barge schedule {i}: " + "the barge leaves at dawn and returns at dusk " * 2,
                       summary=f"river barge schedule {i}")
    hits = deven.recall("river barge schedule", k=8, char_budget=budget)
    assert hits
    assert sum(len(hit.summary) + len(hit.body) for hit in hits) <= budget
    assert len(deven.recall("river barge schedule", k=8, char_budget=100_000)) == 8


def test_activation_narrows_recall(on: Runtime) -> None:
    deven = on.member("deven")
    apollo = Activation(domain="work", project="apollo")
    work = deven.remember("the release checklist lives in the wiki", activation=apollo)
    home = deven.remember("the release of the garden shed key", activation=Activation(domain="personal"))
    anywhere = deven.remember("release notes are written on fridays")
    everything = {hit.id for hit in deven.recall("release")}
    assert everything == {work.id, home.id, anywhere.id}
    assert {hit.id for hit in deven.recall("release", activation=Activation(domain="work"))} == {work.id, anywhere.id}
    personal = Activation(domain="personal")
    assert {hit.id for hit in deven.recall("release", activation=personal)} == {home.id, anywhere.id}
    assert {hit.id for hit in deven.recall("release", activation=Activation(domain="work", project="apollo"))} == {
        work.id, anywhere.id
    }
    assert {hit.id for hit in deven.recall("release", activation=Activation(project="zeus"))} == {home.id, anywhere.id}


def test_a_rollback_and_a_readmit_sent_together_for_one_withheld_record_cannot_both_apply(on: Runtime) -> None:
    deven = on.member("deven")
    withheld = deven.remember("a memory realm rejects")
    _withhold(on, withheld.id, "conflict")
    # The rollback a second caller's reconcile had already sent when this readmit committed: both
    # passed the member's check while the record was still active.
    late_rollback = RecordRetracted(at=time.time(), id=withheld.id, by="deven", reason="race", only_if_active=True)
    deven.reconcile(withheld.id, readmit=True, text="a corrected memory realm accepts")
    with pytest.raises(InvalidInput, match="already reconciled"):
        on._internal.write(Commit(events=(late_rollback,)))
    with on._internal.store.reader() as reader:
        record = reader.get(RECORDS, withheld.id)
    assert record is not None
    assert record.lifecycle == "superseded"
    # The rollback that reconcile sends carries that condition; a plain forget does not.
    rejected = deven.remember("another memory realm rejects")
    _withhold(on, rejected.id, "invalidated")
    deven.reconcile(rejected.id, rollback=True)
    forgotten = deven.remember("a memory forgotten the plain way")
    deven.forget(forgotten.id)
    retracted = {e.id: e.only_if_active for e in events_of(on) if isinstance(e, RecordRetracted)}
    assert retracted == {rejected.id: True, forgotten.id: False}


# -- asyncio ---------------------------------------------------------------------------------------


def test_every_call_has_an_awaitable_twin(on: Runtime) -> None:
    deven = on.member("deven")

    async def scenario() -> None:
        receipt = await deven.aremember("the canary deploy runs at six", summary="canary at six")
        assert receipt.replication == "pending"
        hits = await deven.arecall("canary deploy")
        assert [hit.id for hit in hits] == [receipt.id]
        assert (await deven.aget(receipt.id)).summary == "canary at six"
        await deven.aforget(receipt.id)
        assert (await deven.aget(receipt.id)).lifecycle == "retracted"
        withheld = await deven.aremember("a memory realm rejects")
        _withhold(on, withheld.id, "conflict")
        with pytest.raises(RecordWithheld):
            await deven.aget(withheld.id)
        settled = await deven.areconcile(withheld.id, readmit=True, text="a corrected memory realm accepts")
        assert (settled.action, settled.replication) == ("readmit", "pending_review")
        assert settled.new_id is not None
        # The new version is withheld until Realm accepts it, and says so.
        with pytest.raises(RecordWithheld, match="pending_review"):
            await deven.aget(settled.new_id)
        rejected = await deven.aremember("another memory realm rejects")
        _withhold(on, rejected.id, "invalidated")
        rolled_back = await deven.areconcile(rejected.id, rollback=True)
        assert (rolled_back.action, rolled_back.new_id) == ("rollback", None)
        assert rejected.id not in [hit.id for hit in await deven.arecall("memory realm rejects", include_inactive=True)]
        with pytest.raises(TextInvalid):
            await deven.aremember("")
        with pytest.raises(InvalidInput):
            await deven.arecall("canary", k=0)

    asyncio.run(scenario())


def test_awaitable_calls_do_not_block_the_event_loop(on: Runtime) -> None:
    deven = on.member("deven")

    async def scenario() -> tuple[int, float]:
        loop = asyncio.get_running_loop()
        ticks: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                await asyncio.sleep(0.001)
                ticks.append(loop.time())

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        started = loop.time()
        receipts = await asyncio.gather(*(deven.aremember(f"async note {i} about the harbour") for i in range(200)))
        finished = loop.time()
        done.set()
        await ticking
        assert len({r.id for r in receipts}) == 200
        return sum(1 for tick in ticks if started < tick < finished), finished - started

    during, elapsed = asyncio.run(scenario())
    # A blocking twin runs all 200 writes back to back inside one step of the loop, so the ticker
    # gets no turn until they are done; awaiting lets it tick between group commits.
    assert during >= 3, (during, elapsed)
    assert len(deven.recall("async note harbour", k=100)) == 100


def test_calls_on_a_closed_runtime_raise_runtime_stopped(tmp_path: Path) -> None:
    rt = open_runtime(tmp_path / "home")
    rt.memory.enable()
    deven = rt.member("deven")
    rt.close()
    for call in (
        lambda: deven.remember("too late"),
        lambda: deven.recall("too late"),
        rt.memory.status,
        rt.memory.enable,
        lambda: rt.apps.banks("notes"),
        lambda: rt.export_member("deven", tmp_path / "deven.json"),
    ):
        with pytest.raises(RuntimeStopped, match="closed"):
            call()


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (MemoryDisabled, PermissionError),
        (RecordWithheld, PermissionError),
        (NotVisible, PermissionError),
        (ScopeNotAllowed, PermissionError),
        (TextInvalid, ValueError),
        (InvalidInput, ValueError),
        (UnknownScope, ValueError),
        (ExportInvalid, ValueError),
        (EmbedderNotLoopback, ValueError),
        (UnknownMember, LookupError),
        (UnknownBank, LookupError),
        (RecordNotFound, LookupError),
        (SubstrateUnavailable, RuntimeError),
        (ActorUnavailable, RuntimeError),
    ],
)
def test_every_memory_error_is_a_resident_error_and_the_fitting_builtin(
    error: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(error, ResidentError)
    assert issubclass(error, builtin)


def test_raised_errors_can_be_caught_as_builtins(rt: Runtime) -> None:
    with pytest.raises(PermissionError):
        rt.member("deven").remember("memory is off")
    with pytest.raises(LookupError):
        rt.member("zed")
    with pytest.raises(PermissionError):
        rt.apps.create_bank("notes", "AGENT_CORE", "x")
    with pytest.raises(ValueError, match="loopback"):
        rt.memory.enable(embedder="http://example.com:8080")
    rt.memory.enable()
    with pytest.raises(ValueError, match="empty"):
        rt.member("deven").remember(" ")
    receipt = rt.member("deven").remember("soon withheld")
    _withhold(rt, receipt.id, "invalidated")
    with pytest.raises(PermissionError, match="invalidated"):
        rt.member("deven").get(receipt.id)


@pytest.mark.parametrize(
    ("scope", "option", "value"),
    [("AGENT_CORE", "counterpart", "alice"), ("AGENT_CORE", "world", "team"), ("WORLD_SHARED", "counterpart", "alice"),
     ("AGENT_DYADIC", "world", "team")],
)
def test_an_option_the_scope_does_not_use_is_refused_rather_than_dropped(
    on: Runtime, scope: str, option: str, value: str
) -> None:
    needed: dict[str, Any] = {"AGENT_DYADIC": {"counterpart": "oliver"}, "WORLD_SHARED": {"world": "team"}}.get(
        scope, {}
    )
    before = event_count(on)
    with pytest.raises(InvalidInput, match=f"a {option} goes with"):
        on.member("deven").remember("note", scope=scope, **{**needed, option: value})  # type: ignore[arg-type]
    assert event_count(on) == before


def test_a_forget_or_supersede_that_races_a_disable_is_refused_in_the_transaction(on: Runtime) -> None:
    receipt = on.member("deven").remember("the deploy order changed")
    on.memory.disable()
    # Past the member's own check (as a write already on its way would be): the store still refuses.
    for event in (
        RecordRetracted(at=1.0, id=receipt.id, by="deven"),
        RecordSuperseded(at=1.0, id=receipt.id, by="mem_other"),
    ):
        with pytest.raises(MemoryDisabled):
            on._internal.write(Commit(events=(event,)))
    with on._internal.store.reader() as reader:
        record = reader.get(RECORDS, receipt.id)
    assert record is not None
    assert record.lifecycle == "active"


def test_a_memory_that_happened_more_than_a_day_ahead_of_the_runtime_s_clock_is_refused(tmp_path: Path) -> None:
    clock = ManualClock()
    with open_runtime(tmp_path / "home", clock=clock) as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        now = clock.time()
        with pytest.raises(InvalidInput, match="days after now"):
            deven.remember("sent in milliseconds", occurred_at=now * 1000)
        with pytest.raises(InvalidInput, match="days after now"):
            deven.remember("a day and a second ahead", occurred_at=now + MAX_FUTURE_SECONDS + 1)
        receipt = deven.remember("a clock an hour fast", occurred_at=now + 3_600)
        assert deven.get(receipt.id).occurred_at == now + 3_600
        clock.advance(2 * MAX_FUTURE_SECONDS)
        assert deven.remember("two days on, it is the past", occurred_at=now + MAX_FUTURE_SECONDS + 1).id


def test_a_cite_must_name_a_record_the_member_can_see(on: Runtime) -> None:
    deven = on.member("deven")
    for cite in ("../../etc/passwd", "https://example.com/x", "mem_0000000000000000000000000000"):
        with pytest.raises(RecordNotFound):
            deven.remember("consolidated", kind="observation", cites=(cite,))
    private = on.member("alice").remember("alice's own note")
    with pytest.raises(RecordNotFound):
        deven.remember("consolidated", kind="observation", cites=(private.id,))
    mine = deven.remember("deven's note")
    assert deven.remember("consolidated", kind="observation", cites=(mine.id,)).id
