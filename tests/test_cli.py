"""The contract every `resident` command keeps: help, exit statuses, one-line errors, valid JSON.

Per-command behaviour is in `test_cli_home.py`, `test_cli_memory.py` and
`test_cli_replication.py`; this file checks what holds for all of them, and what only shows at
the process boundary (`python -m resident.cli` as its own process).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import lmdb
import pytest

from resident import Runtime
from resident.cli.main import all_commands, cli, main
from resident.runtime.runtime import Runtime as InProcessRuntime
from resident.store.environment import MAX_DBS
from resident.store.home import CONFIG_FILE, current_store_dir
from resident.store.tables import SCHEMA_VERSION
from tests.cli_helpers import expect_error, expect_json, expect_ok, invoke, run_process, withhold

CLI_PACKAGE = Path(__file__).resolve().parents[1] / "resident" / "cli"


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _command_paths(command, (*prefix, name))


all_commands()  # command modules load on first use; the tests below walk every one
COMMANDS = dict(_command_paths(cli))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


# -- help ----------------------------------------------------------------------------------------


def test_the_root_help_lists_every_command_and_only_commands_that_exist(home: Path) -> None:
    help_text = expect_ok(invoke(home, "--help")).stdout
    for name in cli.commands:
        assert f"\n  {name} " in help_text
    for line in help_text.split("Start here:")[1].split("\n\n")[0].strip().splitlines():
        command = line.split()[1]
        assert command in cli.commands, f"the help suggests `resident {command}`, which does not exist"


@pytest.mark.parametrize("path", [" ".join(path) for path in COMMANDS])
def test_every_command_has_help_that_explains_its_arguments_and_options(home: Path, path: str) -> None:
    command = COMMANDS[tuple(path.split())]
    help_text = expect_ok(invoke(home, *path.split(), "--help")).stdout
    assert help_text.startswith(f"Usage: resident {path} ")
    assert (command.help or "").strip(), f"`resident {path}` has no description"
    for param in command.params:
        if isinstance(param, click.Argument):
            metavar = (param.metavar or param.name or "").strip("[]").upper()
            assert metavar in (command.help or ""), f"`resident {path}` does not say what its {metavar} is"
        elif isinstance(param, click.Option) and not isinstance(command, click.Group):
            assert param.help, f"`resident {path}` option {param.opts[0]} has no help"


def test_a_command_group_without_a_subcommand_shows_its_help(home: Path) -> None:
    outcome = invoke(home, "memory")
    assert outcome.code == 2
    assert "Usage: resident memory" in outcome.stderr
    assert "enable" in outcome.stderr


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("resident")
    assert script.exists(), "the `resident` console script is not installed next to the interpreter"
    assert "resident.cli.main" in script.read_text(errors="replace")


# -- usage errors --------------------------------------------------------------------------------


USAGE_MISTAKES = {
    "unknown command": (("nope",), "No such command 'nope'", "resident --help"),
    "unknown option": (("status", "--bogus"), "No such option '--bogus'", "resident status --help"),
    "missing argument": (("remember", "deven"), "Missing argument 'TEXT'", "resident remember --help"),
    "unknown scope": (("remember", "deven", "x", "--scope", "TEAM"), "AGENT_CORE", "resident remember --help"),
    "value out of range": (("recall", "deven", "x", "-k", "101"), "1<=x<=100", "resident recall --help"),
    "unknown kind": (("remember", "deven", "x", "--kind", "dream"), "observation", "resident remember --help"),
    "nested command": (("memory", "show", "mem_1"), "Missing option '--as'", "resident memory show --help"),
}


@pytest.mark.parametrize("mistake", list(USAGE_MISTAKES))
def test_a_usage_mistake_exits_2_with_one_line_pointing_at_the_help(home: Path, mistake: str) -> None:
    args, named, help_pointer = USAGE_MISTAKES[mistake]
    expect_error(invoke(home, *args), "UsageError", code=2, naming=(named, help_pointer))


@pytest.mark.parametrize("mistake", list(USAGE_MISTAKES))
def test_a_usage_mistake_with_json_is_a_json_error_object(home: Path, mistake: str) -> None:
    args, named, _ = USAGE_MISTAKES[mistake]
    expect_error(invoke(home, *args, "--json"), "UsageError", code=2, naming=(named,))


def test_a_usage_mistake_exits_2_as_a_real_process_without_creating_the_home(home: Path) -> None:
    expect_error(run_process(home, "recall", "deven"), "UsageError", code=2, naming=("Missing argument 'QUERY'",))
    assert not home.exists()


# -- runtime errors ------------------------------------------------------------------------------


def test_an_unknown_member_is_one_line_naming_the_roster(home: Path) -> None:
    expect_ok(invoke(home, "memory", "enable"))
    expect_error(invoke(home, "remember", "nobody", "text"), "UnknownMember", naming=("'nobody'", "deven"))
    expect_error(invoke(home, "recall", "nobody", "text", "--json"), "UnknownMember", naming=("samuel",))


def test_an_unexpected_failure_is_one_line_with_exit_70(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> Runtime:
        raise ZeroDivisionError("the bug")

    # The command opens the in-process runtime, whose class the public `Runtime` extends.
    monkeypatch.setattr(InProcessRuntime, "open", broken)
    monkeypatch.delenv("RESIDENT_DEBUG", raising=False)
    message = expect_error(invoke(home, "status"), "InternalError", code=70, naming=("ZeroDivisionError", "the bug"))
    assert "RESIDENT_DEBUG=1" in message
    expect_error(invoke(home, "status", "--json"), "InternalError", code=70)


def test_resident_debug_lets_an_unexpected_failure_raise(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> Runtime:
        raise ZeroDivisionError("the bug")

    # The command opens the in-process runtime, whose class the public `Runtime` extends.
    monkeypatch.setattr(InProcessRuntime, "open", broken)
    monkeypatch.setenv("RESIDENT_DEBUG", "1")
    result = click.testing.CliRunner().invoke(cli, ["--home", str(home), "status"])
    assert isinstance(result.exception, ZeroDivisionError)


def test_an_os_error_is_one_line_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    home = tmp_path / "a-file" / "home"
    expect_error(invoke(home, "status"), "NotADirectoryError", naming=("Not a directory", str(home)))
    expect_error(invoke(home, "status", "--json"), "NotADirectoryError")


def test_a_home_in_use_by_another_process_names_its_pid(home: Path) -> None:
    with Runtime.open(home):
        message = expect_error(run_process(home, "status"), "HomeInUse", naming=(f"pid {os.getpid()}",))
        assert str(home) in message
        expect_error(invoke(home, "status", "--json"), "HomeInUse", naming=(f"pid {os.getpid()}",))


def test_a_malformed_resident_toml_is_refused_naming_its_line(home: Path) -> None:
    expect_ok(invoke(home, "init"))
    (home / CONFIG_FILE).write_text('[team]\ncoordinator = "samuel"\n\n[members.deven\nrole = "dev"\n')
    expect_error(run_process(home, "status"), "ConfigError", naming=(CONFIG_FILE, "line 4"))
    expect_error(invoke(home, "memory", "status", "--json"), "ConfigError", naming=("line 4",))


def test_a_home_of_another_schema_is_refused_naming_both_versions(home: Path) -> None:
    expect_ok(invoke(home, "init"))
    env = lmdb.open(str(current_store_dir(home)), max_dbs=MAX_DBS, subdir=True)
    try:
        with env.begin(write=True) as txn:
            txn.put(b"schema_version", b"99", db=env.open_db(b"meta", txn=txn))
    finally:
        env.close()
    expect_error(run_process(home, "status"), "SchemaMismatch", naming=("99", f"version {SCHEMA_VERSION}"))
    expect_error(invoke(home, "status", "--json"), "SchemaMismatch", naming=("99",))


def test_argv_that_is_not_utf8_is_refused_before_anything_is_written(home: Path) -> None:
    expect_ok(invoke(home, "memory", "enable"))
    message = expect_error(run_process(home, "remember", "deven", b"caf\xe9 au lait", "--json"), "TextInvalid")
    assert "TEXT is not valid UTF-8" in message
    status = expect_json(invoke(home, "memory", "status", "--json"))
    assert status["records"] == 0


def test_coordination_commands_keep_the_error_contract(home: Path) -> None:
    # `run` itself is exercised by the coordination tests; here only what every command promises.
    expect_ok(invoke(home, "init"))
    progress = expect_json(invoke(home, "progress", "--json"))
    assert isinstance(progress, dict)
    expect_error(invoke(home, "correct", "exe_nothing", "--note", "wrong", "--json"), "UnknownExecution")
    expect_error(invoke(home, "correct", "exe_nothing", "--note", "wr\udcffong"), "TextInvalid", naming=("note",))
    expect_error(invoke(home, "run", str(home / "missing-plan.toml"), "--json"), "PlanInvalid")


# -- JSON output ---------------------------------------------------------------------------------


def test_json_output_is_one_document_on_one_line(home: Path) -> None:
    expect_ok(invoke(home, "memory", "enable"))
    expect_ok(invoke(home, "remember", "deven", "línea uno\nline two 二"))
    outcome = invoke(home, "recall", "deven", "línea", "--json")
    assert outcome.stdout.count("\n") == 1
    document = expect_json(outcome)
    assert document["hits"][0]["body"] == "línea uno\nline two 二"


def test_json_errors_of_withheld_records_carry_the_state_and_reason(home: Path) -> None:
    expect_ok(invoke(home, "memory", "enable"))
    record_id = expect_json(invoke(home, "remember", "deven", "a fact", "--json"))["id"]
    withhold(home, record_id, "canonical through a delegated path")
    error = json.loads(invoke(home, "memory", "show", record_id, "--as", "deven", "--json").stdout)["error"]
    assert error == {
        "type": "RecordWithheld",
        "message": error["message"],
        "id": record_id,
        "state": "conflict",
        "reason": "canonical through a delegated path",
    }


@pytest.fixture
def resident_logger() -> Iterator[logging.Logger]:
    """The `resident` logger, put back as it was after `main()` configured it for the CLI."""
    logger = logging.getLogger("resident")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield logger
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


def test_runtime_log_records_reach_stderr_as_one_line_without_a_traceback(
    resident_logger: logging.Logger, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RESIDENT_DEBUG", raising=False)
    with pytest.raises(SystemExit):
        main(["--version"])
    capsys.readouterr()
    try:
        raise ZeroDivisionError("inner")
    except ZeroDivisionError as error:
        logging.getLogger("resident.actors.writer").error("a write failed:\n%s", error, exc_info=error)
    logging.getLogger("resident.actors.writer").info("not shown outside debug mode")
    assert capsys.readouterr().err == "resident: error: a write failed: inner\n"


# -- layering ------------------------------------------------------------------------------------


def test_the_cli_never_opens_lmdb_itself() -> None:
    # Everything goes through `Runtime`; these modules open or copy the LMDB environment.
    forbidden = {"lmdb", "resident.store.store", "resident.store.backup", "resident.store.view"}
    for path in sorted(CLI_PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {node.module or ""}
            else:
                continue
            assert not names & forbidden, f"{path.name} imports {sorted(names & forbidden)}"
