"""The acceptance gate: whether the runtime's own execution records prove a candidate entry.

The only way from `candidate` to `verified`. Nothing a caller says is evidence: the gate reads the
execution records the coordinator wrote (the evidence resolver gathers them) and asks of them:

* the **implementation step** the candidate came from: role `implement`, succeeded with a
  `complete` result, accepted by the owner;
* a **review** of that step by another member (role `review`, verdict `approved`);
* an **audit** of that step by a third member (role `audit`, verdict `approved`);
* all three sealed (each record still matches the seal the runtime put on it when it finished),
  each dispatched under a grant that descends from one the owner issued, and all carrying the
  same fingerprint: the digest of the same project, repository, item, tree, model and scope.

Failed evidence (a step that failed, a rejection), partial evidence (a partial result), forged
evidence (a record that does not match its seal, a review by the implementer, a grant the owner
never issued), mismatched evidence (another tree, model, item or scope) and incomplete evidence (a
review still running, no audit, no acceptance) each fail the gate with a reason that names it.
A rejection of the same fingerprint by any reviewer or auditor stands even if another approves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import msgspec

from resident.messages.coordination import Execution, Grant, WorkItem
from resident.messages.knowledge import EvidenceRef, KnowledgeEntry

__all__ = ["EVIDENCE_ROLES", "GateDecision", "assess", "fingerprint", "seal"]

EVIDENCE_ROLES = ("review", "audit")
_ENCODER = msgspec.msgpack.Encoder()
_FIELDS = ("project", "repository", "item", "tree", "model", "scope")


def fingerprint(work: WorkItem) -> str:
    """The digest of what a step worked on: project, repository, item, tree, model and scope."""
    return hashlib.sha256(_ENCODER.encode([getattr(work, name) for name in _FIELDS])).hexdigest()


def seal(execution: Execution) -> str:
    """The digest the runtime puts on a finished step: everything the gate relies on, in one value.

    Acceptance and corrections are not sealed: they are later acts of the owner, recorded apart.
    """
    return hashlib.sha256(_ENCODER.encode([
        execution.id, execution.task, execution.member, execution.role, execution.grant, execution.work,
        execution.reviews, execution.fingerprint, execution.outcome, execution.result, execution.verdict,
        execution.result_digest,
    ])).hexdigest()


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's answer: passed or not, every reason it did not, and the evidence it relied on."""

    passed: bool
    reasons: tuple[str, ...]
    evidence: tuple[EvidenceRef, ...]


def assess(
    entry: KnowledgeEntry,
    implementation: Execution | None,
    examinations: Iterable[Execution],
    grants: Mapping[str, Grant],
) -> GateDecision:
    """Judge `entry` on its implementation step and the reviews and audits recorded of it.

    `examinations` are the executions whose `reviews` names the implementation step; `grants`
    holds at least every grant those steps (and their ancestors) were dispatched under.
    """
    if entry.state == "legacy_unverified":
        return _refused("legacy data is never treated as fact and cannot be promoted")
    if entry.state != "candidate":
        return _refused(f"entry {entry.id} is {entry.state}; only a candidate can be promoted")
    if implementation is None or implementation.id != entry.execution:
        return _refused(f"incomplete: the implementation step {entry.execution or '(none)'} is not recorded")
    reasons = list(_implementation_problems(entry, implementation, grants))
    chosen: list[Execution] = [implementation]
    for role in EVIDENCE_ROLES:
        examiners = {implementation.member} | {step.member for step in chosen[1:]}
        found, problems = _examination(role, implementation, examinations, grants, examiners)
        reasons += problems
        if found is not None:
            chosen.append(found)
    if reasons:
        return _refused(*reasons)
    return GateDecision(
        passed=True,
        reasons=(),
        evidence=tuple(EvidenceRef(execution=step.id, role=step.role, seal=step.seal) for step in chosen),
    )


def _refused(*reasons: str) -> GateDecision:
    return GateDecision(passed=False, reasons=tuple(reasons), evidence=())


