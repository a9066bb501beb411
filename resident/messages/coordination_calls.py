"""The coordinator's operations' requests and replies (`rt.coordinator`): grants, executions, progress, corrections."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any

import msgspec

from resident.messages.bounds import Name, Note, RecordRef, Text
from resident.messages.coordination import Execution, Outcome, StepResult, Verdict
from resident.messages.memory import SCOPES, Scope

__all__ = [
    "AcceptExecution", "CorrectRequest", "ExecutionQuery", "Executions", "ExecutionsQuery", "FinishRequest",
    "IssueGrant", "ProgressQuery",
]


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


class ExecutionsQuery(_Request, frozen=True):
    """Every recorded execution, oldest first."""


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
