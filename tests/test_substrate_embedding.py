"""The substrate never waits for an embedder: vectors follow writes from the embedding worker, recall
answers from the keyword index while the worker is late, and switching embedders happens in the
background with each embedder's vectors kept.

The embedder is a real HTTP server on a loopback port speaking llama.cpp's format
(`tests/fake_llama`); "stalled" is its `slow` mode, which holds every request for `slow_seconds`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from resident import Runtime
from resident.actors.substrate import QUERY_WAIT
from resident.clock import ManualClock
from resident.memory.embedding import Embedder, HashEmbedder
from resident.memory.llama import LlamaEmbedder
from resident.messages.memory import VectorsFilled
from tests.fake_llama import FakeLlama
from tests.memory_helpers import events_of, open_runtime, wait_until

STALL_SECONDS = 30.0
RECALLS = 200
# The bound on recall while the embedder stalls. Recall does not wait for the embedder at all, so
# its latency is its own work (a few ms here); 50 ms leaves room for a loaded 2-core machine. What
# the bound proves is that no recall waits on the stalled request, which would take 30 s.
STALLED_RECALL_P99 = 0.050


def _factory(spec: str) -> Embedder:
    # The client waits out the whole stall (its own timeout is longer), as a slow model would.
    return HashEmbedder() if spec == "hash" else LlamaEmbedder(spec, timeout=2 * STALL_SECONDS)


@pytest.fixture
def fake() -> Iterator[FakeLlama]:
    with FakeLlama(dim=16, slow_seconds=STALL_SECONDS) as server:
        yield server


def _filled_ids(rt: Runtime, embedder: str) -> list[str]:
    return [i for e in events_of(rt) if isinstance(e, VectorsFilled) and e.embedder == embedder for i in e.ids]


@pytest.mark.slow
def test_remember_and_recall_never_wait_for_an_embedder_that_stalls_for_30_seconds(
    tmp_path: Path, fake: FakeLlama
) -> None:
    with open_runtime(tmp_path / "home", embedder_factory=_factory) as rt:
        rt.memory.enable(embedder=fake.url)
        deven = rt.member("deven")
        for i in range(20):
            deven.remember(f"harbour crane maintenance log, entry {i}")
        assert rt.memory.wait_vectors(20.0)

        fake.mode = "slow"
        started = time.perf_counter()
        stalled = deven.remember("the ledger export failed on the read-only replica")
        # Durable and keyword-recallable at once; its vector is what the worker is stalled on.
        assert time.perf_counter() - started < 1.0
        assert deven.recall("ledger export replica", k=1)[0].id == stalled.id

        latencies = []
        for i in range(RECALLS):
            asked = time.perf_counter()
            hits = deven.recall(f"harbour crane maintenance entry {i % 20}", k=5)
            latencies.append(time.perf_counter() - asked)
            assert hits
        status = rt.memory.status()
        assert status.embedder_late
        assert status.missing_vectors == 1
        # Only a recall asked while the stalled request was younger than QUERY_WAIT may wait for
        # its query's vector, and then only until QUERY_WAIT after that request: at most one here.
        assert float(np.percentile(latencies, 99)) < STALLED_RECALL_P99, sorted(latencies)[-5:]
        assert max(latencies) < QUERY_WAIT + 0.5
        assert sum(latency > STALLED_RECALL_P99 for latency in latencies) <= 1
        # Stopping the fake ends the stall; the vector then follows.
        fake.stop()
        fake.start()
        fake.mode = "ok"
        assert rt.memory.wait_vectors(30.0)
        assert deven.recall("the ledger export failed on the read-only replica", k=1)[0].semantic > 0.99


def test_switching_embedders_re_embeds_in_the_background_and_switching_back_finds_the_old_vectors(
    tmp_path: Path, fake: FakeLlama
) -> None:
    name = LlamaEmbedder(fake.url).name
    with open_runtime(tmp_path / "home", embedder_factory=_factory) as rt:
        rt.memory.enable()
        deven = rt.member("deven")
        ids = [deven.remember(f"supplier invoice {i} was paid late").id for i in range(12)]
        assert rt.memory.status().missing_vectors == 0

        fake.mode = "slow"  # the new embedder answers nothing yet
        rt.memory.enable(embedder=fake.url)
        status = rt.memory.status()
        assert (status.embedder, status.records, status.missing_vectors) == (fake.url, 12, 12)
        # Recall answers meanwhile, from the keyword index.
        assert deven.recall("supplier invoice 7", k=1)[0].id == ids[7]
        fake.stop()
        fake.start()
        fake.mode = "ok"
        assert rt.memory.wait_vectors(30.0)
        assert sorted(_filled_ids(rt, name)) == sorted(ids)

        filled_by_hash = len(_filled_ids(rt, "hash"))
        rt.memory.enable(embedder="hash")
        # The hash vectors are where they were: nothing to fill, at once.
        assert rt.memory.status().missing_vectors == 0
        assert len(_filled_ids(rt, "hash")) == filled_by_hash
        requests = fake.requests
        rt.memory.enable(embedder=fake.url)
        assert rt.memory.status().missing_vectors == 0
        assert sorted(_filled_ids(rt, name)) == sorted(ids)
        top = deven.recall(deven.get(ids[3]).body, k=1)[0]
        assert (top.id, round(top.semantic, 3)) == (ids[3], 1.0)
        # Switching back asked the embedder for no record's vector again (only the recall's query).
        assert fake.requests - requests <= 1


def test_a_switch_survives_a_reopen_and_vectors_written_meanwhile_are_kept(tmp_path: Path, fake: FakeLlama) -> None:
    home = tmp_path / "home"
    with open_runtime(home, embedder_factory=_factory) as rt:
        rt.memory.enable(embedder=fake.url)
        receipt = rt.member("alice").remember("the regression suite runs nightly at two")
        assert rt.memory.wait_vectors(20.0)
    with open_runtime(home, embedder_factory=_factory) as reopened:
        status = reopened.memory.status()
        assert (status.embedder, status.records, status.missing_vectors) == (fake.url, 1, 0)
        top = reopened.member("alice").recall("the regression suite runs nightly at two", k=1)[0]
        assert (top.id, round(top.semantic, 3)) == (receipt.id, 1.0)


def test_recall_stops_asking_a_failing_embedder_and_asks_again_once_a_probe_finds_it_back(
    tmp_path: Path, fake: FakeLlama
) -> None:
    # On a manual clock the filler's next probe comes only when the test advances time.
    clock = ManualClock()
    with open_runtime(tmp_path / "home", embedder_factory=_factory, clock=clock) as rt:
        rt.memory.enable(embedder=fake.url)
        deven = rt.member("deven")
        receipt = deven.remember("canary rollout of the billing service")
        assert rt.memory.wait_vectors(20.0)
        fake.mode = "error500"
        # The first recall asks for its query's vector, finds the embedder failing, and answers
        # by keyword; the next ones do not ask it at all.
        assert deven.recall("canary rollout billing", k=1)[0].id == receipt.id
        assert "llama embedder" in rt.memory.status().embedder_error
        requests = fake.requests
        for _ in range(5):
            hit = deven.recall("canary rollout of the billing service", k=1)[0]
            assert (hit.id, hit.semantic) == (receipt.id, 0.0)
        assert fake.requests == requests
        fake.mode = "ok"
        clock.advance(1.0)
        assert wait_until(lambda: rt.memory.status().embedder_error == "", timeout=10.0)
        assert fake.requests == requests + 1
        assert deven.recall("canary rollout of the billing service", k=1)[0].semantic > 0.99
