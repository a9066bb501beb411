"""`Member.remember_many` / `aremember_many`: many memories in one call, each durable with its own receipt.

Every item is admitted like a `remember` of its own; a refused item is reported in its place (its
index in the list of outcomes) and the valid ones are written all the same, in one commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from resident import Runtime
from resident.errors import GrantExceeded, InvalidInput, MemoryDisabled, NotVisible, ResidentError, TextInvalid
from resident.messages.memory import MemoryRecord, Receipt
from resident.messages.store import GetWriterStatistics, WriterStatistics
from resident.runtime.coordination import dispatch_session
from resident.runtime.memory.admissions import MAX_BATCH
from resident.runtime.runtime import host_context
from resident.store.tables import RECORDS
from tests.memory_helpers import WORLDS, open_runtime

ESCAPES = "\x1b[2J\x1b]0;pwned\x07 a note with terminal escapes"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def rt(home: Path) -> Iterator[Runtime]:
    with open_runtime(home, worlds=WORLDS) as runtime:
        runtime.memory.enable()
        yield runtime


T = TypeVar("T")


def records_in(home: Path) -> dict[str, MemoryRecord]:
    with open_runtime(home) as reopened, reopened._internal.store.reader() as reader:
        return dict(reader.items(RECORDS))


def record_count(rt: Runtime) -> int:
    with rt._internal.store.reader() as reader:
        return sum(1 for _ in reader.items(RECORDS))


MIXED: list[Any] = [
    {"text": "the staging deploy needs the migration first"},
    {"text": ""},
    {"text": "a shared dev note", "scope": "WORLD_SHARED", "world": "dev"},
    {"text": "not my world", "scope": "WORLD_SHARED", "world": "ops"},
    {"text": 42},
    "just a string",
    {"text": "an unknown field", "bogus": True},
    {"text": "x" * 20_000},
    {"text": "too important", "importance": float("nan")},
    {"text": ESCAPES, "summary": ESCAPES},
    {"text": "talking to alice", "scope": "AGENT_DYADIC", "counterpart": "alice"},
    {"text": "talking to alice again", "scope": "AGENT_DYADIC", "counterpart": "alice"},
]
REFUSED = {1: TextInvalid, 3: NotVisible, 4: InvalidInput, 5: InvalidInput, 6: InvalidInput, 7: TextInvalid,
           8: InvalidInput}


def check_mixed(outcomes: list[Receipt | ResidentError], home: Path, rt: Runtime) -> None:
    assert len(outcomes) == len(MIXED)
    for index, outcome in enumerate(outcomes):
        if index in REFUSED:
            assert isinstance(outcome, REFUSED[index]), (index, outcome)
        else:
            assert isinstance(outcome, Receipt), (index, outcome)
    receipts = [outcome for outcome in outcomes if isinstance(outcome, Receipt)]
    assert len({receipt.id for receipt in receipts}) == len(receipts)
    rt.close()
    stored = records_in(home)
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, Receipt):
            assert stored[outcome.id].body == MIXED[index]["text"]
            assert stored[outcome.id].bank == outcome.bank
    assert stored[receipts[-1].id].bank == stored[receipts[-2].id].bank == "agent_dyadic/deven/alice"
    # Only the valid items (and the fixture's nothing else) were written.
    assert len(stored) == len(receipts)


def test_valid_items_are_written_each_with_its_receipt_and_each_refused_item_is_reported_in_its_place(
    rt: Runtime, home: Path
) -> None:
    check_mixed(rt.member("deven").remember_many(MIXED), home, rt)


def test_aremember_many_reports_and_writes_the_same_way(rt: Runtime, home: Path) -> None:
    check_mixed(asyncio.run(_awaited(rt.member("deven").aremember_many(MIXED))), home, rt)


def test_the_valid_items_of_one_call_share_one_commit(rt: Runtime) -> None:
    rt.member("deven").remember("deven's bank exists before the batch")
    outcomes = rt.member("deven").remember_many([{"text": f"note {n}"} for n in range(50)])
    assert all(isinstance(outcome, Receipt) for outcome in outcomes)
    statistics: WriterStatistics = rt._internal.wiring.writer.ask(GetWriterStatistics(), 10.0)
    assert statistics.largest_commit >= 50


def test_more_items_than_one_call_takes_are_refused_whole_and_nothing_is_written(rt: Runtime) -> None:
    before = record_count(rt)
    with pytest.raises(InvalidInput, match=f"at most {MAX_BATCH}"):
        rt.member("deven").remember_many([{"text": "n"} for _ in range(MAX_BATCH + 1)])
    assert record_count(rt) == before


def test_an_empty_call_writes_nothing_and_answers_an_empty_list(rt: Runtime) -> None:
    assert rt.member("deven").remember_many([]) == []


def test_with_memory_off_every_item_is_refused_and_nothing_is_written(home: Path) -> None:
    with open_runtime(home) as rt:
        outcomes = rt.member("deven").remember_many([{"text": "one"}, {"text": "two"}])
        assert [type(outcome) for outcome in outcomes] == [MemoryDisabled, MemoryDisabled]
        assert record_count(rt) == 0


def test_a_session_under_a_grant_writes_only_its_items_within_the_grant(rt: Runtime) -> None:
    grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
    session = dispatch_session(host_context(rt), "notes", "deven", role="implement", parent_grant=grant,
                                      actions={"remember"}, scopes={"AGENT_CORE"})
    outcomes = asyncio.run(session.remember_many([
        {"text": "inside the grant"},
        {"text": "outside the grant", "scope": "WORLD_SHARED", "world": "dev"},
        {"text": "a dyadic note", "scope": "AGENT_DYADIC", "counterpart": "alice"},
        {"text": "naming its own source", "source": "manual"},
    ]))
    assert isinstance(outcomes[0], Receipt)
    assert isinstance(outcomes[1], GrantExceeded)
    assert isinstance(outcomes[2], GrantExceeded)
    assert isinstance(outcomes[3], InvalidInput)
    with rt._internal.store.reader() as reader:
        written = reader.get(RECORDS, outcomes[0].id)
        banks = {record.bank for _, record in reader.items(RECORDS)}
    assert written is not None
    assert written.delegated
    assert written.source.startswith("execution:")
    assert banks == {"agent_core/deven"}


async def _awaited(call: Awaitable[T]) -> T:
    return await call
