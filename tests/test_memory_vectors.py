"""The vector index: exact cosine top-k over allowed rows that have a vector, missing rows filled later."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.errors import InvalidInput
from resident.memory.allowed import AllowedRows
from resident.memory.vectors import VectorIndex


def _unit(rows: np.ndarray) -> np.ndarray:
    return np.asarray(rows / np.linalg.norm(rows, axis=-1, keepdims=True))


def test_search_returns_the_most_similar_rows_first_with_their_cosines() -> None:
    index = VectorIndex()
    index.append(3, np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32))
    rows, scores = index.search(np.array([1.0, 0.0]), None, 2)
    assert rows.tolist() == [0, 1]
    assert scores.tolist() == pytest.approx([1.0, 0.6])


def test_rows_are_stored_at_unit_length_so_scores_are_cosines() -> None:
    index = VectorIndex()
    index.append(2, np.array([[3.0, 4.0], [0.0, -10.0]], dtype=np.float32))
    rows, scores = index.search(np.array([6.0, 8.0]), None, 5)
    assert rows.tolist() == [0]
    assert scores.tolist() == pytest.approx([1.0])


def test_only_rows_with_a_positive_cosine_are_returned() -> None:
    index = VectorIndex()
    index.append(3, np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]], dtype=np.float32))
    rows, _ = index.search(np.array([1.0, 0.0]), None, 5)
    assert rows.tolist() == [0]


def test_rows_without_a_vector_are_skipped_until_one_is_set() -> None:
    index = VectorIndex()
    index.append(2, None)
    index.append(2, np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), np.array([True, False]))
    assert index.missing().tolist() == [0, 1, 3]
    assert index.present.tolist() == [False, False, True, False]
    assert index.search(np.array([0.0, 1.0]), None, 5)[0].tolist() == []
    index.set([1, 3], np.array([[0.0, 1.0], [0.6, 0.8]], dtype=np.float32))
    assert index.missing().tolist() == [0]
    assert index.search(np.array([0.0, 1.0]), None, 5)[0].tolist() == [1, 3]


def test_a_zero_or_non_finite_vector_counts_as_pointing_nowhere() -> None:
    index = VectorIndex()
    index.append(3, np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0]], dtype=np.float32))
    assert index.search(np.array([1.0, 1.0]), None, 5)[0].tolist() == [2]
    assert index.search(np.array([0.0, 0.0]), None, 5)[0].tolist() == []


def test_the_dimension_is_fixed_by_the_first_vectors() -> None:
    index = VectorIndex()
    index.append(1, None)
    before = index.dim
    index.append(1, np.ones((1, 3), dtype=np.float32))
    assert (before, index.dim) == (None, 3)
    with pytest.raises(InvalidInput):
        index.append(1, np.ones((1, 4), dtype=np.float32))
    with pytest.raises(InvalidInput):
        index.set([0], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(InvalidInput):
        index.search(np.ones(4), None, 5)
    assert len(index) == 2


def test_malformed_appends_and_sets_change_nothing() -> None:
    index = VectorIndex()
    index.append(1, np.ones((1, 2), dtype=np.float32))
    with pytest.raises(InvalidInput):
        index.append(2, np.ones((3, 2), dtype=np.float32))
    with pytest.raises(InvalidInput):
        index.append(2, np.ones((2, 2), dtype=np.float32), np.array([True]))
    with pytest.raises(InvalidInput):
        index.set([5], np.ones((1, 2), dtype=np.float32))
    assert len(index) == 1
    assert index.missing().tolist() == []


def test_the_index_grows_past_its_first_capacity() -> None:
    rng = np.random.default_rng(1)
    vectors = _unit(rng.standard_normal((3000, 8))).astype(np.float32)
    index = VectorIndex()
    for start in range(0, 3000, 700):
        index.append(len(vectors[start : start + 700]), vectors[start : start + 700])
    rows, _ = index.search(vectors[2999], None, 1)
    assert len(index) == 3000
    assert rows.tolist() == [2999]


@settings(deadline=None)
@given(
    st.integers(1, 60),
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
    st.integers(1, 20),
)
def test_search_equals_brute_force_over_allowed_rows_with_vectors(count: int, dim: int, seed: int, limit: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim)).astype(np.float32)
    present = rng.random(count) < 0.8
    mask = rng.random(count) < 0.7
    query = rng.standard_normal(dim).astype(np.float32)
    index = VectorIndex()
    index.append(count, vectors, present)
    rows, scores = index.search(query, mask, limit)

    cosines = _unit(vectors.astype(np.float64)) @ (query / np.linalg.norm(query))
    eligible = [row for row in range(count) if present[row] and mask[row] and cosines[row] > 0]
    expected = sorted(eligible, key=lambda row: -cosines[row])[:limit]
    assert rows.tolist() == expected
    # A row whose squared length is within 1e-4 of 1 is stored as given (embedders return unit
    # rows), so its cosine may be off by up to about 5e-5.
    assert scores.tolist() == pytest.approx(cosines[expected].tolist(), abs=1e-4)


def test_a_half_written_vector_of_a_row_without_one_is_never_read() -> None:
    # A save shares the live columns (it does not copy a gigabyte), so it may catch a row's vector
    # being filled in; that row is absent in the saved flags, and no search may read its column.
    columns = np.array([[1.0, 0.0, 0.6], [0.0, 1.0, 0.8]], dtype=np.float32)
    index = VectorIndex.from_state({"present": np.array([True, True, False]), "columns": columns})
    query = np.array([0.6, 0.8], dtype=np.float32)
    rows, _ = index.search(query, None, 3)
    assert 2 not in rows.tolist()
    found = index.nearest(query, AllowedRows(np.ones(3, dtype=np.bool_)), 3)
    assert found is not None
    assert 2 not in found[0].tolist()
    assert index.cosines(query, np.array([2], dtype=np.int64)).tolist() == [0.0]


def test_the_state_a_save_takes_is_not_reached_by_later_changes() -> None:
    index = VectorIndex()
    index.append(3, np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], dtype=np.float32), np.array([True, True, False]))
    state = index.state()
    kept = {key: value.copy() for key, value in state.items()}
    index.set([2], np.array([[0.6, 0.8]], dtype=np.float32))
    index.append(2000, np.ones((2000, 2), dtype=np.float32))
    assert state["present"].tolist() == kept["present"].tolist() == [True, True, False]
    # The rows that were present then keep their vectors; the filled-in row may be caught half-way.
    assert np.array_equal(state["grown"][:, :2], kept["grown"][:, :2])
