"""`resident init | status | backup | restore`: the home from the shell."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from resident import Runtime
from resident.cli import common
from resident.config import load_config
from resident.store.home import CONFIG_FILE, LOCK_FILE
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke
from tests.store_helpers import tree_digest

REALM = "http://127.0.0.1:8765"
EDITED_TOML = """# our team, edited by hand
[team]
coordinator = "alice"

[members.alice]
role = "testing"
worlds = ["team"]

[members.deven]
role = "development"
worlds = ["team", "lab"]
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _edited(home: Path) -> bytes:
    home.mkdir(mode=0o700)
    (home / CONFIG_FILE).write_text(EDITED_TOML)
    return EDITED_TOML.encode()


# -- init ----------------------------------------------------------------------------------------


def test_init_creates_a_private_home_with_the_default_team_and_memory_off(home: Path) -> None:
    answer = expect_json(invoke(home, "init", "--json"))
    assert answer == {
        "home": str(home), "config": str(home / CONFIG_FILE), "realm": None, "created": True, "changed": True,
    }
    assert _mode(home) == 0o700
    assert _mode(home / CONFIG_FILE) == 0o600
    status = expect_json(invoke(home, "status", "--json"))
    assert status["members"] == ["samuel", "deven", "alice", "oliver", "victor"]
    assert status["memory"]["enabled"] is False


def test_init_again_leaves_a_hand_edited_resident_toml_as_it_is(home: Path) -> None:
    original = _edited(home)
    outcome = expect_ok(invoke(home, "init"))
    assert outcome.stdout.startswith(f"kept {home / CONFIG_FILE}")
    assert (home / CONFIG_FILE).read_bytes() == original


def test_init_realm_changes_only_the_realm_url(home: Path) -> None:
    _edited(home)
    answer = expect_json(invoke(home, "init", "--realm", f"{REALM}/", "--json"))
    assert answer["realm"] == REALM
    assert answer["changed"] is True
    config = load_config(home / CONFIG_FILE)
    assert config.realm_url == REALM
    assert config.coordinator == "alice"
    assert [(m.name, m.worlds) for m in config.members] == [("alice", ("team",)), ("deven", ("team", "lab"))]
    assert expect_json(invoke(home, "status", "--json"))["realm"] == REALM


@pytest.mark.parametrize("url", ["ftp://127.0.0.1", "http://", "127.0.0.1:8765"])
def test_init_refuses_a_realm_url_that_is_not_http_and_creates_nothing(home: Path, url: str) -> None:
    expect_error(invoke(home, "init", "--realm", url), "InvalidInput", naming=("--realm", repr(url)))
    assert not home.exists()


def test_init_refuses_a_malformed_resident_toml_and_force_starts_over(home: Path) -> None:
    home.mkdir(mode=0o700)
    broken = b'[team]\ncoordinator = "samuel\n'
    (home / CONFIG_FILE).write_bytes(broken)
    expect_error(invoke(home, "init", "--json"), "ConfigError", naming=("line 2",))
    assert (home / CONFIG_FILE).read_bytes() == broken
    answer = expect_json(invoke(home, "init", "--force", "--json"))
    assert answer["changed"] is True
    assert load_config(home / CONFIG_FILE).coordinator == "samuel"
    expect_ok(invoke(home, "status"))


def test_init_on_a_home_in_use_leaves_resident_toml_unchanged(home: Path) -> None:
    original = _edited(home)
    with Runtime.open(home):
        expect_error(invoke(home, "init", "--realm", REALM), "HomeInUse", naming=("pid",))
        expect_error(invoke(home, "init", "--force", "--json"), "HomeInUse")
    assert (home / CONFIG_FILE).read_bytes() == original


# -- status --------------------------------------------------------------------------------------


def test_status_json_is_an_object_with_home_members_memory_and_supervisor(home: Path) -> None:
    expect_ok(invoke(home, "memory", "enable"))
    status = expect_json(invoke(home, "status", "--json"))
    assert isinstance(status, dict)
    assert {"home", "members", "memory", "supervisor"} <= set(status)
    assert status["home"] == str(home)
    assert "deven" in status["members"]
    assert status["memory"]["enabled"] is True
    actors = {child["name"]: child for child in status["supervisor"]["children"]}
    assert {"writer", "substrate", "replication", "members/deven"} <= set(actors)
    assert all(child["state"] == "running" for child in actors.values())


