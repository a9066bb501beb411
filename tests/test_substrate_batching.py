"""The substrate's retain pipeline: memories that arrive while a batch is at the writer go on as one batch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from resident.errors import ActorUnavailable
from resident.messages.memory import GetSubstrateStatus, Receipt, SubstrateStatus
from resident.messages.store import Commit
from resident.runtime import Runtime
from resident.store.store import Outcome
from tests.memory_helpers import open_runtime, wait_until

LATER = 5


class HeldCommit:
    """Stands in for `Store.commit`: holds the first batch until released, then commits or fails it."""

    def __init__(self, commit: Callable[[Sequence[Commit]], list[Outcome]], *, fail_first: bool = False) -> None:
        self._commit = commit
        self._fail_first = fail_first
        self._armed = True
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, writes: Sequence[Commit]) -> list[Outcome]:
        if self._armed:
            self._armed = False
            self.entered.set()
            if not self.release.wait(30):
                raise AssertionError("the held commit was never released")
            if self._fail_first:
                # Not an outcome but an escape from `Store.commit`: the writer dies of it.
                raise KeyboardInterrupt("the writer is interrupted while it commits")
        return self._commit(writes)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    with open_runtime(tmp_path / "home") as rt:
        rt.memory.enable()
        rt.member("deven").remember("a warm-up write creates deven's bank")
        yield rt


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=LATER + 1) as executor:
        yield executor


@pytest.fixture
def releases() -> Iterator[list[HeldCommit]]:
    """Held commits to release when the test ends, so a failing test does not leave the writer stuck."""
    held: list[HeldCommit] = []
    yield held
    for commit in held:
        commit.release.set()


def _status(rt: Runtime) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), 10.0)
    return status


def _hold_first_batch(
    rt: Runtime, pool: ThreadPoolExecutor, held: HeldCommit, releases: list[HeldCommit],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Future[Receipt], list[Future[Receipt]], SubstrateStatus]:
    """Hold one memory's commit, then send `LATER` more; returns once all of them wait in the substrate."""
    releases.append(held)
    monkeypatch.setattr(rt._internal.store, "commit", held)
    deven = rt.member("deven")
    first = pool.submit(deven.remember, "the first memory holds the writer")
    assert held.entered.wait(10)
    later = [pool.submit(deven.remember, f"memory {i} arrives while the writer is busy") for i in range(LATER)]
    assert wait_until(lambda: _status(rt).queued == LATER, timeout=10.0), _status(rt)
    waiting = _status(rt)
    assert waiting.in_flight == 1
    return first, later, waiting


def test_memories_arriving_while_a_batch_is_at_the_writer_wait_and_go_as_one_batch(
    runtime: Runtime, pool: ThreadPoolExecutor, releases: list[HeldCommit], monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldCommit(runtime._internal.store.commit)
    first, later, waiting = _hold_first_batch(runtime, pool, held, releases, monkeypatch)
    held.release.set()

    receipts = [first.result(10), *(future.result(10) for future in later)]
    done = _status(runtime)
    assert (done.batches, done.largest_batch) == (waiting.batches + 1, LATER)
    assert (done.queued, done.in_flight) == (0, 0)
    found = {hit.id for hit in runtime.member("deven").recall("memory arrives while the writer is busy", k=10)}
    assert {receipt.id for receipt in receipts[1:]} <= found


def test_a_writer_dying_with_the_batch_in_flight_does_not_hold_back_the_memories_behind_it(
    runtime: Runtime, pool: ThreadPoolExecutor, releases: list[HeldCommit], monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldCommit(runtime._internal.store.commit, fail_first=True)
    first, later, waiting = _hold_first_batch(runtime, pool, held, releases, monkeypatch)
    held.release.set()

    with pytest.raises(ActorUnavailable, match="died while committing"):
        first.result(10)
    receipts = [future.result(10) for future in later]
    assert all(receipt.replication == "pending" for receipt in receipts)
    done = _status(runtime)
    assert (done.batches, done.largest_batch, done.in_flight) == (waiting.batches + 1, LATER, 0)
    assert runtime.statistics().child("writer").incarnation == 2
