"""The BM25 keyword index: exact BM25 scores, masks applied before ranking, incremental equals bulk."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.actors.substrate_indexing import Indexable as _Indexable
from resident.actors.substrate_indexing import joined_terms as _joined_terms
from resident.errors import InvalidInput
from resident.memory import keyword
from resident.memory.keyword import KeywordIndex
from resident.memory.postings import Segment
from resident.memory.stored_terms import split_terms
from resident.memory.text import analyse, term_ids, term_ids_batch, terms_of

WORDS = ["deploy", "staging", "migración", "base", "datos", "发布", "版本", "测试", "risk", "orders", "equipo"]
docs = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


def reference_bm25(texts: list[str], query: str) -> dict[int, float]:
    """BM25 (k1=1.2, b=0.4, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) computed the slow way."""
    counts = [Counter(term_ids(text).tolist()) for text in texts]
    average = sum(sum(c.values()) for c in counts) / len(texts)
    scores: dict[int, float] = {}
    for term, times_asked in Counter(term_ids(query).tolist()).items():
        df = sum(1 for c in counts if term in c)
        idf = math.log(1 + (len(texts) - df + 0.5) / (df + 0.5))
        for row, c in enumerate(counts):
            if term in c:
                tf = c[term]
                norm = tf + 1.2 * (1 - 0.4 + 0.4 * sum(c.values()) / average)
                scores[row] = scores.get(row, 0.0) + times_asked * idf * tf * 2.2 / norm
    return scores


@pytest.fixture
def tiny_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seal the tail every few postings, so small tests go through segments and their merges."""
    monkeypatch.setattr(keyword, "_TAIL_PAIRS", 3)


def test_the_document_matching_more_query_terms_ranks_first() -> None:
    index = KeywordIndex.build(["staging deploy failed", "deploy to production", "team lunch on friday"])
    rows, scores = index.search("staging deploy", None, 10)
    assert rows.tolist() == [0, 1]
    assert scores[0] > scores[1] > 0


def test_only_rows_sharing_a_term_with_the_query_are_returned() -> None:
    index = KeywordIndex.build(["alpha beta", "gamma delta", "beta gamma"])
    rows, _ = index.search("beta", None, 10)
    assert sorted(rows.tolist()) == [0, 2]


def test_accents_case_and_cjk_match_across_spellings() -> None:
    index = KeywordIndex.build(["La migración de la BASE", "我们决定下周发布新版本", "nothing here"])
    assert index.search("migracion base", None, 5)[0].tolist() == [0]
    assert index.search("新版本什么时候发布", None, 5)[0].tolist() == [1]


def test_masked_out_rows_are_excluded_before_the_limit_is_applied() -> None:
    index = KeywordIndex.build(["deploy deploy deploy", "deploy deploy", "deploy", "other"])
    mask = np.array([False, True, True, True])
    rows, _ = index.search("deploy", mask, 2)
    assert rows.tolist() == [1, 2]


def test_a_mask_shorter_than_the_index_is_refused() -> None:
    index = KeywordIndex.build(["a text", "another text"])
    with pytest.raises(InvalidInput):
        index.search("text", np.array([True]), 5)


def test_empty_index_empty_query_and_zero_limit_return_nothing() -> None:
    assert len(KeywordIndex().search("deploy", None, 5)[0]) == 0
    index = KeywordIndex.build(["deploy"])
    assert len(index.search("the of", None, 5)[0]) == 0
    assert len(index.search("deploy", None, 0)[0]) == 0
    assert len(index) == 1


@pytest.mark.usefixtures("tiny_tail")
@settings(deadline=None)
@given(st.lists(docs, min_size=1, max_size=25), queries, st.data())
def test_scores_equal_the_bm25_formula_however_rows_were_added(
    texts: list[str], query: str, data: st.DataObject
) -> None:
    index = KeywordIndex()
    start = 0
    while start < len(texts):
        size = data.draw(st.integers(1, len(texts) - start))
        index.add(texts[start : start + size])
        start += size
    rows, scores = index.search(query, None, len(texts))
    expected = reference_bm25(texts, query)
    assert sorted(rows.tolist()) == sorted(expected)
    for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
        assert score == pytest.approx(expected[row], rel=1e-5)
    assert list(scores) == sorted(scores, reverse=True)


