"""Sessions act only within their grant: every callback is checked against its actions and scopes,
and what a session writes is marked delegated by the runtime, never by the caller.

The reproduction on main (30afd90): a session granted only AGENT_CORE recalled and retracted a
WORLD_SHARED record, because its callbacks passed no scope to the check. A Hypothesis state machine
then drives sessions with random grants through every callback and checks that none reads or
changes a record outside its grant.
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, multiple, rule, run_state_machine_as_test

from resident import Runtime
from resident.cli.main import cli
from resident.errors import GrantExceeded, InvalidInput, RecordNotFound
from resident.messages.memory import MemoryRecord, Scope
from resident.messages.replication import RecordConflicted
from resident.messages.store import Commit
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context
from resident.store.tables import RECORDS

MEMBER_SCOPES = ("AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED")
ACTIONS = ("remember", "recall", "forget", "supersede")
_serial = itertools.count()


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    with Runtime.open(tmp_path / "home", realm="none") as runtime:
        runtime.memory.enable()
        yield runtime


def session_for(rt: Runtime, member: str, *, actions: set[str], scopes: set[str]) -> Session:
    asked = cast("set[Scope]", scopes or {"AGENT_CORE"})  # scope names, checked by the runtime
    grant = rt.coordinator.issue_grant(actions=actions or {"recall"}, scopes=asked)
    return dispatch_session(host_context(rt), "work", member, role="implement", parent_grant=grant, actions=actions,
                                   scopes=scopes)


def stored(rt: Runtime, record_id: str) -> MemoryRecord | None:
    with rt._internal.store.reader() as reader:
        return reader.get(RECORDS, record_id)


def content(rt: Runtime, record_id: str) -> MemoryRecord | None:
    """The stored record without its usage counters, which an earlier recall updates a moment later (a tell)."""
    record = stored(rt, record_id)
    return None if record is None else msgspec.structs.replace(record, recall_count=0, last_recalled_at=None)


def write(rt: Runtime, member: str, scope: str) -> str:
    options: dict[str, Any] = {"AGENT_DYADIC": {"counterpart": "alice" if member != "alice" else "deven"},
                               "WORLD_SHARED": {"world": "team"}}.get(scope, {})
    text = f"harbour note {next(_serial)} in {scope}"
    return rt.member(member).remember(text, scope=scope, **options).id  # type: ignore[arg-type]  # a scope name


def test_a_session_granted_agent_core_cannot_recall_get_forget_or_supersede_a_world_shared_record(
    rt: Runtime,
) -> None:
    shared = write(rt, "deven", "WORLD_SHARED")
    core = write(rt, "deven", "AGENT_CORE")
    session = session_for(rt, "deven", actions={"recall", "forget", "supersede", "remember"}, scopes={"AGENT_CORE"})

    hits = asyncio.run(session.recall("harbour note", k=20))
    assert [hit.id for hit in hits] == [core]
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.get(shared))
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.forget(shared))
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.supersede(shared, "a replacement written in my own core"))
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.remember("a shared note", scope="WORLD_SHARED", world="team"))
    record = stored(rt, shared)
    assert record is not None
    assert (record.lifecycle, record.superseded_by) == ("active", None)
    # Within the grant everything works.
    assert asyncio.run(session.get(core)).id == core
    asyncio.run(session.forget(core))
    assert stored(rt, core).lifecycle == "retracted"  # type: ignore[union-attr]


def test_a_session_cannot_reconcile_a_withheld_record_outside_its_grants_scopes(rt: Runtime) -> None:
    shared = write(rt, "deven", "WORLD_SHARED")
    core = write(rt, "deven", "AGENT_CORE")
    for record_id in (shared, core):
        now = rt._internal.clock.time()
        conflicted = RecordConflicted(at=now, id=record_id, reason="refused by Realm", rule="test")
        rt._internal.write(Commit(events=(conflicted,)))
    session = session_for(rt, "deven", actions={"reconcile", "recall"}, scopes={"AGENT_CORE"})
    before = content(rt, shared)
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.reconcile(shared, rollback=True))
    with pytest.raises(GrantExceeded, match="WORLD_SHARED"):
        asyncio.run(session.reconcile(shared, readmit=True, text="harbour note, corrected"))
    assert content(rt, shared) == before
    # Within its scopes the same session settles its own conflict.
    assert asyncio.run(session.reconcile(core, rollback=True)).action == "rollback"


def test_a_callback_outside_the_grants_actions_is_refused_before_anything_happens(rt: Runtime) -> None:
    core = write(rt, "deven", "AGENT_CORE")
    session = session_for(rt, "deven", actions={"recall"}, scopes=set(MEMBER_SCOPES))
    for call in (
        session.remember("not allowed"),
        session.forget(core),
        session.supersede(core, "not allowed either"),
        session.reconcile(core, rollback=True),
    ):
        with pytest.raises(GrantExceeded, match="does not allow"):
            asyncio.run(call)
    assert stored(rt, core).lifecycle == "active"  # type: ignore[union-attr]
    assert session.steps == 0


def test_what_a_session_writes_is_delegated_and_what_the_owner_writes_is_not(rt: Runtime) -> None:
    session = session_for(rt, "deven", actions={"remember", "recall"}, scopes={"AGENT_CORE"})
    by_session = asyncio.run(session.remember("written during the session"))
    by_owner = rt.member("deven").remember("written by the owner")
    assert asyncio.run(session.get(by_session.id)).delegated is True
    assert rt.member("deven").get(by_owner.id).delegated is False


def test_callers_cannot_say_delegated_any_more(rt: Runtime, tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        rt.member("deven").remember("x", delegated=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        asyncio.run(session_for(rt, "deven", actions={"remember"}, scopes={"AGENT_CORE"}).remember(
            "x", delegated=False  # type: ignore[call-arg]
        ))
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "other"), "remember", "deven", "x", "--delegated"])
    assert result.exit_code == 2
    assert "--delegated" in result.output


# -- the state machine -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Known:
    id: str
    owner: str
    scope: str


@dataclass(frozen=True)
class Granted:
    session: Session
    member: str
    actions: frozenset[str]
    scopes: frozenset[str]

    def covers(self, action: str, scope: str) -> bool:
        return action in self.actions and scope in self.scopes


def _visible_to(member: str, known: Known) -> bool:
    # Every member of the default roster is in world `team`, so shared records are everybody's.
    return known.scope == "WORLD_SHARED" or known.owner == member


class SessionModel(RuleBasedStateMachine):
    """Sessions with random grants over one runtime; the records are written by their owners."""

    runtime: Runtime
    records = Bundle("records")
    sessions = Bundle("sessions")

    @initialize(target=records)
    def seed(self) -> Any:
        return multiple(*(Known(write(self.runtime, member, scope), member, scope)
                          for member in ("deven", "alice") for scope in MEMBER_SCOPES))

    @rule(target=sessions, member=st.sampled_from(["deven", "alice"]),
          actions=st.frozensets(st.sampled_from(ACTIONS)), scopes=st.frozensets(st.sampled_from(MEMBER_SCOPES)))
    def dispatch(self, member: str, actions: frozenset[str], scopes: frozenset[str]) -> Granted:
        session = session_for(self.runtime, member, actions=set(actions), scopes=set(scopes))
        return Granted(session, member, actions, scopes)

    def _unchanged_unless(self, allowed: bool, known: Known, call: Any) -> None:
        before = content(self.runtime, known.id)
        try:
            asyncio.run(call)
        except (GrantExceeded, RecordNotFound):
            assert content(self.runtime, known.id) == before
            assert not allowed
            return
        except InvalidInput:
            # A record superseded or retracted earlier cannot be superseded again: a refusal, no change.
            assert content(self.runtime, known.id) == before
            return
        assert allowed, f"a call outside its grant went through on {known}"

    @rule(granted=sessions, known=records, forget=st.booleans())
    def change(self, granted: Granted, known: Known, forget: bool) -> None:
        action = "forget" if forget else "supersede"
        allowed = _visible_to(granted.member, known) and granted.covers(action, known.scope)
        if not forget:
            allowed = allowed and granted.covers("supersede", "AGENT_CORE")
        call = (granted.session.forget(known.id) if forget
                else granted.session.supersede(known.id, f"replacement {next(_serial)} harbour"))
        self._unchanged_unless(allowed, known, call)

    @rule(granted=sessions, known=records)
    def get(self, granted: Granted, known: Known) -> None:
        allowed = _visible_to(granted.member, known) and granted.covers("recall", known.scope)
        try:
            record = asyncio.run(granted.session.get(known.id))
        except (GrantExceeded, RecordNotFound):
            assert not allowed
            return
        assert allowed
        assert record.id == known.id

    @rule(granted=sessions)
    def recall(self, granted: Granted) -> None:
        try:
            hits = asyncio.run(granted.session.recall("harbour note", k=100, include_inactive=True))
        except GrantExceeded:
            assert "recall" not in granted.actions
            return
        assert "recall" in granted.actions
        assert {hit.scope for hit in hits} <= granted.scopes

    @rule(target=records, granted=sessions, scope=st.sampled_from(MEMBER_SCOPES))
    def remember(self, granted: Granted, scope: str) -> Any:
        options: dict[str, Any] = {"AGENT_DYADIC": {"counterpart": "samuel"},
                                   "WORLD_SHARED": {"world": "team"}}.get(scope, {})
        try:
            receipt = asyncio.run(granted.session.remember(f"harbour note {next(_serial)}", scope=scope, **options))
        except GrantExceeded:
            assert not granted.covers("remember", scope)
            return multiple()
        assert granted.covers("remember", scope)
        record = stored(self.runtime, receipt.id)
        assert record is not None
        assert (record.delegated, record.scope) == (True, scope)
        return Known(receipt.id, granted.member, scope)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_no_session_callback_reads_or_changes_a_record_outside_its_grant() -> None:
    with tempfile.TemporaryDirectory() as tmp, Runtime.open(Path(tmp) / "home", realm="none") as runtime:
        runtime.memory.enable()
        machine = type("Machine", (SessionModel,), {"runtime": runtime})
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=25, stateful_step_count=15, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