def test_status_text_names_the_home_memory_and_every_actor_whole_in_a_narrow_terminal(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(common.stdout, "width", 40)
    expect_ok(invoke(home, "init"))
    text = expect_ok(invoke(home, "status")).stdout
    assert str(home) in text
    assert "memory   off — turn it on with `resident memory enable`" in text
    for name in ("writer", "substrate", "members/samuel", "members/oliver", "members/victor"):
        assert f" {name} " in text, f"{name} is cut or wrapped"


# -- backup and restore --------------------------------------------------------------------------


def _home_with_one_memory(home: Path) -> str:
    expect_ok(invoke(home, "init"))
    expect_ok(invoke(home, "memory", "enable"))
    record_id: str = expect_json(invoke(home, "remember", "deven", "the deploy needs a migration first", "--json"))[
        "id"
    ]
    return record_id


def test_backup_then_restore_brings_the_data_back(home: Path, tmp_path: Path) -> None:
    kept = _home_with_one_memory(home)
    made = expect_json(invoke(home, "backup", str(tmp_path / "backup"), "--json"))
    assert made["backup"] == str(tmp_path / "backup")
    assert {entry["path"] for entry in made["manifest"]["files"]} >= {"store/data.mdb", CONFIG_FILE}

    later = expect_json(invoke(home, "remember", "deven", "written after the backup", "--json"))["id"]
    expect_ok(invoke(home, "memory", "forget", kept, "--as", "deven"))

    restored = expect_json(invoke(home, "restore", str(tmp_path / "backup"), "--json"))
    assert restored["manifest"]["schema_version"] == made["manifest"]["schema_version"]
    record = expect_json(invoke(home, "memory", "show", kept, "--as", "deven", "--json"))
    assert record["lifecycle"] == "active"
    hits = expect_json(invoke(home, "recall", "deven", "deploy migration backup", "--json"))["hits"]
    assert [hit["id"] for hit in hits] == [kept]
    expect_error(invoke(home, "memory", "show", later, "--as", "deven", "--json"), "RecordNotFound")


def test_a_corrupted_backup_is_refused_in_one_line_and_the_home_is_untouched(home: Path, tmp_path: Path) -> None:
    _home_with_one_memory(home)
    backup = tmp_path / "backup"
    expect_ok(invoke(home, "backup", str(backup)))
    data = backup / "store" / "data.mdb"
    content = bytearray(data.read_bytes())
    content[len(content) // 2] ^= 0xFF
    data.write_bytes(bytes(content))
    before = tree_digest(home, skip=(LOCK_FILE,))

    message = expect_error(invoke(home, "restore", str(backup)), "BackupInvalid", naming=("untouched",))
    assert "store/data.mdb" in message
    expect_error(invoke(home, "restore", str(backup), "--json"), "BackupInvalid")
    assert tree_digest(home, skip=(LOCK_FILE,)) == before


def test_restore_of_a_missing_backup_is_refused(home: Path, tmp_path: Path) -> None:
    _home_with_one_memory(home)
    expect_error(invoke(home, "restore", str(tmp_path / "nowhere"), "--json"), "BackupInvalid", naming=("nowhere",))


def test_restore_into_a_home_in_use_is_refused(home: Path, tmp_path: Path) -> None:
    _home_with_one_memory(home)
    expect_ok(invoke(home, "backup", str(tmp_path / "backup")))
    with Runtime.open(home):
        expect_error(invoke(home, "restore", str(tmp_path / "backup")), "HomeInUse", naming=("pid",))


def test_backup_into_a_directory_that_is_not_empty_writes_nothing(home: Path, tmp_path: Path) -> None:
    _home_with_one_memory(home)
    dest = tmp_path / "full"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")
    expect_error(invoke(home, "backup", str(dest), "--json"), "InvalidInput", naming=("not an empty directory",))
    assert [p.name for p in dest.iterdir()] == ["keep.txt"]
