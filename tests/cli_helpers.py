"""Running the `resident` command in tests: in-process through click's runner, or as a real process.

In-process runs are fast (no interpreter start) and are used for most behaviour; a real process
(`python -m resident.cli`) is used where the process boundary is the point: exit statuses as the
shell sees them, what reaches stderr, argv bytes, pipes on stdin, two processes on one home.

Every helper checks the CLI's error contract on the way, so no test can forget it: no traceback
anywhere, an error is exactly one line on stderr (or, with `--json`, one JSON object with
`error.type` and `error.message` on stdout and nothing on stderr).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from resident import Runtime
from resident.cli.main import cli
from resident.messages.replication import RecordConflicted
from resident.messages.store import Commit

__all__ = ["Outcome", "expect_error", "expect_json", "expect_ok", "invoke", "run_process", "withhold"]

PROCESS_TIMEOUT = 60.0
# Errors printed without their type name (their text says what they are).
UNNAMED = ("UsageError", "InternalError")


@dataclass(frozen=True)
class Outcome:
    """What one run of `resident` did."""

    args: tuple[str | bytes, ...]
    code: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"resident {self.args!r} exited {self.code}\nstdout: {self.stdout!r}\nstderr: {self.stderr!r}"


def invoke(
    home: Path, *args: str, input: str | bytes | None = None, env: dict[str, str | None] | None = None  # noqa: A002 - mirrors subprocess.run's own `input` argument
) -> Outcome:
    """Run `resident --home HOME ARGS` in this process (`env` sets or, with None, unsets variables)."""
    result = CliRunner().invoke(cli, ["--home", str(home), *args], input=input, env=env, prog_name="resident")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"resident {args!r} raised instead of exiting") from result.exception
    outcome = Outcome(tuple(args), result.exit_code, result.stdout, result.stderr)
    _check_no_traceback(outcome)
    return outcome


def run_process(
    home: Path, *args: str | bytes, input: bytes | None = None, env: dict[str, str] | None = None  # noqa: A002 - mirrors subprocess.run's own `input` argument
) -> Outcome:
    """Run `python -m resident.cli ARGS` as its own process, with `RESIDENT_HOME=home`."""
    environment = {k: v for k, v in os.environ.items() if k not in ("RESIDENT_DEBUG", "RESIDENT_HOME")}
    environment.update({"RESIDENT_HOME": str(home), "PYTHONIOENCODING": "utf-8", **(env or {})})
    completed = subprocess.run(
        [sys.executable, "-m", "resident.cli", *args],
        input=input if input is not None else b"",
        capture_output=True,
        env=environment,
        cwd=home.parent,
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    outcome = Outcome(
        tuple(args),
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )
    _check_no_traceback(outcome)
    return outcome


def _check_no_traceback(outcome: Outcome) -> None:
    assert "Traceback" not in outcome.stderr, outcome.describe()
    assert "Traceback" not in outcome.stdout, outcome.describe()


def expect_ok(outcome: Outcome) -> Outcome:
    """The run succeeded and wrote nothing to stderr."""
    assert outcome.code == 0, outcome.describe()
    assert outcome.stderr == "", outcome.describe()
    return outcome


def expect_json(outcome: Outcome) -> Any:
    """The run succeeded and printed exactly one JSON document; that document."""
    expect_ok(outcome)
    try:
        return json.loads(outcome.stdout)
    except json.JSONDecodeError as error:
        raise AssertionError(f"stdout is not one JSON document ({error})\n{outcome.describe()}") from None


def expect_error(outcome: Outcome, error_type: str, *, code: int = 1, naming: Sequence[str] = ()) -> str:
    """The run failed with `error_type` (exit `code`) as the contract says; its one-line message.

    With `--json` among the arguments the error must be the only thing on stdout, as a JSON object;
    otherwise it must be the only line on stderr (`error: Type: message`), and stdout must be empty.
    """
    assert outcome.code == code, outcome.describe()
    if "--json" in outcome.args:
        assert outcome.stderr == "", outcome.describe()
        document = json.loads(outcome.stdout)
        assert set(document) == {"error"}, outcome.describe()
        error = document["error"]
        assert error["type"] == error_type, outcome.describe()
        message: str = error["message"]
    else:
        assert outcome.stdout == "", outcome.describe()
        lines = outcome.stderr.splitlines()
        assert len(lines) == 1, outcome.describe()
        prefix = "error: " if error_type in UNNAMED else f"error: {error_type}: "
        assert lines[0].startswith(prefix), outcome.describe()
        message = lines[0].removeprefix(prefix)
    assert message.strip(), outcome.describe()
    assert "\n" not in message
    for fragment in naming:
        assert fragment in message, f"{fragment!r} not in the message\n{outcome.describe()}"
    return message


def withhold(home: Path, record_id: str, reason: str, rule: str = "") -> None:
    """Put a record into `conflict` the way Realm's rejection does: a committed `RecordConflicted` event."""
    with Runtime.open(home) as runtime:
        conflicted = RecordConflicted(at=runtime._internal.clock.time(), id=record_id, reason=reason, rule=rule)
        runtime._internal.write(Commit(events=(conflicted,)))
