"""`resident evolution log | rollback`, `resident report weekly`: versioned evolution from the shell."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from resident.cli.common import UTF8, CliState, emit_json, json_option, pass_state, print_table, stdout
from resident.cli.target import runtime_for
from resident.messages.evolution import WeeklyReport
from resident.messages.evolution_calls import LogQuery, RollbackRequest, WeekQuery
from resident.operations import evolution as ops

__all__ = ["COMMANDS"]


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M")


@click.group()
def evolution() -> None:
    """Versioned evolution: skill sets and weights, forgetting, principle decisions, curated memories.

    Every change has an id MEMBER@VERSION, its basis, and can be rolled back by a compensating
    change (nothing is deleted).
    """


@evolution.command()
@click.argument("member", type=UTF8, required=False)
@click.option("--last", type=click.IntRange(1), help="Only the last N changes.")
@json_option
@pass_state
def log(state: CliState, member: str | None, last: int | None, as_json: bool) -> None:
    """MEMBER's evolution changes, oldest first (a member session: its own)."""
    with runtime_for(state) as runtime:
        found = runtime.run(ops.LOG, LogQuery(member, limit=last))
    name, changes = found.member, found.changes
    if as_json:
        emit_json({"member": name, "changes": changes})
        return
    print_table(
        ("id", "when", "kind", "subject", "before → after", "basis", "rolled back"),
        (
            (c.id, _when(c.at), c.kind, c.subject, f"{c.before} → {c.after}", c.basis, c.rolled_back_by or "-")
            for c in changes
        ),
        ids=("id",), title=f"{name}: {len(changes)} changes",
    )


@evolution.command()
@click.argument("change_id", metavar="ID", type=UTF8)
@click.option("--reason", type=UTF8, default="", help="Why (kept with the compensating change).")
@json_option
@pass_state
def rollback(state: CliState, change_id: str, reason: str, as_json: bool) -> None:
    """Undo change ID (like deven@12) by writing a compensating change; the original stays, marked."""
    with runtime_for(state) as runtime:
        undone = runtime.run(ops.ROLLBACK, RollbackRequest(change_id, reason=reason))
    if as_json:
        emit_json(undone)
    else:
        stdout.print(f"{change_id} rolled back by {undone.id} ({undone.kind} {undone.subject}: {undone.after})")


@click.group()
def report() -> None:
    """Reports on the team."""


def _print_report(result: WeeklyReport) -> None:
    rows = [
        (
            m.member, str(m.sessions),
            f"{m.uses} ({m.uses_succeeded} ok, {m.uses_failed} failed, {m.uses_corrected} corrected)",
            ", ".join(m.forgotten) or "-",
            ", ".join(m.would_forget) or "-",
            ", ".join(m.reclaims) or "-",
            str(len(m.awaiting_principles)),
        )
        for m in result.members
    ]
    print_table(
        ("member", "sessions", "skill uses", "forgotten", "would forget (dry run)", "reclaimed", "principles awaiting"),
        rows, ids=("member",), title=f"week {result.week} ({_when(result.start)} to {_when(result.end)} UTC)",
    )


@report.command()
@click.option("--week", type=UTF8, metavar="YYYY-Www", help="The ISO week (UTC), like 2026-W49 (default: this one).")
@json_option
@pass_state
def weekly(state: CliState, week: str | None, as_json: bool) -> None:
    """Per member for one week: sessions, skill uses, forgotten (or would-be, in a first month's dry
    run), reclaims, and principle candidates awaiting approval."""
    with runtime_for(state) as runtime:
        result = runtime.run(ops.REPORT, WeekQuery(week))
    if as_json:
        emit_json(result)
    else:
        _print_report(result)


COMMANDS = (evolution, report)
