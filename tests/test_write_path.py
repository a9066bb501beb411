"""The write path of a remember: the caller shapes it, the writer commits it in a group and answers, and the
substrate takes it in behind the writer, before any read that follows."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.errors import ActorUnavailable
from resident.memory.embedding import HashEmbedder
from resident.memory.stored_vectors import vector_key
from resident.messages.memory import GetSubstrateStatus, Receipt, SubstrateStatus
from resident.messages.store import Commit, GetWriterStatistics, WriterStatistics
from resident.store.store import Outcome
from resident.store.tables import TERMS, VECTORS
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


def _substrate(rt: Runtime) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), 10.0)
    return status


def _writer(rt: Runtime) -> WriterStatistics:
    statistics: WriterStatistics = rt._internal.wiring.writer.ask(GetWriterStatistics(), 10.0)
    return statistics


def _writer_inbox(rt: Runtime) -> int:
    """Messages waiting in the writer's inbox (the writer is held inside a commit, so none is handled)."""
    ref = rt._internal.wiring.writer._ref
    assert ref is not None
    inbox = ref.actor_inbox
    assert isinstance(inbox, queue.SimpleQueue)
    return inbox.qsize()


def _hold_first_commit(
    rt: Runtime, pool: ThreadPoolExecutor, held: HeldCommit, releases: list[HeldCommit],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Future[Receipt], list[Future[Receipt]], WriterStatistics]:
    """Hold one memory's commit, then send `LATER` more; returns once all of them wait at the writer."""
    before = _writer(rt)
    releases.append(held)
    monkeypatch.setattr(rt._internal.store, "commit", held)
    deven = rt.member("deven")
    first = pool.submit(deven.remember, "the first memory holds the writer")
    assert held.entered.wait(10)
    later = [pool.submit(deven.remember, f"memory {i} arrives while the writer is busy") for i in range(LATER)]
    assert wait_until(lambda: _writer_inbox(rt) >= LATER, timeout=10.0), _writer_inbox(rt)
    return first, later, before


def test_memories_sent_while_a_commit_is_held_share_the_next_commit_and_are_recallable_when_answered(
    runtime: Runtime, pool: ThreadPoolExecutor, releases: list[HeldCommit], monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldCommit(runtime._internal.store.commit)
    first, later, before = _hold_first_commit(runtime, pool, held, releases, monkeypatch)
    held.release.set()

    receipts = [first.result(10), *(future.result(10) for future in later)]
    after = _writer(runtime)
    assert after.writes - before.writes >= 1 + LATER
    assert after.largest_commit >= LATER
    found = {hit.id for hit in runtime.member("deven").recall("memory arrives while the writer is busy", k=10)}
    assert {receipt.id for receipt in receipts[1:]} <= found


def test_a_writer_dying_mid_commit_fails_that_write_and_commits_the_memories_behind_it(
    runtime: Runtime, pool: ThreadPoolExecutor, releases: list[HeldCommit], monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldCommit(runtime._internal.store.commit, fail_first=True)
    first, later, _ = _hold_first_commit(runtime, pool, held, releases, monkeypatch)
    held.release.set()

    with pytest.raises(ActorUnavailable, match="died while committing"):
        first.result(10)
    receipts = [future.result(10) for future in later]
    assert all(receipt.replication == "pending" for receipt in receipts)
    assert runtime.statistics().child("writer").incarnation == 2
    found = {hit.id for hit in runtime.member("deven").recall("memory arrives while the writer is busy", k=10)}
    assert {receipt.id for receipt in receipts} <= found


def test_the_substrate_takes_records_of_many_commits_in_as_one_analysis_batch_before_it_reads(
    tmp_path: Path,
) -> None:
    # On a clock that never moves the substrate's timer never fires: only a read takes records in.
    clock = ManualClock()
    with open_runtime(tmp_path / "home", clock=clock) as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        receipts = [deven.remember(f"ledger export step {i} for the audit") for i in range(6)]
        waiting = _substrate(rt)
        # The status read itself took them in: each commit was published before its caller was answered.
        assert waiting.records == 6
        assert waiting.largest_batch == 6
        assert waiting.batches == 1
        hits = deven.recall("ledger export audit", k=10)
        assert {receipt.id for receipt in receipts} == {hit.id for hit in hits}


def test_the_substrate_stores_the_terms_and_hash_vectors_of_what_it_took_in(runtime: Runtime) -> None:
    receipts = [runtime.member("deven").remember(f"rotate the signing keys, step {i}") for i in range(3)]
    runtime.memory.wait_indexed()
    with runtime._internal.store.reader() as reader:
        for receipt in receipts:
            assert reader.raw(TERMS, receipt.id) is not None
            assert reader.raw(VECTORS, vector_key(HashEmbedder().name, receipt.id)) is not None
    assert _substrate(runtime).missing_vectors == 0
