"""Benchmark of `rt.cognition.recall`: the runtime alone, with a real Hindsight bridged, and with it stalled.

One home holds `--memories` memories of deven (bench/recall_index.py's mixed-language synthetic texts); a real
Hindsight server (tests/hindsight_stack.py: `hindsight-api-slim` on PostgreSQL with pgvector, LLM off, a loopback
embedder) holds as many in the bank that stands for deven, retained through its own API. A loopback server
beside it never answers (tests/hindsight_proxy.py in its `stall` mode), and a second home with the same memories
is bridged to that one. Every round asks the same queries, interleaved query by query so the machine's load
falls on each alike, in five ways:

* `member.recall` — memory recall as it was before cognition (the reference);
* `alone` — `rt.cognition.recall(..., sources=("memory",))`: the cognition service, the bridge not asked;
* `bridged` — `sources=("memory", "bridge")` with Hindsight answering;
* `stalled` — the second home, bridged to the server that never answers: its first `failures` calls wait out
  the deadline, then the breaker is open and recall answers from the runtime alone;
* `hindsight` — Hindsight's own recall of the bank over plain HTTP (what the bridged answer waits for).

The order of the ways rotates from query to query, so none always runs first (cold) or after the same query.

    python bench/cognition.py [--memories 10000] [--queries 200] [--deadline 2.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.recall_index import _percentile, synthetic_queries, synthetic_texts
from resident import Runtime
from tests.fake_llama import FakeLlama
from tests.hindsight_proxy import HindsightProxy
from tests.hindsight_stack import missing, start_hindsight

BATCH = 500


def _fill_hindsight(url: str, token: str, texts: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        items = [{"content": text.replace("\n", ". ")} for text in texts[start:start + BATCH]]
        httpx.post(f"{url}/v1/default/banks/deven-notes/memories", json={"items": items, "async": False},
                   headers={"Authorization": f"Bearer {token}"}, timeout=3600).raise_for_status()
    return time.perf_counter() - started


def _home(folder: Path, url: str, token: str, deadline: float) -> Path:
    home = folder / "home"
    home.mkdir(mode=0o700)
    (home / "hindsight.token").write_text(token)
    (home / "resident.toml").write_text(
        f'[cognition]\nprovider = "hindsight"\nurl = "{url}"\ntoken_file = "hindsight.token"\ndeadline = {deadline}\n'
        '\n[[cognition.banks]]\nbank = "deven-notes"\nmember = "deven"\n'
    )
    return home


def _summary(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": _percentile(samples, 0.5) * 1e3, "p99_ms": _percentile(samples, 0.99) * 1e3,
            "n": float(len(samples))}


@contextmanager
def _runtime(folder: Path, url: str, token: str, deadline: float, texts: list[str]) -> Iterator[Runtime]:
    """A runtime bridged to `url` whose deven holds `texts`, indexed."""
    folder.mkdir()
    with Runtime.open(_home(folder, url, token, deadline)) as rt:
        rt.memory.enable()
        for start in range(0, len(texts), 5_000):
            rt.member("deven").remember_many([{"text": text} for text in texts[start:start + 5_000]])
        rt.memory.wait_indexed(timeout=600)
        yield rt


def _timed(samples: list[float], way: Callable[[str], Any], query: str) -> Any:
    started = time.perf_counter()
    answer = way(query)
    samples.append(time.perf_counter() - started)
    return answer


def run(memories: int, queries: int, deadline: float) -> dict[str, Any]:
    reason = missing()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    texts = synthetic_texts(2 * memories)
    asked = synthetic_queries(queries)
    with tempfile.TemporaryDirectory(prefix="bench-cognition-") as scratch, FakeLlama(dim=64) as embedder:
        folder = Path(scratch)
        (folder / "hs").mkdir()
        hindsight = start_hindsight(folder / "hs", embedder.url, embedder.dim)
        try:
            fill_seconds = _fill_hindsight(hindsight.url, hindsight.token, texts[memories:])
            # One runtime bridged to Hindsight itself, one to a server that never answers; the same memories each.
            token = hindsight.token
            with HindsightProxy() as stalled_service, \
                    _runtime(folder / "a", hindsight.url, token, deadline, texts[:memories]) as rt, \
                    _runtime(folder / "b", stalled_service.url, token, deadline, texts[:memories]) as cut, \
                    httpx.Client(base_url=hindsight.url, headers={"Authorization": f"Bearer {token}"}) as direct:
                stalled_service.mode = "stall"
                member = rt.member("deven")
                ways: dict[str, Callable[[str], Any]] = {
                    "member.recall": lambda q: member.recall(q, 10),
                    "alone": lambda q: rt.cognition.recall("deven", q, 10, sources=("memory",)),
                    "bridged": lambda q: rt.cognition.recall("deven", q, 10, sources=("memory", "bridge")),
                    "hindsight": lambda q: direct.post(
                        "/v1/default/banks/deven-notes/memories/recall",
                        json={"query": q, "max_tokens": 4096, "budget": "low"}, timeout=60,
                    ).raise_for_status(),
                    "stalled": lambda q: cut.cognition.recall("deven", q, 10, sources=("memory", "bridge")),
                }
                samples: dict[str, list[float]] = {name: [] for name in ways}
                bridged_hits = 0
                load = os.getloadavg()
                names = list(ways)
                for turn, query in enumerate(asked):
                    for name in names[turn % len(names):] + names[:turn % len(names)]:
                        answer = _timed(samples[name], ways[name], query)
                        if name == "bridged":
                            bridged_hits += sum(1 for hit in answer.hits if hit.source == "bridge")
                report = cut.status().cognition
        finally:
            hindsight.stop()
    return {
        "memories_each_side": memories, "queries": queries, "deadline_s": deadline, "loadavg_before": load,
        "hindsight_fill_s": fill_seconds, "bridged_hits_per_query": bridged_hits / max(1, queries),
        "stalled_bridge": {"state": report.state, "breaker": report.breaker, "timed_out": report.timed_out,
                           "refused": report.refused},
        "recall": {name: _summary(values) for name, values in samples.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--deadline", type=float, default=2.0)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    result = run(options.memories, options.queries, options.deadline)
    if options.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['memories_each_side']} memories on each side, {result['queries']} queries, "
          f"load average before {result['loadavg_before'][0]:.2f}")
    for name, figures in result["recall"].items():
        print(f"  {name:14s} p50 {figures['p50_ms']:8.2f} ms   p99 {figures['p99_ms']:8.2f} ms")
    print(f"  bridged hits per query {result['bridged_hits_per_query']:.1f}; "
          f"stalled bridge: {result['stalled_bridge']}; Hindsight filled in {result['hindsight_fill_s']:.0f} s")


if __name__ == "__main__":
    main()
