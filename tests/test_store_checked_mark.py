"""Opening a store walks its data file's pages unless the file is still as a clean close left it.

The walk is what makes opening a home cost time in proportion to its size; the mark a clean close
leaves lets the next open skip it, and anything that may have changed the file since (a write by
another program, a `kill -9` after a write, damage seen while open) brings the walk back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from resident.errors import StoreCorrupted
from resident.store import faults
from resident.store.checked import CHECKED_FILE, still_checked
from resident.store.home import current_store_dir, ensure_home
from resident.store.isolation import run_isolated
from resident.store.store import Store
from tests.store_damage import data_file, make_home, scramble_pages, stored

pytestmark = pytest.mark.timeout(60)

_WRITE_THEN_WAIT = """
import sys
from pathlib import Path
from resident.store.store import Store
from tests.store_helpers import bank_created, commit
store = Store.open(Path(sys.argv[1]))
assert all(o is None or not isinstance(o, Exception) for o in store.commit([commit(bank_created("agent_core/x"))]))
print("wrote", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The deadline of each page walk `check_data_file` ran (it still runs them)."""
    walked: list[float] = []
    original = run_isolated

    def counted(work: Any, *, deadline: float) -> Any:
        walked.append(deadline)
        return original(work, deadline=deadline)

    monkeypatch.setattr(faults, "run_isolated", counted)
    return walked


def _open_close(home: Path) -> None:
    Store.open(ensure_home(home)).close()


def test_a_cleanly_closed_store_opens_without_a_walk_and_one_changed_since_is_walked(
    tmp_path: Path, walks: list[float]
) -> None:
    home = tmp_path / "home"
    _open_close(home)  # new and empty: nothing to walk, then marked at close
    assert still_checked(data_file(home))
    _open_close(home)
    assert walks == []
    # Any write by anything else moves the file's times, and the mark no longer holds.
    with data_file(home).open("r+b") as stream:
        stream.seek(0, os.SEEK_END)
        stream.write(b"\0")
    assert not still_checked(data_file(home))
    _open_close(home)
    assert len(walks) == 1
    assert still_checked(data_file(home))


def test_a_page_damaged_after_a_clean_close_is_still_refused_at_open(tmp_path: Path) -> None:
    home = tmp_path / "home"
    records = make_home(home, 30)
    assert (current_store_dir(home) / CHECKED_FILE).exists()
    row, _ = stored(home, records[0])
    scramble_pages(home, row)
    with pytest.raises(StoreCorrupted):
        Store.open(home)
    # The refused open left no mark that would let the next one in.
    assert not still_checked(data_file(home))


def test_a_store_killed_after_a_write_is_walked_at_its_next_open(tmp_path: Path, walks: list[float]) -> None:
    home = tmp_path / "home"
    _open_close(home)
    root = Path(__file__).resolve().parent.parent
    child = subprocess.Popen(
        [sys.executable, "-c", _WRITE_THEN_WAIT, str(home)], cwd=root, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "wrote"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    assert not still_checked(data_file(home))
    _open_close(home)
    assert len(walks) == 1


def test_a_store_that_saw_damage_while_open_leaves_no_mark(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _open_close(home)
    store = Store.open(ensure_home(home))
    store._corruption = "a page read back wrong"  # what a read that hit damage records
    store.close()
    assert not (current_store_dir(home) / CHECKED_FILE).exists()
