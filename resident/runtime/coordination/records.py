"""The coordinator's records as operations: grants, executions, progress, corrections, acceptances and ends.

A step dispatched on a work item (project, repository, item, tree, model, scope) carries the
fingerprint of that work, which the host computes; review and audit steps name the step they
examine. Those records are the evidence verified knowledge is promoted on: an implementation step
that finishes `complete` may hand in a `knowledge_candidate` (an invalid one fails the step), and
once the owner accepts the step and its review and audit are in, the acceptance gate verifies it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from resident.coordination.grants import issue_root
from resident.errors import CandidateInvalid, InvalidInput, UnknownExecution
from resident.ids import check_record_id, new_id
from resident.knowledge.evidence import EVIDENCE_ROLES
from resident.messages.coordination import (
    CorrectExecution,
    Correction,
    Execution,
    FinishExecution,
    GetProgress,
    Grant,
    GrantIssued,
    Progress,
    StepResult,
    Verdict,
)
from resident.messages.coordination_calls import (
    CorrectRequest,
    ExecutionQuery,
    FinishRequest,
    IssueGrant,
    ProgressQuery,
)
from resident.messages.knowledge import KnowledgeEntry
from resident.messages.store import Commit
from resident.runtime.context import Call, Context
from resident.runtime.knowledge.evidence import prepare_candidate, promote_candidates_of
from resident.runtime.skills.library import settle_execution
from resident.store.tables import EXECUTIONS

__all__ = [
    "correct", "execution", "finish", "issue_grant", "progress", "recorded", "result_digest",
]

_RESULTS: tuple[StepResult, ...] = ("", "complete", "partial")
_VERDICTS: tuple[Verdict, ...] = ("", "approved", "rejected")


def result_digest(parts: Iterable[str]) -> str:
    """A digest of what an execution produced (record ids, in order)."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode("utf-8"))
        hasher.update(b"\0")
    return hasher.hexdigest()


def issue_grant(context: Context, _call: Call, request: IssueGrant) -> Grant:
    """The owner's own grant for a piece of work; dispatched members get children of it."""
    context.check_open()
    now = context.clock.time()
    grant = issue_root(
        new_id("grant"), holder=request.holder, actions=request.actions, scopes=request.scopes,
        expires_at=now + request.ttl, now=now,
    )
    context.write(Commit(events=(GrantIssued(at=now, grant=grant),)))
    return grant


def execution(context: Context, _call: Call, request: ExecutionQuery) -> Execution:
    """One recorded execution (`UnknownExecution` if there is none)."""
    return recorded(context, request.execution_id)


def recorded(context: Context, execution_id: str) -> Execution:
    """The execution `execution_id` as recorded."""
    context.check_open()
    with context.store.reader() as reader:
        found = reader.get(EXECUTIONS, execution_id)
    if found is None:
        raise UnknownExecution(f"no execution {execution_id}; see `resident progress` for the recorded ones")
    return found


def progress(context: Context, _call: Call, _request: ProgressQuery) -> Progress:
    """Per-member progress from the execution records, as of now."""
    context.check_open()
    answer: Progress = context.coordinator.ask(GetProgress())
    return answer


def correct(context: Context, _call: Call, request: CorrectRequest) -> Correction:
    """Record an owner correction of an execution (an event; skills will score that use 0)."""
    context.check_open()
    if not request.note.strip():
        raise InvalidInput("a correction needs a note saying what was wrong")
    execution_id = check_record_id(request.execution_id, "execution id")
    correction: Correction = context.coordinator.ask(
        CorrectExecution(id=execution_id, note=request.note.strip(), by=request.by)
    )
    # A corrected session's skill uses score 0.
    settle_execution(context, execution_id)
    return correction


def finish(context: Context, _call: Call, request: FinishRequest) -> Execution:
    """Record the end of an execution (see `Session.finish`); the recorded execution."""
    execution_id = check_record_id(request.execution_id, "execution id")
    ended = recorded(context, execution_id)
    outcome, error = request.outcome, request.error
    if request.result not in _RESULTS or request.verdict not in _VERDICTS:
        raise InvalidInput(f"result must be one of {_RESULTS[1:]} and verdict one of {_VERDICTS[1:]}")
    if request.verdict and ended.role not in EVIDENCE_ROLES:
        raise InvalidInput(f"a verdict is given by review and audit steps, not by a {ended.role} step")
    proposed: KnowledgeEntry | None = None
    if request.knowledge_candidate is not None:
        try:
            proposed = prepare_candidate(
                context, ended, request.knowledge_candidate, outcome=outcome,
                result=request.result, files=request.files,
            )
        except CandidateInvalid as invalid:
            # The step fails before anything is written: its own outcome records why.
            outcome, error = "failed", "; ".join(filter(None, (error, f"invalid knowledge_candidate: {invalid}")))
    context.check_open()
    context.coordinator.ask(FinishExecution(
        id=execution_id, outcome=outcome, result_digest=request.result_digest, error=error, steps=request.steps,
        result=request.result, verdict=request.verdict, proposed=proposed,
    ))
    # The session ended: its skill reads become uses now (or when the member next starts).
    settle_execution(context, execution_id)
    if ended.reviews and context.config.knowledge.enabled:
        promote_candidates_of(context, ended.reviews)
    return recorded(context, execution_id)


