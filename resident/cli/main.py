"""The `resident` command: the root group, the home option, and how errors are printed.

Every failure is one line on stderr and a non-zero exit status, never a traceback:

* a `ResidentError` (what the runtime refuses on purpose) exits 1: `error: Type: message`;
* a usage mistake (unknown option, missing argument, a value outside its choices) exits 2, with
  a pointer to the command's `--help`;
* an operating-system error (permission denied, no space left) exits 1 naming the OS error;
* anything unexpected exits 70; `RESIDENT_DEBUG=1` shows the traceback instead;
* Ctrl-C (SIGINT) exits 130 and SIGTERM 143, both after the same graceful stop: the command's
  cleanup runs (the runtime closes, child processes stop, the home is released).

A command run with `--json` prints the error as `{"error": {"type", "message"}}` on stdout instead
of the line on stderr, so a script always reads one valid JSON document.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from importlib import import_module
from types import FrameType
from typing import Any, NoReturn

import click

from resident.cli.caller import guard_command
from resident.cli.common import CliState
from resident.errors import RecordWithheld, ResidentError, os_error_message
from resident.terminal import printable

__all__ = [
    "COMMANDS", "EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "EXIT_USAGE", "Terminated",
    "all_commands", "cli", "main",
]

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM
DEBUG_ENV = "RESIDENT_DEBUG"
_ARGV = "resident.argv"
# Errors whose text already says what they are; the others are printed as `error: Type: message`.
_UNNAMED = frozenset({"UsageError", "InternalError", "Interrupted", "Terminated"})


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises `KeyboardInterrupt`, so both stop a command the same way."""


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    # Once: a second SIGTERM must not cut short the cleanup the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated


# Every command: the module under resident/cli/ that defines it (in its `COMMANDS`), and the line
# `resident --help` shows for it. A command's module is imported only when that command runs (or
# its help is asked for), so that starting `resident` costs what the one command needs: importing
# every module made each command about 90 ms slower. A new command is one line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "accept": ("coordinate", "Accept a step that succeeded (once)."),
    "await": ("coordinate", "Wait for an execution to end: outcome, exit status, summary, records written."),
    "answer": ("engagement", "Answer an owner's question: the member's engagement becomes this."),
    "backup": ("home", "Copy the home to DEST, verifiably."),
    "bench": ("bench", "Measure the runtime on this machine."),
    "cognition": ("cognition", "One recall over memory, knowledge and a bridged Cognition service; capabilities."),
    "correct": ("run", "Record an owner correction on an execution (its skill use scores 0)."),
    "curate": ("session", "Admit excerpts of a member's recovered sessions into its memory."),
    "dispatch": ("coordinate", "Dispatch a task to a member under a child grant; runs its harness in the background."),
    "doctor": ("maintenance", "Check the home whole: configuration, pages, tables, events, records."),
    "down": ("up", "Stop the runtime `resident up` runs for the home."),
    "engage": ("engagement", "Switch a member's engagement (domain, project, counterpart, activity)."),
    "engagement": ("engagement", "Show a member's engagement state."),
    "executions": ("coordinate", "Executions, one progress line each (by member and state)."),
    "evolution": ("evolution", "Every change evolution made to a member, with version and basis; roll one back."),
    "init": ("home", "Create the home and its resident.toml, or set its Realm URL."),
    "knowledge": ("knowledge", "Knowledge banks and pages, verified entries, context (needs [knowledge] enabled)."),
    "mcp": ("mcp", "The read-only MCP server of a member session."),
    "member": ("members", "Move a member's own memory between homes."),
    "memory": ("memory", "Turn memory on or off; show or forget one record."),
    "principles": ("principles", "Member principles: propose; the owner approves or rejects."),
    "progress": ("run", "Progress per member, from execution records (live, not memory)."),
    "questions": ("engagement", "The owner's open questions: sessions whose engagement the judge could not decide."),
    "realm": ("realm", "Run the Realm server, enroll homes, or act as its governance side."),
    "recall": ("memory", "Recall MEMBER's memories that best match QUERY."),
    "reconcile": ("replication", "Settle a withheld record: --rollback or --readmit."),
    "reject": ("coordinate", "Reject a finished step with a reason; --reassign MEMBER dispatches it again."),
    "remember": ("memory", "Store a memory for MEMBER (id and replication state)."),
    "replication": ("replication", "Where records stand with Realm; push now."),
    "report": ("evolution", "Reports: the weekly evolution report."),
    "restore": ("home", "Replace the home's store with the backup at SRC."),
    "run": ("run", "Run a multi-member coordination plan with live progress, then check its invariants."),
    "salvage": ("maintenance", "Copy what still reads out of a damaged home into a new one."),
    "session": ("session", "Members at work in Claude Code, Codex, pi or any command; their sessions."),
    "skills": ("skills", "The team skill library and each member's skill set."),
    "status": ("home", "The home, its members, memory and every supervised actor."),
    "up": ("up", "Run the runtime behind its loopback API until stopped."),
}


