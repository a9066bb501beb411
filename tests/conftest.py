"""Fixtures shared by the whole suite."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pykka
import pytest

# A real PostgreSQL, started once per session where a test asks for it (Realm's PostgreSQL backend).
from tests.postgres_support import postgres  # noqa: F401 - a fixture, registered by being imported here

# How long a test's leftover threads get to finish after it before they count as leaked.
THREAD_EXIT_DEADLINE = 5.0


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves threads running; stop the pykka actors it left first.

    Threads are compared by identity, so idle daemon threads that libraries started before the
    test (or that wider-scoped fixtures own) are tolerated. Threads that are merely finishing
    get a bounded deadline to end.
    """
    before = set(threading.enumerate())
    yield
    with contextlib.suppress(pykka.Timeout):  # an actor that does not stop shows up as a leaked thread
        pykka.ActorRegistry.stop_all(timeout=THREAD_EXIT_DEADLINE)
    deadline = time.monotonic() + THREAD_EXIT_DEADLINE
    current = threading.current_thread()
    # Dummy threads (foreign threads that called into Python) cannot be joined and never end.
    new = [
        t
        for t in threading.enumerate()
        if t not in before and t is not current and not isinstance(t, threading._DummyThread)
    ]
    for thread in new:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    leaked = [thread.name for thread in new if thread.is_alive()]
    assert not leaked, f"threads still running {THREAD_EXIT_DEADLINE:g} s after the test: {leaked}"


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of the test's own for what the code under test puts in the temporary folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder
