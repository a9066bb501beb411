"""Homes are never taken over, never created by a read, and still readable when read-only.

Attacks tried here: `--home` pointed at a folder of someone's files, a symlink planted where the
lock file or resident.toml goes, a second process writing while the home is held, a home on a
read-only file system.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import HomeReadOnly, NotAHome
from resident.files import write_private_file
from resident.store.home import CONFIG_FILE, LOCK_FILE, ensure_home
from tests.cli_helpers import expect_error, expect_ok, invoke, run_process

READ_ONLY_COMMANDS = (
    ("status",),
    ("recall", "deven", "deploy"),
    ("memory", "show", "--as", "deven", "mem_0123456789abcdef0123456789ab"),
    ("memory", "status"),
    ("replication", "status"),
    ("progress",),
)


def a_folder_of_other_files(path: Path) -> Path:
    path.mkdir(mode=0o755)
    (path / "notes.txt").write_text("mine")
    return path


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_mode, p.read_bytes() if p.is_file() else None)
        for p in [folder, *folder.rglob("*")]
    }


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_read_only_commands_never_create_a_home_and_say_there_is_none(tmp_path, command):
    home = tmp_path / "nothing-here"
    message = expect_error(invoke(home, *command), "HomeNotFound", naming=(str(home), "resident init"))
    assert "no resident home" in message
    assert not home.exists()


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS[:2], ids=lambda c: c[0])
def test_read_only_commands_leave_a_folder_of_other_files_as_it_was(tmp_path, command):
    folder = a_folder_of_other_files(tmp_path / "documents")
    before = snapshot(folder)
    expect_error(invoke(folder, *command, "--json"), "HomeNotFound")
    assert snapshot(folder) == before


@pytest.mark.parametrize("command", [("init",), ("memory", "enable"), ("remember", "deven", "a note")])
def test_a_folder_of_other_files_is_never_taken_over(tmp_path, command):
    folder = a_folder_of_other_files(tmp_path / "documents")
    before = snapshot(folder)
    expect_error(invoke(folder, *command), "NotAHome", naming=(str(folder), "empty or new folder"))
    assert snapshot(folder) == before, "the folder was changed (made private, given a store or a lock)"


def test_an_empty_folder_becomes_a_private_home(tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir(mode=0o755)
    expect_ok(invoke(folder, "init"))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (folder / CONFIG_FILE).exists()


def test_a_file_in_place_of_the_home_is_not_a_home(tmp_path):
    with pytest.raises(NotAHome, match="not a directory"):
        ensure_home(_file(tmp_path / "home"))


def _file(path: Path) -> Path:
    path.write_text("x")
    return path


def test_resident_toml_is_made_private_even_when_the_user_left_it_looser(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    (home / CONFIG_FILE).write_text('[team]\ncoordinator = "samuel"\n')
    (home / CONFIG_FILE).chmod(0o644)
    expect_ok(invoke(home, "init"))
    assert stat.S_IMODE((home / CONFIG_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


def test_private_files_are_0600_whatever_the_umask(tmp_path):
    previous = os.umask(0)
    try:
        write_private_file(tmp_path / "f", b"data")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o600


def test_a_symlink_planted_as_the_lock_file_is_not_followed(tmp_path):
    home = tmp_path / "home"
    expect_ok(invoke(home, "init"))
    precious = _file(tmp_path / "precious")
    (home / LOCK_FILE).unlink()
    (home / LOCK_FILE).symlink_to(precious)
    expect_error(invoke(home, "memory", "enable"), "NotAHome", naming=(LOCK_FILE, "symlink"))
    assert precious.read_text() == "x", "the lock was taken on (and truncated) the symlink's target"


def test_a_symlink_planted_as_resident_toml_is_replaced_not_written_through(tmp_path):
    home = tmp_path / "home"
    expect_ok(invoke(home, "init"))
    precious = tmp_path / "precious.toml"
    precious.write_text('[team]\ncoordinator = "samuel"\n')
    precious.chmod(0o644)
    (home / CONFIG_FILE).unlink()
    (home / CONFIG_FILE).symlink_to(precious)
    expect_ok(invoke(home, "init", "--force"))
    assert not (home / CONFIG_FILE).is_symlink()
    assert precious.read_text() == '[team]\ncoordinator = "samuel"\n'
    assert stat.S_IMODE(precious.stat().st_mode) == 0o644, "making resident.toml private followed the symlink"
    assert not list(home.glob(".*.tmp")), "a temporary file was left behind"


def test_init_claims_the_home_before_it_writes_anything(tmp_path):
    home = tmp_path / "home"
    expect_ok(invoke(home, "init"))
    config = home / CONFIG_FILE
    before = (config.stat().st_ino, config.read_bytes())
    with Runtime.open(home):
        outcome = run_process(home, "init", "--force", "--realm", "http://127.0.0.1:9")
    assert outcome.code == 1
    assert "HomeInUse" in outcome.stderr
    assert (config.stat().st_ino, config.read_bytes()) == before, "resident.toml was rewritten while in use"


# -- a read-only home ----------------------------------------------------------------------------


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """A home holding one memory, on a file system mounted read-only (as root) or made read-only."""
    source = tmp_path / "source"
    with Runtime.open(source) as runtime:
        runtime.memory.enable()
        runtime.member("deven").remember("the deploy needs the migration first")
    if os.getuid() != 0:
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        yield source
        for path in [source, *source.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
        return
    mount = tmp_path / "mnt"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here to make a read-only file system")
    try:
        subprocess.run(["cp", "-a", str(source), str(mount / "home")], check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        yield mount / "home"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_read_only_home_still_answers_reads(read_only_home):
    recalled = expect_ok(invoke(read_only_home, "recall", "deven", "deploy migration"))
    assert "the deploy needs the migration first" in recalled.stdout
    status = expect_ok(invoke(read_only_home, "status"))
    assert "1 records" in status.stdout


def test_a_read_only_home_refuses_writes_with_a_typed_error_and_changes_nothing(read_only_home):
    before = snapshot(read_only_home)
    expect_error(invoke(read_only_home, "remember", "deven", "another"), "HomeReadOnly", naming=("reading only",))
    with Runtime.open(read_only_home) as runtime:
        assert runtime.member("deven").recall("deploy")
        with pytest.raises(HomeReadOnly):
            runtime.member("deven").remember("not stored")
    assert snapshot(read_only_home) == before
