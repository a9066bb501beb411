"""`python -m examples.coordinate`: Samuel in the real Claude Code dispatches deven (the real pi) and alice,
accepts one, rejects the other and reassigns it to oliver; every invariant of the run holds. Skipped, saying
why, where node or the npm harnesses are absent (`.ci/run` installs them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from examples.coordinate.__main__ import HARNESSES
from tests.session_helpers import requires_sandbox

pytestmark = [requires_sandbox, pytest.mark.slow, pytest.mark.timeout(900)]


def test_samuel_coordinates_deven_alice_and_oliver_in_real_harnesses(tmp_path: Path) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: Claude Code and pi are node programs (.ci/run installs them with npm)")
    for binary in ("claude", "pi"):
        if not (HARNESSES / "node_modules" / ".bin" / binary).exists():
            pytest.skip(f"{binary} is not installed in {HARNESSES} (.ci/run installs it with npm)")
    done = subprocess.run(
        [sys.executable, "-m", "examples.coordinate", "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=800, check=False, cwd=Path(__file__).parent.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 7
    assert all(line.startswith("ok ") for line in lines), done.stdout