def _implementation_problems(
    entry: KnowledgeEntry, step: Execution, grants: Mapping[str, Grant]
) -> Iterable[str]:
    name = f"implementation step {step.id}"
    yield from _record_problems(name, step, grants)
    if step.role != "implement":
        yield f"forged: {name} has role {step.role}, not implement"
    if step.member != entry.owner:
        yield f"forged: {name} was done by {step.member}, but the entry names {entry.owner}"
    if step.outcome == "running":
        yield f"incomplete: {name} is still running"
    elif step.outcome != "succeeded":
        yield f"failed: {name} {step.outcome}"
    elif step.result != "complete":
        yield f"partial: {name} finished with a {step.result or 'missing'} result"
    if step.accepted_at is None:
        yield f"incomplete: {name} is not accepted by the owner"
    if step.fingerprint != entry.fingerprint:
        yield f"mismatched: {name} carries another fingerprint than the entry"


def _record_problems(name: str, step: Execution, grants: Mapping[str, Grant]) -> Iterable[str]:
    """Forgery: a record that does not match its own seal or fingerprint, or an unowned grant."""
    if step.outcome != "running" and (not step.seal or step.seal != seal(step)):
        yield f"forged: the record of {name} does not match its seal"
    if step.work is None or step.fingerprint != fingerprint(step.work):
        yield f"forged: {name} has no work item, or a fingerprint that is not its work's"
    if not _granted_by_owner(step, grants):
        yield f"forged: {name} was not dispatched under a grant the owner issued"


def _granted_by_owner(step: Execution, grants: Mapping[str, Grant]) -> bool:
    """Whether `step`'s grant is its member's and descends, holder to holder, from a grant of the owner."""
    grant = grants.get(step.grant)
    if grant is None or grant.holder != step.member or grant.parent is None:
        return False
    seen = {grant.id}
    parent_id: str | None = grant.parent
    while parent_id is not None:
        parent = grants.get(parent_id)
        if parent is None or parent.id in seen or parent.holder != grant.issued_by:
            return False
        seen.add(parent.id)
        grant, parent_id = parent, parent.parent
    return grant.issued_by == "owner"


def _examination(
    role: str,
    implementation: Execution,
    examinations: Iterable[Execution],
    grants: Mapping[str, Grant],
    examiners: set[str],
) -> tuple[Execution | None, list[str]]:
    """The passing review (or audit) to rely on, and every problem with the recorded ones."""
    noun = "review" if role == "review" else "audit"
    steps = [step for step in examinations if step.reviews == implementation.id and step.role == role]
    if not steps:
        return None, [f"incomplete: no {noun} of implementation step {implementation.id} is recorded"]
    problems: list[str] = []
    passing: list[Execution] = []
    for step in steps:
        name = f"{noun} {step.id} by {step.member}"
        forged = list(_record_problems(name, step, grants))
        if step.member in examiners:
            forged.append(f"forged: {name} is not independent (that member already did the work or examined it)")
        mismatch = _mismatch(implementation, step)
        if forged or mismatch:
            problems += forged + ([f"mismatched: {name} {mismatch}"] if mismatch else [])
            continue
        if step.outcome == "running":
            problems.append(f"incomplete: {name} is still running")
        elif step.outcome != "succeeded" or step.verdict == "rejected":
            problems.append(f"failed: {name} {'rejected the change' if step.verdict == 'rejected' else step.outcome}")
        elif step.result != "complete":
            problems.append(f"partial: {name} finished with a {step.result or 'missing'} result")
        elif step.verdict != "approved":
            problems.append(f"incomplete: {name} gave no verdict")
        else:
            passing.append(step)
    failed = [problem for problem in problems if problem.startswith("failed:")]
    if passing and not failed:
        return passing[0], []
    return None, problems or [f"incomplete: no approving {noun} of implementation step {implementation.id}"]


def _mismatch(implementation: Execution, step: Execution) -> str:
    """How `step`'s work differs from the implementation's (empty when it is the same)."""
    mine, theirs = implementation.work, step.work
    if mine is None or theirs is None:
        return "has no work item to compare"
    differing = [name for name in _FIELDS if getattr(mine, name) != getattr(theirs, name)]
    if not differing:
        return ""
    return "saw another " + ", ".join(
        f"{name} ({getattr(theirs, name)!r}, not {getattr(mine, name)!r})" for name in differing
    )
