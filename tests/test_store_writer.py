"""The group-commit writer: batches really share commits, a refusal stays alone, failures fail closed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import lmdb
import pytest

import resident.store.store as store_module
from resident.errors import (
    ActorUnavailable,
    AskTimeout,
    InvalidInput,
    MapFull,
    MemoryDisabled,
    StoreFailed,
    UnknownBank,
    WriteFailed,
)
from resident.messages.store import Commit, Committed
from resident.store.store import Outcome, Store
from resident.store.tables import BANKS, RECORDS, TERMS
from resident.supervisor import Address, ThreadReply
from tests.memory_helpers import wait_until
from tests.store_helpers import (
    admitted,
    bank_created,
    commit,
    memory_off,
    memory_on,
    open_home,
    prepare,
    running_writer,
    statistics,
)


class GatedCommit:
    """Stands in for `Store.commit`: holds the first batch until released, records every batch size."""

    def __init__(self, store: Store) -> None:
        self._commit = store.commit
        self.entered = threading.Event()
        self.release = threading.Event()
        self.batches: list[int] = []
        self._armed = True

    def __call__(self, writes: Sequence[Commit]) -> list[Outcome]:
        self.batches.append(len(writes))
        if self._armed:
            self._armed = False
            self.entered.set()
            if not self.release.wait(30):
                raise AssertionError("the gate was never released")
        return self._commit(writes)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def store(home: Path) -> Iterator[Store]:
    with open_home(home) as opened:
        prepare(opened)
        yield opened


@pytest.fixture
def writer(store: Store) -> Iterator[Address]:
    with running_writer(store) as address:
        yield address


@pytest.fixture
def gate(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[GatedCommit]:
    gated = GatedCommit(store)
    monkeypatch.setattr(store, "commit", gated)
    try:
        yield gated
    finally:
        gated.release.set()


def _one_batch(writer: Address, gate: GatedCommit, writes: list[Commit]) -> list[tuple[Any, BaseException | None]]:
    """Commit `writes` as ONE batch: plug the writer with a first commit, queue them, release."""
    plug = ThreadReply("plug")
    writer.tell(commit(memory_on()), plug)
    assert gate.entered.wait(10)
    replies = [ThreadReply(f"write {index}") for index in range(len(writes))]
    for write, reply in zip(writes, replies, strict=True):
        writer.tell(write, reply)
    gate.release.set()
    plug.wait(10)
    results: list[tuple[Any, BaseException | None]] = []
    for reply in replies:
        try:
            results.append((reply.wait(10), None))
        except Exception as error:
            results.append((None, error))
    assert gate.batches[:2] == [1, len(writes)]
    return results


def _record_ids(store: Store) -> set[str]:
    with store.reader() as reader:
        return {key for key, _ in reader.items(RECORDS)}


# -- grouping ------------------------------------------------------------------------------------


def derived(record_id: str) -> Commit:
    """A write of derived entries alone (no event), as the substrate tells them: nobody waits for it."""
    return Commit(events=(), terms=((record_id, b"\x00\x01"),))


def stored_terms(store: Store) -> set[str]:
    with store.reader() as reader:
        return {key for key, _ in reader.items(TERMS)}


def test_derived_entries_nobody_waits_for_share_the_next_waited_commit(store: Store, gate: GatedCommit) -> None:
    with running_writer(store, unwaited_delay=3_600.0) as writer:
        before = statistics(writer)  # the gate lets this first (empty) flush through
        writer.tell(derived("mem_a"))
        writer.tell(derived("mem_b"))
        gate.release.set()
        reply = ThreadReply("remember")
        writer.tell(commit(admitted("mem_a")), reply)
        reply.wait(10)
        assert gate.batches == [3]
        after = statistics(writer)
        assert (after.commits - before.commits, after.writes - before.writes) == (1, 3)
        assert stored_terms(store) == {"mem_a", "mem_b"}


def test_derived_entries_alone_are_committed_after_the_delay_without_a_waited_write(store: Store) -> None:
    with running_writer(store, unwaited_delay=0.0) as writer:
        writer.tell(derived("mem_c"))
        assert wait_until(lambda: stored_terms(store) == {"mem_c"}, 10.0)
        assert statistics(writer).commits == 1


def test_usage_counts_and_other_writes_with_events_are_never_held(store: Store) -> None:
    with running_writer(store, unwaited_delay=3_600.0) as writer:
        writer.tell(commit(admitted("mem_d")))
        assert wait_until(lambda: "mem_d" in _record_ids(store), 10.0)


def test_concurrent_thread_writers_share_commits(store: Store, writer: Address) -> None:
    before = statistics(writer)
    failures: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for index in range(8):
                result = writer.ask(commit(admitted(f"t{worker}-{index}")), 30)
                assert isinstance(result, Committed)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(64)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    after = statistics(writer)
    assert failures == []
    writes, commits = after.writes - before.writes, after.commits - before.commits
    assert writes == 64 * 8
    assert writes / commits > 1, (writes, commits)
    assert after.largest_commit > 1
    assert len(_record_ids(store)) == 64 * 8


def test_a_refused_write_fails_alone_and_the_rest_of_its_batch_commits(
    store: Store, writer: Address, gate: GatedCommit
) -> None:
    writes = [
        commit(admitted("good-1")),
        commit(admitted("lost", "no/such/bank")),
        commit(admitted("good-2")),
        commit(admitted("good-1")),  # a duplicate id
        commit(admitted("good-3")),
    ]
    results = _one_batch(writer, gate, writes)
    assert [type(error) for _, error in results] == [type(None), UnknownBank, type(None), InvalidInput, type(None)]
    assert all(isinstance(value, Committed) for value, error in results if error is None)
    assert _record_ids(store) == {"good-1", "good-2", "good-3"}


def test_a_record_id_committed_earlier_is_refused_and_the_stored_record_and_log_stay_as_they_were(
    store: Store, writer: Address
) -> None:
    assert isinstance(writer.ask(commit(admitted("kept", at=2.0)), 10), Committed)
    with store.reader() as reader:
        before = (reader.get(RECORDS, "kept"), len(list(reader.events())))
    # Alone, and as the second event of a write whose first event (a new bank) is applied first.
    for write in (commit(admitted("kept", at=3.0)), commit(bank_created("agent_core/alice"), admitted("kept", at=3.0))):
        with pytest.raises(InvalidInput, match="kept already exists"):
            writer.ask(write, 10)
    with store.reader() as reader:
        assert (reader.get(RECORDS, "kept"), len(list(reader.events()))) == before
        assert reader.get(BANKS, "agent_core/alice") is None


def test_writes_refused_while_memory_is_off_fail_alone(store: Store, writer: Address, gate: GatedCommit) -> None:
    writes = [
        commit(admitted("before-off")),
        commit(memory_off()),
        commit(admitted("while-off")),
        commit(memory_on(at=5.0)),
        commit(admitted("after-on")),
    ]
    results = _one_batch(writer, gate, writes)
    errors = [error for _, error in results]
    assert isinstance(errors[2], MemoryDisabled)
    assert "resident memory enable" in str(errors[2])
    assert [error is None for error in errors] == [True, True, False, True, True]
    assert _record_ids(store) == {"before-off", "after-on"}


def test_a_failed_transaction_fails_every_write_in_it_and_commits_none(
    store: Store, writer: Address, gate: GatedCommit, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = store_module._apply_write

    def poisoned(txn: lmdb.Transaction, dbs: dict[str, Any], write: Commit, *rest: Any) -> Any:
        if any(getattr(getattr(event, "record", None), "id", "") == "poison" for event in write.events):
            raise RuntimeError("a projection blew up")
        return original(txn, dbs, write, *rest)

    monkeypatch.setattr(store_module, "_apply_write", poisoned)
    results = _one_batch(writer, gate, [commit(admitted("a")), commit(admitted("poison")), commit(admitted("b"))])
    assert all(isinstance(error, WriteFailed) for _, error in results)
    assert "nothing in it was committed" in str(results[0][1])
    assert _record_ids(store) == set()
    # Not an LMDB error: the store keeps taking writes.
    assert isinstance(writer.ask(commit(admitted("c")), 10), Committed)
    assert _record_ids(store) == {"c"}
    assert statistics(writer).failed_commits == 1


def test_a_writer_killed_mid_commit_answers_its_callers_and_is_restarted(
    store: Store, writer: Address, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit_once = store.commit

    def exits(writes: Sequence[Commit]) -> list[Outcome]:
        monkeypatch.setattr(store, "commit", commit_once)
        raise SystemExit("interrupted")

    monkeypatch.setattr(store, "commit", exits)
    started = time.monotonic()
    with pytest.raises(ActorUnavailable, match="died while committing") as caught:
        writer.ask(commit(admitted("r1")), 20)
    assert not isinstance(caught.value, AskTimeout)
    assert time.monotonic() - started < 10
    # The next incarnation takes writes again.
    assert isinstance(writer.ask(commit(admitted("r2")), 20), Committed)
    assert _record_ids(store) == {"r2"}


# -- a full map, other LMDB errors ---------------------------------------------------------------


def test_a_full_map_grows_and_the_write_is_retried(home: Path) -> None:
    small = 256 * 1024
    with open_home(home, map_size=small) as store:
        prepare(store)
        with running_writer(store) as writer:
            for index in range(400):
                assert isinstance(writer.ask(commit(admitted(f"r{index}")), 30), Committed)
        assert store.map_size > small
        assert len(_record_ids(store)) == 400
    with open_home(home, map_size=small) as store:
        assert len(_record_ids(store)) == 400


def test_a_batch_many_times_the_map_grows_it_until_the_batch_fits(home: Path) -> None:
    small = 256 * 1024
    with open_home(home, map_size=small) as store:
        prepare(store)
        outcomes = store.commit([commit(admitted(f"r{index}")) for index in range(1000)])
        assert all(error is None for _, error, _ in outcomes)
        assert store.map_size >= 8 * small
        assert len(_record_ids(store)) == 1000


def test_a_map_at_its_limit_refuses_the_batch_as_map_full_and_stays_open_for_writes_that_fit(home: Path) -> None:
    small = 256 * 1024
    with open_home(home, map_size=small, max_map_size=2 * small) as store:
        prepare(store)
        outcomes = store.commit([commit(admitted(f"r{index}")) for index in range(1000)])
        assert all(isinstance(error, MapFull) for _, error, _ in outcomes)
        refusal = outcomes[0][1]
        assert isinstance(refusal, MapFull)
        assert "limit of 512 KiB" in str(refusal)
        assert refusal.needed > 1000 * 1024
        assert not store.has_room(refusal.needed)
        assert _record_ids(store) == set()
        assert store.failure == ""
        ((committed, error, _),) = store.commit([commit(admitted("small"))])
        assert error is None
        assert isinstance(committed, Committed)


def test_an_lmdb_error_closes_the_store_for_writes_until_it_is_reopened(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = store_module._apply_write
    broken = {"on": True}

    def lmdb_error(*arguments: Any) -> Any:
        if broken["on"]:
            raise lmdb.BadTxnError("mdb_put: MDB_BAD_TXN: Transaction must abort, has a child, or is invalid")
        return original(*arguments)

    with open_home(home) as store:
        prepare(store)
        monkeypatch.setattr(store_module, "_apply_write", lmdb_error)
        with running_writer(store) as writer:
            with pytest.raises(StoreFailed, match="reopen"):
                writer.ask(commit(admitted("r1")), 10)
            broken["on"] = False
            for index in range(3):
                with pytest.raises(StoreFailed, match="reopen") as caught:
                    writer.ask(commit(admitted(f"later-{index}")), 10)
                assert "BadTxnError" in str(caught.value)
            assert store.failure.startswith("BadTxnError")
        assert _record_ids(store) == set()
    with open_home(home) as store, running_writer(store) as writer:
        assert isinstance(writer.ask(commit(admitted("after-reopen")), 10), Committed)
        assert _record_ids(store) == {"after-reopen"}


# -- asyncio callers -----------------------------------------------------------------------------


class CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts hand-offs from other threads."""

    handoffs = 0

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        self.handoffs += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def _run(loop: asyncio.AbstractEventLoop, coroutine: Any) -> Any:
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def test_completions_of_one_commit_come_back_in_one_hand_off_per_loop(store: Store, writer: Address) -> None:
    tasks = 600

    async def main() -> list[Any]:
        return await asyncio.gather(*(writer.ask_async(commit(admitted(f"a{index}")), 30) for index in range(tasks)))

    before = statistics(writer)
    loop = CountingLoop()
    results = _run(loop, main())
    after = statistics(writer)
    commits = after.commits - before.commits
    assert all(isinstance(result, Committed) for result in results)
    assert after.writes - before.writes == tasks
    assert commits < tasks
    assert loop.handoffs == commits
    assert len(_record_ids(store)) == tasks


