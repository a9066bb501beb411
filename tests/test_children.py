"""Child processes never outlive the process that started them, and orphans are swept by pid file.

Every test uses real processes and real signals: a parent killed with `kill -9`, a guard that
sees its pipe close or the kernel's parent-death signal, an orphan stopped by the next sweep.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from resident.children import ChildRecord, children_dir, spawn_child, stop_orphans
from resident.children.guard import EXIT_PARENT_GONE
from resident.children.orphans import process_start, wait_gone
from resident.errors import InvalidInput

READY_TIMEOUT = 30.0
GONE_TIMEOUT = 15.0
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(autouse=True)
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own pid-file folder (it lives in the temporary folder)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def wait_ready(path: Path) -> dict[str, Any]:
    deadline = time.monotonic() + READY_TIMEOUT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    info: dict[str, Any] = json.loads(path.read_text())
    return info


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def guard_command(parent: int, watch: int, ready: Path, token: str = "feedfacecafe0001") -> list[str]:
    return [
        sys.executable, "-m", "resident.children", "--parent", str(parent), "--watch", str(watch),
        "--token", token, "--", "tests.guarded_child", str(ready),
    ]


def test_a_child_runs_in_its_own_process_group_and_session_and_stops_with_everything_it_started(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_child("tests.guarded_child", [str(ready), "--grandchild"], log=tmp_path / "log", env=ENV)
    try:
        info = wait_ready(ready)
        assert info["pid"] == child.pid
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
        assert os.getsid(child.pid) == child.pid
        assert os.getpgid(info["grandchild"]) == child.pid
        assert (children_dir() / f"{child.pid}.json").exists()
    finally:
        code = child.stop(GONE_TIMEOUT)
    assert code == 0, "SIGTERM is the child's graceful stop"
    assert wait_gone(info["grandchild"], GONE_TIMEOUT)
    assert not (children_dir() / f"{child.pid}.json").exists()


def test_the_pid_file_is_private_and_names_the_child_its_token_and_its_parent(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_child("tests.guarded_child", [str(ready)], log=tmp_path / "log", env=ENV)
    try:
        wait_ready(ready)
        path = children_dir() / f"{child.pid}.json"
        assert path.stat().st_mode & 0o777 == 0o600
        assert children_dir().stat().st_mode & 0o777 == 0o700
        record = msgspec.json.decode(path.read_bytes(), type=ChildRecord)
        assert (record.pid, record.parent_pid, record.module) == (child.pid, os.getpid(), "tests.guarded_child")
        assert f"--token {record.token} " in Path(f"/proc/{child.pid}/cmdline").read_text().replace("\0", " ")
    finally:
        child.stop(GONE_TIMEOUT)


def test_a_child_stops_by_itself_when_its_parent_is_killed_with_sigkill(tmp_path, private_tmp):
    ready = tmp_path / "ready.json"
    script = (
        "import sys, time; from pathlib import Path; from resident.children import spawn_child;"
        f"spawn_child('tests.guarded_child', [{str(ready)!r}], log=Path({str(tmp_path / 'log')!r}));"
        "print('spawned', flush=True); time.sleep(300)"
    )
    env = {**ENV, "TMPDIR": str(private_tmp)}  # the parent's pid files go where this test looks
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == "spawned\n"
        child = wait_ready(ready)["pid"]
    finally:
        parent.kill()
        parent.wait()
    assert wait_gone(child, GONE_TIMEOUT), "the child outlived its parent's kill -9"
    assert "is gone" in (tmp_path / "log").read_text()
    # Nobody could remove its pid file; the next sweep does, without signalling anything.
    assert (children_dir() / f"{child}.json").exists()
    assert stop_orphans() == []
    assert not list(children_dir().glob("*.json"))


def test_the_guard_stops_the_child_when_the_parents_pipe_closes_even_while_the_parent_lives(tmp_path):
    # The pipe is what works on every platform: here the parent (this test) stays alive, so only
    # the pipe can tell the guard to stop.
    ready = tmp_path / "ready.json"
    read_end, write_end = os.pipe()
    child = subprocess.Popen(
        guard_command(os.getpid(), read_end, ready), pass_fds=(read_end,), stderr=subprocess.PIPE, text=True, env=ENV
    )
    os.close(read_end)
    try:
        wait_ready(ready)
    finally:
        os.close(write_end)
    _, stderr = child.communicate(timeout=GONE_TIMEOUT)
    assert child.returncode == 0, stderr
    assert "its pipe closed" in stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_the_parent_death_signal_stops_the_child_even_while_its_pipe_stays_open(tmp_path):
    # This test keeps a copy of the pipe's write end, so only the kernel's signal can tell.
    ready = tmp_path / "ready.json"
    read_end, write_end = os.pipe()
    script = (
        "import subprocess, sys, time, os;"
        f"command = {guard_command(0, read_end, ready)!r};"
        "command[command.index('--parent') + 1] = str(os.getpid());"
        f"p = subprocess.Popen(command, pass_fds=({read_end},), stderr=open({str(tmp_path / 'log')!r}, 'w'));"
        "print('spawned', flush=True); time.sleep(300)"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], pass_fds=(read_end,), stdout=subprocess.PIPE, text=True, env=ENV
    )
    os.close(read_end)
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == "spawned\n"
        child = wait_ready(ready)["pid"]
        parent.kill()
        parent.wait()
        assert wait_gone(child, GONE_TIMEOUT), "the parent-death signal did not stop the child"
    finally:
        os.close(write_end)
    assert "parent-death signal" in (tmp_path / "log").read_text()


def test_a_guard_whose_parent_is_already_gone_never_runs_the_module(tmp_path):
    ready = tmp_path / "ready.json"
    read_end, write_end = os.pipe()
    result = subprocess.run(
        guard_command(dead_pid(), read_end, ready), pass_fds=(read_end,), capture_output=True, text=True,
        timeout=READY_TIMEOUT, env=ENV, check=False,
    )
    os.close(read_end)
    os.close(write_end)
    assert result.returncode == EXIT_PARENT_GONE
    assert not ready.exists()


def _orphan(record_path: Path) -> None:
    """Rewrite a pid file as if its parent had died (a dead pid) without the child noticing."""
    record = msgspec.json.decode(record_path.read_bytes(), type=ChildRecord)
    forged = msgspec.structs.replace(record, parent_pid=dead_pid(), parent_start=None)
    record_path.write_bytes(msgspec.json.encode(forged))


def test_the_next_start_stops_an_orphan_whose_parent_is_gone_even_if_it_ignores_sigterm(tmp_path):
    ready = tmp_path / "ready.json"
    orphan = spawn_child("tests.guarded_child", [str(ready), "--stubborn"], log=tmp_path / "log", env=ENV)
    wait_ready(ready)
    _orphan(children_dir() / f"{orphan.pid}.json")
    try:
        assert stop_orphans(grace=0.5) == [orphan.pid]
        assert orphan.wait(GONE_TIMEOUT) == -signal.SIGKILL, "a child deaf to SIGTERM is killed"
    finally:
        orphan.kill(GONE_TIMEOUT)
    assert not list(children_dir().glob("*.json"))


def test_a_child_whose_parent_still_runs_is_left_alone_by_the_sweep(tmp_path):
    ready = tmp_path / "ready.json"
    child = spawn_child("tests.guarded_child", [str(ready)], log=tmp_path / "log", env=ENV)
    try:
        wait_ready(ready)
        assert stop_orphans() == []
        assert child.poll() is None
        assert (children_dir() / f"{child.pid}.json").exists()
    finally:
        child.stop(GONE_TIMEOUT)


def test_a_forged_pid_file_never_makes_the_sweep_signal_a_process_that_is_not_our_child():
    # Any process of ours: a pid file naming it, with a dead parent, but without its token.
    victim = subprocess.Popen(["sleep", "300"])
    try:
        forged = ChildRecord(
            pid=victim.pid, token="0123456789abcdef", module="resident.realm.server", parent_pid=dead_pid(),
            parent_start=None, started_at=time.time(),
        )
        path = children_dir() / f"{victim.pid}.json"
        path.write_bytes(msgspec.json.encode(forged))
        assert stop_orphans() == []
        assert victim.poll() is None, "the sweep signalled a process that was not its child"
        assert not path.exists(), "a stale pid file is removed"
    finally:
        victim.kill()
        victim.wait()


def test_a_pid_of_a_parent_reused_by_another_process_counts_as_gone(tmp_path):
    ready = tmp_path / "ready.json"
    orphan = spawn_child("tests.guarded_child", [str(ready)], log=tmp_path / "log", env=ENV)
    wait_ready(ready)
    path = children_dir() / f"{orphan.pid}.json"
    record = msgspec.json.decode(path.read_bytes(), type=ChildRecord)
    # The recorded parent pid is alive (it is this test) but started at another moment.
    path.write_bytes(msgspec.json.encode(msgspec.structs.replace(record, parent_start="1")))
    assert process_start(os.getpid()) != "1"
    try:
        assert stop_orphans() == [orphan.pid]
        assert orphan.wait(GONE_TIMEOUT) == 0
    finally:
        orphan.kill(GONE_TIMEOUT)


def test_symlinks_and_garbage_in_the_pid_folder_are_removed_without_being_followed(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me")
    (children_dir() / "1.json").symlink_to(target)
    (children_dir() / "2.json").write_text("{not json")
    assert stop_orphans() == []
    assert target.read_text() == "keep me"
    assert not list(children_dir().glob("*.json"))


def test_a_pid_folder_that_is_a_symlink_or_belongs_to_someone_else_is_refused(private_tmp, tmp_path):
    folder = private_tmp / f"resident-{os.getuid()}-children"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.symlink_to(elsewhere)
    with pytest.raises(InvalidInput, match="not a folder owned by this user"):
        children_dir()
    folder.unlink()
    folder.mkdir(mode=0o755)
    if os.getuid() == 0:
        os.chown(folder, 65534, 65534)
        with pytest.raises(InvalidInput, match="someone else"):
            children_dir()
        os.chown(folder, 0, 0)
    assert children_dir() == folder
    assert folder.stat().st_mode & 0o777 == 0o700, "a folder of ours that was looser is made private"
