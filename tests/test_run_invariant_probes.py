"""The run's "nothing withheld was served" probes can fail: handed a record every surface serves,
each surface is named as having served it."""

from __future__ import annotations

from pathlib import Path

import pytest

from resident import Runtime
from resident.cli.probes import check_cli_read_surfaces
from resident.runner.invariants import _api_problems
from tests.replication_support import local_records

pytestmark = pytest.mark.timeout(60)

TEXT = "the nightly backup job writes to the second volume"


def test_a_served_record_passed_off_as_withheld_fails_the_api_probes_and_the_cli_probes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home) as rt:
        rt.memory.enable()
        served = rt.member("deven").remember(TEXT).id
        record = local_records(rt)[served]
        problems = _api_problems(rt, [record])
    assert f"get served withheld {served}" in problems
    assert f"recall served withheld {served}" in problems
    assert f"export carried withheld {served}" in problems

    invariant = check_cli_read_surfaces(home, [record])
    assert not invariant.ok
    assert f"memory show served withheld {served}" in invariant.detail
    assert f"recall (CLI) served withheld {served}" in invariant.detail
    assert f"member export carried withheld {served}" in invariant.detail


def test_with_nothing_withheld_the_cli_probes_pass(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home) as rt:
        rt.memory.enable()
        rt.member("deven").remember(TEXT)
    assert check_cli_read_surfaces(home, []).ok
