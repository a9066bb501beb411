"""What must hold at the end of a run, checked against the store and the supervisor, not the harness."""

from __future__ import annotations

from dataclasses import dataclass

from resident.errors import RecordWithheld, ResidentError
from resident.memory.visibility import WITHHELD
from resident.messages.replication import ReplicationCounts
from resident.runner.harness import RunMetrics
from resident.runtime import Runtime
from resident.store.tables import RECORDS

__all__ = ["Invariant", "check_invariants"]


@dataclass(frozen=True)
class Invariant:
    name: str
    ok: bool
    detail: str


def _writes_kept(runtime: Runtime, metrics: RunMetrics) -> Invariant:
    with runtime._internal.store.reader() as reader:
        missing = sorted(i for i in metrics.acknowledged if reader.get(RECORDS, i) is None)
    detail = f"{len(metrics.acknowledged)} acknowledged writes, all in the store"
    if missing:
        detail = f"{len(missing)} acknowledged writes are missing, e.g. {missing[0]}"
    return Invariant("no acknowledged write lost", not missing, detail)


def _nothing_withheld_served(runtime: Runtime, metrics: RunMetrics) -> Invariant:
    problems = [f"recall served withheld {i}" for i in metrics.served_withheld]
    with runtime._internal.store.reader() as reader:
        withheld = [r for _, r in reader.items(RECORDS) if r.replication in WITHHELD]
    for record in withheld:
        author = record.author or record.owner
        if author not in runtime.config.member_names():
            continue
        member = runtime.member(author)
        try:
            member.get(record.id)
            problems.append(f"get served withheld {record.id}")
        except RecordWithheld:
            pass
        try:
            hits = member.recall(record.summary, k=100)
        except ResidentError as error:
            problems.append(f"recall failed while probing {record.id}: {error}")
            continue
        if record.id in {hit.id for hit in hits}:
            problems.append(f"recall served withheld {record.id}")
    detail = f"{len(withheld)} withheld records, none served" if not problems else "; ".join(problems[:3])
    return Invariant("nothing withheld was served", not problems, detail)


def _restarts_recovered(runtime: Runtime, metrics: RunMetrics) -> Invariant:
    stats = runtime.statistics()
    down = [f"{c.name} is {c.state}" for c in stats.children if c.state != "running"]
    short = [
        f"{name} crashed {count}x but restarted {stats.child(name).total_restarts}x"
        for name, count in metrics.crashes.items()
        if stats.child(name).total_restarts < count
    ]
    problems = down + short + ([f"root escalated: {stats.escalated}"] if stats.escalated else [])
    restarts = sum(c.total_restarts for c in stats.children)
    detail = f"{restarts} restarts, every actor running" if not problems else "; ".join(problems[:3])
    return Invariant("every restart recovered", not problems, detail)


def _tasks_succeeded(metrics: RunMetrics) -> Invariant:
    failed = [t for t in metrics.tasks.values() if t.state != "succeeded"]
    detail = f"{len(metrics.tasks)} tasks succeeded" if not failed else "; ".join(t.error or t.task for t in failed[:3])
    return Invariant("every task succeeded", not failed, detail)


def _replication_settled(counts: ReplicationCounts | None) -> Invariant | None:
    if counts is None:
        return None
    detail = ", ".join(f"{state} {n}" for state, n in counts.counts.items())
    return Invariant("replication settled", counts.pending == 0, detail)


def check_invariants(
    runtime: Runtime, metrics: RunMetrics, replication: ReplicationCounts | None
) -> list[Invariant]:
    """Every invariant of a run, each with what was found."""
    checks = [
        _writes_kept(runtime, metrics),
        _nothing_withheld_served(runtime, metrics),
        _restarts_recovered(runtime, metrics),
        _tasks_succeeded(metrics),
        _replication_settled(replication),
    ]
    return [check for check in checks if check is not None]
