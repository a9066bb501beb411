"""What must hold at the end of a run, checked against the store and the supervisor, not the harness.

"Nothing withheld was served" is checked on every read surface: for every withheld record
(`conflict`, `invalidated`, and readmitted versions still in `pending_review`), a direct get must
say why it is withheld, recall must leave it out, and the member's export must not carry it; after
the runtime is closed, the same through the CLI (`memory show`, `recall`, `member export`).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from resident.errors import RecordWithheld, ResidentError
from resident.memory.visibility import WITHHELD
from resident.messages.memory import MemoryRecord
from resident.messages.replication import ReplicationCounts
from resident.runner.harness import RunMetrics
from resident.runtime import Runtime
from resident.runtime.runtime import host_context
from resident.runtime.sessions.tree import manifests
from resident.store.tables import RECORDS, SESSIONS

__all__ = ["Invariant", "check_invariants", "withheld_records"]


@dataclass(frozen=True)
class Invariant:
    name: str
    ok: bool
    detail: str


def _writes_kept(runtime: Runtime, metrics: RunMetrics) -> Invariant:
    """Every write acknowledged in the run, the harness's and the members' own, is stored and reads back."""
    written = metrics.acknowledged | metrics.session_writes
    if not written:
        return Invariant("no acknowledged write lost", True, "no write was acknowledged in this run: nothing to check")
    with host_context(runtime).store.reader() as reader:
        stored = {i: reader.get(RECORDS, i) for i in written}
    missing = sorted(i for i, record in stored.items() if record is None)
    unreadable = [f"{i}: {problem}" for i, record in stored.items() if record is not None
                  if (problem := _read_back(runtime, record)) is not None]
    detail = (
        f"{len(written)} acknowledged writes ({len(metrics.acknowledged)} by the plan's steps, "
        f"{len(metrics.session_writes)} by the members' own sessions), all in the store and read back"
    )
    if missing:
        detail = f"{len(missing)} acknowledged writes are missing, e.g. {missing[0]}"
    elif unreadable:
        detail = f"{len(unreadable)} acknowledged writes do not read back, e.g. {unreadable[0]}"
    return Invariant("no acknowledged write lost", not missing and not unreadable, detail)


def _read_back(runtime: Runtime, record: MemoryRecord) -> str | None:
    """Why its author cannot read `record` through the API (None when it can, or Realm withheld it and says why)."""
    try:
        runtime.member(record.author or record.owner).get(record.id)
    except RecordWithheld:
        return None
    except ResidentError as error:
        return f"{type(error).__name__}: {error}"
    return None


def withheld_records(runtime: Runtime) -> list[MemoryRecord]:
    """Every withheld record whose author is a member of this home (readmitted versions included)."""
    members = host_context(runtime).config_now().member_names()
    with host_context(runtime).store.reader() as reader:
        return [r for _, r in reader.items(RECORDS) if r.replication in WITHHELD and (r.author or r.owner) in members]


def _api_problems(runtime: Runtime, withheld: list[MemoryRecord]) -> list[str]:
    problems: list[str] = []
    for record in withheld:
        member = runtime.member(record.author or record.owner)
        try:
            member.get(record.id)
            problems.append(f"get served withheld {record.id}")
        except RecordWithheld:
            pass
        try:
            hits = member.recall(record.summary, k=100, include_inactive=True)
        except ResidentError as error:
            problems.append(f"recall failed while probing {record.id}: {error}")
            continue
        if record.id in {hit.id for hit in hits}:
            problems.append(f"recall served withheld {record.id}")
    with tempfile.TemporaryDirectory() as scratch:
        for name in sorted({r.author or r.owner for r in withheld}):
            path = Path(scratch) / f"{name}.json"
            runtime.export_member(name, path)
            exported = {item["id"] for item in json.loads(path.read_bytes())["records"]}
            problems += [f"export carried withheld {r.id}" for r in withheld if r.id in exported]
    return problems


def _nothing_withheld_served(runtime: Runtime, metrics: RunMetrics) -> Invariant:
    withheld = withheld_records(runtime)
    problems = [f"recall served withheld {i}" for i in metrics.served_withheld] + _api_problems(runtime, withheld)
    reviewed = sum(1 for r in withheld if r.replication == "pending_review")
    detail = (
        f"{len(withheld)} withheld records ({reviewed} readmitted, awaiting review), none served by get, recall "
        "or export"
        if not problems
        else "; ".join(problems[:3])
    )
    return Invariant("nothing withheld was served", not problems, detail)



def _error_type(out: str) -> str:
    try:
        return str(json.loads(out)["error"]["type"])
    except (ValueError, KeyError, TypeError):
        return ""


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


def _sessions_recovered(runtime: Runtime, metrics: RunMetrics) -> Invariant | None:
    """Every member session of the run was recovered and left nothing behind to restore."""
    started = [task.session for task in metrics.tasks.values() if task.session]
    if not started:
        return None
    with host_context(runtime).store.reader() as reader:
        stored = {s: reader.get(SESSIONS, s) for s in started}
    unrecovered = [s for s, record in stored.items() if record is None or record.state != "recovered"]
    left = {m.session for m in manifests(runtime.home)} & set(started)
    problems = [f"{s} not recovered" for s in unrecovered] + [f"{s} left a projection behind" for s in sorted(left)]
    detail = f"{len(started)} member sessions recovered, their directories restored"
    return Invariant("every session recovered", not problems, "; ".join(problems) or detail)


def check_invariants(
    runtime: Runtime, metrics: RunMetrics, replication: ReplicationCounts | None
) -> list[Invariant]:
    """Every invariant of a run that reads the open runtime, each with what was found."""
    checks = [
        _writes_kept(runtime, metrics),
        _nothing_withheld_served(runtime, metrics),
        _restarts_recovered(runtime, metrics),
        _tasks_succeeded(metrics),
        _replication_settled(replication),
        _sessions_recovered(runtime, metrics),
    ]
    return [check for check in checks if check is not None]
