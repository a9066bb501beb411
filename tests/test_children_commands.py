"""Any command as a guarded child: the guard stays its parent, forwards signals, and never lets it
outlive the process that started it. Real processes and real signals throughout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from resident.children import children_dir, spawn_command
from resident.children.guard import EXIT_NOT_FOUND
from resident.children.orphans import wait_gone
from resident.errors import InvalidInput
from tests.command_child import TERM_STATUS
from tests.test_children import ENV, GONE_TIMEOUT, READY_TIMEOUT, wait_ready

CHILD = str(Path(__file__).with_name("command_child.py"))


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def signals_seen(ready: Path, count: int) -> list[str]:
    """The signal names the command recorded, once it has recorded `count` of them."""
    path = ready.with_name(ready.name + ".signals")

    def seen() -> list[str]:
        return path.read_text().split() if path.exists() else []

    deadline = time.monotonic() + READY_TIMEOUT
    while len(seen()) < count:
        assert time.monotonic() < deadline, f"the command recorded {seen()}, expected {count} signals"
        time.sleep(0.02)
    return seen()


def test_a_command_runs_under_its_guard_in_its_own_group_and_its_status_comes_back(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready), "--exit", "7"], env=ENV, log=tmp_path / "log")
    info = wait_ready(ready)
    assert child.wait(GONE_TIMEOUT) == 7
    assert info["pid"] != child.pid, "the guard stays the command's parent"
    assert info["pgid"] == info["sid"] == child.pid != os.getpgid(0)
    assert not (children_dir() / f"{child.pid}.json").exists()


def test_stopping_a_command_child_forwards_sigterm_to_the_command_alone(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready)], env=ENV, log=tmp_path / "log")
    wait_ready(ready)
    assert child.stop(GONE_TIMEOUT) == TERM_STATUS, "the command's own SIGTERM handler decided the status"
    assert signals_seen(ready, 1) == ["SIGTERM"]


def test_signals_the_owner_sends_reach_the_command_through_the_guard(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready)], env=ENV, log=tmp_path / "log")
    try:
        wait_ready(ready)
        # One at a time: signals sent together may arrive in any order.
        for count, sig in enumerate((signal.SIGWINCH, signal.SIGINT, signal.SIGHUP), start=1):
            child.signal(sig)
            signals_seen(ready, count)
        assert signals_seen(ready, 3) == ["SIGWINCH", "SIGINT", "SIGHUP"]
    finally:
        child.stop(GONE_TIMEOUT)


def test_a_command_killed_by_a_signal_reports_128_plus_the_signal(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready)], env=ENV, log=tmp_path / "log")
    os.kill(wait_ready(ready)["pid"], signal.SIGKILL)
    assert child.wait(GONE_TIMEOUT) == 128 + signal.SIGKILL


def test_what_the_command_leaves_running_in_its_group_is_stopped_when_it_exits(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready), "--leave-behind", "--exit", "0"], env=ENV,
                          log=tmp_path / "log")
    left = wait_ready(ready)["left"]
    assert child.wait(GONE_TIMEOUT) == 0
    assert wait_gone(left, GONE_TIMEOUT), "a process the command left behind outlived it"


def test_a_shell_command_runs_in_the_directory_and_environment_it_is_given(tmp_path):
    out = tmp_path / "out"
    child = spawn_command(["sh", "-c", 'printf "%s %s" "$PWD" "$GREETING" > "$0"', str(out)], cwd=tmp_path,
                          env={**ENV, "GREETING": "hola"}, log=tmp_path / "log")
    assert child.wait(GONE_TIMEOUT) == 0
    assert out.read_text() == f"{tmp_path} hola"


def test_a_program_that_does_not_exist_exits_127_with_a_line_saying_so(tmp_path):
    child = spawn_command(["no-such-program-resident-test"], env=ENV, log=tmp_path / "log")
    assert child.wait(GONE_TIMEOUT) == EXIT_NOT_FOUND
    assert "cannot run 'no-such-program-resident-test'" in (tmp_path / "log").read_text()
    with pytest.raises(InvalidInput):
        spawn_command([], env=ENV)


def test_a_command_stops_when_its_parent_is_killed_with_sigkill(tmp_path, private_tmp):
    ready = tmp_path / "ready.json"
    script = (
        "import sys, time; from pathlib import Path; from resident.children import spawn_command;"
        f"spawn_command([sys.executable, {CHILD!r}, {str(ready)!r}], log=Path({str(tmp_path / 'log')!r}));"
        "print('spawned', flush=True); time.sleep(300)"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**ENV, "TMPDIR": str(private_tmp)})
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == "spawned\n"
        command = wait_ready(ready)["pid"]
    finally:
        parent.kill()
        parent.wait()
    log = tmp_path / "log"
    assert wait_gone(command, GONE_TIMEOUT), f"the command outlived its parent's kill -9: {log.read_text()!r}"
    assert signals_seen(ready, 1) == ["SIGTERM"], "the guard asked the command to stop gracefully first"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_a_command_whose_guard_is_killed_gets_sigterm_from_the_kernel(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_command([sys.executable, CHILD, str(ready)], env=ENV, log=tmp_path / "log")
    command = wait_ready(ready)["pid"]
    os.kill(child.pid, signal.SIGKILL)
    child.wait(GONE_TIMEOUT)
    assert wait_gone(command, GONE_TIMEOUT)
    assert signals_seen(ready, 1) == ["SIGTERM"]
