"""Coordination: grants, executions, corrections — their stored records, events and commands."""

from __future__ import annotations

from typing import Literal

from resident.messages.base import Event, Message, Record
from resident.messages.memory import Scope
from resident.messages.sessions import SessionProgress

__all__ = [
    "CorrectExecution",
    "Correction",
    "CorrectionRecorded",
    "Dispatch",
    "Execution",
    "ExecutionFinished",
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
]

Outcome = Literal["running", "succeeded", "failed", "cancelled"]


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
    # The member session that works on this execution (`resident session`), once one started.
    session: str = ""


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


class FinishExecution(Message, frozen=True, tag="coordinator.finish"):
    id: str
    outcome: Outcome
    result_digest: str = ""
    error: str = ""
    steps: int = 0


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
