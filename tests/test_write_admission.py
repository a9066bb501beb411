"""A remember is admitted by one function on both paths: in the caller's thread
(`rt._internal.admissions`, what `Member.remember` uses) and by the member actor (a `Remember` sent to
it). The two accept and refuse exactly the same inputs, the grant a session works under narrowing
the scopes alike, and a member's engagement (which narrows recall) changing neither.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident import Runtime
from resident.errors import ResidentError
from resident.messages.memory import Activation, Delegation, MemoryRecord, Receipt, Remember
from resident.store.tables import RECORDS
from tests.memory_helpers import WORLDS, open_runtime

SCOPES = ("AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED")
_serial = itertools.count()


@pytest.fixture
def rt(tmp_path: Path) -> Iterator[Runtime]:
    """One runtime per test: every example writes new records and compares the two paths on it."""
    with open_runtime(tmp_path / "home", worlds=WORLDS) as runtime:
        runtime.memory.enable()
        yield runtime


# Records a remember may try to supersede: deven's own, alice's private one, shared in dev and in ops.
# Superseding one uses it up, so each path gets a fresh one of the same kind.
TARGETS: dict[str, tuple[str, dict[str, str]]] = {
    "own core": ("deven", {}),
    "alice core": ("alice", {}),
    "dev shared": ("alice", {"scope": "WORLD_SHARED", "world": "dev"}),
    "ops shared": ("oliver", {"scope": "WORLD_SHARED", "world": "ops"}),
}
UNKNOWN = "mem_01a23cf65c6b000037640a072444"


def target(rt: Runtime, kind: str | None) -> str | None:
    if kind is None or kind == "unknown":
        return None if kind is None else UNKNOWN
    owner, options = TARGETS[kind]
    return rt.member(owner).remember(f"{kind} note {next(_serial)}", **options).id  # type: ignore[arg-type]


def stored(rt: Runtime, record_id: str) -> MemoryRecord:
    with rt._internal.store.reader() as reader:
        record = reader.get(RECORDS, record_id)
    assert record is not None
    return record


def outcome(call: Any) -> tuple[str, str]:
    """What a path came to, comparable across paths: the receipt's bank and replication, or the refusal."""
    try:
        receipt = call()
    except ResidentError as error:
        # Each path supersedes a record of its own, so record ids in a message are left out.
        return type(error).__name__, re.sub(r"mem_[0-9a-f]+", "mem_…", str(error))
    assert isinstance(receipt, Receipt)
    return "Receipt", f"{receipt.bank} {receipt.replication}"


def both_paths(
    rt: Runtime, member: str, message: Remember, supersedes: str | None = None
) -> tuple[tuple[str, str], tuple[str, str]]:
    """`message` admitted in the caller's thread, then by the member actor (each superseding its own target)."""
    mine = msgspec.structs.replace(message, supersedes=target(rt, supersedes))
    caller = outcome(lambda: rt._internal.admissions.remember(member, mine, 10.0))
    mine = msgspec.structs.replace(message, supersedes=target(rt, supersedes))
    actor = outcome(lambda: rt._services.ask_member(member, mine, 10.0))
    return caller, actor


remembers = st.fixed_dictionaries(
    {
        "member": st.sampled_from(["deven", "oliver", "samuel"]),
        "scope": st.sampled_from(SCOPES),
        "counterpart": st.sampled_from([None, "alice", "victor", "nobody"]),
        "world": st.sampled_from([None, "dev", "ops", "elsewhere"]),
        "supersedes": st.sampled_from([None, "own core", "alice core", "dev shared", "ops shared", "unknown"]),
        "granted": st.sampled_from([None, ("AGENT_CORE",), ("WORLD_SHARED",), ("AGENT_CORE", "AGENT_DYADIC"), SCOPES]),
        "kind": st.sampled_from(["experience", "decision", "not-a-kind"]),
        "importance": st.sampled_from([0.5, 1.0, 1.5, float("nan")]),
        "text": st.sampled_from(["a plain note", "", " ", "\x1b[2J\x1b]0;owned\x07 escapes", "x" * 20_000]),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=remembers)
def test_the_caller_and_the_member_actor_accept_and_refuse_the_same_remembers(
    rt: Runtime, case: dict[str, Any]
) -> None:
    granted = case["granted"]
    delegation = None if granted is None else Delegation(grant="grant_test", holder=case["member"], scopes=granted)
    message = Remember(
        text=case["text"], scope=case["scope"], counterpart=case["counterpart"], world=case["world"],
        kind=case["kind"], importance=case["importance"], delegation=delegation,
    )
    caller, actor = both_paths(rt, case["member"], message, case["supersedes"])
    assert caller == actor


def test_both_paths_refuse_a_session_writing_outside_its_grant_and_mark_what_it_may_write_delegated(
    rt: Runtime,
) -> None:
    core_only = Delegation(grant="grant_core", holder="deven", scopes=("AGENT_CORE",))
    outside = Remember(text="a shared note", scope="WORLD_SHARED", world="dev", delegation=core_only)
    caller, actor = both_paths(rt, "deven", outside)
    assert caller == actor
    assert caller[0] == "GrantExceeded"

    inside = Remember(text=f"a delegated note {next(_serial)}", delegation=core_only)
    via_caller = rt._internal.admissions.remember("deven", inside, 10.0)
    via_actor: Receipt = rt._services.ask_member("deven", inside, 10.0)
    assert stored(rt, via_caller.id).delegated
    assert stored(rt, via_actor.id).delegated
    assert stored(rt, via_caller.id).bank == stored(rt, via_actor.id).bank == "agent_core/deven"


def test_engagement_narrows_recall_but_changes_no_write_on_either_path(rt: Runtime) -> None:
    cases = [
        Remember(text="engaged in acme", activation=Activation(domain="work", project="acme")),
        Remember(text="about something else", activation=Activation(domain="personal")),
        Remember(text="no world of mine", scope="WORLD_SHARED", world="ops"),
    ]
    before = [both_paths(rt, "deven", message) for message in cases]
    rt.engagement.engage("deven", domain="work", project="acme")
    try:
        after = [both_paths(rt, "deven", message) for message in cases]
    finally:
        rt.engagement.release("deven")
    assert after == before
    assert [caller for caller, _ in after] == [actor for _, actor in after]
    assert [kind for (kind, _), _ in after] == ["Receipt", "Receipt", "NotVisible"]
