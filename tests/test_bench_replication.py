"""The replication benchmark runs against a real Realm as it stands (tokens on every route included)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.replication import run

pytestmark = pytest.mark.timeout(180)


def test_a_small_replication_benchmark_settles_every_record_both_ways(tmp_path: Path) -> None:
    report = run(40, tmp_path)
    results = report["results"]
    assert {name: result["records"] for name, result in results.items()} == {"batched": 40, "one_per_request": 40}
    assert results["one_per_request"]["requests"] >= 40
    assert results["batched"]["requests"] < results["one_per_request"]["requests"]
