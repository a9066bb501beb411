"""Recall through the vector graph: the same answers as the exact scan where the graph must be exact,
the filter inside it never leaks, rows the graph does not hold yet are found, and it persists.

The graph is built from `vectors.ANN_MIN_ROWS` rows on; the tests lower that (and the build's step)
so that a few hundred rows make a graph, and wait for the build thread before they look.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from resident.actors.index_snapshot import load_snapshot, save_snapshot
from resident.memory import ann, keyword, vectors
from resident.memory.index import IndexEntry, RecallIndex
from resident.messages.memory import ReplicationState

pytestmark = pytest.mark.timeout(120)

DIM = 16
ROWS = 600
NOW = 1e9


@pytest.fixture(autouse=True)
def _small_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 200)
    monkeypatch.setattr(vectors, "BUILD_STEP", 64)
    monkeypatch.setattr(vectors, "BUILD_CHUNK", 150)


def _entry(n: int, bank: str, replication: ReplicationState = "synced", lifecycle: str = "active") -> IndexEntry:
    return IndexEntry(
        id=f"mem_{n:05d}",
        bank=bank,
        lifecycle=lifecycle,  # type: ignore[arg-type]
        replication=replication,
        occurred_at=float(n),
        recorded_at=float(n),
        text=f"note number {n} about the {'ledger' if n % 5 == 0 else 'warehouse'}",
    )


def _unit(rows: np.ndarray) -> np.ndarray:
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)
    return unit


def _home(seed: int = 3, rows: int = ROWS) -> tuple[RecallIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    matrix = _unit(rng.standard_normal((rows, DIM)))
    index = RecallIndex()
    index.add([_entry(n, f"bank{n % 2}") for n in range(rows)], matrix)
    assert index.wait_vectors_indexed(60)
    return index, matrix


def _ids(index: RecallIndex, query: np.ndarray, banks: list[str], **options: object) -> list[str]:
    hits = index.search("", query, banks, None, None, NOW, 10, semantic_weight=1.0, **options)  # type: ignore[arg-type]
    return [hit.id for hit in hits]


def test_a_home_below_the_threshold_has_no_graph_and_searches_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 10_000)
    index, _ = _home()
    assert index.graph_rows() == 0
    query = _unit(np.random.default_rng(9).standard_normal(DIM))
    assert _ids(index, query, ["bank0", "bank1"]) == _ids(index, query, ["bank0", "bank1"], exact=True)


def test_the_graph_answers_as_the_exact_scan_on_a_small_home() -> None:
    index, _ = _home()
    assert index.graph_rows() == ROWS
    rng = np.random.default_rng(11)
    for query in _unit(rng.standard_normal((20, DIM))):
        for banks in (["bank0"], ["bank0", "bank1"]):
            found = index.search("", query, banks, None, None, NOW, 10, semantic_weight=1.0)
            exact = index.search("", query, banks, None, None, NOW, 10, semantic_weight=1.0, exact=True)
            assert [(hit.id, round(hit.semantic, 6)) for hit in found] == [
                (hit.id, round(hit.semantic, 6)) for hit in exact
            ]


def test_a_bank_the_member_cannot_see_never_leaks_even_holding_the_nearest_vectors() -> None:
    rng = np.random.default_rng(5)
    query = _unit(rng.standard_normal(DIM))
    noise = _unit(rng.standard_normal((ROWS, DIM)))
    # The secret bank's rows and the withheld rows of the member's own bank all point at the query.
    close = _unit(query + 0.01 * rng.standard_normal((30, DIM)))
    entries = [_entry(n, "mine") for n in range(ROWS)]
    entries += [_entry(ROWS + n, "secret") for n in range(20)]
    entries += [_entry(ROWS + 20, "mine", replication="conflict"), _entry(ROWS + 21, "mine", replication="invalidated")]
    entries += [_entry(ROWS + 22, "mine", replication="pending_review")]
    entries += [_entry(ROWS + 23, "mine", lifecycle="superseded"), _entry(ROWS + 24, "mine", lifecycle="retracted")]
    entries += [_entry(ROWS + 25 + n, "mine") for n in range(5)]
    index = RecallIndex()
    index.add(entries, np.concatenate((noise, close)))
    assert index.wait_vectors_indexed(60)
    assert index.graph_rows() == len(entries)
    forbidden = {f"mem_{ROWS + n:05d}" for n in range(25)}
    found = _ids(index, query, ["mine"])
    assert found
    assert not set(found) & forbidden
    assert set(found[:5]) == {f"mem_{n:05d}" for n in range(ROWS + 25, ROWS + 30)}
    # Inactive rows only when asked for; withheld and secret rows never, whatever is asked.
    inactive = set(_ids(index, query, ["mine"], include_inactive=True))
    assert {"mem_00623", "mem_00624"} <= inactive
    assert not inactive & (forbidden - {"mem_00623", "mem_00624"})
    # A row withheld after the filter was first asked is withheld from then on (the kept answer is updated).
    index.set_replication(found[0], "invalidated")
    assert found[0] not in _ids(index, query, ["mine"])
    index.set_replication(found[0], "synced")
    assert found[0] in _ids(index, query, ["mine"])


def test_rows_the_graph_does_not_hold_yet_are_found() -> None:
    index, _ = _home()
    query = _unit(np.random.default_rng(21).standard_normal(DIM))
    _ids(index, query, ["bank0"])  # the filter's answer is kept before the rows below arrive
    # Fewer new rows than a build step: they wait outside the graph, scored exactly.
    index.add([_entry(ROWS + n, "bank0") for n in range(3)], np.stack([query] * 3))
    assert index.graph_rows() == ROWS
    assert set(_ids(index, query, ["bank0"])[:3]) == {f"mem_{ROWS + n:05d}" for n in range(3)}
    # A row added without a vector, whose vector comes after the graph passed it.
    index.add([_entry(ROWS + 3, "bank0")], np.zeros((1, DIM), dtype=np.float32), np.zeros(1, dtype=bool))
    index.set_vectors([f"mem_{ROWS + 3:05d}"], query[None, :] * 2)
    assert f"mem_{ROWS + 3:05d}" in _ids(index, query, ["bank0"])[:4]


def test_the_graph_persists_and_a_loaded_index_searches_and_grows_like_the_live_one(tmp_path: Path) -> None:
    live, _ = _home(seed=8)
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, live, embedder="hash", seq=7)
    loaded = load_snapshot(path, embedder="hash", last_seq=7)
    assert loaded is not None
    index: RecallIndex = loaded.index
    assert index.graph_rows() == live.graph_rows() == ROWS
    rng = np.random.default_rng(4)
    for query in _unit(rng.standard_normal((10, DIM))):
        assert _ids(index, query, ["bank0", "bank1"]) == _ids(live, query, ["bank0", "bank1"])
    more = _unit(rng.standard_normal((200, DIM)))
    for grown in (live, index):
        grown.add([_entry(ROWS + n, "bank1") for n in range(200)], more)
        assert grown.wait_vectors_indexed(60)
        assert grown.graph_rows() == ROWS + 200
    query = more[17]
    assert _ids(index, query, ["bank1"]) == _ids(live, query, ["bank1"])
    assert _ids(index, query, ["bank1"])[0] == f"mem_{ROWS + 17:05d}"


def test_keyword_scores_summed_sparsely_equal_those_summed_densely(monkeypatch: pytest.MonkeyPatch) -> None:
    index, _ = _home()
    mask = np.arange(len(index)) % 3 != 0
    answers = []
    for share in (0, 1 << 30):  # never dense, always dense
        monkeypatch.setattr(keyword, "_SPARSE_SHARE", share)
        rows, scores = index._keyword.search("ledger note about 15", mask, 50, feedback=True)
        answers.append((rows.tolist(), scores.tolist()))
    assert answers[0] == answers[1]
    assert answers[0][0]
    assert all(mask[row] for row in answers[0][0])


def test_a_torn_graph_is_built_again_and_its_rows_are_found_meanwhile() -> None:
    live, _ = _home(seed=2)
    arrays, names = live.state()
    arrays["vectors.columns"] = np.concatenate((arrays.pop("vectors.base"), arrays.pop("vectors.grown")), axis=1)
    arrays["vectors.ann"] = arrays["vectors.ann"][: len(arrays["vectors.ann"]) // 2]
    index = RecallIndex.from_state(arrays, names)
    query = _unit(np.random.default_rng(6).standard_normal(DIM))
    exact = _ids(live, query, ["bank0", "bank1"], exact=True)
    assert _ids(index, query, ["bank0", "bank1"], exact=True) == exact
    assert index.wait_vectors_indexed(60)
    assert index.graph_rows() == ROWS
    assert _ids(index, query, ["bank0", "bank1"]) == _ids(live, query, ["bank0", "bank1"])


def test_a_loaded_index_answers_exactly_while_its_graph_is_still_being_read(monkeypatch: pytest.MonkeyPatch) -> None:
    live, _ = _home(seed=5)
    arrays, names = live.state()
    arrays["vectors.columns"] = np.concatenate((arrays.pop("vectors.base"), arrays.pop("vectors.grown")), axis=1)
    reading, release = threading.Event(), threading.Event()
    read_graph = ann.Ann.from_state

    def held_read(serialised: np.ndarray) -> ann.Ann:
        reading.set()
        assert release.wait(60)
        return read_graph(serialised)

    monkeypatch.setattr(ann.Ann, "from_state", staticmethod(held_read))
    index = RecallIndex.from_state(arrays, names)
    try:
        assert reading.wait(60)
        # The graph is not in yet: every answer is the exact scan's; a row added meanwhile, its
        # vector coming after it, is added to the graph once the graph is in.
        assert index.graph_rows() == ROWS
        rng = np.random.default_rng(9)
        for query in _unit(rng.standard_normal((5, DIM))):
            assert _ids(index, query, ["bank0"]) == _ids(live, query, ["bank0"], exact=True)
        index.add([_entry(ROWS, "bank0")], np.zeros((1, DIM), dtype=np.float32), np.zeros(1, dtype=bool))
        target = _unit(rng.standard_normal(DIM))
        index.set_vectors([f"mem_{ROWS:05d}"], target[None, :])
    finally:
        release.set()
    assert index.wait_vectors_indexed(60)
    assert index.graph_rows() == ROWS + 1
    assert _ids(index, target, ["bank0"])[0] == f"mem_{ROWS:05d}"
