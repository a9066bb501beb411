"""Coordination: grants, executions, corrections — their stored records, events and commands."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Message, Record
from resident.messages.knowledge import KnowledgeEntry
from resident.messages.memory import Scope
from resident.messages.sessions import SessionProgress

__all__ = [
    "AcceptExecution",
    "AwaitExecution",
    "CorrectExecution",
    "Correction",
    "CorrectionRecorded",
    "Dispatch",
    "Execution",
    "ExecutionAccepted",
    "ExecutionFinished",
    "ExecutionRejected",
    "ExecutionStarted",
    "FinishExecution",
    "GetProgress",
    "Grant",
    "GrantIssued",
    "GrantToken",
    "GrantTokenIssued",
    "MemberProgress",
    "Outcome",
    "Progress",
    "RejectExecution",
    "StepResult",
    "Verdict",
    "WorkItem",
]

Outcome = Literal["running", "succeeded", "failed", "cancelled"]
# How complete a finished step's result is; review and audit steps also give a verdict.
StepResult = Literal["", "complete", "partial"]
Verdict = Literal["", "approved", "rejected"]


class WorkItem(Record, frozen=True):
    """What a step works on, as the host that dispatched it says: the evidence's fingerprint.

    `item` is the work item (an issue, a checklist point), `tree` the source tree the step saw,
    `model` and `provider` what did the work, `scope` the part of the repository it covers.
    Implementation, review and audit of one change carry the same item, tree, model and scope.
    """

    project: str
    repository: str
    item: str
    tree: str
    model: str
    scope: str
    provider: str = ""


class Grant(Record, frozen=True):
    """What a holder may do, in which scopes, until when; a child grant never exceeds its parent."""

    id: str
    holder: str
    actions: tuple[str, ...]
    scopes: tuple[Scope, ...]
    expires_at: float
    issued_at: float
    issued_by: str
    parent: str | None = None


class GrantToken(Record, frozen=True):
    """The stored side of a member session's grant token: only its digest, never the token.

    A token stands for one execution's grant. It is good while that execution is running and the
    grant has not expired; nothing else needs to be recorded to end it.
    """

    digest: str
    grant: str
    member: str
    execution: str
    issued_at: float


class Execution(Record, frozen=True):
    """One dispatched task, as the coordinator records it (the source of progress answers)."""

    id: str
    task: str
    member: str
    role: str
    grant: str
    started_at: float
    finished_at: float | None = None
    outcome: Outcome = "running"
    result_digest: str = ""
    error: str = ""
    steps: int = 0
    corrections: int = 0
    # Evidence for verified knowledge (all set by the runtime, never by the member): the work the
    # step was dispatched on and its fingerprint, the step it reviews or audits, how it ended,
    # a seal over all of that, and the owner's acceptance.
    work: WorkItem | None = None
    reviews: str = ""
    fingerprint: str = ""
    result: StepResult = ""
    verdict: Verdict = ""
    seal: str = ""
    accepted_at: float | None = None
    accepted_by: str = ""
    # The member session that works on this execution (`resident session`), once one started.
    session: str = ""
    # Who dispatched it (the owner, or the member whose session dispatched it) and the harness the runtime
    # runs it in ("" when a member takes it up with `resident session start --task EXEC`).
    dispatched_by: str = ""
    harness: str = ""
    # A finished step the dispatcher rejected: when, by whom, why, and the execution it was reassigned to.
    rejected_at: float | None = None
    rejected_by: str = ""
    rejection: str = ""
    reassigned_to: str = ""


class Correction(Record, frozen=True):
    """An owner's correction of an execution (skills will score it 0)."""

    id: str
    execution: str
    note: str
    by: str
    at: float


# -- events --------------------------------------------------------------------------------------


class GrantIssued(Event, frozen=True, tag="grant.issued"):
    grant: Grant


class GrantTokenIssued(Event, frozen=True, tag="grant.token.issued"):
    token: GrantToken


class ExecutionStarted(Event, frozen=True, tag="execution.started"):
    execution: Execution


class ExecutionFinished(Event, frozen=True, tag="execution.finished"):
    id: str
    outcome: Outcome
    result_digest: str = ""
    error: str = ""
    steps: int = 0
    result: StepResult = ""
    verdict: Verdict = ""
    seal: str = ""


class ExecutionAccepted(Event, frozen=True, tag="execution.accepted"):
    """The owner accepted a finished step (what the acceptance gate asks of an implementation)."""

    id: str
    by: str = "owner"


class ExecutionRejected(Event, frozen=True, tag="execution.rejected"):
    """The dispatcher rejected a finished step, saying why (and, when it reassigned the task, to which execution)."""

    id: str
    by: str = "owner"
    reason: str = ""
    reassigned_to: str = ""


class CorrectionRecorded(Event, frozen=True, tag="correction.recorded"):
    correction: Correction


# -- commands and replies ------------------------------------------------------------------------


class Dispatch(Message, frozen=True, tag="coordinator.dispatch"):
    """Record an execution of `task` by `member` under a grant derived from `parent_grant`."""

    task: str
    member: str
    role: str
    actions: tuple[str, ...]
    scopes: tuple[Scope, ...]
    expires_at: float
    parent_grant: str | None = None
    # The digest of the session's grant token, recorded with the execution (the token itself
    # stays with the caller that dispatched).
    token_digest: str = ""
    work: WorkItem | None = None
    reviews: str = ""
    fingerprint: str = ""
    dispatched_by: str = ""
    harness: str = ""


class FinishExecution(Message, frozen=True, tag="coordinator.finish"):
    id: str
    outcome: Outcome
    result_digest: str = ""
    error: str = ""
    steps: int = 0
    result: StepResult = ""
    verdict: Verdict = ""
    # A candidate entry the host made from the step's `knowledge_candidate`, written with the finish.
    proposed: KnowledgeEntry | None = None


class AcceptExecution(Message, frozen=True, tag="coordinator.accept"):
    id: str
    by: str = "owner"


class RejectExecution(Message, frozen=True, tag="coordinator.reject"):
    id: str
    reason: str
    by: str = "owner"
    reassigned_to: str = ""


class AwaitExecution(Message, frozen=True, tag="coordinator.await"):
    """Answered with the execution once it is no longer running (at once if it already ended)."""

    id: str


class CorrectExecution(Message, frozen=True, tag="coordinator.correct"):
    id: str
    note: str
    by: str = "owner"


class GetProgress(Message, frozen=True, tag="coordinator.progress"):
    pass


class MemberProgress(Record, frozen=True):
    member: str
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    steps: int = 0
    corrections: int = 0
    last_task: str = ""


class Progress(Record, frozen=True):
    """Progress per member, read from execution records at the moment of asking."""

    members: tuple[MemberProgress, ...]
    executions: int
    running: int
    at: float
    # Member sessions running now (a harness at work on an execution), oldest first.
    sessions: tuple[SessionProgress, ...] = ()
