"""The runtime's entry in a member's Codex `config.toml`: shared by the member's sessions, the user's file kept.

Checked: the entry forwards the session's variables by name (nothing of one session in it); the last
session to end puts the user's file back byte for byte (or removes the file it created); a session
ending while another runs leaves the entry; a change the user made meanwhile survives the restore;
sessions configuring and ending at once (threads, each with its own lock) lose nothing.
"""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from resident.runtime.sessions.harness_config import (
    FORWARDED,
    SHARED,
    configure_codex,
    restore_harness_home,
)
from resident.runtime.sessions.tree import Manifest, save_manifest, session_dir, sessions_root

pytestmark = pytest.mark.timeout(60)

RESIDENT = ("/opt/resident/bin/resident",)
USERS_OWN = b'# my settings\nmodel = "o3"\n\n[mcp_servers.resident]\ncommand = "my-own-resident"\n'


def _codex_home(home: Path) -> Path:
    return home / "harness" / "deven" / "codex"


def _session(home: Path, number: int) -> Manifest:
    home.mkdir(exist_ok=True)
    manifest = Manifest(
        session=f"ses_{number:028x}", member="deven", harness="codex", directory=str(home), process=1,
        process_start=None, started_at=float(number), harness_home=str(_codex_home(home)), codex_config=SHARED,
    )
    save_manifest(home, manifest)
    return manifest


def _configure(home: Path, manifest: Manifest) -> None:
    configure_codex(_codex_home(home), manifest.session, sessions_root(home), RESIDENT)


def _restore(home: Path, manifest: Manifest) -> list[str]:
    return restore_harness_home(manifest, session_dir(home, manifest.session))


def _config(home: Path) -> dict[str, object]:
    return tomllib.loads((_codex_home(home) / "config.toml").read_text())


def test_the_entry_forwards_the_sessions_variables_and_goes_with_the_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = _session(home, 1)
    _configure(home, session)
    config = _config(home)
    assert config["mcp_servers"] == {"resident": {"command": RESIDENT[0], "args": ["mcp", "serve"],
                                                  "env_vars": list(FORWARDED)}}
    assert config["shell_environment_policy"] == {"inherit": "all"}
    assert "RESIDENT_GRANT_FILE" in FORWARDED
    assert "RESIDENT_API" in FORWARDED
    assert _restore(home, session) == []
    assert not (_codex_home(home) / "config.toml").exists()


def test_the_users_own_file_comes_back_byte_for_byte_after_the_last_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _codex_home(home).mkdir(parents=True)
    (_codex_home(home) / "config.toml").write_bytes(USERS_OWN)
    first, second = _session(home, 1), _session(home, 2)
    _configure(home, first)
    _configure(home, second)
    assert _restore(home, first) == []
    # The other session still runs: its entry stays.
    assert _config(home)["mcp_servers"]["resident"]["command"] == RESIDENT[0]  # type: ignore[index]
    assert _restore(home, second) == []
    assert (_codex_home(home) / "config.toml").read_bytes() == USERS_OWN
    # Restoring again changes nothing.
    assert _restore(home, second) == []
    assert (_codex_home(home) / "config.toml").read_bytes() == USERS_OWN


def test_a_change_made_during_the_session_survives_and_the_users_server_comes_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _codex_home(home).mkdir(parents=True)
    config = _codex_home(home) / "config.toml"
    config.write_bytes(USERS_OWN)
    session = _session(home, 1)
    _configure(home, session)
    config.write_text(config.read_text() + '\n[projects."/src/payments"]\ntrust_level = "trusted"\n')
    assert _restore(home, session) == []
    restored = _config(home)
    assert restored["projects"] == {"/src/payments": {"trust_level": "trusted"}}
    assert restored["mcp_servers"] == {"resident": {"command": "my-own-resident"}}
    assert "shell_environment_policy" not in restored


def test_a_session_whose_manifest_is_gone_no_longer_holds_the_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    crashed, later = _session(home, 1), _session(home, 2)
    _configure(home, crashed)
    (session_dir(home, crashed.session) / "manifest.json").unlink()
    _configure(home, later)
    assert _restore(home, later) == []
    assert not (_codex_home(home) / "config.toml").exists()


def test_sessions_configuring_and_ending_at_once_lose_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _codex_home(home).mkdir(parents=True)
    (_codex_home(home) / "config.toml").write_bytes(USERS_OWN)
    sessions = [_session(home, number) for number in range(1, 17)]
    failures: list[BaseException] = []

    def each(work: Callable[[Path, Manifest], object]) -> None:
        threads = [threading.Thread(target=_guarded, args=(work, home, s, failures)) for s in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    each(_configure)
    assert _config(home)["mcp_servers"]["resident"]["command"] == RESIDENT[0]  # type: ignore[index]
    each(_restore)
    assert failures == []
    assert (_codex_home(home) / "config.toml").read_bytes() == USERS_OWN


def _guarded(
    work: Callable[[Path, Manifest], object], home: Path, manifest: Manifest, failures: list[BaseException]
) -> None:
    try:
        notes = work(home, manifest)
        assert not notes, notes
    except BaseException as error:  # the thread's failure is the test's
        failures.append(error)
