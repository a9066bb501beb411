"""The keyword index's pruned search (MaxScore) against scoring every posting: the same rows, order and
scores, over random corpora, masks, limits and queries; and fewer postings read on a Zipf corpus."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.memory import keyword
from resident.memory.keyword import KeywordIndex
from resident.memory.postings import length_norm

# Word i is drawn about as often as 1 / (i + 1): a few common words and a tail of rare ones, so that
# the bounds of common and rare terms differ as they do in real text.
VOCABULARY = [f"w{i}" for i in range(40)]
words = st.integers(0, 39 * 39).map(lambda n: VOCABULARY[int(n**0.5)])
texts = st.lists(words, max_size=12).map(" ".join)
questions = st.lists(st.one_of(words, st.sampled_from(["unknown", "w0"])), min_size=1, max_size=6).map(" ".join)


Outcome = tuple[np.ndarray, np.ndarray, int]


def _searches(
    index: KeywordIndex, query: str, mask: np.ndarray | None, limit: int, *, feedback: bool
) -> tuple[Outcome, Outcome]:
    """The search pruned (whatever its size) and exhaustive: rows, scores and the postings each read."""
    outcomes: list[Outcome] = []
    for pruned_from in (0, 1 << 62):
        with mock.patch.object(keyword, "_PRUNED_FROM", pruned_from):
            before = index._postings_read
            outcomes.append((*index.search(query, mask, limit, feedback=feedback), index._postings_read - before))
    return outcomes[0], outcomes[1]


def _built(batches: list[list[str]]) -> KeywordIndex:
    index = KeywordIndex()
    for batch in batches:
        index.add(batch)
    return index


@settings(deadline=None, max_examples=300)
@given(
    st.lists(st.lists(texts, min_size=1, max_size=30), min_size=1, max_size=6),
    questions,
    st.data(),
)
def test_the_pruned_search_returns_what_scoring_every_posting_returns(
    batches: list[list[str]], query: str, data: st.DataObject
) -> None:
    # A tail sealed every few postings: several segments, merged at different mean lengths.
    tail = data.draw(st.sampled_from([4, 40, 1 << 14]))
    with mock.patch.object(keyword, "_TAIL_PAIRS", tail):
        index = _built(batches)
    rows_count = len(index)
    mask = data.draw(
        st.one_of(
            st.none(),
            st.lists(st.booleans(), min_size=rows_count, max_size=rows_count).map(np.array),
            st.just(np.zeros(rows_count, dtype=np.bool_)),
        )
    )
    limit = data.draw(st.integers(1, rows_count + 3))
    feedback = data.draw(st.booleans())
    (rows, scores, _), (expected_rows, expected_scores, _) = _searches(index, query, mask, limit, feedback=feedback)
    assert rows.tolist() == expected_rows.tolist()
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-12)
    assert rows.dtype == expected_rows.dtype
    assert scores.dtype == expected_scores.dtype


@settings(deadline=None)
@given(st.lists(st.lists(texts, min_size=1, max_size=20), min_size=2, max_size=6))
def test_a_terms_peak_bounds_each_of_its_postings_at_the_present_mean_length(batches: list[list[str]]) -> None:
    with mock.patch.object(keyword, "_TAIL_PAIRS", 8):
        index = _built(batches)
    average = index._average()
    if not average:
        return  # no postings to bound
    norm = length_norm(index._lengths[: len(index)], average)
    for segment in index._all_segments():
        peaks = segment.peaks_at(average)
        for term in range(len(segment.terms)):
            lo, hi = segment.starts[term], segment.starts[term + 1]
            tf = segment.tf[lo:hi].astype(np.float64)
            assert (tf / (tf + norm[segment.rows[lo:hi]]) <= peaks[term]).all()


def test_an_index_saved_without_peaks_finds_them_again_and_searches_alike() -> None:
    index = KeywordIndex.build([f"w{i % 7} w{i % 3} w{i % 11} w{i}" for i in range(300)])
    state = index.state()
    old = {key: value for key, value in state.items() if not key.startswith("peaks")}
    again = KeywordIndex.from_state(old)
    assert np.array_equal(again._segments[0].peaks, state["peaks"])
    with mock.patch.object(keyword, "_PRUNED_FROM", 0):
        for query in ("w1 w2", "w0 w5 w6 w250", "w3 w3 w10"):
            for feedback in (False, True):
                first = index.search(query, None, 5, feedback=feedback)
                second = again.search(query, None, 5, feedback=feedback)
                assert first[0].tolist() == second[0].tolist()
                assert first[1].tolist() == second[1].tolist()


def test_on_a_zipf_corpus_the_pruned_search_reads_far_fewer_postings() -> None:
    generator = np.random.default_rng(5)
    vocabulary = np.array([f"t{i}" for i in range(5000)])
    corpus = [" ".join(vocabulary[np.minimum(generator.zipf(1.3, 30) - 1, 4999)]) for _ in range(20_000)]
    index = KeywordIndex()
    for first in range(0, len(corpus), 5000):
        index.add(corpus[first : first + 5000])
    mask = np.zeros(len(index), dtype=np.bool_)
    mask[::2] = True
    read = {(pruned, feedback): 0 for pruned in (True, False) for feedback in (False, True)}
    for picks in generator.zipf(1.3, (30, 4)):
        query = " ".join(vocabulary[np.minimum(picks - 1, 4999)])
        for feedback in (False, True):
            pruned, exhaustive = _searches(index, query, mask, 100, feedback=feedback)
            assert pruned[0].tolist() == exhaustive[0].tolist()
            read[True, feedback] += pruned[2]
            read[False, feedback] += exhaustive[2]
    assert read[True, False] * 2 < read[False, False]
    # Feedback's added terms are read whole (at most `FEEDBACK_POSTINGS`, a large share of 20,000 rows).
    assert read[True, True] < read[False, True]
