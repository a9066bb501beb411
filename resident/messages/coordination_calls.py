"""The coordinator's operations' requests and replies (`rt.coordinator`): grants, executions, progress, corrections."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any, Literal

import msgspec

from resident.messages.bounds import Name, Note, RecordRef, Text
from resident.messages.coordination import Execution, Grant, Outcome, StepResult, Verdict
from resident.messages.memory import SCOPES, Scope
from resident.messages.sessions import SessionRecord

__all__ = [
    "EXECUTION_STATES",
    "AcceptExecution",
    "AwaitRequest",
    "CorrectRequest",
    "DispatchRequest",
    "ExecutionQuery",
    "ExecutionReport",
    "ExecutionState",
    "Executions",
    "ExecutionsQuery",
    "FinishRequest",
    "IssueGrant",
    "OwnGrant",
    "OwnGrantQuery",
    "ProgressQuery",
    "RejectRequest",
    "Rejected",
    "WrittenRecord",
    "state_of",
]

# Where an execution stands: its outcome, then whether its dispatcher accepted or rejected it.
ExecutionState = Literal["running", "succeeded", "failed", "cancelled", "accepted", "rejected"]


def state_of(execution: Execution) -> ExecutionState:
    """Where `execution` stands: accepted or rejected once its dispatcher decided, else its outcome."""
    if execution.accepted_at is not None:
        return "accepted"
    if execution.rejected_at is not None:
        return "rejected"
    return execution.outcome

EXECUTION_STATES: tuple[ExecutionState, ...] = ("running", "succeeded", "failed", "cancelled", "accepted", "rejected")
# A harness's command line: as `resident session start` takes it.
_Argument = Annotated[str, msgspec.Meta(max_length=64_000)]


class _Request(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A request: unknown fields are refused rather than ignored."""


class IssueGrant(_Request, frozen=True, kw_only=True):
    """The owner's own grant for a piece of work: `actions` on `scopes` for `ttl` seconds. Members dispatched on it
    get children of it, never more than it holds."""

    holder: Name = "owner"
    actions: Annotated[Collection[Name], msgspec.Meta(max_length=100)]
    scopes: Collection[Scope] = SCOPES
    ttl: Annotated[float, msgspec.Meta(gt=0.0, le=366 * 86_400.0)] = 3600.0


class ExecutionQuery(_Request, frozen=True):
    """One recorded execution (`UnknownExecution` if there is none)."""

    execution_id: RecordRef


class ExecutionsQuery(_Request, frozen=True, kw_only=True):
    """The recorded executions, oldest first: of `member` and in `state` when named. A coordinator's session sees
    the executions it dispatched."""

    member: Name | None = None
    state: ExecutionState | None = None


class Executions(msgspec.Struct, frozen=True, kw_only=True):
    executions: tuple[Execution, ...]


class ProgressQuery(_Request, frozen=True):
    """Per-member progress from the execution records, as of now."""


class _Corrected(_Request, frozen=True):
    execution_id: RecordRef
    note: Note


class CorrectRequest(_Corrected, frozen=True, kw_only=True):
    """An owner correction of an execution (an event; the skills that execution used score 0)."""

    by: Name = "owner"


class AcceptExecution(_Request, frozen=True):
    """The owner accepts a step that succeeded; knowledge candidates it proposed are then put to the gate."""

    execution_id: RecordRef


class _Finished(_Request, frozen=True):
    execution_id: RecordRef
    outcome: Outcome


class FinishRequest(_Finished, frozen=True, kw_only=True):
    """Record the end of an execution (durably): how it went, what it produced, its step's result or verdict, and
    an implementation step's knowledge candidate about the `files` it worked on (an invalid one fails the step)."""

    result_digest: Annotated[str, msgspec.Meta(max_length=200)] = ""
    error: Text = ""
    steps: Annotated[int, msgspec.Meta(ge=0)] = 0
    result: StepResult = ""
    verdict: Verdict = ""
    files: Annotated[Collection[Annotated[str, msgspec.Meta(max_length=4_096)]], msgspec.Meta(max_length=1_000)] = ()
    knowledge_candidate: dict[str, Any] | str | None = None


class _Dispatch(_Request, frozen=True):
    member: Name
    task: Annotated[str, msgspec.Meta(min_length=1, max_length=4_000)]


class DispatchRequest(_Dispatch, frozen=True, kw_only=True):
    """Dispatch `task` to `member` as a step in `role`: an execution under a child grant of the dispatcher's.

    The owner dispatches under a grant issued for the step (the role's actions, `ttl` seconds); a coordinator's
    session (holding `dispatch`) under its own grant, never beyond it: `actions` and `scopes` it names must be in
    its grant, and by default the step gets the role's actions that its grant holds. With a `harness`, the runtime
    runs the member's session itself, in the background (`command` for the command harness, or instead of the
    harness's default), in `directory` (an absolute path); without one, the member takes it up with
    `resident session start --task EXECUTION`.
    """

    role: Name = "implement"
    harness: Annotated[str, msgspec.Meta(max_length=32)] = ""
    command: Annotated[tuple[_Argument, ...], msgspec.Meta(max_length=2_000)] = ()
    directory: Annotated[str, msgspec.Meta(max_length=4_096)] = ""
    actions: Annotated[Collection[Name], msgspec.Meta(max_length=100)] | None = None
    scopes: Collection[Scope] | None = None
    ttl: Annotated[float, msgspec.Meta(ge=60.0, le=30 * 86_400.0)] = 3600.0


class _Await(_Request, frozen=True):
    execution_id: RecordRef


class AwaitRequest(_Await, frozen=True, kw_only=True):
    """Wait up to `timeout` seconds for an execution to end; how it stands then (running, when it did not end)."""

    timeout: Annotated[float, msgspec.Meta(ge=0.0, le=86_400.0)] = 60.0


class WrittenRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A memory a member wrote while working on an execution."""

    id: str
    scope: str
    kind: str
    summary: str


class ExecutionReport(msgspec.Struct, frozen=True, kw_only=True):
    """An execution as its dispatcher reviews it: how it ended, the session's exit status and summary, and the
    memories the member wrote for it."""

    execution: Execution
    state: ExecutionState
    session: SessionRecord | None = None
    exit_code: int | None = None
    summary: str = ""
    records: tuple[WrittenRecord, ...] = ()


class _Rejected(_Request, frozen=True):
    execution_id: RecordRef
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=4_000)]


class RejectRequest(_Rejected, frozen=True, kw_only=True):
    """Reject a finished step, saying why; `reassign` dispatches the same task again to that member (in the same
    role and harness, under the same dispatcher's grant)."""

    reassign: Name | None = None


class Rejected(msgspec.Struct, frozen=True, kw_only=True):
    execution: Execution
    reassigned: Execution | None = None


class OwnGrantQuery(_Request, frozen=True):
    """The execution and grant of the member session that asks (a member's harness learns what it may do)."""


class OwnGrant(msgspec.Struct, frozen=True, kw_only=True):
    member: str
    execution: Execution
    grant: Grant