@pytest.mark.usefixtures("tiny_tail")
@settings(deadline=None)
@given(st.lists(docs, min_size=1, max_size=25), queries, st.lists(st.booleans(), min_size=25, max_size=25))
def test_search_never_returns_a_masked_out_row(texts: list[str], query: str, flags: list[bool]) -> None:
    index = KeywordIndex()
    for text in texts:
        index.add([text])
    mask = np.array(flags[: len(texts)])
    rows, _ = index.search(query, mask, 10)
    assert mask[rows].all()
    allowed = [row for row in reference_bm25(texts, query) if mask[row]]
    assert len(rows) == min(10, len(allowed))


def test_a_segment_counts_term_frequencies_per_row() -> None:
    rows = np.array([0, 0, 1, 2, 2, 2], dtype=np.int32)
    terms = np.array([7, 7, 7, 9, 7, 9], dtype=np.uint64)
    segment = Segment.from_pairs(rows, terms, np.ones(8, dtype=np.float32), 1.0)
    assert segment.terms.tolist() == [7, 9]
    assert segment.starts.tolist() == [0, 3, 4]
    assert segment.rows.tolist() == [0, 1, 2, 2]
    assert segment.tf.tolist() == [2.0, 1.0, 1.0, 2.0]


def test_a_segment_keeps_terms_apart_whose_top_bits_are_equal() -> None:
    # Terms that differ only in their lowest bits cannot be packed by their top bits alone.
    rows = np.arange(8, dtype=np.int32)
    terms = np.array([1 << 40, (1 << 40) + 1, (1 << 40) + 2, 5] * 2, dtype=np.uint64)
    segment = Segment.from_pairs(rows, terms, np.ones(8, dtype=np.float32), 1.0)
    assert segment.terms.tolist() == [5, 1 << 40, (1 << 40) + 1, (1 << 40) + 2]
    assert [segment.rows[a:b].tolist() for a, b in zip(segment.starts, segment.starts[1:], strict=False)] == [
        [3, 7],
        [0, 4],
        [1, 5],
        [2, 6],
    ]


def test_merging_segments_keeps_rows_ascending_within_each_term() -> None:
    lengths = np.array([2, 1, 1, 1], dtype=np.float32)
    older = Segment.from_pairs(np.array([0, 1, 1], dtype=np.int32), np.array([3, 3, 8], dtype=np.uint64), lengths, 1.5)
    newer = Segment.from_pairs(np.array([2, 3], dtype=np.int32), np.array([8, 5], dtype=np.uint64), lengths, 1.25)
    merged = Segment.merge(older, newer, 1.25)
    assert merged.terms.tolist() == [3, 5, 8]
    assert merged.starts.tolist() == [0, 2, 3, 5]
    assert merged.rows.tolist() == [0, 1, 3, 1, 2]


MIXED = [
    "Deploying to staging needs the migration first",
    "部署到预发布环境之前必须先执行数据库迁移",
    "La canción del despliegue: primero la migración",
    "",
    "the and of",
    "staging 预发布 migración",
]


