"""`resident run`, `resident progress`, `resident correct`: coordination from the shell."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import require_closed, runtime_for
from resident.coordination.default_plan import MAX_WRITES, default_plan
from resident.coordination.plan import render_plan
from resident.messages.coordination_calls import CorrectRequest, ProgressQuery
from resident.operations import coordination as coordination_ops
from resident.store.home import CONFIG_FILE, HOME_ENV, resolve_home
from resident.terminal import printable

if TYPE_CHECKING:
    from resident.runner.run import RunReport

__all__ = ["COMMANDS"]


def _report_json(report: RunReport) -> dict[str, object]:
    metrics = report.metrics
    latencies = sorted(metrics.latencies)

    def quantile(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0.0

    return {
        "ok": report.ok,
        "home": str(report.home),
        "scratch_home": report.scratch,
        "home_removed": report.removed,
        "plan": report.plan,
        "realm": report.realm,
        "seconds": round(report.seconds, 3),
        "writes": metrics.writes,
        "writes_per_second": round(metrics.writes / report.seconds, 1) if report.seconds else 0.0,
        "ack_ms": {"p50": round(quantile(0.5), 3), "p99": round(quantile(0.99), 3)},
        "recalls": metrics.recalls,
        "tasks": {t.task: {"member": t.member, "state": t.state, "steps": t.steps_done, "writes": t.writes,
                           "error": t.error, **({"session": t.session} if t.session else {})}
                  for t in metrics.tasks.values()},
        **({"work": str(metrics.work)} if metrics.work is not None else {}),
        "crashes": dict(metrics.crashes),
        "replication": report.replication.counts if report.replication else None,
        "restarts": {c.name: c.total_restarts for c in report.statistics.children if c.total_restarts},
        "invariants": [{"name": i.name, "ok": i.ok, "detail": i.detail} for i in report.invariants],
        "notes": metrics.notes,
    }


@click.command(name="run")
@click.argument("plan", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--members", type=click.IntRange(2, 500), help="How many members take part (default: the whole roster).")
@click.option("--writes", type=click.IntRange(1, MAX_WRITES), default=30, show_default=True,
              help="Notes each member writes in the built-in plan (about).")
@click.option("--realm", default="auto", show_default=True, metavar="auto|URL|none",
              help="auto: start a loopback Realm for the run; URL: use a running one; none: no replication.")
@click.option("--realm-admin-token-file", "admin_token_file", type=click.Path(dir_okay=False, path_type=Path),
              metavar="FILE", help="With --realm URL: that Realm's admin token (its admin.token), for the plan's "
              "invalidation; without it the invalidation is left out.")
@click.option("--show-plan", is_flag=True, help="Print the plan as TOML (a starting point for your own) and exit.")
@click.option("--home", "run_home", type=click.Path(file_okay=False, path_type=str),
              help="Run in this home (as the global --home does) instead of a scratch home.")
@click.option("--keep", is_flag=True, help="Keep the scratch home after a run that succeeded (a failed run's is kept).")
@json_option
@pass_state
def run_command(
    state: CliState, plan: Path | None, members: int | None, writes: int, realm: str, admin_token_file: Path | None,
    show_plan: bool, run_home: str | None, keep: bool, as_json: bool,
) -> None:
    """Run a multi-member coordination plan with live progress, then check its invariants.

    Without PLAN the built-in plan runs: the runtime's fault and durability exercise, not
    coordination (for that, a coordinator dispatches: `resident dispatch`, `resident await`,
    examples/coordinate/). Every member writes and recalls memories concurrently, the substrate
    and a member crash and restart, Realm goes down and comes back, a delegated promotion
    conflicts and is reconciled, and the governance side invalidates a record.
    Without --home (or $RESIDENT_HOME) the run uses a fresh scratch home, removed after a run that
    succeeded unless --keep. A home the run creates gets memory turned on; an existing home must
    have memory on already. Exits 1 naming the invariant that failed, if one does.
    """
    from resident.cli.probes import check_cli_read_surfaces  # noqa: PLC0415 - the run's modules only when it runs
    from resident.config import load_config  # noqa: PLC0415 - loaded only when this runs
    from resident.runner.run import RunOptions, run  # noqa: PLC0415 - the run's modules only when it runs

    home = run_home if run_home is not None else state.home
    if show_plan:
        config = load_config(resolve_home(home) / CONFIG_FILE)
        chosen = [(m.name, m.role) for m in config.members][: members or None]
        click.echo(render_plan(default_plan(chosen, config.coordinator, writes=writes)))
        return
    if home is not None or os.environ.get(HOME_ENV):
        require_closed(home)  # a run opens its home itself; a scratch home is nobody else's
    options = RunOptions(
        plan=plan, members=members, writes=writes, realm=realm, home=home, live=not as_json, keep=keep,
        realm_admin_token_file=admin_token_file, read_surfaces_probe=check_cli_read_surfaces,
    )
    report = run(options, stdout.console)
    if as_json:
        emit_json(_report_json(report))
    else:
        where = "scratch home removed (--keep keeps it)" if report.removed else f"home {report.home}"
        stdout.print(
            f"run {report.plan!r}: {report.metrics.writes} writes in {report.seconds:.1f} s "
            f"({report.metrics.writes / report.seconds:.0f}/s); {where}"
        )
        if report.metrics.work is not None:
            stdout.print(f"the members' work (repo/) and their harness output (logs/): {report.metrics.work}")
    if not report.ok:
        if not as_json:
            for failure in report.failures():
                click.echo(printable(f"error: invariant failed: {failure.name}: {failure.detail}"), err=True)
        raise SystemExit(1)


@click.command()
@json_option
@pass_state
def progress(state: CliState, as_json: bool) -> None:
    """Progress per member, answered by the coordinator from execution records (live, not memory)."""
    with runtime_for(state, create=False) as runtime:
        report = runtime.run(coordination_ops.PROGRESS, ProgressQuery())
    if as_json:
        emit_json(report)
        return
    # The member column is never cut: on a narrow terminal (or a pipe, 80 columns) the task wraps instead.
    print_table(
        ("member", "running", "succeeded", "failed", "steps", "corrections", "last task"),
        (
            (row.member, str(row.running), str(row.succeeded), str(row.failed), str(row.steps),
             str(row.corrections), row.last_task)
            for row in report.members
        ),
        ids=("member", "running", "succeeded", "failed", "steps", "corrections"),
        title=f"{report.executions} executions, {report.running} running",
    )
    if report.sessions:
        print_table(
            ("session", "member", "harness", "execution", "since", "directory", "task"),
            (
                (s.id, s.member, s.harness, s.execution, f"{report.at - s.started_at:.0f} s", s.directory, s.task)
                for s in report.sessions
            ),
            ids=("session", "execution"), title=f"{len(report.sessions)} sessions at work",
        )


@click.command()
@click.argument("execution_id", metavar="EXECUTION_ID", type=UTF8)
@click.option("--note", type=UTF8, required=True, help="What was wrong with the execution.")
@json_option
@pass_state
def correct(state: CliState, execution_id: str, note: str, as_json: bool) -> None:
    """Record an owner correction on execution EXECUTION_ID (an event; its skill use will score 0)."""
    with runtime_for(state) as runtime:
        correction = runtime.run(coordination_ops.CORRECT, CorrectRequest(execution_id, note))
    if as_json:
        emit_json(correction)
    else:
        stdout.print(f"correction {correction.id} recorded on {execution_id}")


COMMANDS = (run_command, progress, correct)
