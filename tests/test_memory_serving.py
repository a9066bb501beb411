"""The serving selection, a pure function: fail-closed, visible only, active only, within budget, counted.

`select_served` gets ranked hits and a way to read each record as stored now; these tests give it a
dictionary for a store, so every rule is checked without an actor or LMDB.
"""

from __future__ import annotations

from typing import get_args

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from resident.memory.index import Hit
from resident.memory.serving import Served, select_served
from resident.messages.digest import content_digest
from resident.messages.memory import Lifecycle, MemoryRecord, Principal, ReplicationState

DEVEN = Principal(kind="member", name="deven", worlds=("dev",))


def record(
    record_id: str,
    *,
    owner: str = "deven",
    summary: str = "summary",
    body: str = "body text",
    replication: ReplicationState = "synced",
    lifecycle: Lifecycle = "active",
) -> MemoryRecord:
    bank = f"agent_core/{owner}"
    digest = content_digest(
        record_id=record_id, summary=summary, body=body, kind="experience", bank=bank, canonical=False,
        delegated=False, supersedes=None,
    )
    return MemoryRecord(
        id=record_id, summary=summary, body=body, kind="experience", bank=bank, scope="AGENT_CORE",
        owner=owner, occurred_at=1.0, recorded_at=1.0, digest=digest, replication=replication, lifecycle=lifecycle,
    )


def hits(*ids: str) -> list[Hit]:
    return [Hit(id=record_id, score=1.0 / (rank + 1), semantic=0.5, keyword=2.0, temporal=0.1)
            for rank, record_id in enumerate(ids)]


def serve(
    stored: dict[str, MemoryRecord],
    ranked: list[Hit],
    *,
    k: int = 10,
    char_budget: int = 8_000,
    include_inactive: bool = False,
) -> tuple[list[str], Served]:
    served = select_served(DEVEN, ranked, stored.get, k=k, char_budget=char_budget, include_inactive=include_inactive)
    return [hit.id for hit in served.hits], served


def test_withheld_records_are_never_served_and_are_reported_for_the_index() -> None:
    stored = {"a": record("a"), "b": record("b", replication="conflict"), "c": record("c", replication="invalidated")}
    ids, served = serve(stored, hits("b", "a", "c"))
    assert ids == ["a"]
    assert served.withheld == [("b", "conflict"), ("c", "invalidated")]


def test_records_of_others_and_records_gone_from_the_store_are_skipped_silently() -> None:
    stored = {"mine": record("mine"), "alices": record("alices", owner="alice")}
    ids, served = serve(stored, hits("alices", "gone", "mine"))
    assert ids == ["mine"]
    assert served.withheld == []
    assert served.inactive == []


def test_inactive_records_are_served_only_when_asked_for() -> None:
    stored = {"old": record("old", lifecycle="superseded"), "new": record("new")}
    ids, served = serve(stored, hits("old", "new"))
    assert ids == ["new"]
    assert served.inactive == [("old", "superseded")]
    assert serve(stored, hits("old", "new"), include_inactive=True)[0] == ["old", "new"]


def test_at_most_k_are_served_in_rank_order_and_each_counts_one_recall() -> None:
    stored = {name: record(name) for name in "abcde"}
    ids, served = serve(stored, hits("e", "d", "c", "b", "a"), k=3)
    assert ids == ["e", "d", "c"]
    assert served.used == ["e", "d", "c"]


def test_records_are_served_whole_until_the_next_would_not_fit_the_budget() -> None:
    stored = {name: record(name, summary="s" * 10, body="b" * 40) for name in "abc"}
    ids, _ = serve(stored, hits("a", "b", "c"), char_budget=120)
    assert ids == ["a", "b"]


def test_a_best_hit_over_budget_alone_is_cut_summary_first() -> None:
    stored = {"long": record("long", summary="s" * 30, body="b" * 100)}
    _, served = serve(stored, hits("long"), char_budget=50)
    (hit,) = served.hits
    assert (hit.summary, hit.body) == ("s" * 30, "b" * 20)


def test_reading_stops_once_k_records_are_served() -> None:
    stored = {name: record(name) for name in "abcdef"}
    read: list[str] = []

    def reading(record_id: str) -> MemoryRecord | None:
        read.append(record_id)
        return stored.get(record_id)

    select_served(DEVEN, hits(*"abcdef"), reading, k=2, char_budget=8_000)
    assert read == ["a", "b"]


def test_a_served_hit_carries_the_stored_record_and_the_ranking_scores() -> None:
    stored = {"a": record("a", summary="deploy", body="deploy to staging")}
    _, served = serve(stored, hits("a"))
    (hit,) = served.hits
    assert (hit.id, hit.summary, hit.body, hit.bank, hit.replication) == (
        "a", "deploy", "deploy to staging", "agent_core/deven", "synced",
    )
    assert (hit.score, hit.semantic, hit.keyword, hit.temporal) == (1.0, 0.5, 2.0, 0.1)


states = st.sampled_from(get_args(ReplicationState))
lifecycles = st.sampled_from(get_args(Lifecycle))
owners = st.sampled_from(["deven", "alice"])


@given(
    st.lists(st.tuples(owners, states, lifecycles, st.integers(0, 300)), max_size=12),
    st.integers(1, 12),
    st.integers(1, 2_000),
    st.booleans(),
)
def test_nothing_withheld_invisible_or_unasked_inactive_is_ever_served_and_the_budget_holds(
    rows: list[tuple[str, ReplicationState, Lifecycle, int]], k: int, budget: int, include_inactive: bool
) -> None:
    stored = {
        f"r{i}": record(f"r{i}", owner=owner, replication=state, lifecycle=lifecycle, body="x" * length)
        for i, (owner, state, lifecycle, length) in enumerate(rows)
    }
    served = select_served(
        DEVEN, hits(*stored), stored.get, k=k, char_budget=budget, include_inactive=include_inactive
    )
    assert len(served.hits) <= k
    assert sum(len(hit.summary) + len(hit.body) for hit in served.hits) <= budget
    for hit in served.hits:
        kept = stored[hit.id]
        assert kept.owner == "deven"
        assert kept.replication not in ("conflict", "invalidated")
        assert include_inactive or kept.lifecycle == "active"


def test_a_record_that_no_longer_matches_its_digest_is_withheld_and_named_for_the_log():
    edited = msgspec.structs.replace(record("edited"), body="text changed in the data file")
    stored = {"edited": edited, "fine": record("fine")}
    ids, served = serve(stored, hits("edited", "fine"))
    assert ids == ["fine"]
    assert [r.id for r in served.corrupted] == ["edited"]
    assert served.used == ["fine"]
