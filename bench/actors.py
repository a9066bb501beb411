"""Benchmark of supervised actors: what a stable `Address` costs, and how fast a crash heals.

(a) Ask round trip through an `Address` to a supervised echo actor against a raw pykka `ask` to
an equivalent plain `pykka.ThreadingActor` with the same inbox (a `SimpleQueue`), measured side by
side in alternating blocks in one run: latency p50/p99 and sequential asks per second, plus
pipelined throughput (many asks in flight from one thread). (b) Crash → answering again: send
`Crash`, then time until an ask is answered by the next incarnation (the ask waits in the
address buffer through the restart).

Targets: address overhead <= 2x a raw pykka ask; restart p99 <= 20 ms. Crash logs go to a
`NullHandler` (the log records are still built, their output is not timed).

    python bench/actors.py [--json] [--asks 20000] [--crashes 200]
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import queue
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import pykka

from resident.clock import SystemClock
from resident.messages.supervision import Crash
from resident.supervisor import (
    Address,
    ChildSpec,
    SupervisedActor,
    SupervisionTree,
    SupervisorSpec,
    ThreadReply,
)

BLOCK = 500
PIPELINED = 10_000
TIMEOUT = 10.0
ADDRESS_OVERHEAD_TARGET = 2.0
RESTART_P99_TARGET_MS = 20.0


class Incarnation:
    """Asks the echo actor which incarnation answers."""


class SupervisedEcho(SupervisedActor):
    def handle(self, message: Any) -> Any:
        if isinstance(message, Incarnation):
            return self.context.incarnation
        return message


class RawEcho(pykka.ThreadingActor):
    use_daemon_thread = True  # as SupervisedActor

    @staticmethod
    def _create_actor_inbox() -> queue.SimpleQueue[Any]:
        # The same inbox as the runtime's actors (`SupervisedActor`), so the comparison is of the
        # address alone, not of pykka's default `queue.Queue` against a `SimpleQueue`.
        return queue.SimpleQueue()

    def on_receive(self, message: Any) -> Any:
        return message


def _percentile(sorted_values: list[float], fraction: float) -> float:
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


def _summary(samples_ns: list[int], elapsed: float) -> dict[str, float]:
    values = sorted(s / 1_000 for s in samples_ns)
    return {
        "p50_us": _percentile(values, 0.50),
        "p99_us": _percentile(values, 0.99),
        "asks_per_s": len(values) / elapsed,
    }


def _time_asks(ask: Callable[[int], Any], count: int, samples: list[int]) -> float:
    clock = time.perf_counter_ns
    started = clock()
    for n in range(count):
        before = clock()
        ask(n)
        samples.append(clock() - before)
    return (clock() - started) / 1e9


def _pipelined(send_all: Callable[[int], None]) -> float:
    started = time.perf_counter()
    send_all(PIPELINED)
    return PIPELINED / (time.perf_counter() - started)


def bench_asks(address: Address, raw: pykka.ActorRef[RawEcho], asks: int) -> dict[str, Any]:
    def address_ask(n: int) -> Any:
        return address.ask(n, timeout=TIMEOUT)

    def raw_ask(n: int) -> Any:
        return raw.ask(n, timeout=TIMEOUT)

    for ask in (address_ask, raw_ask):  # warm up both paths
        _time_asks(ask, BLOCK, [])

    address_samples: list[int] = []
    raw_samples: list[int] = []
    address_time = raw_time = 0.0
    for _ in range(max(1, asks // BLOCK)):
        address_time += _time_asks(address_ask, BLOCK, address_samples)
        raw_time += _time_asks(raw_ask, BLOCK, raw_samples)

    def address_pipelined(count: int) -> None:
        replies = [ThreadReply() for _ in range(count)]
        for n, reply in enumerate(replies):
            address.tell(n, reply)
        for reply in replies:
            reply.wait(TIMEOUT)

    def raw_pipelined(count: int) -> None:
        futures = [raw.ask(n, block=False) for n in range(count)]
        for future in futures:
            future.get(timeout=TIMEOUT)

    address_summary = _summary(address_samples, address_time)
    raw_summary = _summary(raw_samples, raw_time)
    address_summary["pipelined_asks_per_s"] = _pipelined(address_pipelined)
    raw_summary["pipelined_asks_per_s"] = _pipelined(raw_pipelined)
    return {
        "asks_per_side": len(address_samples),
        "address": address_summary,
        "raw_pykka": raw_summary,
        "overhead_p50": address_summary["p50_us"] / raw_summary["p50_us"],
        "overhead_p99": address_summary["p99_us"] / raw_summary["p99_us"],
        "overhead_throughput": raw_summary["asks_per_s"] / address_summary["asks_per_s"],
        "overhead_target": ADDRESS_OVERHEAD_TARGET,
    }


def bench_restarts(address: Address, crashes: int) -> dict[str, Any]:
    incarnation = address.ask(Incarnation(), timeout=TIMEOUT)
    samples: list[float] = []
    for _ in range(crashes):
        started = time.perf_counter()
        address.tell(Crash(reason="bench"))
        answered_by = address.ask(Incarnation(), timeout=TIMEOUT)
        samples.append((time.perf_counter() - started) * 1_000)
        if answered_by != incarnation + 1:
            raise RuntimeError(f"expected incarnation {incarnation + 1} to answer, got {answered_by}")
        incarnation = answered_by
    values = sorted(samples)
    return {
        "crashes": crashes,
        "p50_ms": _percentile(values, 0.50),
        "p99_ms": _percentile(values, 0.99),
        "max_ms": values[-1],
        "p99_target_ms": RESTART_P99_TARGET_MS,
    }


def run(asks: int, crashes: int) -> dict[str, Any]:
    for name in ("resident", "pykka"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False

    clock = SystemClock()
    echo = Address("echo")
    spec = SupervisorSpec(
        "bench",
        [ChildSpec(address=echo, actor=SupervisedEcho)],
        intensity=crashes * 10,
        period=1.0,
    )
    tree = SupervisionTree(spec, clock, on_escalate=lambda reason: print(f"escalated: {reason}"))
    tree.start()
    raw = RawEcho.start()
    try:
        asks_result = bench_asks(echo, raw, asks)
        restarts_result = bench_restarts(echo, crashes)
    finally:
        raw.stop(timeout=TIMEOUT)
        tree.stop(timeout=TIMEOUT)
        clock.close()
    return {
        "python": platform.python_version(),
        "pykka": version("pykka"),
        "ask": asks_result,
        "restart": restarts_result,
    }


def _print_table(result: dict[str, Any]) -> None:
    ask, restart = result["ask"], result["restart"]
    print(f"resident actors bench — Python {result['python']}, pykka {result['pykka']}")
    print()
    print(f"ask round trip ({ask['asks_per_side']} per side)  p50 µs   p99 µs     asks/s  pipelined asks/s")
    for label, key in (("raw pykka ask", "raw_pykka"), ("Address.ask", "address")):
        row = ask[key]
        print(
            f"  {label:<27}{row['p50_us']:>8.1f} {row['p99_us']:>8.1f} {row['asks_per_s']:>10.0f}"
            f" {row['pipelined_asks_per_s']:>17.0f}"
        )
    print(
        f"  {'overhead (address / raw)':<27}{ask['overhead_p50']:>7.2f}x {ask['overhead_p99']:>7.2f}x"
        f" {ask['overhead_throughput']:>9.2f}x   target <= {ask['overhead_target']:g}x"
    )
    print()
    print(f"crash -> answering again ({restart['crashes']} crashes)")
    print(
        f"  p50 {restart['p50_ms']:.2f} ms   p99 {restart['p99_ms']:.2f} ms   max {restart['max_ms']:.2f} ms"
        f"   target p99 <= {restart['p99_target_ms']:g} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--asks", type=int, default=20_000, help="timed asks per side")
    parser.add_argument("--crashes", type=int, default=200, help="crashes to time")
    args = parser.parse_args()
    result = run(args.asks, args.crashes)
    if args.json:
        print(json.dumps(result))
    else:
        _print_table(result)


if __name__ == "__main__":
    main()
