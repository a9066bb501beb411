"""The example host (`examples/live_view.py`) against a real `resident up`: it shows the events as they
come, renders its live table, escapes hostile text, and says so when no runtime is up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from examples.live_view import describe
from resident import Runtime
from resident.api.wire import ActorEvent, ProgressEvent, RecordWithheldEvent
from tests.api_helpers import UpProcess

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "live_view.py"


def run_view(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False
    )


def prepared_home(tmp_path: Path) -> tuple[Path, list[str]]:
    home = tmp_path / "home"
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        ids = [runtime.member("deven").remember(f"note {i}").id for i in range(2)]
    return home, ids


@pytest.mark.slow
def test_the_plain_view_prints_one_line_per_event(tmp_path: Path) -> None:
    home, ids = prepared_home(tmp_path)
    with UpProcess(home):
        done = run_view("--home", str(home), "--plain", "--events", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "memory on (hash)",
        f"deven wrote {ids[0]} (experience, agent_core/deven)",
        f"deven wrote {ids[1]} (experience, agent_core/deven)",
    ]


@pytest.mark.slow
def test_the_live_view_renders_progress_and_the_latest_events(tmp_path: Path) -> None:
    home, ids = prepared_home(tmp_path)
    with UpProcess(home):
        done = run_view("--home", str(home), "--events", "3")
    assert done.returncode == 0, done.stderr
    assert "progress" in done.stdout
    assert "deven" in done.stdout
    assert f"deven wrote {ids[1]}" in done.stdout


def test_text_from_the_stream_cannot_drive_the_terminal() -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07\r"
    lines = [
        describe(ProgressEvent(at=0.0, execution="e", member="alice", task=hostile, outcome="failed", error=hostile)),
        describe(RecordWithheldEvent(at=0.0, id="mem_1", state="conflict", reason=hostile)),
        describe(ActorEvent(at=0.0, name="substrate", change="crashed", state="backoff", incarnation=2, restarts=1,
                            reason=hostile)),
    ]
    for line in lines:
        assert line.isprintable(), line
        assert "\\x1b[2J" in line


def test_the_view_says_so_when_no_runtime_is_up(tmp_path: Path) -> None:
    done = run_view("--home", str(tmp_path / "nothing-here"), "--plain")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith("error: RuntimeNotUp: no runtime is up")
    assert len(done.stderr.splitlines()) == 1
