"""The live progress table of `resident run`, and its final summary."""

from __future__ import annotations

import time

from rich.console import Group
from rich.table import Table
from rich.text import Text

from resident.messages.replication import ReplicationCounts
from resident.messages.supervision import SupervisorStatistics
from resident.runner.harness import RunMetrics
from resident.runner.invariants import Invariant
from resident.terminal import printable

__all__ = ["live_view", "summary_view"]

_STATE_STYLE = {
    "succeeded": "green", "failed": "red", "running": "cyan", "waiting": "yellow", "realm down": "magenta",
    "session": "blue",
}


def _tasks_table(metrics: RunMetrics) -> Table:
    table = Table(title="tasks", title_justify="left", expand=False)
    # A plan with harness tasks shows the member session each one runs as.
    sessions = any(task.session for task in metrics.tasks.values())
    for column in ("member", "task", "steps", "writes", "state", *(("session",) if sessions else ())):
        table.add_column(column, no_wrap=True)
    for task in metrics.tasks.values():
        table.add_row(
            task.member,
            task.task,
            f"{task.steps_done}/{task.steps_total}",
            str(task.writes),
            Text(task.state, style=_STATE_STYLE.get(task.state, "")),
            *((task.session or "-",) if sessions else ()),
        )
    return table


def _status_line(
    metrics: RunMetrics, replication: ReplicationCounts | None, stats: SupervisorStatistics | None
) -> Text:
    elapsed = time.monotonic() - metrics.started
    parts = [
        f"{elapsed:5.1f} s",
        f"writes {metrics.writes} ({metrics.writes_per_second():.0f}/s)",
        f"recalls {metrics.recalls}",
    ]
    if replication is not None:
        parts.append("replication " + " ".join(f"{k} {v}" for k, v in replication.counts.items()))
    if stats is not None:
        parts.append(f"restarts {sum(c.total_restarts for c in stats.children)}")
    return Text("  ·  ".join(parts))


def live_view(
    metrics: RunMetrics, replication: ReplicationCounts | None, stats: SupervisorStatistics | None
) -> Group:
    """What the live display shows: the tasks per member and one line of run-wide figures."""
    return Group(_tasks_table(metrics), _status_line(metrics, replication, stats))


def summary_view(
    metrics: RunMetrics,
    replication: ReplicationCounts | None,
    stats: SupervisorStatistics,
    invariants: list[Invariant],
) -> Group:
    """The final tables: tasks, actors that restarted, and the invariants checked."""
    actors = Table(title="actors", title_justify="left")
    for column in ("actor", "state", "restarts", "dead letters"):
        actors.add_column(column, no_wrap=True)
    for child in stats.children:
        actors.add_row(child.name, child.state, str(child.total_restarts), str(child.dead_letters))
    checks = Table(title="invariants", title_justify="left")
    checks.add_column("invariant", no_wrap=True)
    checks.add_column("", no_wrap=True)
    checks.add_column("found")
    for invariant in invariants:
        checks.add_row(
            invariant.name, Text("ok" if invariant.ok else "FAILED", style="green" if invariant.ok else "bold red"),
            invariant.detail,
        )
    # Notes quote plan steps, which come from a file: they are printed like every stored text.
    notes = [Text(printable(f"note: {note}"), style="yellow") for note in metrics.notes]
    return Group(_tasks_table(metrics), _status_line(metrics, replication, stats), actors, checks, *notes)
