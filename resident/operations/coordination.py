"""The coordinator (`rt.coordinator`): grants, dispatch, executions and their ends, progress from the execution
records, acceptances, rejections and corrections.

Dispatching and settling executions (dispatch, executions, wait, accept, reject) are the owner's and a
coordinator's: a member session whose grant holds `dispatch` (Samuel's, started with `--role coordinate`) does
them within its grant, for what it dispatched; any other member session is refused. The rest are the owner's.
"""

from __future__ import annotations

from resident.messages.coordination import Correction, Execution, Grant, Progress
from resident.messages.coordination_calls import (
    AcceptExecution,
    AwaitRequest,
    CorrectRequest,
    DispatchRequest,
    ExecutionQuery,
    ExecutionReport,
    Executions,
    ExecutionsQuery,
    FinishRequest,
    IssueGrant,
    OwnGrant,
    OwnGrantQuery,
    ProgressQuery,
    Rejected,
    RejectRequest,
)
from resident.operations.declaration import Access, Route, declare
from resident.operations.facade import Surface, awaitable, method

__all__ = [
    "ACCEPT", "AWAIT", "CORRECT", "DISPATCH", "EXECUTION", "EXECUTIONS", "FINISH", "GRANT", "OPERATIONS", "PROGRESS",
    "REJECT", "SESSION", "CoordinatorSurface",
]

_SERVICES = "resident.runtime.coordination.records"
_EXECUTIONS = "resident.runtime.coordination.executions"
# An await answers when the execution ends or its own timeout passes (at most a day).
_AWAIT_WAIT = 86_400.0


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
    "coordinator.executions", "The recorded executions, oldest first (by member and state)", ExecutionsQuery,
    Executions, route=Route("GET", "/v1/coordinator/executions"), service=f"{_EXECUTIONS}:executions",
    access=Access.MEMBER, result=_executions,
)
DISPATCH = declare(
    "coordinator.dispatch", "Dispatch a task to a member under a child grant; the recorded execution",
    DispatchRequest, Execution, route=Route("POST", "/v1/coordinator/dispatch"), service=f"{_EXECUTIONS}:dispatch",
    access=Access.MEMBER,
)
AWAIT = declare(
    "coordinator.await", "Wait for an execution to end; its outcome, session, summary and the records written",
    AwaitRequest, ExecutionReport, route=Route("POST", "/v1/coordinator/executions/{execution_id}/await",
                                               wait=_AWAIT_WAIT),
    service=f"{_EXECUTIONS}:wait", access=Access.MEMBER,
)
REJECT = declare(
    "coordinator.reject", "Reject a finished step with a reason, and reassign its task", RejectRequest, Rejected,
    route=Route("POST", "/v1/coordinator/executions/{execution_id}/reject"), service=f"{_EXECUTIONS}:reject",
    access=Access.MEMBER,
)
SESSION = declare(
    "coordinator.session", "The calling member session's execution and grant", OwnGrantQuery, OwnGrant,
    route=Route("GET", "/v1/coordinator/session"), service=f"{_EXECUTIONS}:session_grant", access=Access.MEMBER,
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
    route=Route("POST", "/v1/coordinator/executions/{execution_id}/accept"), service=f"{_EXECUTIONS}:accept",
    access=Access.MEMBER,
)
FINISH = declare(
    "coordinator.finish", "Record the end of an execution", FinishRequest, Execution,
    route=Route("POST", "/v1/coordinator/executions/{execution_id}/finish"), service=f"{_SERVICES}:finish",
)

OPERATIONS = (GRANT, EXECUTION, EXECUTIONS, PROGRESS, CORRECT, ACCEPT, FINISH, DISPATCH, AWAIT, REJECT, SESSION)


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
    dispatch = method(DISPATCH)
    adispatch = awaitable(DISPATCH)
    # `await` is Python's own word: the method is `wait`, the command `resident await`.
    wait = method(AWAIT)
    await_ = awaitable(AWAIT)
    reject = method(REJECT)
    areject = awaitable(REJECT)
    session = method(SESSION)
    asession = awaitable(SESSION)
