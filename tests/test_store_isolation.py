"""Reading in a child process: rows emitted before the child dies are kept, its death by a signal
or past its deadline is reported, and it never keeps a descriptor of the parent's open."""

from __future__ import annotations

import fcntl
import os
import signal
from collections.abc import Callable
from pathlib import Path

from resident.store.isolation import Emit, run_isolated


def test_rows_emitted_before_an_abort_are_kept_and_the_abort_is_reported() -> None:
    def work(emit: Emit, note: Callable[[str], None]) -> None:
        emit(b"k1", b"v1")
        note("walked one")
        emit(b"k2", b"v2")
        os.abort()

    result = run_isolated(work, deadline=30)
    assert result.rows == [(b"k1", b"v1"), (b"k2", b"v2")]
    assert result.notes == ["walked one"]
    assert result.crash == "reading it crashed the LMDB engine (SIGABRT)"


def test_a_child_past_its_deadline_is_killed_and_reported() -> None:
    def work(emit: Emit, note: Callable[[str], None]) -> None:
        emit(b"k", b"v")
        signal.pause()  # a walk going round a loop of damaged pages

    result = run_isolated(work, deadline=0.3)
    assert result.rows == [(b"k", b"v")]
    assert result.crash.startswith("reading it took more than")


def test_an_exception_in_the_child_comes_back_as_a_note() -> None:
    def work(emit: Emit, note: Callable[[str], None]) -> None:
        raise ValueError("no such table")

    result = run_isolated(work, deadline=30)
    assert result.notes == ["ValueError: no such table"]
    assert result.crash == ""


def test_the_child_holds_no_lock_of_the_parent(tmp_path: Path) -> None:
    lock = os.open(tmp_path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:

        def work(emit: Emit, note: Callable[[str], None]) -> None:
            note("open" if _is_open(lock) else "closed")

        assert run_isolated(work, deadline=30).notes == ["closed"]
    finally:
        os.close(lock)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True
