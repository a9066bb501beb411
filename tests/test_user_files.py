"""Files a user names are opened safely: a FIFO, a device, a folder or a link is refused at once, in one line.

The FIFO tests run the CLI as its own process with a timeout, so a regression (a blocking open)
fails the test instead of hanging the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resident.coordination.plan import load_plan
from resident.errors import BackupInvalid, ExportInvalid, IngestInvalid, InvalidInput, PlanInvalid, SkillInvalid
from resident.memory.portability import read_export_file
from resident.realm.tokens import read_token_file
from resident.store.backup import MANIFEST_FILE, verify_backup
from resident.user_files import open_user_file, read_user_file
from tests.api_helpers import STOP_TIMEOUT, UpProcess
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke, run_process
from tests.knowledge_helpers import enable_knowledge


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.md"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_without_waiting_for_a_writer(fifo: Path) -> None:
    with pytest.raises(IngestInvalid, match="not a regular file"):
        read_user_file(fifo, limit=100, error=IngestInvalid)


def test_a_device_that_never_ends_is_refused() -> None:
    with pytest.raises(InvalidInput, match="not a regular file"):
        read_user_file("/dev/zero", limit=100)


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("private")
    (tmp_path / "link").symlink_to(secret)
    with pytest.raises(SkillInvalid, match="symbolic link"):
        read_user_file(tmp_path / "link", limit=100, error=SkillInvalid)


def test_a_folder_a_missing_file_and_an_oversized_file_each_get_one_line(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    refusals = ((tmp_path, "is a directory"), (tmp_path / "missing", "does not exist"), (big, "larger than 100 bytes"))
    for path, reason in refusals:
        with pytest.raises(InvalidInput, match=reason) as refused:
            read_user_file(path, limit=100, what="the import")
        assert "\n" not in str(refused.value)
        assert str(refused.value).startswith("the import ")


def test_a_regular_file_is_read_whole_and_streams(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"one\ntwo\n")
    assert read_user_file(path, limit=8) == b"one\ntwo\n"
    with open_user_file(path) as handle:
        assert handle.readline() == b"one\n"


def test_knowledge_ingest_of_a_fifo_refuses_it_and_returns(tmp_path: Path, fifo: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    outcome = run_process(home, "knowledge", "ingest", "handbook", str(fifo), "--json")
    report = expect_json(outcome)
    assert [rejected["path"] for rejected in report["rejected"]] == [str(fifo)]
    assert "not a regular file" in report["rejected"][0]["reason"]


def test_knowledge_ingest_of_a_folder_holding_a_fifo_ingests_the_rest(tmp_path: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    docs = tmp_path / "docs"
    docs.mkdir()
    os.mkfifo(docs / "a-pipe.md")
    (docs / "guide.md").write_text("# Guide\n\nDeploy after the migration.\n", encoding="utf-8")
    report = expect_json(run_process(home, "knowledge", "ingest", "handbook", str(docs), "--json"))
    assert report["admitted"] == 1
    assert [Path(rejected["path"]).name for rejected in report["rejected"]] == ["a-pipe.md"]


def test_remember_jsonl_from_a_fifo_is_refused_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    expect_ok(invoke(home, "memory", "enable"))
    pipe = tmp_path / "lines.jsonl"
    os.mkfifo(pipe)
    expect_error(run_process(home, "remember", "deven", "--jsonl", str(pipe)), "InvalidInput")


def test_skills_add_of_a_fifo_skill_file_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    expect_ok(invoke(home, "memory", "enable"))
    folder = tmp_path / "deploy"
    folder.mkdir()
    os.mkfifo(folder / "SKILL.md")
    expect_error(run_process(home, "skills", "add", str(folder)), "SkillInvalid")


def test_a_legacy_knowledge_import_of_a_fifo_is_refused(tmp_path: Path, fifo: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    expect_error(run_process(home, "knowledge", "import-legacy", str(fifo)), "InvalidInput")


def test_every_reader_of_a_named_file_refuses_a_fifo_in_its_own_error_type(tmp_path: Path, fifo: Path) -> None:
    # Each would block forever on a blocking open; pytest-timeout bounds the test if one regresses.
    backup = tmp_path / "backup"
    (backup / "store").mkdir(parents=True)
    os.mkfifo(backup / MANIFEST_FILE)
    with pytest.raises(BackupInvalid, match=MANIFEST_FILE):
        verify_backup(backup)
    with pytest.raises(ExportInvalid, match="not a regular file"):
        read_export_file(fifo)
    with pytest.raises(InvalidInput, match="not a regular file"):
        read_token_file(fifo)
    with pytest.raises(PlanInvalid, match="not a regular file"):
        load_plan(fifo, members=("deven",), coordinator="samuel")


def test_a_fifo_ingested_through_a_running_up_is_refused_and_down_then_stops_it(tmp_path: Path, fifo: Path) -> None:
    home = enable_knowledge(tmp_path / "home")
    expect_ok(invoke(home, "knowledge", "banks", "create", "handbook"))
    with UpProcess(home) as up:
        report = expect_json(run_process(home, "knowledge", "ingest", "handbook", str(fifo), "--json"))
        assert [rejected["path"] for rejected in report["rejected"]] == [str(fifo)]
        assert expect_json(run_process(home, "down", "--json"))["stopped"] is True
        assert up.proc is not None
        assert up.proc.wait(timeout=STOP_TIMEOUT) == 0  # no server thread is left blocked on the FIFO
