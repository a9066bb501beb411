"""The home: where it is, that it is private, and that only one runtime opens it at a time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import platformdirs
import pytest

from resident.errors import HomeInUse, InvalidInput, ResidentError
from resident.messages.store import Commit
from resident.store.home import (
    HOME_ENV,
    HomeLock,
    current_store_dir,
    ensure_home,
    resolve_home,
    set_current_store_dir,
)
from resident.store.store import Store
from tests.store_helpers import admitted, open_home, prepare

# -- where the home is ---------------------------------------------------------------------------


def test_explicit_home_wins_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "from-env"))
    assert resolve_home(tmp_path / "explicit") == tmp_path / "explicit"


def test_environment_home_is_used_without_an_explicit_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "from-env"))
    assert resolve_home() == tmp_path / "from-env"
    assert resolve_home("") == tmp_path / "from-env"


def test_platform_data_dir_is_the_last_resort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(HOME_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    expected = Path(platformdirs.user_data_dir("resident", appauthor=False)).absolute()
    assert resolve_home() == expected
    if sys.platform.startswith("linux"):
        assert expected == tmp_path / "xdg" / "resident"


def test_an_empty_environment_variable_counts_as_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HOME_ENV, "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_home() == Path(platformdirs.user_data_dir("resident", appauthor=False)).absolute()


def test_a_relative_or_tilde_home_is_made_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_home("~/h") == tmp_path / "h"
    monkeypatch.chdir(tmp_path)
    assert resolve_home("rel") == tmp_path / "rel"


def test_a_file_in_place_of_the_home_is_refused(tmp_path: Path) -> None:
    (tmp_path / "home").write_text("not a directory")
    with pytest.raises(InvalidInput, match="not a directory"):
        ensure_home(tmp_path / "home")


# -- privacy -------------------------------------------------------------------------------------


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """A umask that hides nothing, so only the runtime's own modes decide what is private."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("permissive_umask")
def test_every_directory_is_0700_and_every_file_0600_after_use(tmp_path: Path) -> None:
    home = tmp_path / "a" / "home"
    with open_home(home) as store:
        prepare(store)
        store.commit([Commit(events=(admitted(f"r{i}"),)) for i in range(20)])
    set_current_store_dir(home, current_store_dir(home))
    with open_home(home) as store:
        store.commit([Commit(events=(admitted("r-after-reopen"),))])
    entries = [home, *home.rglob("*")]
    assert {path.name for path in entries} >= {"resident.lock", "CURRENT", "store.1", "data.mdb", "lock.mdb"}
    modes = {path.relative_to(tmp_path).as_posix(): oct(path.stat().st_mode & 0o777) for path in entries}
    expected = {path.relative_to(tmp_path).as_posix(): oct(0o700 if path.is_dir() else 0o600) for path in entries}
    assert modes == expected


def test_an_existing_home_is_made_private_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)
    ensure_home(home)
    assert home.stat().st_mode & 0o777 == 0o700


# -- one runtime per home ------------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from resident.store.home import HomeLock
    lock = HomeLock(Path(sys.argv[1]))
    lock.acquire()
    print("locked", flush=True)
    sys.stdin.read()
    """
)


def _start_holder(home: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(home)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_second_process_gets_home_in_use_naming_the_holder(tmp_path: Path) -> None:
    home = ensure_home(tmp_path / "home")
    holder = _start_holder(home)
    try:
        with pytest.raises(HomeInUse) as caught:
            HomeLock(home).acquire()
        message = str(caught.value)
        assert f"pid {holder.pid}" in message
        assert "\n" not in message
        assert isinstance(caught.value, ResidentError)
        assert isinstance(caught.value, RuntimeError)
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_the_same_process_opening_twice_gets_home_in_use(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_home(home), pytest.raises(HomeInUse, match=f"pid {os.getpid()}"):
        HomeLock(home).acquire()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    home = ensure_home(tmp_path / "home")
    holder = _start_holder(home)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    assert holder.returncode == -signal.SIGKILL
    with HomeLock(home):
        assert (home / "resident.lock").read_text().strip() == str(os.getpid())


def test_a_released_lock_can_be_taken_again(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with open_home(home):
        pass
    with open_home(home):
        pass


# -- the CURRENT pointer -------------------------------------------------------------------------


def test_a_new_home_uses_store_1(tmp_path: Path) -> None:
    assert current_store_dir(tmp_path) == tmp_path / "store.1"


def test_a_corrupted_current_pointer_is_refused(tmp_path: Path) -> None:
    (tmp_path / "CURRENT").write_text("../elsewhere")
    with pytest.raises(InvalidInput, match="corrupted"):
        current_store_dir(tmp_path)


def test_current_naming_a_missing_store_is_refused_not_replaced_by_an_empty_one(tmp_path: Path) -> None:
    home = ensure_home(tmp_path / "home")
    set_current_store_dir(home, home / "store.7")
    with HomeLock(home), pytest.raises(InvalidInput, match=r"store\.7"):
        Store.open(home)
    assert not (home / "store.7").exists()


_FORKS_A_HOLDER = """
import os, sys
from pathlib import Path
from resident.store.home import HomeLock

lock = HomeLock(Path(sys.argv[1]))
lock.acquire()
if os.fork() == 0:
    # Like a damage check forked while the lock is held: it inherits the descriptor, and holds it
    # until it ends (here: until the test closes its stdin).
    sys.stdin.read()
    os._exit(0)
print("ready", flush=True)
sys.stdin.read()
"""


@pytest.mark.timeout(60)
def test_a_lock_left_to_a_forked_child_of_a_killed_runtime_is_waited_for_not_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    runtime = subprocess.Popen(
        [sys.executable, "-c", _FORKS_A_HOLDER, str(home)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert runtime.stdout is not None
    assert runtime.stdin is not None
    assert runtime.stdout.readline().strip() == "ready"
    runtime.kill()
    runtime.wait()
    opened = threading.Event()

    def open_it() -> None:
        with HomeLock(home):
            opened.set()

    opener = threading.Thread(target=open_it)
    opener.start()
    runtime.stdin.close()  # the forked child ends, and with it the last holder of the lock
    opener.join(timeout=30)
    assert opened.is_set(), "the lock of a dead runtime was refused instead of waited for"


def test_a_lock_held_by_a_live_process_is_refused_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with HomeLock(home), pytest.raises(HomeInUse, match=str(os.getpid())):
        HomeLock(home).acquire()
