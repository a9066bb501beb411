"""Recall quality on a labeled set: paraphrased queries in three languages find the record they ask for.

The set (tests/data/recall_quality.json) holds short team memories in English, Spanish and Chinese
about work, operations, trading and testing, with near neighbours on purpose (two billing deploys,
two supplier meetings, ...), and queries that paraphrase their record, each labeled with its id.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from resident.memory.embedding import HashEmbedder
from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.text import normalize
from resident.memory.vectors import VectorIndex

DATA = Path(__file__).parent / "data" / "recall_quality.json"
BANK = "world_shared/team"
TOP = 3
REQUIRED = 0.9


@pytest.fixture(scope="module")
def labeled() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


def _text(record: dict[str, Any]) -> str:
    return f"{record['summary']}\n{record['body']}"


def test_the_labeled_set_is_multilingual_and_its_queries_paraphrase(labeled: dict[str, Any]) -> None:
    records = {record["id"]: record for record in labeled["records"]}
    assert len(records) >= 60
    assert len(labeled["queries"]) >= 40
    assert {record["lang"] for record in records.values()} == {"en", "es", "zh"}
    for query in labeled["queries"]:
        text = normalize(_text(records[query["expected"]]))
        assert normalize(query["query"]).strip(" ?¿") not in text, query


def test_hash_embedder_recall_puts_the_right_record_in_the_top_three(labeled: dict[str, Any]) -> None:
    now = datetime.fromisoformat(labeled["now"]).timestamp()
    records = labeled["records"]
    embedder = HashEmbedder()
    index = RecallIndex()
    index.add(
        [
            IndexEntry(
                id=record["id"],
                bank=BANK,
                lifecycle="active",
                replication="synced",
                occurred_at=now - record["days_ago"] * 86_400,
                recorded_at=now - record["days_ago"] * 86_400,
                text=_text(record),
            )
            for record in records
        ],
        embedder.embed([_text(record) for record in records]),
    )
    queries = labeled["queries"]
    vectors = embedder.embed([query["query"] for query in queries])
    misses = []
    for query, vector in zip(queries, vectors, strict=True):
        hits = index.search(query["query"], vector, [BANK], None, None, now, k=TOP)
        found = [hit.id for hit in hits]
        if query["expected"] not in found:
            misses.append((query["query"], query["expected"], found))
    accuracy = 1 - len(misses) / len(queries)
    assert accuracy >= REQUIRED, f"top-{TOP} accuracy {accuracy:.2f}; missed: {misses}"


def test_hash_embedding_alone_ranks_the_right_record_in_the_top_three_for_most_queries(
    labeled: dict[str, Any],
) -> None:
    # The fused test above could pass on BM25 alone; this one holds the embedder to its own bar.
    records = labeled["records"]
    embedder = HashEmbedder()
    index = VectorIndex()
    index.append(len(records), embedder.embed([_text(record) for record in records]))
    queries = labeled["queries"]
    ids = [record["id"] for record in records]
    found = 0
    for query, vector in zip(queries, embedder.embed([query["query"] for query in queries]), strict=True):
        rows, _ = index.search(vector, None, TOP)
        found += query["expected"] in [ids[row] for row in rows]
    assert found / len(queries) >= 0.85


# -- labeled conversations in Spanish and Chinese --------------------------------------------------

# Two conversations in LoCoMo's format (tests/data/conversations, written for these tests): two
# people over six sessions each, every turn a memory, 80 questions that paraphrase the turns that
# answer them (labeled by dia_id), with near neighbours on purpose (two running injuries, two trips).
# `python bench/quality.py --data tests/data/conversations` measures the same through the runtime.
CONVERSATIONS = Path(__file__).parent / "data" / "conversations"
# Recall@5 of the earlier ranking (reciprocal rank fusion, no stemming, no feedback) was 0.50 in
# Spanish and 0.62 in Chinese; today's is 0.75 and 0.78. The bars sit between, so a regression to
# the old ranking fails while a small change of a tie does not.
RECALL_AT_5 = {"es": 0.65, "zh": 0.70}


def _conversation(path: Path) -> tuple[list[tuple[str, str, float]], list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    turns: list[tuple[str, str, float]] = []
    session = 1
    while f"session_{session}_date_time" in data:
        when = data[f"session_{session}_date_time"]
        at = datetime.strptime(when, "%I:%M %p on %d %B, %Y").timestamp()
        turns.extend(
            (turn["dia_id"], f"({when}) {turn['speaker']}: {turn['text']}", at) for turn in data[f"session_{session}"]
        )
        session += 1
    return turns, data["qa"]


@pytest.mark.parametrize("language", sorted(RECALL_AT_5))
def test_labeled_conversations_are_recalled_in_spanish_and_chinese(language: str) -> None:
    turns, questions = _conversation(CONVERSATIONS / f"{language}-1.json")
    assert len(questions) >= 30
    texts = {dia_id: normalize(text) for dia_id, text, _ in turns}
    for question in questions:
        for dia_id in question["evidence"]:
            # NFKC folds the full-width question mark to "?".
            assert normalize(question["question"]).strip(" ?¿") not in texts[dia_id], question
    embedder = HashEmbedder()
    index = RecallIndex()
    index.add(
        [
            IndexEntry(id=dia_id, bank=BANK, lifecycle="active", replication="synced", occurred_at=at,
                       recorded_at=at, text=text)
            for dia_id, text, at in turns
        ],
        embedder.embed([text for _, text, _ in turns]),
    )
    now = max(at for _, _, at in turns) + 86_400
    vectors = embedder.embed([question["question"] for question in questions])
    recall = 0.0
    for question, vector in zip(questions, vectors, strict=True):
        found = {hit.id for hit in index.search(question["question"], vector, [BANK], None, None, now, k=5)}
        recall += len(found & set(question["evidence"])) / len(question["evidence"])
    assert recall / len(questions) >= RECALL_AT_5[language]


def test_the_labeled_conversations_hold_sixty_questions_or_more_in_spanish_and_chinese() -> None:
    counts = {language: len(_conversation(CONVERSATIONS / f"{language}-1.json")[1]) for language in ("es", "zh")}
    assert sum(counts.values()) >= 60