class ResidentGroup(click.Group):
    """The root group: commands loaded on first use, and every error turned into one line (or a JSON object)."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002 - click's signature
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: ARG002 - the protocol's signature
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            _load(COMMANDS[cmd_name][0])
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # noqa: ARG002 - the protocol's signature
        # From the table, without importing every command's module (see COMMANDS).
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in sorted(COMMANDS)])

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # The raw arguments tell whether `--json` was asked for even when parsing them fails.
        ctx.meta.setdefault(_ARGV, tuple(args))
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.ClickException as error:
            _click_failure(ctx, error)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ResidentError as error:
            _fail(ctx, type(error).__name__, error.message, EXIT_ERROR, _details(error))
        except (click.exceptions.Exit, click.exceptions.Abort, click.exceptions.NoArgsIsHelpError):
            raise
        except click.ClickException as error:
            _click_failure(ctx, error)
        except Terminated:
            _fail(ctx, "Terminated", "terminated by SIGTERM", EXIT_TERMINATED)
        except KeyboardInterrupt:
            _fail(ctx, "Interrupted", "interrupted", EXIT_INTERRUPTED)
        except OSError as error:
            # Permission denied, no space left, a path that vanished: the environment, not a bug.
            # A reader that went away (`resident recall … | head`) is click's to end quietly.
            if error.errno == errno.EPIPE or os.environ.get(DEBUG_ENV):
                raise
            _fail(ctx, type(error).__name__, os_error_message(error), EXIT_ERROR)
        except Exception as error:
            if os.environ.get(DEBUG_ENV):
                raise
            message = f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for a traceback)"
            _fail(ctx, "InternalError", message, EXIT_INTERNAL)


def _details(error: ResidentError) -> dict[str, str]:
    if isinstance(error, RecordWithheld):
        return {"id": error.record_id, "state": error.state, "reason": error.reason}
    return {}


def _click_failure(ctx: click.Context, error: click.ClickException) -> NoReturn:
    if isinstance(error, click.UsageError):
        where = error.ctx.command_path if error.ctx is not None else ctx.command_path
        message = f"{error.format_message()} (see `{where} --help`)"
        _fail(ctx, "UsageError", message, EXIT_USAGE)
    _fail(ctx, type(error).__name__, error.format_message(), error.exit_code)


def _wants_json(ctx: click.Context) -> bool:
    state = ctx.find_object(CliState)
    if state is not None and state.json:
        return True
    args = ctx.meta.get(_ARGV, ())
    return "--json" in (args[: args.index("--")] if "--" in args else args)


def _fail(ctx: click.Context, kind: str, message: str, code: int, details: dict[str, str] | None = None) -> NoReturn:
    one_line = printable(" ".join(message.split()))
    if _wants_json(ctx):
        click.echo(json.dumps({"error": {"type": kind, "message": one_line, **(details or {})}}))
    elif kind in _UNNAMED:
        click.echo(f"error: {one_line}", err=True)
    else:
        # The type names the condition for scripts that grep and for people who search for it.
        click.echo(f"error: {kind}: {one_line}", err=True)
    ctx.exit(code)


@click.group(cls=ResidentGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="Home directory of the runtime (default: $RESIDENT_HOME, else the user data dir).",
)
@click.version_option(package_name="resident-runtime", prog_name="resident")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """resident: a local, supervised runtime that keeps AI team members alive across sessions.

    \b
    Start here:
      resident run                  a multi-member demo run with live progress
      resident init                 create the home (memory starts off)
      resident memory enable        turn memory on
      resident remember deven "..." store a memory for a member
      resident recall deven "..."   recall it
      resident status               what is running and how it is doing

    Every command takes --help; most take --json. Errors are one line on stderr (with --json,
    a JSON object on stdout) and a non-zero exit status: 1 when the runtime refused, 2 for a
    usage mistake.
    """
    ctx.obj = CliState(home=home)


_LOADED: set[str] = set()


def _load(module_name: str) -> None:
    """Import a command module and add its commands, each guarded against member sessions (see caller.py)."""
    if module_name in _LOADED:
        return
    _LOADED.add(module_name)
    module = import_module(f"resident.cli.{module_name}")
    for command in module.COMMANDS:
        name = command.name or ""
        # The listing's line is the table's, so it reads the same loaded or not.
        command.short_help = COMMANDS[name][1]
        guard_command(command, (name,))
        cli.add_command(command)


def all_commands() -> dict[str, click.Command]:
    """Every command, its module imported (for tests and tools that walk the whole command tree)."""
    for module_name, _ in COMMANDS.values():
        _load(module_name)
    return dict(cli.commands)


class _OneLine(logging.Formatter):
    """Runtime log records as one line each: no tracebacks outside debug mode."""

    def format(self, record: logging.LogRecord) -> str:
        return f"resident: {record.levelname.lower()}: {printable(' '.join(record.getMessage().split()))}"


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Where the runtime's log records go while a command runs."""


def _configure_logging() -> None:
    logger = logging.getLogger("resident")
    if any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        return
    handler = _StderrHandler(sys.stderr)
    if os.environ.get(DEBUG_ENV):
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        logger.setLevel(logging.DEBUG)
    else:
        handler.setFormatter(_OneLine())
        logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `resident` console script."""
    _configure_logging()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
    cli.main(args=list(argv) if argv is not None else sys.argv[1:], prog_name="resident")
