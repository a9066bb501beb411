"""`resident dispatch`, `executions`, `await`, `accept`, `reject`: coordinating members from the shell.

The owner runs them, and so does a coordinator's session (Samuel's harness, whose grant token is in its
environment): the same commands, within its grant, for what it dispatched.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.messages.coordination import Execution
from resident.messages.coordination_calls import (
    EXECUTION_STATES,
    AcceptExecution,
    AwaitRequest,
    DispatchRequest,
    ExecutionReport,
    ExecutionsQuery,
    RejectRequest,
    state_of,
)
from resident.operations import coordination as ops
from resident.terminal import printable

__all__ = ["COMMANDS", "progress_line"]

_HARNESSES = ("claude-code", "codex", "pi", "command")


def _split(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """Repeated or comma-separated names (None when none were given)."""
    names = tuple(name.strip() for value in values for name in value.split(",") if name.strip())
    return names or None


def progress_line(execution: Execution, state: str) -> str:
    """One line per execution: id, member, role, harness, where it stands, its task."""
    harness = execution.harness or "-"
    extra = f" → {execution.reassigned_to}" if execution.reassigned_to else ""
    return printable(
        f"{execution.id}  {execution.member:<10} {execution.role:<9} {harness:<11} {state:<9} "
        f"{execution.steps:>3} steps  {execution.task[:80]}{extra}"
    )


@click.command()
@click.argument("member", type=UTF8)
@click.argument("command", nargs=-1, type=UTF8)
@click.option("--task", type=UTF8, required=True, help="What the member is to do.")
@click.option("--harness", type=click.Choice(_HARNESSES),
              help="Run the member's session in this harness, in the background (else the member takes it up with "
              "`resident session start --task EXECUTION`).")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              help="The folder the harness works in (default: here).")
@click.option("--role", default="implement", show_default=True, help="The step's role (its grant's actions).")
@click.option("--scopes", multiple=True, type=UTF8, metavar="SCOPE[,SCOPE]", help="Memory scopes of its grant.")
@click.option("--actions", multiple=True, type=UTF8, metavar="ACTION[,ACTION]", help="Actions of its grant.")
@click.option("--ttl", type=click.FloatRange(60.0, 30 * 86_400.0), default=3600.0, show_default=True,
              help="How long its grant lasts (seconds; never beyond the dispatcher's).")
@json_option
@pass_state
def dispatch(
    state: CliState, member: str, command: tuple[str, ...], task: str, harness: str | None, directory: Path | None,
    role: str, scopes: tuple[str, ...], actions: tuple[str, ...], ttl: float, as_json: bool,
) -> None:
    """Dispatch TASK to MEMBER; prints the execution id: `resident dispatch alice --task T --harness command -- make`.

    With --harness the runtime runs the member's session in the background (COMMAND after `--` for the command
    harness, or instead of the harness's usual one), within `[sessions] max_running` at once; it goes on after this
    command exits. Follow it with `resident executions` and `resident await EXECUTION`.
    """
    if command and harness is None:
        raise click.UsageError("a COMMAND after `--` is run by a harness: add --harness")
    where = str((directory or Path.cwd()).absolute()) if harness else ""
    if command and os.sep in command[0]:
        command = (str(Path(command[0]).absolute()), *command[1:])
    request = DispatchRequest(
        member, task, role=role, harness=harness or "", command=command, directory=where,
        actions=_split(actions), scopes=_split(scopes), ttl=ttl,  # type: ignore[arg-type]  # checked by the runtime
    )
    with runtime_for(state) as runtime:
        execution = runtime.run(ops.DISPATCH, request)
    if as_json:
        emit_json(execution)
    else:
        stdout.line(execution.id)


@click.command()
@click.option("--member", type=UTF8, help="Only MEMBER's.")
@click.option("--state", "wanted", type=click.Choice(EXECUTION_STATES), help="Only those in this state.")
@json_option
@pass_state
def executions(state: CliState, member: str | None, wanted: str | None, as_json: bool) -> None:
    """Executions, oldest first, one progress line each (a coordinator's session: those it dispatched)."""
    with runtime_for(state, create=False) as runtime:
        found = runtime.run(ops.EXECUTIONS, ExecutionsQuery(member=member, state=wanted)).executions  # type: ignore[arg-type]  # a click choice
    if as_json:
        emit_json({"executions": [{**_plain(e), "state": state_of(e)} for e in found]})
        return
    for execution in found:
        stdout.line(progress_line(execution, state_of(execution)))


def _plain(execution: Execution) -> dict[str, object]:
    import msgspec  # noqa: PLC0415 - only --json needs it

    plain: dict[str, object] = msgspec.to_builtins(execution)
    return plain


@click.command(name="await")
@click.argument("execution_id", metavar="EXECUTION", type=UTF8)
@click.option("--timeout", type=click.FloatRange(0.0, 86_400.0), default=600.0, show_default=True,
              help="Seconds to wait for it to end; exits 3 when it still runs then.")
@json_option
@pass_state
def await_command(state: CliState, execution_id: str, timeout: float, as_json: bool) -> None:
    """Wait for EXECUTION to end: its outcome, exit status, the session's summary and the records the member wrote.

    Exits 0 when it succeeded, 1 when it failed or was cancelled, 3 when it still runs at --timeout.
    """
    with runtime_for(state, create=False) as runtime:
        report = runtime.run(ops.AWAIT, AwaitRequest(execution_id, timeout=timeout))
    if as_json:
        emit_json(report)
    else:
        _print_report(report)
    if report.execution.outcome == "running":
        raise SystemExit(3)
    if report.execution.outcome != "succeeded":
        raise SystemExit(1)


def _print_report(report: ExecutionReport) -> None:
    stdout.line(progress_line(report.execution, report.state))
    status = "-" if report.exit_code is None else str(report.exit_code)
    stdout.line(printable(f"exit status: {status}"))
    stdout.line(printable(f"summary: {report.summary}"))
    if report.records:
        print_table(
            ("record", "scope", "kind", "summary"),
            ((r.id, r.scope, r.kind, r.summary) for r in report.records),
            ids=("record",), title=f"{len(report.records)} records written",
        )


@click.command()
@click.argument("execution_id", metavar="EXECUTION", type=UTF8)
@json_option
@pass_state
def accept(state: CliState, execution_id: str, as_json: bool) -> None:
    """Accept EXECUTION, a step that succeeded (once); knowledge it proposed goes to the gate."""
    with runtime_for(state) as runtime:
        execution = runtime.run(ops.ACCEPT, AcceptExecution(execution_id))
    if as_json:
        emit_json(execution)
    else:
        stdout.line(progress_line(execution, "accepted"))


@click.command()
@click.argument("execution_id", metavar="EXECUTION", type=UTF8)
@click.option("--reason", type=UTF8, required=True, help="Why the step is rejected (its record keeps it).")
@click.option("--reassign", type=UTF8, metavar="MEMBER", help="Dispatch the same task to MEMBER (same role, harness).")
@json_option
@pass_state
def reject(state: CliState, execution_id: str, reason: str, reassign: str | None, as_json: bool) -> None:
    """Reject EXECUTION, a finished step, with --reason (once); --reassign MEMBER dispatches its task again."""
    with runtime_for(state) as runtime:
        rejected = runtime.run(ops.REJECT, RejectRequest(execution_id, reason, reassign=reassign))
    if as_json:
        emit_json(rejected)
        return
    stdout.line(progress_line(rejected.execution, "rejected"))
    if rejected.reassigned is not None:
        stdout.line(rejected.reassigned.id)


COMMANDS = (dispatch, executions, await_command, accept, reject)