def test_awaiting_a_write_does_not_block_the_event_loop(store: Store, writer: Address, gate: GatedCommit) -> None:
    # The first commit is held until a coroutine on the loop releases it: if awaiting the writes
    # blocked the loop, that coroutine could never run and the writes would time out.
    ticks_while_held = 0

    async def release_after_ticks() -> None:
        nonlocal ticks_while_held
        entered = False
        while not entered:
            entered = gate.entered.is_set()
            ticks_while_held += 1
            await asyncio.sleep(0)
        for _ in range(20):
            ticks_while_held += 1
            await asyncio.sleep(0)
        gate.release.set()

    async def main() -> list[Any]:
        writes = [writer.ask_async(commit(admitted(f"n{index}")), 20) for index in range(50)]
        results = await asyncio.gather(*writes, release_after_ticks())
        return results[:-1]

    results = _run(asyncio.new_event_loop(), main())
    assert all(isinstance(result, Committed) for result in results)
    assert ticks_while_held > 20
    assert len(_record_ids(store)) == 50


def test_a_thread_ask_with_a_timeout_never_hangs(writer: Address, gate: GatedCommit) -> None:
    started = time.monotonic()
    with pytest.raises(AskTimeout, match=r"within 0\.3 s"):
        writer.ask(commit(admitted("slow")), 0.3)
    assert time.monotonic() - started < 5
    assert gate.entered.is_set()


def test_an_async_ask_with_a_timeout_never_hangs(writer: Address, gate: GatedCommit) -> None:
    async def main() -> float:
        started = time.monotonic()
        with pytest.raises(AskTimeout, match=r"within 0\.3 s"):
            await writer.ask_async(commit(admitted("slow")), 0.3)
        return time.monotonic() - started

    assert _run(asyncio.new_event_loop(), main()) < 5
    assert gate.entered.is_set()
