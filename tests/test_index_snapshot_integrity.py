"""The persisted recall index's mapped files are checked: a truncated one is refused at load, a forged one
(same size, other bytes) is caught by the check after the load and the index is built from the store.

Every array is mapped here (`_MAPPED_BYTES` lowered), so a home of a few hundred records has the
mapped files a home of a million has.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from resident.actors import index_snapshot
from resident.actors.index_snapshot import load_snapshot, save_snapshot, snapshot_path, verify_snapshot
from resident.memory.index import IndexEntry, RecallIndex
from resident.messages.memory import GetSubstrateStatus, Receipt, SubstrateStatus
from tests.memory_helpers import open_runtime, wait_until
from tests.store_helpers import open_home

pytestmark = pytest.mark.timeout(120)

QUERY = "ledger export warehouse"


@pytest.fixture(autouse=True)
def _map_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_snapshot, "_MAPPED_BYTES", 1)


def _index(count: int) -> RecallIndex:
    entries = [
        IndexEntry(
            id=f"mem_{n:04d}",
            bank="bank0",
            lifecycle="active",
            replication="pending",
            occurred_at=float(n),
            recorded_at=float(n),
            text=f"ledger note {n} on the audit",
        )
        for n in range(count)
    ]
    index = RecallIndex()
    index.add(entries, np.ones((count, 8), dtype=np.float32), np.ones(count, dtype=bool))
    return index


def _mapped_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.*.npy"))


def _forge(file: Path) -> None:
    """Same size, other bytes at the end (the array's data, not its header)."""
    data = bytearray(file.read_bytes())
    data[-16:] = bytes(byte ^ 0xFF for byte in data[-16:])
    file.write_bytes(bytes(data))


def test_a_saved_snapshot_verifies_and_a_forged_mapped_file_does_not(tmp_path: Path) -> None:
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, _index(50), embedder="hash", seq=3)
    loaded = load_snapshot(path, embedder="hash", last_seq=3)
    assert loaded is not None
    assert loaded.unverified
    assert verify_snapshot(loaded.unverified) == ""
    forged = _mapped_files(path)[0]
    _forge(forged)
    # The load checks sizes only (a stat); the contents are the background check's.
    again = load_snapshot(path, embedder="hash", last_seq=3)
    assert again is not None
    assert forged.name in verify_snapshot(again.unverified)


def test_a_truncated_mapped_file_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "store.recall-index.npz"
    save_snapshot(path, _index(50), embedder="hash", seq=3)
    torn = _mapped_files(path)[-1]
    torn.write_bytes(torn.read_bytes()[:-8])
    assert load_snapshot(path, embedder="hash", last_seq=3) is None


def _status(rt: object) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus())  # type: ignore[attr-defined]
    return status


def test_a_forged_mapped_file_is_caught_after_the_load_and_the_index_rebuilt_from_the_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        items = [{"text": f"routine note {n} on the standup rota"} for n in range(199)]
        items.append({"text": "the quarterly ledger export moved to the eastern warehouse"})
        outcomes = rt.member("deven").remember_many(items)
        last = outcomes[-1]
        assert isinstance(last, Receipt)
    with open_home(home) as store:
        path = snapshot_path(store.path)
    files = _mapped_files(path)
    assert files
    # Contents only (the term frequencies, the vectors): the load itself accepts the files.
    forged = [file for file in files if file.name.endswith((".keyword.tf.npy", ".vectors.columns.npy"))]
    assert len(forged) == 2
    for file in forged:
        _forge(file)
    with open_runtime(home) as rt:
        assert wait_until(lambda: _status(rt).index_from == "store", timeout=60)
        found = [hit.id for hit in rt.member("deven").recall(QUERY, k=5)]
        status = _status(rt)
    assert found[:1] == [last.id]
    assert status.records == 200
