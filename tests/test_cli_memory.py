"""`resident memory …`, `remember`, `recall` and `member export | import` from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from resident.cli import common
from resident.memory.records import MAX_BODY_CHARS
from resident.store.home import CONFIG_FILE
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke, run_process, withhold

DEPLOY = "the deploy needs a migration first"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home with memory on."""
    path = tmp_path / "home"
    expect_ok(invoke(path, "memory", "enable"))
    return path


def _remember(home: Path, member: str, text: str, *options: str) -> str:
    record_id: str = expect_json(invoke(home, "remember", member, text, *options, "--json"))["id"]
    return record_id


def _recalled(home: Path, member: str, query: str) -> list[str]:
    return [hit["id"] for hit in expect_json(invoke(home, "recall", member, query, "--json"))["hits"]]


def _records(home: Path) -> int:
    count: int = expect_json(invoke(home, "memory", "status", "--json"))["records"]
    return count


# -- off by default ------------------------------------------------------------------------------


def test_a_fresh_home_refuses_remember_and_recall_naming_the_command_that_enables_memory(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    expect_error(invoke(home, "remember", "deven", DEPLOY), "MemoryDisabled", naming=("resident memory enable",))
    expect_error(invoke(home, "recall", "deven", "deploy", "--json"), "MemoryDisabled", naming=("memory enable",))
    status = expect_json(invoke(home, "memory", "status", "--json"))
    assert status["enabled"] is False
    assert status["records"] == 0
    assert "resident memory enable" in expect_ok(invoke(home, "memory", "status")).stdout


def test_enabling_twice_is_a_no_op_and_disabling_deletes_nothing(home: Path) -> None:
    assert expect_json(invoke(home, "memory", "enable", "--json"))["changed"] is False
    record_id = _remember(home, "deven", DEPLOY)
    assert expect_json(invoke(home, "memory", "disable", "--json")) == {"changed": True, "enabled": False}
    assert "already off" in expect_ok(invoke(home, "memory", "disable")).stdout
    expect_error(invoke(home, "recall", "deven", "deploy"), "MemoryDisabled")
    expect_ok(invoke(home, "memory", "enable"))
    assert _recalled(home, "deven", "deploy") == [record_id]


def test_an_embedder_that_is_not_loopback_is_refused_and_memory_stays_off(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    for url in ("http://example.com:8080", "http://10.0.0.5:8080"):
        expect_error(
            invoke(home, "memory", "enable", "--embedder", url, "--json"), "EmbedderNotLoopback", naming=(url,)
        )
    expect_error(invoke(home, "memory", "enable", "--embedder", "http://192.168.1.1"), "EmbedderNotLoopback")
    assert expect_json(invoke(home, "memory", "status", "--json"))["enabled"] is False


def test_the_embedder_named_in_resident_toml_is_the_one_enable_admits(tmp_path: Path) -> None:
    home = tmp_path / "configured"
    home.mkdir(mode=0o700)
    (home / CONFIG_FILE).write_text('[memory]\nembedder = "http://10.0.0.5:8080"\n', encoding="utf-8")
    message = expect_error(invoke(home, "memory", "enable", "--json"), "EmbedderNotLoopback")
    assert message.startswith(str(home / CONFIG_FILE))
    assert "[memory] embedder" in message
    assert expect_json(invoke(home, "memory", "status", "--json"))["enabled"] is False
    # A name on the command line wins over the file, and the status says they differ.
    status = expect_json(invoke(home, "memory", "enable", "--embedder", "hash", "--json"))["status"]
    assert (status["embedder"], status["configured_embedder"]) == ("hash", "http://10.0.0.5:8080")
    assert "resident.toml asks for embedder" in expect_ok(invoke(home, "memory", "status")).stdout


@pytest.mark.parametrize(
    ("text", "naming"),
    [
        ('[memory]\ncolour = "blue"\n', "unknown key `colour` in [memory]"),
        ('[memory]\nembedder = 3\n', "[memory] embedder must be"),
        ('memory = "local"\n', "[memory] must be a table"),
    ],
)
def test_a_bad_memory_table_in_resident_toml_is_a_config_error(tmp_path: Path, text: str, naming: str) -> None:
    home = tmp_path / "configured"
    home.mkdir(mode=0o700)
    (home / CONFIG_FILE).write_text(text, encoding="utf-8")
    # Enabling reads the configuration (a read-only command on a home without a store stops earlier).
    expect_error(invoke(home, "memory", "enable", "--json"), "ConfigError", naming=(naming,))


def test_memory_status_says_why_records_stay_pending_without_a_realm(home: Path) -> None:
    _remember(home, "deven", DEPLOY)
    status = expect_json(invoke(home, "memory", "status", "--json"))
    assert status["by_replication"]["pending"] == 1
    assert "resident init --realm" in status["replication_note"]


# -- remember and recall -------------------------------------------------------------------------


def test_remember_prints_the_id_and_replication_state(home: Path) -> None:
    line = expect_ok(invoke(home, "remember", "deven", DEPLOY)).stdout
    record_id, state = line.split()
    assert record_id.startswith("mem_")
    assert state == "pending"
    receipt = expect_json(invoke(home, "remember", "deven", "another one", "--json"))
    assert {"id", "replication"} <= set(receipt)
    assert receipt["replication"] == "pending"


def test_recall_finds_what_was_remembered_with_scores(home: Path) -> None:
    record_id = _remember(home, "deven", DEPLOY, "--kind", "world", "--importance", "0.9")
    _remember(home, "deven", "lunch is at noon on fridays")
    answer = expect_json(invoke(home, "recall", "deven", "deploy migration", "-k", "1", "--json"))
    assert answer["member"] == "deven"
    assert answer["query"] == "deploy migration"
    [hit] = answer["hits"]
    assert hit["id"] == record_id
    assert hit["kind"] == "world"
    assert hit["score"] > 0
    assert {"semantic", "keyword", "temporal", "replication", "summary", "body", "scope"} <= set(hit)


def test_recall_text_shows_whole_ids_in_a_narrow_terminal(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record_id = _remember(home, "deven", DEPLOY + ", otherwise the pods crash-loop for twenty minutes")
    monkeypatch.setattr(common.stdout, "width", 30)
    text = expect_ok(invoke(home, "recall", "deven", "deploy")).stdout
    assert f" {record_id} " in text
    assert "nothing recalled" in expect_ok(invoke(home, "recall", "alice", "deploy")).stdout


def test_scopes_keep_members_to_what_they_may_see(home: Path) -> None:
    core = _remember(home, "deven", "deploy core note")
    dyadic = _remember(home, "deven", "deploy: alice reviews fast", "--scope", "agent_dyadic", "--counterpart", "alice")
    shared = _remember(home, "deven", "deploy shared note", "--scope", "WORLD_SHARED", "--world", "team")
    assert set(_recalled(home, "deven", "deploy note")) == {core, dyadic, shared}
    assert _recalled(home, "alice", "deploy note") == [shared]
    expect_error(invoke(home, "memory", "show", core, "--as", "alice", "--json"), "RecordNotFound")


def test_text_from_stdin_through_a_pipe(home: Path) -> None:
    text = "despliegue: primero la migración\n部署前先运行迁移\n"
    line = expect_ok(run_process(home, "remember", "deven", "-", input=text.encode("utf-8"))).stdout
    record_id = line.split()[0]
    record = expect_json(invoke(home, "memory", "show", record_id, "--as", "deven", "--json"))
    assert record["body"] == text.strip()
    assert _recalled(home, "deven", "migración") == [record_id]
    hits = expect_json(invoke(home, "recall", "deven", "-", "--json", input="部署 迁移".encode()))["hits"]
    assert [hit["id"] for hit in hits] == [record_id]


def test_remember_help_states_the_text_limit_the_runtime_enforces(home: Path) -> None:
    help_text = " ".join(expect_ok(invoke(home, "remember", "--help")).stdout.split())
    assert f"at most {MAX_BODY_CHARS:,} characters" in help_text


BAD_INPUT = {
    "empty text": (("remember", "deven", ""), "TextInvalid", "empty"),
    "blank text": (("remember", "deven", " \n\t "), "TextInvalid", "empty"),
    "oversized text": (("remember", "deven", "x" * (MAX_BODY_CHARS + 1)), "TextInvalid", str(MAX_BODY_CHARS)),
    "oversized summary": (("remember", "deven", "ok", "--summary", "s" * 501), "TextInvalid", "500"),
    "text not UTF-8 in argv": (("remember", "deven", "caf\udce9"), "TextInvalid", "UTF-8"),
    "option not UTF-8 in argv": (("remember", "deven", "ok", "--project", "p\udce9"), "TextInvalid", "project"),
    "unknown member": (("remember", "nobody", "ok"), "UnknownMember", "roster"),
    "dyadic without counterpart": (
        ("remember", "deven", "ok", "--scope", "AGENT_DYADIC"), "InvalidInput", "--counterpart"
    ),
    "world of another member": (
        ("remember", "deven", "ok", "--scope", "WORLD_SHARED", "--world", "lab"), "NotVisible", "lab"
    ),
    "superseding nothing": (
        ("remember", "deven", "ok", "--supersedes", "mem_nothing"), "RecordNotFound", "mem_nothing"
    ),
    "empty query": (("recall", "deven", ""), "TextInvalid", "empty"),
    "oversized query": (("recall", "deven", "q" * 2_001), "TextInvalid", "2000"),
    "forget of nothing": (("memory", "forget", "mem_nothing", "--as", "deven"), "RecordNotFound", "mem_nothing"),
    "reason not UTF-8": (("memory", "forget", "mem_x", "--as", "deven", "--reason", "\udcff"), "TextInvalid", "reason"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_bad_input_is_a_typed_one_line_error_and_writes_nothing(home: Path, case: str, as_json: bool) -> None:
    args, error_type, named = BAD_INPUT[case]
    before = _records(home)
    expect_error(invoke(home, *args, *(["--json"] if as_json else [])), error_type, naming=(named,))
    assert _records(home) == before


@pytest.mark.parametrize("command", ["remember", "recall"])
def test_stdin_that_is_not_utf8_is_refused(home: Path, command: str) -> None:
    expect_error(
        invoke(home, command, "deven", "-", "--json", input=b"caf\xe9\n"), "TextInvalid", naming=("standard input",)
    )
    assert _records(home) == 0


def test_a_text_that_looks_like_markup_is_printed_as_it_is(home: Path) -> None:
    text = "keep [/x] and [bold]this[/bold] and :thumbs_up: literally"
    record_id = _remember(home, "deven", text)
    shown = expect_ok(invoke(home, "memory", "show", record_id, "--as", "deven")).stdout
    assert shown.count(text) == 2  # summary and body
    assert text in expect_ok(invoke(home, "recall", "deven", "keep literally")).stdout


# -- show, forget, supersede, withheld -----------------------------------------------------------


def test_memory_show_prints_the_record(home: Path) -> None:
    record_id = _remember(home, "deven", DEPLOY, "--summary", "migrate first")
    text = expect_ok(invoke(home, "memory", "show", record_id, "--as", "deven")).stdout
    assert text.startswith(f"{record_id}  experience  agent_core/deven\n")
    assert "summary     migrate first" in text
    assert "replication pending" in text
    assert text.rstrip().endswith(DEPLOY)
    record = expect_json(invoke(home, "memory", "show", record_id, "--as", "deven", "--json"))
    assert (record["id"], record["summary"], record["body"]) == (record_id, "migrate first", DEPLOY)


def test_forget_retracts_without_deleting(home: Path) -> None:
    record_id = _remember(home, "deven", DEPLOY)
    assert expect_json(invoke(home, "memory", "forget", record_id, "--as", "deven", "--reason", "wrong", "--json")) == {
        "id": record_id,
        "lifecycle": "retracted",
    }
    assert _recalled(home, "deven", "deploy") == []
    record = expect_json(invoke(home, "memory", "show", record_id, "--as", "deven", "--json"))
    assert record["lifecycle"] == "retracted"


def test_supersedes_replaces_a_record_in_recall_and_keeps_the_old_one(home: Path) -> None:
    old = _remember(home, "deven", DEPLOY)
    new = _remember(home, "deven", "the deploy needs the migration and a cache flush", "--supersedes", old)
    assert _recalled(home, "deven", "deploy") == [new]
    record = expect_json(invoke(home, "memory", "show", old, "--as", "deven", "--json"))
    assert (record["lifecycle"], record["superseded_by"]) == ("superseded", new)


def test_a_withheld_record_is_refused_with_its_state_and_reason_and_never_served(home: Path, tmp_path: Path) -> None:
    record_id = _remember(home, "deven", DEPLOY, "--canonical")
    withhold(home, record_id, "non-canonical memory cannot be promoted through a delegated path")

    message = expect_error(invoke(home, "memory", "show", record_id, "--as", "deven"), "RecordWithheld")
    assert "conflict" in message
    assert "delegated path" in message
    assert f"resident reconcile {record_id}" in message
    error = json.loads(invoke(home, "memory", "show", record_id, "--as", "deven", "--json").stdout)["error"]
    assert (error["type"], error["state"], error["id"]) == ("RecordWithheld", "conflict", record_id)
    assert _recalled(home, "deven", "deploy migration") == []
    expect_error(invoke(home, "remember", "deven", "x", "--supersedes", record_id, "--json"), "RecordWithheld")
    expect_ok(invoke(home, "member", "export", "deven", str(tmp_path / "deven.json")))
    exported = json.loads((tmp_path / "deven.json").read_text())
    assert record_id not in json.dumps(exported)


# -- member export and import --------------------------------------------------------------------


def test_member_export_then_import_moves_a_members_own_memory_to_another_home(home: Path, tmp_path: Path) -> None:
    core = _remember(home, "deven", "deploy core note")
    dyadic = _remember(home, "deven", "deploy: alice reviews fast", "--scope", "AGENT_DYADIC", "--counterpart", "alice")
    shared = _remember(home, "deven", "deploy shared note", "--scope", "WORLD_SHARED", "--world", "team")
    export = tmp_path / "deven.json"
    assert expect_json(invoke(home, "member", "export", "deven", str(export), "--json")) == {
        "member": "deven", "file": str(export), "records": 2,
    }
    assert export.stat().st_mode & 0o777 == 0o600

    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    (other / CONFIG_FILE).write_text('[members.alice]\nrole = "testing"\n')
    expect_ok(invoke(other, "memory", "enable"))
    answer = expect_json(invoke(other, "member", "import", str(export), "--json"))
    assert answer == {"member": "deven", "imported": 2, "skipped": 0, "joined": True}
    assert set(_recalled(other, "deven", "deploy note")) == {core, dyadic}
    assert shared not in _recalled(other, "alice", "deploy note")


def test_importing_the_same_export_twice_skips_what_is_already_there(home: Path, tmp_path: Path) -> None:
    _remember(home, "deven", DEPLOY)
    export = tmp_path / "deven.json"
    expect_ok(invoke(home, "member", "export", "deven", str(export)))
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    (other / CONFIG_FILE).write_text('[members.alice]\nrole = "testing"\n')
    expect_ok(invoke(other, "memory", "enable"))
    expect_ok(invoke(other, "member", "import", str(export)))
    again = expect_ok(invoke(other, "member", "import", str(export))).stdout
    assert again.startswith("imported 0 records of deven; 1 already here")


def test_member_import_refuses_a_damaged_file_or_a_home_with_memory_off(home: Path, tmp_path: Path) -> None:
    _remember(home, "deven", DEPLOY)
    export = tmp_path / "deven.json"
    expect_ok(invoke(home, "member", "export", "deven", str(export)))
    other = tmp_path / "other"

    expect_error(invoke(other, "member", "import", str(export), "--json"), "MemoryDisabled")
    expect_ok(invoke(other, "memory", "enable"))
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(export.read_bytes()[:-20])
    expect_error(invoke(other, "member", "import", str(truncated)), "ExportInvalid")
    expect_error(invoke(other, "member", "import", str(tmp_path / "missing.json"), "--json"), "ExportInvalid")
    expect_error(invoke(home, "member", "export", "nobody", str(tmp_path / "x.json")), "UnknownMember")
    assert _records(other) == 0
    assert not (tmp_path / "x.json").exists()
