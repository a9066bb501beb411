"""Every wait on the store's map has a deadline: a read behind a stuck resize, a resize behind a
long read and a close behind a read give up with `StoreBusy` (or return) instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from resident.errors import StoreBusy, StoreClosed
from resident.store.gate import MapGate

DEADLINE = 0.2


@contextmanager
def held(gate: MapGate, *, exclusive: bool) -> Iterator[threading.Event]:
    """Hold `gate` (shared or exclusive) in another thread until the block ends."""
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gate.exclusive() if exclusive else gate.shared():
            entered.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(30)
    try:
        yield release
    finally:
        release.set()
        thread.join(30)


def test_a_resize_behind_a_long_read_gives_up_with_store_busy_and_lets_later_reads_in() -> None:
    gate = MapGate(DEADLINE)
    with held(gate, exclusive=False):
        with pytest.raises(StoreBusy, match="could not grow"), gate.exclusive():
            pytest.fail("the resize ran while a read held the map")
        with gate.shared():
            pass  # the failed resize no longer holds readers back


def test_a_read_behind_a_resize_gives_up_with_store_busy() -> None:
    gate = MapGate(DEADLINE)
    with held(gate, exclusive=True), pytest.raises(StoreBusy, match="retry"), gate.shared():
        pytest.fail("a read ran during a resize")
    with gate.shared():
        pass


def test_close_behind_a_read_returns_false_at_its_deadline_and_refuses_new_reads() -> None:
    gate = MapGate(DEADLINE)
    with held(gate, exclusive=False):
        assert gate.close() is False
        with pytest.raises(StoreClosed), gate.shared():
            pytest.fail("a read began after close")


def test_close_with_no_read_running_returns_true() -> None:
    gate = MapGate(DEADLINE)
    with gate.shared():
        pass
    assert gate.close() is True
