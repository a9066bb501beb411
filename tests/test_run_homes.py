"""Where `resident run` runs: scratch homes removed after success, `--home`, fresh and existing homes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resident import Runtime
from resident.store.tables import RECORDS
from tests.test_run_command import resident

# The quickest real run: two members, a few writes, no Realm.
QUICK = ("run", "--realm", "none", "--members", "2", "--writes", "3", "--json")


def report_of(result: Any) -> dict[str, Any]:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["ok"] is True
    return report


def records_in(home: Path) -> int:
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        return reader.count(RECORDS)


def test_keep_keeps_the_scratch_home_of_a_run_that_succeeded(tmp_path):
    report = report_of(resident(tmp_path, *QUICK, "--keep"))
    assert report["home_removed"] is False
    home = Path(report["home"])
    assert home.is_relative_to(tmp_path)
    assert records_in(home) == report["writes"]


def test_the_scratch_home_of_a_failed_run_is_kept_and_named(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(
        '[[tasks]]\nmember = "deven"\nsteps = [\n'
        '  { do = "remember", text = "alpha note", as = "a" },\n'
        '  { do = "recall", query = "alpha note", expect_absent = "a" },\n]\n'
    )
    result = resident(tmp_path, "run", str(plan), "--realm", "none")
    assert result.returncode == 1
    assert "invariant failed: every task succeeded" in result.stderr
    (home,) = tmp_path.glob("resident-run-*/home")
    assert f"home {home}" in result.stdout
    assert records_in(home) == 1


def test_run_takes_home_after_the_command_and_a_fresh_one_gets_memory_for_the_run(tmp_path):
    home = tmp_path / "named"
    report = report_of(resident(tmp_path, *QUICK, "--home", str(home)))
    assert Path(report["home"]) == home
    assert report["scratch_home"] is False
    assert report["home_removed"] is False
    assert records_in(home) == report["writes"]
    assert not list(tmp_path.glob("resident-run-*")), "a scratch home was made although --home was given"


def test_a_fresh_home_named_by_resident_home_gets_memory_enabled_for_the_run(tmp_path):
    home = tmp_path / "from-env"
    report = report_of(resident(tmp_path, *QUICK, home=home))
    assert Path(report["home"]) == home
    with Runtime.open(home) as runtime:
        assert runtime.memory.status().enabled


def test_a_run_never_takes_over_a_folder_of_other_files(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir(mode=0o755)
    (folder / "holiday.jpg").write_bytes(b"\xff\xd8")
    result = resident(tmp_path, "run", "--home", str(folder))
    assert result.returncode == 1
    assert "NotAHome" in result.stderr
    assert [p.name for p in folder.iterdir()] == ["holiday.jpg"]
    assert folder.stat().st_mode & 0o777 == 0o755
