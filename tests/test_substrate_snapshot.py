"""The persisted recall index: a restart loads it and replays the log after it; a torn or stale one is
never used, including one whose writer was killed (`kill -9`) in the middle of writing it.

Each crash is a real process killed by SIGKILL, so no teardown persists anything on its way out.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from resident import Runtime
from resident.actors.index_snapshot import snapshot_path
from resident.actors.substrate import _SaveIndex
from resident.memory import ann, vectors
from resident.messages.memory import GetSubstrateStatus, Receipt, SubstrateStatus
from tests.memory_helpers import open_runtime, wait_until
from tests.store_helpers import open_home

pytestmark = pytest.mark.timeout(180)

FIRST = 200
LATER = 50
QUERY = "ledger export warehouse"
NEW_TEXT = "the ledger export moved to the northern warehouse after the audit"


def _status(rt: Runtime) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus())
    return status


def _snapshot(home: Path) -> Path:
    with open_home(home) as store:
        return snapshot_path(store.path)


def _first_home(home: Path) -> str:
    """`FIRST` memories, persisted at close; the id of the one `QUERY` finds first."""
    with open_runtime(home) as rt:
        rt.memory.enable()
        items = [{"text": f"routine note {n} on the standup rota"} for n in range(FIRST - 1)]
        items.append({"text": "the quarterly ledger export moved to the eastern warehouse"})
        outcomes = rt.member("deven").remember_many(items)
        assert all(isinstance(outcome, Receipt) for outcome in outcomes)
        last = outcomes[-1]
        assert isinstance(last, Receipt)
        return last.id


# A child that writes past the persisted index and then dies without persisting it again: killed
# by SIGKILL either right away or, with `--mid-persist`, half-way through writing the new copy.
_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import numpy as np
    from resident import Runtime
    from resident.actors import index_snapshot
    from resident.actors.substrate import _SaveIndex

    home, retract, new_text, later, mode = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]

    real_savez = np.savez

    def half_then_kill(file, **arrays):
        import io
        whole = io.BytesIO()
        real_savez(whole, **arrays)
        data = whole.getvalue()
        file.write(data[: len(data) // 2])
        file.flush()
        os.fsync(file.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

    rt = Runtime.open(home, realm="none")
    deven = rt.member("deven")
    deven.remember_many([{"text": f"later note {n} on the coffee rota"} for n in range(later)])
    new = deven.remember(new_text)
    deven.forget(retract)
    rt.memory.wait_indexed()
    print(new.id, flush=True)
    if mode == "mid-persist":
        index_snapshot.np.savez = half_then_kill
        rt.close()
    if mode == "mid-mapped":
        # Every array in a file of its own, and the background save killed half-way through one.
        real_save_columns = index_snapshot._save_columns

        def half_a_column_then_kill(final, first, second=None):
            real_save_columns(final, first, second)
            torn = final.with_name(final.name + ".tmp")
            data = final.read_bytes()
            final.unlink()
            torn.write_bytes(data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)

        index_snapshot._MAPPED_BYTES = 1
        index_snapshot._save_columns = half_a_column_then_kill
        rt._internal.wiring.substrate.tell(_SaveIndex())
        import threading
        threading.Event().wait(60)  # the I/O thread kills this process
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _crash_after_writing(home: Path, retract: str, mode: str) -> str:
    """Run the child on `home`; the id of the memory it wrote last. It must die of SIGKILL."""
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(home), retract, NEW_TEXT, str(LATER), mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    return child.stdout.split()[0]


def _check_recovered(home: Path, retracted: str, new_id: str) -> SubstrateStatus:
    with open_runtime(home) as rt:
        found = [hit.id for hit in rt.member("deven").recall(QUERY, k=5)]
        status = _status(rt)
    assert new_id in found
    assert retracted not in found
    assert status.records == FIRST + LATER + 1
    assert status.by_lifecycle["retracted"] == 1
    return status


def test_a_restart_loads_the_persisted_index_and_replays_what_was_written_after_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    retracted = _first_home(home)
    persisted = _snapshot(home).read_bytes()
    new_id = _crash_after_writing(home, retracted, "kill")
    # The killed process never persisted its index: what lies beside the store is the old copy.
    assert _snapshot(home).read_bytes() == persisted
    status = _check_recovered(home, retracted, new_id)
    assert status.index_from == "snapshot"
    assert status.replayed >= LATER + 2


def test_a_kill_while_persisting_leaves_the_previous_index_whole_and_the_next_start_replays_past_it(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    retracted = _first_home(home)
    snapshot = _snapshot(home)
    persisted = snapshot.read_bytes()
    new_id = _crash_after_writing(home, retracted, "mid-persist")
    torn = snapshot.with_name(f"{snapshot.name}.tmp")
    assert torn.exists()
    assert torn.stat().st_size > 0
    assert snapshot.read_bytes() == persisted
    status = _check_recovered(home, retracted, new_id)
    assert status.index_from == "snapshot"
    # That start persisted the index again, over the torn file: the next start replays nothing but
    # the usage count of the recall above (written as the runtime closed, after the index was).
    assert not torn.exists()
    status = _check_recovered(home, retracted, new_id)
    assert status.index_from == "snapshot"
    assert status.replayed <= 1


def test_a_kill_while_the_background_save_writes_a_mapped_array_leaves_the_previous_index_whole(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    retracted = _first_home(home)
    snapshot = _snapshot(home)
    persisted = snapshot.read_bytes()
    new_id = _crash_after_writing(home, retracted, "mid-mapped")
    assert list(snapshot.parent.glob(f"{snapshot.name}.*.npy.tmp"))
    assert snapshot.read_bytes() == persisted
    status = _check_recovered(home, retracted, new_id)
    assert status.index_from == "snapshot"
    assert not list(snapshot.parent.glob(f"{snapshot.name}.*.npy.tmp"))


def test_a_damaged_persisted_index_is_not_used_and_the_index_is_built_from_the_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    retracted = _first_home(home)
    new_id = _crash_after_writing(home, retracted, "kill")
    snapshot = _snapshot(home)
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[: len(data) * 2 // 3])
    status = _check_recovered(home, retracted, new_id)
    assert status.index_from == "store"


def test_an_index_persisted_past_the_end_of_the_store_s_log_is_stale_and_not_used(tmp_path: Path) -> None:
    home = tmp_path / "home"
    retracted = _first_home(home)
    earlier = tmp_path / "earlier"
    shutil.copytree(home, earlier)
    _crash_after_writing(home, retracted, "kill")
    with open_runtime(home) as rt:
        assert _status(rt).records == FIRST + LATER + 1
    # The earlier home's store, with the grown home's index beside it (a store restored from a copy).
    shutil.copyfile(_snapshot(home), _snapshot(earlier))
    with open_runtime(earlier) as rt:
        status = _status(rt)
        found = [hit.id for hit in rt.member("deven").recall(QUERY, k=5)]
    assert (status.index_from, status.records) == ("store", FIRST)
    assert found[:1] == [retracted]


def test_a_close_saves_the_vector_graph_grown_since_the_last_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The graph grows on a thread of its own after the records came, so the last save may predate
    # it; a close must save again, or every start reads a graph short of rows and builds the rest.
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 100)
    monkeypatch.setattr(vectors, "BUILD_STEP", 32)
    monkeypatch.setattr(vectors, "BUILD_CHUNK", 64)
    training, release, added = threading.Event(), threading.Event(), threading.Event()
    gather, add = vectors.VectorIndex._gather, ann.Ann.add

    def held_gather(index: vectors.VectorIndex, rows: np.ndarray) -> np.ndarray:
        # The build thread reads its rows before it takes the graph's lock: held there, it lets a save through.
        if threading.current_thread().name == "resident-ann" and not training.is_set():
            training.set()
            assert release.wait(60)
        return gather(index, rows)

    def noted_add(graph: ann.Ann, rows: np.ndarray, vectors_: np.ndarray) -> None:
        add(graph, rows, vectors_)
        added.set()

    monkeypatch.setattr(vectors.VectorIndex, "_gather", held_gather)
    monkeypatch.setattr(ann.Ann, "add", noted_add)
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        rt.member("deven").remember_many([{"text": f"note {n} on the ledger rota"} for n in range(FIRST)])
        snapshot = snapshot_path(rt._internal.store.path)
        assert training.wait(60), "the graph's build never started"
        rt._internal.wiring.substrate.tell(_SaveIndex())
        assert wait_until(lambda: _persisted(snapshot) == (FIRST, 0), 60), "the save without a graph never landed"
        release.set()
        assert added.wait(60), "the graph never took a row"
    persisted = _persisted(snapshot)
    assert persisted is not None
    assert persisted[1] >= 64


def _persisted(snapshot: Path) -> tuple[int, int] | None:
    """The persisted index's records, and the rows its graph covers (None while there is no snapshot).

    Read from the file, not loaded: a loaded index would build its own graph."""
    if not snapshot.exists():
        return None
    with np.load(snapshot, allow_pickle=False) as stored:
        header = json.loads(stored["header"].tobytes())
        has_graph = "vectors.ann" in stored.files or "vectors.ann" in header["mapped"]
        return len(stored["lifecycle"]), int(stored["vectors.ann_covered"][0]) if has_graph else 0
