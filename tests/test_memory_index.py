"""The recall index: filters before ranking, fail-closed replication, activation, and channel scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.errors import InvalidInput, RecordNotFound
from resident.memory import index as index_module
from resident.memory.embedding import HashEmbedder
from resident.memory.index import MAX_K, IndexEntry, RecallIndex
from resident.messages.memory import Activation, Lifecycle, ReplicationState

NOW = 1_800_000_000.0
DAY = 86_400.0
EMBEDDER = HashEmbedder(dim=64)


def entry(
    record_id: str,
    text: str,
    *,
    bank: str = "agent_core/deven",
    lifecycle: Lifecycle = "active",
    replication: ReplicationState = "synced",
    domain: Literal["work", "personal"] | None = None,
    project: str | None = None,
    days_ago: float = 1.0,
) -> IndexEntry:
    return IndexEntry(
        id=record_id,
        bank=bank,
        lifecycle=lifecycle,
        replication=replication,
        activation=Activation(domain=domain, project=project),
        occurred_at=NOW - days_ago * DAY,
        recorded_at=NOW - days_ago * DAY,
        text=text,
    )


def build(entries: Sequence[IndexEntry], *, vectors: bool = True) -> RecallIndex:
    index = RecallIndex()
    index.add(entries, EMBEDDER.embed([e.text for e in entries]) if vectors else None)
    return index


def search(
    index: RecallIndex, query: str, banks: Sequence[str] = ("agent_core/deven",), **options: object
) -> list[str]:
    hits = index.search(
        query,
        EMBEDDER.embed([query])[0],
        banks,
        options.pop("domain", None),  # type: ignore[arg-type]
        options.pop("project", None),  # type: ignore[arg-type]
        NOW,
        k=options.pop("k", 10),  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )
    return [hit.id for hit in hits]


def test_keyword_and_semantic_recall_find_the_matching_record() -> None:
    index = build(
        [
            entry("deploy", "Staging deploy failed\nThe migration timed out"),
            entry("lunch", "Team lunch\nFriday at the Thai place"),
            entry("zh", "发布计划\n新版本下周三发布"),
        ]
    )
    assert search(index, "why did the staging deploy fail")[0] == "deploy"
    assert search(index, "新版本什么时候发布")[0] == "zh"


def test_recall_works_by_keyword_alone_when_there_are_no_vectors() -> None:
    index = build([entry("a", "orders table migration"), entry("b", "risk limits for the desk")], vectors=False)
    hits = index.search("migration of the orders table", None, ["agent_core/deven"], None, None, NOW, k=5)
    assert [hit.id for hit in hits] == ["a"]
    assert hits[0].semantic == 0.0
    assert hits[0].keyword > 0


def test_conflict_and_invalidated_records_are_never_returned_even_with_inactive_ones() -> None:
    index = build(
        [
            entry("conflict", "deploy checklist", replication="conflict"),
            entry("invalidated", "deploy checklist", replication="invalidated"),
            entry("pending", "deploy checklist", replication="pending"),
            entry("superseded", "deploy checklist", lifecycle="superseded"),
        ]
    )
    assert search(index, "deploy checklist") == ["pending"]
    assert sorted(search(index, "deploy checklist", include_inactive=True)) == ["pending", "superseded"]


def test_filters_apply_before_ranking_so_withheld_records_take_no_candidate_slot() -> None:
    index = build(
        [
            entry("withheld", "deploy deploy deploy checklist", replication="conflict"),
            entry("other-bank", "deploy deploy checklist", bank="agent_core/alice"),
            entry("allowed", "deploy notes"),
        ]
    )
    assert search(index, "deploy checklist", candidates=1) == ["allowed"]


def test_records_of_banks_not_asked_for_are_not_returned() -> None:
    index = build([entry("mine", "deploy notes"), entry("theirs", "deploy notes", bank="agent_core/alice")])
    assert search(index, "deploy notes") == ["mine"]
    assert search(index, "deploy notes", banks=["unknown/bank"]) == []
    assert sorted(search(index, "deploy notes", banks=["agent_core/deven", "agent_core/alice"])) == ["mine", "theirs"]


def test_activation_narrows_by_domain_and_project_and_unscoped_records_match_anything() -> None:
    index = build(
        [
            entry("any", "deploy notes"),
            entry("work", "deploy notes", domain="work"),
            entry("personal", "deploy notes", domain="personal"),
            entry("work-apollo", "deploy notes", domain="work", project="apollo"),
            entry("hermes", "deploy notes", project="hermes"),
        ]
    )
    everything = {"any", "work", "personal", "work-apollo", "hermes"}
    assert set(search(index, "deploy notes")) == everything
    assert set(search(index, "deploy notes", domain="work")) == {"any", "work", "work-apollo", "hermes"}
    assert set(search(index, "deploy notes", domain="work", project="apollo")) == {"any", "work", "work-apollo"}
    assert set(search(index, "deploy notes", project="nobody-uses-this")) == {"any", "work", "personal"}


def test_lifecycle_and_replication_changes_take_effect_on_the_next_search() -> None:
    index = build([entry("a", "deploy notes"), entry("b", "deploy notes")])
    index.set_lifecycle("a", "retracted")
    index.set_replication("b", "invalidated")
    assert search(index, "deploy notes") == []
    index.set_replication("b", "synced")
    assert search(index, "deploy notes") == ["b"]
    assert index.counts() == (
        {"active": 1, "superseded": 0, "retracted": 1},
        {"pending": 0, "synced": 2, "conflict": 0, "invalidated": 0, "pending_review": 0},
    )


def test_vectors_filled_in_later_bring_a_record_into_semantic_recall() -> None:
    index = RecallIndex()
    texts = ["the staging deployment failed", "lunch on friday"]
    index.add([entry("a", texts[0]), entry("b", texts[1])], EMBEDDER.embed(texts), np.array([False, True]))
    assert index.missing_vector_ids() == ["a"]
    query = "deploying to staging"
    before = index.search(query, EMBEDDER.embed([query])[0], ["agent_core/deven"], None, None, NOW, k=5)
    assert all(hit.semantic == 0.0 for hit in before if hit.id == "a")
    index.set_vectors(["a"], EMBEDDER.embed([texts[0]]))
    assert index.missing_vector_ids() == []
    after = index.search(query, EMBEDDER.embed([query])[0], ["agent_core/deven"], None, None, NOW, k=5)
    assert next(hit for hit in after if hit.id == "a").semantic > 0.3


def test_a_time_window_in_the_query_prefers_matching_records_inside_it() -> None:
    index = build(
        [
            entry("old", "billing deploy went fine", days_ago=40),
            entry("recent", "billing deploy went fine", days_ago=1),
            entry("unrelated-yesterday", "lunch menu", days_ago=1),
        ]
    )
    assert search(index, "billing deploy yesterday")[0] == "recent"
    # Equal content: without the window, "old" would win every tie (it is the lower row).
    assert search(index, "billing deploy in the last 30 days")[:2] == ["recent", "old"]


def test_hits_carry_the_fused_score_and_each_channels_score() -> None:
    index = build([entry("a", "risk limits for the crypto desk"), entry("b", "crypto desk lunch")])
    hits = index.search(
        "crypto desk risk limits",
        EMBEDDER.embed(["crypto desk risk limits"])[0],
        ["agent_core/deven"],
        None,
        None,
        NOW,
        k=2,
    )
    assert [hit.id for hit in hits] == ["a", "b"]
    assert hits[0].score > hits[1].score > 0
    assert hits[0].keyword > hits[1].keyword > 0
    assert hits[0].semantic > 0
    assert hits[0].temporal > 0


def test_k_is_clamped_to_the_maximum() -> None:
    index = build([entry(f"r{i}", f"deploy note {i}") for i in range(MAX_K + 20)], vectors=False)
    assert len(search(index, "deploy note", k=MAX_K + 50)) == MAX_K
    assert search(index, "deploy note", k=0) == []


def test_add_refuses_bad_entries_and_then_indexes_nothing() -> None:
    index = build([entry("a", "deploy")])
    with pytest.raises(InvalidInput):
        index.add([entry("b", "x"), entry("a", "y")], None)
    with pytest.raises(InvalidInput):
        index.add([entry("c", "x"), entry("c", "y")], None)
    with pytest.raises(InvalidInput):
        index.add([entry("d", "x", lifecycle="deleted")], None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        index.add([entry("e", "x")], np.ones((1, 3), dtype=np.float32))
    assert len(index) == 1
    assert "b" not in index
    assert "a" in index


def test_unknown_ids_raise_record_not_found() -> None:
    index = build([entry("a", "deploy")])
    with pytest.raises(RecordNotFound):
        index.set_lifecycle("nope", "retracted")
    with pytest.raises(RecordNotFound):
        index.set_replication("nope", "synced")
    with pytest.raises(RecordNotFound):
        index.set_vectors(["nope"], EMBEDDER.embed(["x"]))


WORDS = ["deploy", "staging", "migración", "datos", "发布", "版本", "risk", "orders"]
BANKS = ["agent_core/deven", "agent_core/alice", "world_shared/acme"]
entries_strategy = st.lists(
    st.builds(
        entry,
        record_id=st.just(""),
        text=st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
        bank=st.sampled_from(BANKS),
        lifecycle=st.sampled_from(["active", "superseded", "retracted"]),
        replication=st.sampled_from(["pending", "synced", "conflict", "invalidated"]),
        domain=st.sampled_from([None, "work", "personal"]),
        project=st.sampled_from([None, "apollo", "hermes"]),
        days_ago=st.floats(0, 60),
    ),
    min_size=1,
    max_size=40,
)


@settings(deadline=None, max_examples=60)
@given(
    entries_strategy,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    st.lists(st.sampled_from(BANKS), max_size=3),
    st.sampled_from([None, "work", "personal"]),
    st.sampled_from([None, "apollo", "hermes", "zeus"]),
    st.booleans(),
    st.booleans(),
)
def test_search_never_returns_a_record_the_filters_exclude(
    raw: list[IndexEntry],
    query: str,
    banks: list[str],
    domain: str | None,
    project: str | None,
    include_inactive: bool,
    with_vectors: bool,
) -> None:
    entries = [
        IndexEntry(
            id=f"r{i}",
            bank=e.bank,
            lifecycle=e.lifecycle,
            replication=e.replication,
            activation=e.activation,
            occurred_at=e.occurred_at,
            recorded_at=e.recorded_at,
            text=e.text,
        )
        for i, e in enumerate(raw)
    ]
    index = build(entries, vectors=with_vectors)
    hits = index.search(
        query, EMBEDDER.embed([query])[0], banks, domain, project, NOW, k=100, include_inactive=include_inactive
    )
    by_id = {e.id: e for e in entries}

    def allowed(e: IndexEntry) -> bool:
        return (
            e.bank in banks
            and e.replication in ("pending", "synced")
            and (include_inactive or e.lifecycle == "active")
            and (domain is None or e.activation.domain in (None, domain))
            and (project is None or e.activation.project in (None, project))
        )

    returned = [hit.id for hit in hits]
    assert len(returned) == len(set(returned))
    assert all(allowed(by_id[record_id]) for record_id in returned)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    # Every allowed record shares a word with the query or not; those that do are all found.
    query_words = set(query.split())
    expected = {e.id for e in entries if allowed(e) and query_words & set(e.text.split())}
    assert expected <= set(returned)


def test_a_bulk_add_indexes_exactly_what_the_same_records_added_in_small_batches_give() -> None:
    # Large enough for the bulk path (vectors stored on a second thread); some rows lack a vector.
    count = index_module._PARALLEL_ROWS + 500
    texts = [f"{WORDS[i % len(WORDS)]} report {i} {WORDS[(i * 7) % len(WORDS)]} batch {i % 97}" for i in range(count)]
    records = [entry(f"r{i}", text, days_ago=i % 50) for i, text in enumerate(texts)]
    vectors = EMBEDDER.embed(texts)
    present = np.arange(count) % 11 != 0
    bulk, batched = RecallIndex(), RecallIndex()
    bulk.add(records, vectors, present)
    for first in range(0, count, 4_000):
        rows = slice(first, first + 4_000)
        batched.add(records[rows], vectors[rows], present[rows])
    assert bulk.missing_vector_ids() == batched.missing_vector_ids()
    for query in ("deploy report 17", "migración datos", "发布 版本 batch 5"):
        vector = EMBEDDER.embed([query])[0]
        found = bulk.search(query, vector, BANKS, None, None, NOW, k=20)
        expected = batched.search(query, vector, BANKS, None, None, NOW, k=20)
        assert [hit.id for hit in found] == [hit.id for hit in expected]
        assert [hit.score for hit in found] == pytest.approx([hit.score for hit in expected])


def test_a_weak_embedders_cosine_never_outvotes_the_best_keyword_match_and_a_models_may() -> None:
    # "exact" holds both query words; "near" only one, but the query's vector points right at it.
    index = RecallIndex()
    index.add(
        [entry("exact", "ledger reconciliation failed"), entry("near", "ledger notes"), entry("far", "lunch menu")],
        np.eye(3, dtype=np.float32),
    )
    pointing_at_near = np.array([0.0, 1.0, 0.0], dtype=np.float32)

    def first(weight: float) -> str:
        query, banks = "ledger reconciliation", ["agent_core/deven"]
        hits = index.search(query, pointing_at_near, banks, None, None, NOW, k=3, semantic_weight=weight)
        return hits[0].id

    assert first(index_module.DEFAULT_SEMANTIC_WEIGHT) == "exact"
    assert first(0.75) == "near"


def test_recency_only_breaks_ties_between_equal_matches() -> None:
    index = build(
        [
            entry("older-better", "harbour crane crane maintenance", days_ago=30),
            entry("newer-worse", "harbour crane", days_ago=1),
            entry("old-tie", "supplier invoice", days_ago=20),
            entry("new-tie", "supplier invoice", days_ago=2),
        ],
        vectors=False,
    )
    assert search(index, "crane maintenance")[0] == "older-better"
    assert search(index, "supplier invoice")[:2] == ["new-tie", "old-tie"]
