"""Dispatching and settling executions as operations: dispatch, list, await, accept, reject.

Who may: the owner, for every execution; a coordinator's member session (its grant holds `dispatch`) for the
executions it dispatched, under its own grant and never beyond it. A member session without `dispatch` is
refused (`GrantExceeded`), and so is one that names an execution another dispatcher owns.

A dispatch that names a harness is run by the runtime's execution runner (`resident.runtime.sessions.runner`):
in the background, within the configured number at once, surviving the command that dispatched it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from resident.coordination.grants import ROLE_ACTIONS
from resident.errors import AskTimeout, ExecutionSettled, GrantExceeded, InvalidInput
from resident.ids import check_record_id
from resident.memory.records import clean_text
from resident.messages.coordination import AcceptExecution as AcceptExecutionMessage
from resident.messages.coordination import AwaitExecution, Execution, Grant, RejectExecution
from resident.messages.coordination_calls import (
    AcceptExecution,
    AwaitRequest,
    DispatchRequest,
    ExecutionReport,
    Executions,
    ExecutionsQuery,
    IssueGrant,
    OwnGrant,
    OwnGrantQuery,
    Rejected,
    RejectRequest,
    WrittenRecord,
    state_of,
)
from resident.messages.sessions import SessionRecord
from resident.runtime.context import Call, Context
from resident.runtime.coordination.records import issue_grant, recorded
from resident.runtime.coordination.session import Session, dispatch_session
from resident.runtime.knowledge.evidence import promote_candidates_of
from resident.runtime.sessions.launching import LaunchSpec, check_launch, save_launch
from resident.runtime.sessions.start import MAX_TASK_CHARS
from resident.runtime.sessions.transcripts import redaction_key
from resident.runtime.sessions.work import work_item
from resident.sessions.redaction import Redactor
from resident.store.execution_index import covers, indexed, records_of
from resident.store.tables import EXECUTIONS, GRANTS, SESSIONS

__all__ = ["accept", "dispatch", "executions", "reject", "report", "session_grant", "wait"]

DISPATCH_ACTION = "dispatch"


def _dispatcher(call: Call) -> Session | None:
    """The coordinator session that calls (None for the owner); `GrantExceeded` for a session without `dispatch`."""
    session = call.caller.session
    if session is not None:
        if DISPATCH_ACTION not in session.grant.actions:
            raise GrantExceeded(
                f"{session.member.name}'s session may not dispatch, accept or reject: its grant {session.grant.id} "
                "holds no `dispatch`; only a coordinator's session (or the owner) does"
            )
        session.check(DISPATCH_ACTION)
    return session


def _parent_of(context: Context, execution: Execution) -> str | None:
    with context.store.reader() as reader:
        grant = reader.get(GRANTS, execution.grant)
    return None if grant is None else grant.parent


def _require_dispatched_by(context: Context, session: Session | None, execution: Execution) -> None:
    """Refuse a coordinator session an execution it did not dispatch (the owner may settle any)."""
    if session is not None and _parent_of(context, execution) != session.grant.id:
        raise GrantExceeded(
            f"execution {execution.id} was not dispatched by this session of {session.member.name}; a coordinator "
            "settles only what it dispatched"
        )


def _owner_grant(context: Context, call: Call, request: DispatchRequest) -> Grant:
    """The grant the owner issues for one dispatched step: the actions named, else the role's."""
    actions = request.actions if request.actions is not None else ROLE_ACTIONS[request.role]
    scopes = request.scopes if request.scopes is not None else IssueGrant(actions=()).scopes
    return issue_grant(context, call, IssueGrant(actions=actions, scopes=scopes, ttl=request.ttl))


