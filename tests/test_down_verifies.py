"""`resident down` signals only the process the kernel says holds the home's lock, and reports
"stopped" only once that process has ended.

Each test starts real processes: a bystander that a forged `resident.lock` and `api.json` name
(it must survive), and a fake server that holds the lock and, on SIGTERM, lets it go but lingers.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from resident.api.discovery import DISCOVERY_FILE, LOCK_FILE_NAME, Discovery
from resident.children.orphans import process_start
from resident.processes import flock_holders
from tests.api_helpers import STOP_TIMEOUT
from tests.cli_helpers import expect_error, run_process

# A process whose command line reads like a resident server: `python -c CODE resident up`.
_SLEEPER = "import sys; sys.stdin.read()"
# Holds the home's lock; on SIGTERM it lets the lock go but lives on until its stdin closes.
_LINGERER = """
import fcntl, os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.pwrite(fd, f"{os.getpid()}\\n".encode(), 0)
signal.signal(signal.SIGTERM, lambda *_: os.close(fd))
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(mode=0o700)
    return path


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", _SLEEPER, "resident", "up"], stdin=subprocess.PIPE)
    yield process
    process.kill()
    process.wait(timeout=STOP_TIMEOUT)


def publish(home: Path, pid: int) -> None:
    found = Discovery(address="http://127.0.0.1:9", pid=pid, token="t", api_version=1, home=str(home),
                      started=process_start(pid))
    (home / DISCOVERY_FILE).write_bytes(msgspec.json.encode(found))


def test_a_forged_lock_naming_another_live_process_does_not_get_it_signalled(home: Path, bystander) -> None:
    # The forger holds the lock itself and writes the bystander's pid in it, and in api.json.
    fd = os.open(home / LOCK_FILE_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, f"{bystander.pid}\n".encode(), 0)
        publish(home, bystander.pid)
        message = expect_error(run_process(home, "down"), "RuntimeNotUp", naming=(str(bystander.pid),))
        assert "does not hold the home's lock" in message
        assert "nothing was signalled" in message
    finally:
        os.close(fd)
    assert bystander.poll() is None  # never signalled


def test_a_lock_holder_that_is_no_resident_command_is_not_signalled(home: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _LINGERER, str(home / LOCK_FILE_NAME)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"locked\n"
        assert flock_holders(home / LOCK_FILE_NAME) == {holder.pid}
        publish(home, holder.pid)
        message = expect_error(run_process(home, "down"), "RuntimeNotUp", naming=(str(holder.pid),))
        assert "not a resident command" in message
        assert flock_holders(home / LOCK_FILE_NAME) == {holder.pid}  # no SIGTERM: it still holds the lock
    finally:
        holder.kill()
        holder.wait(timeout=STOP_TIMEOUT)


def test_down_does_not_say_stopped_while_the_process_lingers_without_its_lock(home: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", _LINGERER, str(home / LOCK_FILE_NAME), "resident", "up"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        assert server.stdout.readline() == b"locked\n"
        publish(home, server.pid)
        message = expect_error(run_process(home, "down", "--timeout", "1"), "ShutdownTimeout",
                               naming=(str(server.pid),))
        assert "has not ended" in message
        assert flock_holders(home / LOCK_FILE_NAME) == set()  # it did get SIGTERM and let the home go
        assert server.poll() is None
    finally:
        server.kill()
        server.wait(timeout=STOP_TIMEOUT)


def test_flock_holders_names_the_holder_and_no_one_once_it_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        assert flock_holders(path) == set()
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert flock_holders(path) == {os.getpid()}
        fcntl.flock(fd, fcntl.LOCK_UN)
        assert flock_holders(path) == set()
    finally:
        os.close(fd)
    assert flock_holders(tmp_path / "missing") == set()
