"""The Realm scale benchmark runs for real against LMDB and PostgreSQL (one and two processes), small."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.realm_scale import SETUPS, run

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


def test_a_small_realm_scale_run_accepts_every_record_in_every_set_up(tmp_path: Path) -> None:
    pytest.importorskip("pgserver", reason="the benchmark needs pgserver (the dev extra) or $RESIDENT_TEST_POSTGRES")
    report = run(homes=3, records=40, batch=10, workdir=tmp_path)
    assert set(report["results"]) == set(SETUPS)
    for result in report["results"].values():
        assert result["records"] == 120
        assert result["push_p50_ms"] <= result["push_p99_ms"]
        assert result["cpu_ms_per_record"] > 0
    assert report["results"]["pg_2"]["realm_processes"] == 2