def dispatch(context: Context, call: Call, request: DispatchRequest) -> Execution:
    """Dispatch a step (see `DispatchRequest`); the recorded execution, running (or waiting for a free slot)."""
    context.check_open()
    member = context.config.member(request.member).name
    if request.role not in ROLE_ACTIONS:
        raise InvalidInput(f"unknown role {request.role!r}; roles: {', '.join(sorted(ROLE_ACTIONS))}")
    launch = check_launch(context, call, request) if request.harness else None
    coordinator = _dispatcher(call)
    if coordinator is None:
        parent, by = _owner_grant(context, call, request), "owner"
        actions = request.actions
    else:
        parent, by = coordinator.grant, coordinator.member.name
        # By default the step gets what its role does as far as the coordinator's grant holds it; actions the
        # coordinator names must all be in its grant (`derive` refuses any widening).
        actions = request.actions if request.actions is not None else ROLE_ACTIONS[request.role] & set(parent.actions)
    # The step's grant lasts `ttl`, or as long as its parent's when that ends sooner.
    ttl = None if request.ttl >= parent.expires_at - context.clock.time() else request.ttl
    # The task is stored (execution, progress, the session) and projected: a credential typed into it is
    # redacted before any of that, as `session start --task` does.
    task = Redactor(redaction_key(context.home)).redact(clean_text(request.task, "the task", MAX_TASK_CHARS))
    # A step run in a directory works on the repository registered for it (its knowledge answers for that).
    work = work_item(context, Path(launch.directory), task, launch.harness) if launch is not None else None
    session = dispatch_session(
        context, task, member, role=request.role, parent_grant=parent, actions=actions,
        scopes=request.scopes, ttl=ttl, dispatched_by=by, harness=request.harness, work=work,
    )
    if launch is not None:
        save_launch(context.home, session.execution.id, launch)
        context.executions.wake()
    return session.execution


def executions(context: Context, call: Call, request: ExecutionsQuery) -> Executions:
    """The recorded executions, oldest first, filtered by member and state (a coordinator: those it dispatched)."""
    context.check_open()
    session = call.caller.session
    parent = session.grant.id if session is not None else None
    with context.store.reader() as reader:
        if covers(reader) and (parent, request.member, request.state) != (None, None, None):
            # The index answers what was asked without reading the rest of the history.
            found = list(indexed(reader, member=request.member, state=request.state, parent=parent))
        else:
            found = [e for _, e in reader.items(EXECUTIONS)]
            grants = {e.grant: reader.get(GRANTS, e.grant) for e in found} if parent is not None else {}
            if parent is not None:
                found = [e for e in found if (g := grants.get(e.grant)) is not None and g.parent == parent]
            if request.member is not None:
                found = [e for e in found if e.member == request.member]
            if request.state is not None:
                found = [e for e in found if state_of(e) == request.state]
    return Executions(executions=tuple(sorted(found, key=lambda e: (e.started_at, e.id))))


def wait(context: Context, call: Call, request: AwaitRequest) -> ExecutionReport:
    """Wait until the execution ends (or `timeout` passes); the report its dispatcher reviews."""
    execution_id = check_record_id(request.execution_id, "execution id")
    execution = recorded(context, execution_id)
    _require_dispatched_by(context, _dispatcher(call), execution)
    if execution.outcome == "running" and request.timeout > 0:
        # Still running at the deadline: the report says so.
        with contextlib.suppress(AskTimeout):
            context.coordinator.ask(AwaitExecution(id=execution_id), request.timeout)
    return report(context, recorded(context, execution_id))


def report(context: Context, execution: Execution) -> ExecutionReport:
    """`execution` with its session and the memories written for it."""
    with context.store.reader() as reader:
        session = reader.get(SESSIONS, execution.session) if execution.session else None
        written = tuple(
            WrittenRecord(id=r.id, scope=r.scope, kind=r.kind, summary=r.summary)
            for r in records_of(reader, execution.id)
        )
    return ExecutionReport(
        execution=execution, state=state_of(execution), session=session,
        exit_code=None if session is None else session.exit_code, summary=_summary(execution, session),
        records=written,
    )


def _summary(execution: Execution, session: SessionRecord | None) -> str:
    """One line on how the step went: its outcome, then its session's end (status, turns, notes)."""
    parts = [f"{execution.member}'s {execution.role} step {execution.outcome}"]
    if execution.error:
        parts.append(execution.error)
    if session is not None:
        status = "no exit status" if session.exit_code is None else f"exit status {session.exit_code}"
        parts.append(f"{session.harness} session {session.state}, {status}, {session.turns} turns")
        parts += _harness_said(session)
        if session.note:
            parts.append(session.note)
    return "; ".join(parts)


