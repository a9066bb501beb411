"""`resident run`'s built-in plan passes at every size `--writes` allows, as a user runs it.

30 (the default) on a fresh machine is a test in test_run_command.py; here a short run and then 300
run in one home, so the second run meets every record of the first; 3,000 and 10,000 take 10 to 30
seconds on 2 cores (`python -m bench.run_sizes` measures all four sizes, bench/RESULTS.md). The
recall checks of the plan look for one record by id with a query that names it, so growing the
bulk of similar notes around it never hides it; these tests are what shows that.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from resident import Runtime
from resident.runner.run import MAX_WRITES
from resident.store.tables import RECORDS
from tests.test_run_command import resident


def _passes(result) -> dict[str, Any]:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["ok"] is True
    assert all(task["state"] == "succeeded" for task in report["tasks"].values())
    return report


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_built_in_plan_passes_at_300_writes_in_a_home_that_already_holds_a_run(tmp_path):
    home = tmp_path / "home"
    # A quick first run leaves deven's notes (the same texts, another run's tag) and pending records.
    quick = ("run", "--realm", "none", "--members", "2", "--writes", "8", "--json")
    first = _passes(resident(tmp_path, *quick, home=home))
    second = _passes(resident(tmp_path, "run", "--writes", "300", "--json", home=home))
    assert second["writes"] >= 4 * 300
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        assert reader.count(RECORDS) == first["writes"] + second["writes"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_built_in_plan_passes_at_3000_writes_per_member(tmp_path):
    report = _passes(resident(tmp_path, "run", "--writes", "3000", "--json", timeout=290))
    assert report["writes"] >= 4 * 3000


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_built_in_plan_passes_at_the_largest_size_the_option_allows(tmp_path):
    report = _passes(resident(tmp_path, "run", "--writes", str(MAX_WRITES), "--json", timeout=590))
    assert report["writes"] >= 4 * MAX_WRITES


def test_writes_beyond_the_largest_tested_size_are_a_usage_error(tmp_path):
    result = resident(tmp_path, "run", "--writes", str(MAX_WRITES + 1))
    assert result.returncode == 2
    assert f"1<=x<={MAX_WRITES}" in result.stderr.replace(" ", "")
    assert "Traceback" not in result.stderr
