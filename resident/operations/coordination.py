"""The coordinator (`rt.coordinator`): grants, executions and their ends, progress from the execution records, and
the owner's acceptances and corrections. All of them the owner's."""

from __future__ import annotations

from resident.messages.coordination import Correction, Execution, Grant, Progress
from resident.messages.coordination_calls import (
    AcceptExecution,
    CorrectRequest,
    ExecutionQuery,
    Executions,
    ExecutionsQuery,
    FinishRequest,
    IssueGrant,
    ProgressQuery,
)
from resident.operations.declaration import Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = [
    "ACCEPT", "CORRECT", "EXECUTION", "EXECUTIONS", "FINISH", "GRANT", "OPERATIONS", "PROGRESS", "CoordinatorSurface",
]

_SERVICES = "resident.runtime.coordination.records"


def _executions(reply: Executions) -> list[Execution]:
    return list(reply.executions)


GRANT = declare(
    "coordinator.grant", "Issue the owner's grant for a piece of work", IssueGrant, Grant,
    route=Route("POST", "/v1/coordinator/grants"), service=f"{_SERVICES}:issue_grant",
)
EXECUTION = declare(
    "coordinator.execution", "One recorded execution", ExecutionQuery, Execution,
    route=Route("GET", "/v1/coordinator/executions/{execution_id}"), service=f"{_SERVICES}:execution",
)
EXECUTIONS = declare(
    "coordinator.executions", "Every recorded execution, oldest first", ExecutionsQuery, Executions,
    route=Route("GET", "/v1/coordinator/executions"), service=f"{_SERVICES}:executions", result=_executions,
)
PROGRESS = declare(
    "coordinator.progress", "Progress per member", ProgressQuery, Progress,
    route=Route("GET", "/v1/coordinator/progress"), service=f"{_SERVICES}:progress",
)
CORRECT = declare(
    "coordinator.correct", "Record an owner correction", CorrectRequest, Correction,
    route=Route("POST", "/v1/coordinator/corrections"), service=f"{_SERVICES}:correct",
)
ACCEPT = declare(
    "coordinator.accept", "Accept a step that succeeded", AcceptExecution, Execution,
    route=Route("POST", "/v1/coordinator/executions/{execution_id}/accept"), service=f"{_SERVICES}:accept",
)
FINISH = declare(
    "coordinator.finish", "Record the end of an execution", FinishRequest, Execution,
    route=Route("POST", "/v1/coordinator/executions/{execution_id}/finish"), service=f"{_SERVICES}:finish",
)

OPERATIONS = (GRANT, EXECUTION, EXECUTIONS, PROGRESS, CORRECT, ACCEPT, FINISH)


class CoordinatorSurface(Surface):
    """`rt.coordinator`: grants, executions, progress and corrections, answered by the coordinator (Samuel)."""

    issue_grant = method(GRANT)
    aissue_grant = awaitable(GRANT)
    execution = method(EXECUTION)
    aexecution = awaitable(EXECUTION)
    executions = method(EXECUTIONS)
    aexecutions = awaitable(EXECUTIONS)
    progress = method(PROGRESS)
    aprogress = awaitable(PROGRESS)
    correct = method(CORRECT)
    acorrect = awaitable(CORRECT)
    accept = method(ACCEPT)
    aaccept = awaitable(ACCEPT)
    finish = method(FINISH)
    afinish = awaitable(FINISH)