def _harness_said(session: SessionRecord) -> list[str]:
    """What the harness said of itself across the session's transcript files: model, version, what was kept as
    metadata (listings, bookkeeping, injected context), record kinds unknown."""
    said = [f"model {m}" for m in dict.fromkeys(p.model for p in session.parts if p.model)]
    versions = dict.fromkeys(p.harness_version for p in session.parts if p.harness_version)
    said += [f"{session.harness} {version}" for version in versions]
    kept = (("listings", sum(p.listings for p in session.parts)),
            ("bookkeeping records", sum(p.bookkeeping for p in session.parts)),
            ("injected context records", sum(p.injected for p in session.parts)))
    if any(count for _, count in kept):
        said.append("kept as metadata, not turns: " + ", ".join(f"{count} {name}" for name, count in kept if count))
    unknown: dict[str, int] = {}
    for part in session.parts:
        for kind, count in part.unknown_kinds:
            unknown[kind] = unknown.get(kind, 0) + count
    if unknown:
        listed = ", ".join(f"{kind}: {count}" for kind, count in sorted(unknown.items()))
        said.append(f"{sum(unknown.values())} records of kinds no parser knows ({listed})")
    return said


def accept(context: Context, call: Call, request: AcceptExecution) -> Execution:
    """Accept a step that succeeded (once); candidates it proposed are then put to the gate."""
    execution_id = check_record_id(request.execution_id, "execution id")
    execution = recorded(context, execution_id)
    coordinator = _dispatcher(call)
    _require_dispatched_by(context, coordinator, execution)
    by = "owner" if coordinator is None else coordinator.member.name
    context.coordinator.ask(AcceptExecutionMessage(id=execution_id, by=by))
    if context.config.knowledge.enabled:
        promote_candidates_of(context, execution_id)
    return recorded(context, execution_id)


def reject(context: Context, call: Call, request: RejectRequest) -> Rejected:
    """Reject a finished step with a reason (once); with `reassign`, the same task dispatched to that member."""
    execution_id = check_record_id(request.execution_id, "execution id")
    execution = recorded(context, execution_id)
    coordinator = _dispatcher(call)
    _require_dispatched_by(context, coordinator, execution)
    if not request.reason.strip():
        raise InvalidInput("a rejection says why: give --reason TEXT")
    if execution.outcome == "running":
        raise InvalidInput(f"execution {execution_id} is still running; await it (`resident await {execution_id}`)")
    if execution.accepted_at is not None or execution.rejected_at is not None:
        # Refused before anything is dispatched for a reassignment (the store refuses a second decision too).
        raise ExecutionSettled(
            f"execution {execution_id} was already {state_of(execution)}; its dispatcher decides once"
        )
    reassigned = _reassign(context, call, execution, request.reassign) if request.reassign is not None else None
    by = "owner" if coordinator is None else coordinator.member.name
    context.coordinator.ask(RejectExecution(
        id=execution_id, reason=request.reason.strip(), by=by, reassigned_to=reassigned.id if reassigned else "",
    ))
    return Rejected(execution=recorded(context, execution_id), reassigned=reassigned)


def _reassign(context: Context, call: Call, execution: Execution, member: str) -> Execution:
    """The rejected step's task dispatched to `member`, in the same role and harness (the same launch)."""
    from resident.runtime.sessions.launching import load_launch  # noqa: PLC0415 - only a reassignment reads one

    launch: LaunchSpec | None = load_launch(context.home, execution.id) if execution.harness else None
    with context.store.reader() as reader:
        grant = reader.get(GRANTS, execution.grant)
        session = reader.get(SESSIONS, execution.session) if execution.session else None
    if launch is None and execution.harness and session is not None:
        # The launch goes when its session ends; the session's record holds what ran (its arguments redacted).
        launch = LaunchSpec(harness=session.harness, command=session.command, directory=session.directory,
                            sandbox=False)
    request = DispatchRequest(
        member, execution.task, role=execution.role,
        harness=launch.harness if launch is not None else "",
        command=launch.command if launch is not None else (),
        directory=launch.directory if launch is not None else "",
        actions=grant.actions if grant is not None else None,
        scopes=grant.scopes if grant is not None else None,
    )
    return dispatch(context, call, request)


def session_grant(context: Context, call: Call, _request: OwnGrantQuery) -> OwnGrant:
    """The calling session's member, execution and grant (`InvalidInput` for the owner, who has no session)."""
    context.check_open()
    session = call.caller.session
    if session is None:
        raise InvalidInput("the owner has no session grant; present a member's grant token ($RESIDENT_GRANT_TOKEN)")
    return OwnGrant(member=session.member.name, execution=recorded(context, session.execution.id),
                        grant=session.grant)