def _pairs(terms: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    """(doc, term) pairs in a canonical order: batches of terms come in no particular order."""
    return sorted(zip(terms[0].tolist(), terms[1].tolist(), strict=True))


def test_terms_from_an_analysis_made_for_the_embedder_are_the_ones_the_index_would_compute() -> None:
    assert _pairs(terms_of(analyse(MIXED))) == _pairs(term_ids_batch(MIXED))


def test_an_index_given_the_terms_searches_like_one_that_analysed_the_texts() -> None:
    analysing, given_terms = KeywordIndex(), KeywordIndex()
    for batch in (MIXED[:3], MIXED[3:]):
        analysing.add(batch)
        given_terms.add(batch, term_ids_batch(batch))
    for query in ("staging migration", "数据库迁移", "canción", "预发布"):
        rows, scores = analysing.search(query, None, 10)
        given_rows, given_scores = given_terms.search(query, None, 10)
        assert len(rows)
        assert rows.tolist() == given_rows.tolist()
        assert scores.tolist() == given_scores.tolist()


def test_the_substrate_splits_a_batchs_terms_per_text_and_joins_them_back() -> None:
    docs, terms = term_ids_batch(MIXED)
    per_text = split_terms((docs, terms), len(MIXED))
    assert [sorted(own.tolist()) for own in per_text] == [
        sorted(terms[docs == row].tolist()) for row in range(len(MIXED))
    ]
    items = [_Indexable(record=None, vector=None, terms=own) for own in per_text]  # type: ignore[arg-type]
    joined = _joined_terms(items)
    assert joined is not None
    assert _pairs(joined) == _pairs((docs, terms))
    assert _joined_terms([*items, _Indexable(record=None, vector=None)]) is None  # type: ignore[arg-type]


# -- relevance feedback ----------------------------------------------------------------------------

# A small made-up conversation: the question asks about Ana's sunrise painting; the turn that holds
# the answer's detail ("lake", "orange") shares none of the question's words but the best match's.
CONVERSATION = [
    "Ana: I painted a sunrise over the lake last summer",
    "Ben: the lake was orange and pink at dawn, you caught the orange light",
    "Ben: my band played a gig at the harbour on friday",
    "Ana: the gig poster had an orange boat on it",
    "Ben: we drove to the mountains for a hike",
]


def test_feedback_finds_a_turn_sharing_no_word_with_the_question_through_its_best_match() -> None:
    index = KeywordIndex.build(CONVERSATION)
    plain, _ = index.search("what sunrise did Ana paint", None, 10)
    expanded, _ = index.search("what sunrise did Ana paint", None, 10, feedback=True)
    assert 1 not in plain.tolist()
    assert 1 in expanded.tolist()


def test_feedback_keeps_the_first_passs_best_row_first() -> None:
    index = KeywordIndex.build(CONVERSATION)
    plain, _ = index.search("sunrise painted lake", None, 10)
    expanded, _ = index.search("sunrise painted lake", None, 10, feedback=True)
    assert expanded[0] == plain[0] == 0


def test_feedback_terms_never_come_from_rows_the_mask_hides() -> None:
    # Row 0 is not the asker's to see; were its words fed back, row 2 would be pulled in by "ledger".
    index = KeywordIndex.build(["alpha ledger quarterly", "alpha notes", "ledger"])
    mask = np.array([False, True, True])
    rows, _ = index.search("alpha", mask, 10, feedback=True)
    assert rows.tolist() == [1]


@settings(deadline=None)
@given(st.lists(docs, min_size=1, max_size=12), queries, st.data())
def test_feedback_returns_only_allowed_rows_and_adds_to_plain_scores(texts: list[str], query: str, data) -> None:
    index = KeywordIndex.build(texts)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(texts), max_size=len(texts))))
    plain_rows, plain_scores = index.search(query, mask, len(texts))
    rows, scores = index.search(query, mask, len(texts), feedback=True)
    assert all(mask[rows])
    assert set(plain_rows.tolist()) <= set(rows.tolist())
    if len(plain_rows):
        assert rows[0] == plain_rows[0]
    by_row = dict(zip(rows.tolist(), scores.tolist(), strict=True))
    for row, score in zip(plain_rows.tolist(), plain_scores.tolist(), strict=True):
        assert by_row[row] >= score


@settings(deadline=None)
@given(st.lists(st.lists(docs, min_size=1, max_size=5), min_size=1, max_size=5))
def test_each_rows_own_terms_are_kept_whichever_way_rows_were_added(batches: list[list[str]]) -> None:
    index = KeywordIndex()
    for batch in batches:
        index.add(batch, term_ids_batch(batch) if len(batch) % 2 else None)
    texts = [text for batch in batches for text in batch]
    for row, text in enumerate(texts):
        own = index._row_terms[index._row_starts[row] : index._row_starts[row + 1]]
        assert sorted(own.tolist()) == sorted(term_ids(text).tolist())
