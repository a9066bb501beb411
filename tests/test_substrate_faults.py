"""The substrate under faults: crashes while members write, restarts, and a failing llama embedder.

Crashes go through `rt._internal.chaos.crash("substrate")`, the same path an unexpected exception takes; the
embedder is a real HTTP server on a loopback port speaking llama.cpp's format (`tests/fake_llama`),
switched between answering, refusing connections, answering garbage and answering too slowly.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from resident import Runtime
from resident.errors import ActorUnavailable, EmbedderNotLoopback
from resident.memory.embedders import make_embedder
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.llama import LlamaEmbedder
from resident.memory.stored_vectors import vector_key
from resident.messages.memory import GetSubstrateStatus, SubstrateStatus, VectorsFilled
from resident.store.tables import RECORDS, VECTORS
from tests.fake_llama import FakeLlama, Mode
from tests.memory_helpers import event_count, events_of, open_runtime, wait_until

MEMBERS = ("samuel", "deven", "alice", "oliver", "victor")
EMBED_TIMEOUT = 0.5


def _substrate(rt: Runtime) -> tuple[str, int]:
    child = rt.statistics().child("substrate")
    return child.state, child.incarnation


def _substrate_status(rt: Runtime) -> SubstrateStatus:
    status: SubstrateStatus = rt._internal.wiring.substrate.ask(GetSubstrateStatus(), timeout=10.0)
    return status


def _more_writes(acknowledged: list[tuple[str, str, str]], count: int) -> bool:
    """Wait (bounded) until `count` more writes than now have been acknowledged."""
    target = len(acknowledged) + count
    return wait_until(lambda: len(acknowledged) >= target, timeout=20.0)


# -- crashes -----------------------------------------------------------------------------------------


def test_every_acknowledged_write_survives_substrate_crashes_and_no_call_hangs(tmp_path: Path) -> None:
    crashes = 5
    with open_runtime(tmp_path / "home") as rt:
        rt.memory.enable()
        stop = threading.Event()
        lock = threading.Lock()
        acknowledged: list[tuple[str, str, str]] = []
        refused: Counter[str] = Counter()
        unexpected: list[BaseException] = []
        slowest = [0.0]

        def remember_continuously(worker: int) -> None:
            member = rt.member(MEMBERS[worker % len(MEMBERS)])
            serial = 0
            while not stop.is_set():
                # A token no other record shares, so recall by this text must find this record.
                text = f"crash drill note from worker {worker}, number {serial}: token w{worker}n{serial}"
                started = time.monotonic()
                try:
                    receipt = member.remember(text, timeout=10.0)
                except ActorUnavailable as error:  # SubstrateUnavailable, AskTimeout, DeadLetter
                    with lock:
                        refused[type(error).__name__] += 1
                except BaseException as error:  # any other outcome fails the test
                    with lock:
                        unexpected.append(error)
                    return
                else:
                    with lock:
                        acknowledged.append((member.name, receipt.id, text))
                with lock:
                    slowest[0] = max(slowest[0], time.monotonic() - started)
                serial += 1

        threads = [threading.Thread(target=remember_continuously, args=(n,), daemon=True) for n in range(8)]
        for thread in threads:
            thread.start()
        try:
            for crash in range(crashes):
                assert _more_writes(acknowledged, 40), "writes stalled"
                # An exception in a handler, or a SystemExit, which must not take other actors down.
                kind: Literal["error", "exit"] = "exit" if crash % 2 else "error"
                rt._internal.chaos.crash("substrate", kind=kind, reason=f"crash drill {crash}")
                restarted = ("running", crash + 2)
                assert wait_until(lambda: _substrate(rt) == restarted, timeout=20.0), _substrate(rt)  # noqa: B023 - the lambda runs at once inside this iteration
            assert _more_writes(acknowledged, 40), "writes stalled"
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30.0)
        assert not [t.name for t in threads if t.is_alive()], "a remember call hung"
        assert not unexpected, unexpected
        assert slowest[0] < 5.0, f"a remember took {slowest[0]:.1f} s"
        # Requests held while the substrate restarts are answered afterwards, not refused.
        assert sum(refused.values()) <= len(acknowledged) // 20, refused
        assert rt.statistics().child("substrate").total_restarts == crashes

        with rt._internal.store.reader() as reader:
            assert all(reader.get(RECORDS, record_id) is not None for _, record_id, _ in acknowledged)
        for member, record_id, text in acknowledged:
            assert rt.member(member).get(record_id).body == text
            assert record_id in [hit.id for hit in rt.member(member).recall(text, k=3)], text
        assert _substrate_status(rt).records == len({record_id for _, record_id, _ in acknowledged})


@pytest.mark.parametrize("kind", ["error", "exit"])
def test_a_restarted_substrate_rebuilds_its_index_from_lmdb_before_it_answers(tmp_path: Path, kind: str) -> None:
    with open_runtime(tmp_path / "home") as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        written = [deven.remember(f"ledger reconciliation step {i}: token step{i}").id for i in range(300)]
        assert _substrate(rt) == ("running", 1)
        rt._internal.chaos.crash("substrate", kind=kind)  # type: ignore[arg-type]
        # Sent right behind the crash: held while the next incarnation rebuilds, then answered by it.
        hits = deven.recall("ledger reconciliation token step7", k=5)
        assert _substrate(rt) == ("running", 2)
        assert written[7] in [hit.id for hit in hits]
        status = _substrate_status(rt)
        assert status.records == 300
        assert status.rebuild_seconds > 0
        # Records whose hash vectors the crash kept from being stored get them from the next incarnation.
        assert rt.memory.wait_vectors(30)
        assert _substrate_status(rt).missing_vectors == 0
        assert [hit.id for hit in deven.recall("token step299", k=1)] == [written[299]]


def test_the_index_is_rebuilt_when_a_home_is_reopened(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_runtime(home) as rt:
        rt.memory.enable()
        receipt = rt.member("alice").remember("the regression suite runs nightly at two")
    with open_runtime(home) as reopened:
        assert [hit.id for hit in reopened.member("alice").recall("regression suite nightly")] == [receipt.id]
        assert reopened.memory.status().records == 1


# -- the llama loopback embedder ---------------------------------------------------------------------


def _factory(spec: str) -> Embedder:
    # A short timeout keeps the slow case quick; everything else is the production choice.
    return HashEmbedder() if spec == "hash" else LlamaEmbedder(spec, timeout=EMBED_TIMEOUT)


@pytest.fixture
def fake() -> Iterator[FakeLlama]:
    with FakeLlama(dim=16, slow_seconds=2 * EMBED_TIMEOUT) as server:
        yield server


@pytest.mark.parametrize("mode", ["down", "garbage", "slow", "error500", "loading"])
def test_writes_and_keyword_recall_go_on_while_the_embedder_fails_and_vectors_are_filled_in_later(
    tmp_path: Path, fake: FakeLlama, mode: Mode
) -> None:
    with open_runtime(tmp_path / "home", embedder_factory=_factory) as rt:
        rt.memory.enable(embedder=fake.url)
        deven = rt.member("deven")
        healthy = deven.remember("the harbour crane is serviced on mondays")
        # Vectors of an embedder other than `hash` follow the write, from the embedding worker.
        assert rt.memory.wait_vectors(10.0)

        fake.mode = mode
        receipts = [deven.remember(f"ledger export failed again, attempt {i}") for i in range(5)]
        assert all(r.replication == "pending" for r in receipts)
        requests = fake.requests
        for _ in range(10):
            hits = deven.recall("ledger export failed")
            assert {r.id for r in receipts} <= {hit.id for hit in hits}
            assert all(hit.keyword > 0 for hit in hits if hit.id != healthy.id)
        # While it fails, the embedder is only probed now and then, not called by every request.
        assert fake.requests - requests <= 3
        assert wait_until(lambda: "llama embedder" in rt.memory.status().embedder_error, timeout=10.0)
        status = rt.memory.status()
        assert status.missing_vectors == 5
        assert status.records == 6

        fake.mode = "ok"
        assert wait_until(lambda: rt.memory.status().missing_vectors == 0, timeout=20.0), rt.memory.status()
        assert rt.memory.status().embedder_error == ""
        # The fake's vectors are a hash of the text: asking with a record's own embedded text
        # (its body, which begins with its summary) finds it with cosine 1 once its vector is in.
        for receipt in receipts:
            record = deven.get(receipt.id)
            # A summary taken from the body's first line is not embedded twice: the body is the text.
            top = deven.recall(record.body, k=1)[0]
            assert (top.id, round(top.semantic, 3)) == (receipt.id, 1.0)
        name = make_embedder(fake.url).name
        with rt._internal.store.reader() as reader:
            stored = [reader.raw(VECTORS, vector_key(name, r.id)) for r in receipts]
        assert all(raw is not None and raw.startswith(name.encode()) for raw in stored)
        # Each vector was embedded and written once (every one follows its record's write), not
        # again while its write was in flight.
        filled = [record_id for e in events_of(rt) if isinstance(e, VectorsFilled) for record_id in e.ids]
        assert sorted(filled) == sorted({r.id for r in receipts} | {healthy.id})


def test_an_embedder_down_from_the_start_does_not_stop_writes(tmp_path: Path, fake: FakeLlama) -> None:
    fake.mode = "down"
    with open_runtime(tmp_path / "home", embedder_factory=_factory) as rt:
        rt.memory.enable(embedder=fake.url)
        deven = rt.member("deven")
        receipt = deven.remember("the supplier meeting moved to thursday")
        assert [hit.id for hit in deven.recall("supplier meeting")] == [receipt.id]
        assert rt.memory.status().missing_vectors == 1
        fake.mode = "ok"
        assert wait_until(lambda: rt.memory.status().missing_vectors == 0, timeout=20.0)
        record = deven.get(receipt.id)
        assert round(deven.recall(record.body, k=1)[0].semantic, 3) == 1.0


def test_a_rebuild_counts_vectors_of_another_embedder_or_none_as_missing(tmp_path: Path, fake: FakeLlama) -> None:
    with open_runtime(tmp_path / "home", embedder_factory=_factory) as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        hashed = [deven.remember(f"hash embedded note {i}").id for i in range(3)]
        fake.mode = "down"
        rt.memory.enable(embedder=fake.url)  # a switch rebuilds: the hash vectors no longer count
        assert rt.memory.status().missing_vectors == 3
        deven.remember("written while the new embedder is down")
        rt._internal.chaos.crash("substrate")
        assert _substrate_status(rt).missing_vectors == 4
        fake.mode = "ok"
        assert wait_until(lambda: rt.memory.status().missing_vectors == 0, timeout=20.0)
        fake.mode = "down"
        late = deven.remember("written after the fill, while it is down again")
        rt._internal.chaos.crash("substrate")
        status = _substrate_status(rt)
        assert (status.records, status.missing_vectors) == (5, 1)
        assert rt.statistics().child("substrate").incarnation == 3
        fake.mode = "ok"
        assert wait_until(lambda: rt.memory.status().missing_vectors == 0, timeout=20.0)
        for record_id in (*hashed, late.id):
            record = deven.get(record_id)
            # A summary taken from the body's first line is not embedded twice: the body is the text.
            top = deven.recall(record.body, k=1)[0]
            assert (top.id, round(top.semantic, 3)) == (record_id, 1.0)


@pytest.mark.parametrize(
    "url",
    ["http://10.0.0.5:8080", "http://example.com/v1/embeddings", "https://8.8.8.8", "http://127.0.0.1@evil.com"],
)
def test_a_non_loopback_embedder_is_refused_and_nothing_is_written(tmp_path: Path, url: str) -> None:
    with open_runtime(tmp_path / "home") as rt:
        with pytest.raises(EmbedderNotLoopback, match="loopback"):
            rt.memory.enable(embedder=url)
        assert event_count(rt) == 0
        assert rt.memory.status().enabled is False
        rt.memory.enable()
        before = event_count(rt)
        with pytest.raises(EmbedderNotLoopback):
            rt.memory.enable(embedder=url)
        assert event_count(rt) == before
        assert rt.memory.status().embedder == "hash"
