"""The substrate's start never waits on the home's size, and a recall during its index build answers right.

The home here is small; what makes it "too big to index within the start" is a build held back at
a chosen chunk: the test holds `index_columns` (what every chunk of the build calls) on a gate
that only the test opens, and sets the substrate's start timeout low. A start that indexed before
answering its ping could not answer then; the build after the start does.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from resident import Runtime
from resident.actors import index_build, substrate_waiting
from resident.actors import substrate as substrate_actor
from resident.actors.index_snapshot import snapshot_path
from resident.clock import ManualClock
from resident.errors import MemoryIndexing
from resident.memory import rebuild
from resident.memory.index import RecallIndex
from resident.memory.rebuild import StoredColumns
from resident.messages.memory import GetSubstrateStatus, Receipt
from tests.memory_helpers import open_runtime, wait_until

pytestmark = pytest.mark.timeout(120)

RECORDS = 300
CHUNK = 40
GATE_WAIT = 60.0


@dataclass
class _HeldBuild:
    """`index_columns` with a gate before chunk `held_at`; what each call saw."""

    held_at: int
    real: Callable[..., Any]
    gate: threading.Event = field(default_factory=threading.Event)
    held: threading.Event = field(default_factory=threading.Event)
    indexed_before: list[int] = field(default_factory=list)
    chunk_sizes: list[int] = field(default_factory=list)

    def __call__(self, index: RecallIndex, columns: StoredColumns, embedder: str) -> Any:
        self.indexed_before.append(len(index))
        self.chunk_sizes.append(len(columns.record_keys))
        if len(self.indexed_before) == self.held_at:
            self.held.set()
            assert self.gate.wait(GATE_WAIT), "the test never opened the gate"
        return self.real(index, columns, embedder)


def _grown_home(home: Path) -> tuple[str, str]:
    """A home of `RECORDS` memories of deven's; the text and id of the last one (the last chunk's)."""
    with open_runtime(home) as rt:
        rt.memory.enable()
        texts = [f"routine note {n} about the weekly standup and the coffee rota" for n in range(RECORDS - 1)]
        texts.append("the quarterly ledger export moved to the eastern warehouse")
        outcomes = rt.member("deven").remember_many([{"text": text} for text in texts])
        rt.memory.wait_indexed()
        snapshot = snapshot_path(rt._internal.store.path)
    # Without its persisted copy, the index is built from the store at the next start.
    snapshot.unlink()
    receipts = [outcome for outcome in outcomes if isinstance(outcome, Receipt)]
    assert len(receipts) == RECORDS
    # Records are read in key (id) order: the greatest id is in the build's last chunk.
    last = max(range(RECORDS), key=lambda row: receipts[row].id)
    return texts[last], receipts[last].id


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], _HeldBuild]]:
    made: list[_HeldBuild] = []

    def hold(at: int) -> _HeldBuild:
        build = _HeldBuild(at, rebuild.index_columns)
        monkeypatch.setattr(index_build, "index_columns", build)
        made.append(build)
        return build

    monkeypatch.setattr(index_build, "BUILD_CHUNK", CHUNK)
    # Low enough that a start which indexed the home first could not answer its ping in time.
    monkeypatch.setattr(substrate_actor, "START_TIMEOUT", 3.0)
    yield hold
    for build in made:
        build.gate.set()


def _recall_ids(rt: Runtime, query: str) -> list[str]:
    return [hit.id for hit in rt.member("deven").recall(query, k=5)]


def test_the_substrate_answers_its_start_ping_before_it_indexes_a_record(
    tmp_path: Path, held: Callable[[int], _HeldBuild]
) -> None:
    home = tmp_path / "home"
    _grown_home(home)
    build = held(1)
    # The build's first chunk is held until the runtime is open: open returns only if the start
    # ping was answered with nothing indexed.
    with open_runtime(home) as rt:
        assert build.held.wait(GATE_WAIT)
        assert build.indexed_before == [0]
        build.gate.set()
        rt.memory.wait_indexed()
        assert rt._internal.wiring.substrate.ask(GetSubstrateStatus()).records == RECORDS


def test_a_recall_during_the_build_finds_a_record_the_build_has_not_read_yet(
    tmp_path: Path, held: Callable[[int], _HeldBuild]
) -> None:
    home = tmp_path / "home"
    text, last_id = _grown_home(home)
    with open_runtime(home) as rt:
        expected = _recall_ids(rt, "ledger export warehouse")
        snapshot = snapshot_path(rt._internal.store.path)
    assert expected[:1] == [last_id]
    snapshot.unlink()

    build = held(2)
    with open_runtime(home) as rt:
        assert build.held.wait(GATE_WAIT)
        ref = rt._internal.wiring.substrate._ref
        assert ref is not None
        inbox = ref.actor_inbox
        assert isinstance(inbox, queue.SimpleQueue)
        answer: list[list[str]] = []
        asking = threading.Thread(target=lambda: answer.append(_recall_ids(rt, "ledger export warehouse")))
        asking.start()
        # The recall queues behind the held chunk; the next chunk is asked for only after it.
        assert wait_until(lambda: inbox.qsize() > 0, timeout=GATE_WAIT)
        build.gate.set()
        asking.join(GATE_WAIT)
        assert answer == [expected]
        # Two chunks were read when the recall came; it waited while the build went on a chunk
        # per turn (never the rest of the home in one turn) and was answered once all were read.
        assert build.indexed_before[:3] == [0, CHUNK, 2 * CHUNK]
        full, rest = divmod(RECORDS, CHUNK)
        assert build.chunk_sizes == [CHUNK] * full + [rest]
        assert rt.member("deven").get(last_id).body == text


def test_a_recall_that_outwaits_the_build_is_refused_as_indexing_and_the_next_one_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A home of a million memories without a persisted index builds for longer than a caller waits:
    # its recall is refused, typed and in time, never left to time out or answered from part of it.
    home = tmp_path / "home"
    text, last_id = _grown_home(home)
    monkeypatch.setattr(index_build, "BUILD_CHUNK", CHUNK)
    # Held before the second chunk and, chained behind it, before the third.
    third = _HeldBuild(3, rebuild.index_columns)
    second = _HeldBuild(2, third)
    monkeypatch.setattr(index_build, "index_columns", second)
    try:
        # On a manual clock the recall's wait runs out exactly when the test advances it, while the
        # third chunk is held: the build cannot end first.
        clock = ManualClock()
        with open_runtime(home, clock=clock) as rt:
            assert second.held.wait(GATE_WAIT)
            ref = rt._internal.wiring.substrate._ref
            assert ref is not None
            inbox = ref.actor_inbox
            assert isinstance(inbox, queue.SimpleQueue)
            outcome: list[object] = []

            def ask() -> None:
                try:
                    outcome.append(_recall_ids(rt, "ledger export warehouse"))
                except MemoryIndexing as error:
                    outcome.append(error)

            asking = threading.Thread(target=ask)
            asking.start()
            # The recall queues behind the second chunk and is parked after it, before the third.
            assert wait_until(lambda: inbox.qsize() > 0, timeout=GATE_WAIT)
            second.gate.set()
            assert third.held.wait(GATE_WAIT)
            clock.advance(substrate_waiting.BUILD_WAIT)
            third.gate.set()
            asking.join(GATE_WAIT)
            assert len(outcome) == 1, outcome
            assert isinstance(outcome[0], MemoryIndexing), outcome
            assert "being built from the store" in str(outcome[0])
            # Once built, the same recall is answered, the record the build read last included.
            rt.memory.wait_indexed()
            assert _recall_ids(rt, "ledger export warehouse")[:1] == [last_id]
            assert rt.member("deven").get(last_id).body == text
    finally:
        second.gate.set()
        third.gate.set()
