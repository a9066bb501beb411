"""A member's harness runs in bubblewrap: the home (api.json, the store, other members' harness homes) is
hidden, so its grant token is its only credential — dropping it acts as nobody, not as the owner — while
its callbacks within its grant reach the runtime at `$RESIDENT_API`. Where no sandbox can be had,
`session start` refuses in one line unless told `--unsandboxed` or `[sessions] sandbox = false`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from resident import Runtime
from resident.runtime.sessions.sandbox import sandbox_unavailable
from resident.runtime.sessions.transcripts import harness_home
from tests.cli_helpers import expect_error, run_process

_WHY = sandbox_unavailable()
needs_bwrap = pytest.mark.skipif(_WHY is not None, reason=f"no sandbox here: {_WHY} (install the `bubblewrap` package)")

# What the harness tries, each line's outcome written to the project directory for the test to read.
PROBES = r"""
try() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name ok"; else echo "$name refused"; fi; }
try api cat "$RESIDENT_HOME/api.json"
try store ls "$RESIDENT_HOME/store.1/data.mdb"
try other ls "$ALICE_HOME/secret-notes.txt"
try owner env -u RESIDENT_GRANT_TOKEN -u RESIDENT_GRANT_FILE \
  "$PYTHON" -m resident.cli member export alice "$PWD/alice.json"
try emptied env RESIDENT_GRANT_TOKEN= "$PYTHON" -m resident.cli member export alice "$PWD/alice2.json"
try recall "$PYTHON" -m resident.cli recall deven "payments retry"
try remember "$PYTHON" -m resident.cli remember deven "noted from inside the sandbox"
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    with Runtime.open(home, realm="none") as runtime:
        runtime.memory.enable()
        runtime.member("deven").remember("the payments retry test flaked because it measured wall time")
        runtime.member("alice").remember("alice keeps the release calendar")
    return home


def _env(home: Path) -> dict[str, str]:
    alice = harness_home(home, "alice", "claude-code")
    (alice / "secret-notes.txt").write_text("alice's harness home\n")
    return {"ALICE_HOME": str(alice), "PYTHON": sys.executable}


@needs_bwrap
def test_a_sandboxed_harness_sees_no_home_and_cannot_act_as_the_owner(home: Path, tmp_path: Path):
    work = tmp_path / "work"
    work.mkdir()
    outcome = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(work), "--",
                          "sh", "-c", '{ ' + PROBES + '} > "$PWD/probes.txt"', env=_env(home))
    assert outcome.code == 0, outcome.describe()
    probes = dict(line.split() for line in (work / "probes.txt").read_text().splitlines())
    assert probes == {
        "api": "refused", "store": "refused", "other": "refused", "owner": "refused", "emptied": "refused",
        "recall": "ok", "remember": "ok",
    }
    assert not (work / "alice.json").exists()
    assert not (work / "alice2.json").exists()
    with Runtime.open(home, realm="none") as runtime:
        found = [hit.body for hit in runtime.member("deven").recall("noted from inside the sandbox")]
    assert "noted from inside the sandbox" in found, "its callback within its grant worked"


@needs_bwrap
def test_unsandboxed_the_same_harness_can_read_the_home(home: Path, tmp_path: Path):
    # The contrast that shows what the sandbox takes away (docs/trust.md states it).
    work = tmp_path / "work"
    work.mkdir()
    outcome = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(work),
                          "--unsandboxed", "--", "sh", "-c", '{ ' + PROBES + '} > "$PWD/probes.txt"', env=_env(home))
    assert outcome.code == 0, outcome.describe()
    probes = dict(line.split() for line in (work / "probes.txt").read_text().splitlines())
    assert probes["api"] == "ok"
    assert probes["owner"] == "ok"


def test_without_bubblewrap_session_start_refuses_naming_both_ways_out(home: Path, tmp_path: Path):
    bare = tmp_path / "bin"
    bare.mkdir()
    sh = shutil.which("sh")
    assert sh is not None
    (bare / "sh").symlink_to(sh)
    work = tmp_path / "work"
    work.mkdir()
    no_bwrap = {"PATH": str(bare)}
    refused = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(work), "--",
                          "sh", "-c", "true", env=no_bwrap)
    message = expect_error(refused, "SandboxUnavailable")
    assert "--unsandboxed" in message
    assert "[sessions] sandbox = false" in message
    assert not list(work.iterdir()), "nothing was projected"
    allowed = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(work),
                          "--unsandboxed", "--", "sh", "-c", "true", env=no_bwrap)
    assert allowed.code == 0, allowed.describe()
    config = home / "resident.toml"
    config.write_text((config.read_text() if config.exists() else "") + "\n[sessions]\nsandbox = false\n")
    configured = run_process(home, "session", "start", "deven", "--harness", "command", "--dir", str(work), "--",
                             "sh", "-c", "true", env=no_bwrap)
    assert configured.code == 0, configured.describe()
    assert os.environ.get("PATH")  # the test's own PATH was left alone
