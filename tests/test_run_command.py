"""`resident run` and `resident bench writes`, run as a user runs them: real processes, fresh homes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resident import Runtime


def resident(tmp_path: Path, *args: str, home: Path | None = None, timeout: float = 90.0):
    env = {k: v for k, v in os.environ.items() if k != "RESIDENT_HOME"}
    env["TMPDIR"] = str(tmp_path)  # scratch homes land inside the test's own directory
    if home is not None:
        env["RESIDENT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "resident.cli", *args], capture_output=True, text=True, env=env, timeout=timeout,
        check=False,
    )


@pytest.mark.timeout(120)
def test_resident_run_on_a_fresh_machine_finishes_within_a_minute_and_every_invariant_holds(tmp_path):
    started = time.monotonic()
    result = resident(tmp_path, "run", "--json")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert elapsed < 60, f"resident run took {elapsed:.1f} s"
    names = {i["name"]: i["ok"] for i in report["invariants"]}
    assert names == {
        "no acknowledged write lost": True,
        "nothing withheld was served": True,
        "every restart recovered": True,
        "every task succeeded": True,
        "replication settled": True,
        "nothing withheld was served by the CLI": True,
    }
    assert report["replication"]["conflict"] >= 1
    assert report["replication"]["invalidated"] >= 1
    assert report["replication"]["pending"] == 0
    assert report["crashes"] == {"substrate": 1, "members/deven": 1}
    assert report["restarts"]["substrate"] >= 1
    assert len(report["tasks"]) == 5
    assert all(t["state"] == "succeeded" for t in report["tasks"].values())
    assert Path(report["home"]).is_relative_to(tmp_path)
    assert report["scratch_home"] is True
    assert report["home_removed"] is True, "a scratch home of a run that succeeded is removed"
    assert not list(tmp_path.glob("resident-run-*")), "the scratch home was left in the temporary folder"
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(240)
def test_a_run_against_a_realm_given_by_url_passes_with_or_without_its_admin_token(tmp_path, monkeypatch):
    from resident.realm.process import start_realm  # noqa: PLC0415 - loaded only when this runs
    from resident.realm.tokens import TOKEN_ENV  # noqa: PLC0415 - loaded only when this runs

    with start_realm(tmp_path / "realm") as realm:
        monkeypatch.setenv(TOKEN_ENV, realm.enroll("user-home"))  # the home token, as a user would set it
        plain = resident(tmp_path, "run", "--realm", realm.url, "--members", "3", "--writes", "6", "--json")
        with_admin = resident(
            tmp_path, "run", "--realm", realm.url, "--members", "3", "--writes", "6", "--json",
            "--realm-admin-token-file", str(realm.data_dir / "admin.token"),
        )
        misplaced = resident(tmp_path, "run", "--realm", "none", "--realm-admin-token-file",
                             str(realm.data_dir / "admin.token"))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    report = json.loads(plain.stdout)
    assert report["ok"] is True
    assert report["replication"]["invalidated"] == 0
    assert any("--realm-admin-token-file" in note for note in report["notes"])
    assert with_admin.returncode == 0, with_admin.stdout + with_admin.stderr
    report = json.loads(with_admin.stdout)
    assert report["ok"] is True
    assert report["replication"]["invalidated"] >= 1
    assert misplaced.returncode == 1
    assert "goes with --realm URL" in misplaced.stderr
    assert "Traceback" not in misplaced.stderr


@pytest.mark.timeout(120)
def test_a_run_without_realm_skips_what_needs_realm_and_says_so(tmp_path):
    result = resident(tmp_path, "run", "--realm", "none", "--members", "3", "--writes", "6", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["realm"] is None
    assert any("no Realm" in note for note in report["notes"])
    assert "replication settled" not in {i["name"] for i in report["invariants"]}


def test_a_bad_plan_is_a_clear_error_before_anything_runs(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[[tasks]]\nmember = "nobody"\nsteps = [{ do = "remember", text = "x" }]\n')
    result = resident(tmp_path, "run", str(plan))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "unknown member 'nobody'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("resident-run-*/home/store.*")), "a store was created for a plan that never ran"


def test_a_run_in_an_existing_home_with_memory_off_is_refused_before_anything_starts(tmp_path):
    home = tmp_path / "mine"
    assert resident(tmp_path, "init", home=home).returncode == 0
    with Runtime.open(home) as runtime:
        events_before = runtime._internal.store.replay()
    result = resident(tmp_path, "run", home=home)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1
    assert "MemoryDisabled" in result.stderr
    assert "resident memory enable" in result.stderr
    assert not (home / "run-realm").exists(), "a Realm was started for a run that was refused"
    assert not list(tmp_path.glob("resident-*-children/*.json"))
    with Runtime.open(home) as runtime:
        assert runtime._internal.store.replay() == events_before, "the refused run wrote to the home"


def test_bench_writes_reports_its_figures_as_json(tmp_path):
    result = resident(tmp_path, "bench", "writes", "--count", "300", "--members", "3", "--writers", "4", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["writes"] == 300
    assert report["errors"] == {}
    assert report["throughput"] > 0
    assert report["writes_per_commit"] >= 1
    assert set(report["ack_latency_ms"]) == {"p50", "p95", "p99", "max"}
    assert report["peak_memory_mb"] > 0


def test_bench_writes_refuses_a_home_in_use(tmp_path):
    home = tmp_path / "busy"
    with Runtime.open(home):
        result = resident(tmp_path, "bench", "writes", "--count", "10", "--home", str(home))
    assert result.returncode == 1
    assert "in use by pid" in result.stderr
