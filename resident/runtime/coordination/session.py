"""A member at work on one execution (`Session`): its callbacks checked against its grant, and how one is made.

`dispatch_session` records an execution under a child of a parent grant and returns the live session, with
the grant token a harness presents to act as it anywhere (`rt.with_grant(token)`); `resume_session` is the
session a token stands for, while its execution runs and its grant lasts. Both are of the process that
hosts the runtime: a service takes them with its `Context`, a host with `host_context(rt)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from resident.actors.coordinator import Dispatched
from resident.coordination.grants import ROLE_ACTIONS, check, role_actions
from resident.coordination.tokens import new_token, token_digest
from resident.errors import GrantInvalid, InvalidInput, ResidentError
from resident.knowledge.evidence import EVIDENCE_ROLES, fingerprint
from resident.knowledge.repositories import check_ref
from resident.memory.banks import parse_scope
from resident.memory.records import ActivationLike
from resident.memory.requests import recall_message, reconcile_message, reconciled, remember_message
from resident.messages.coordination import Dispatch, Execution, Grant, Outcome, StepResult, Verdict, WorkItem
from resident.messages.coordination_calls import FinishRequest
from resident.messages.engagement import EngagementContext
from resident.messages.memory import Delegation, Forget, GetRecord, MemoryRecord, RecallHit, Receipt, Reconciled
from resident.runtime.caller import Caller
from resident.runtime.context import Call, Context
from resident.runtime.coordination.records import finish, recorded, result_digest
from resident.runtime.engagement import resolve_quietly
from resident.store.tables import EXECUTIONS, GRANT_TOKENS, GRANTS

__all__ = ["MAX_WORK_FIELD", "Session", "dispatch_session", "resume_session"]

MAX_WORK_FIELD = 256


class Session:
    """A member at work on one execution; every callback is checked against its grant.

    `check(action, scope)` is the one gate: it refuses an expired grant, an action the grant does
    not allow, and a target scope it does not cover. The call then reaches the member actor
    carrying a `Delegation`, set here and never by the caller: the actor narrows what the call
    may read or change to the grant's scopes (a record named by id in another scope is
    `GrantExceeded`, recall searches only covered banks) and marks what it writes `delegated`.
    Reading a record by id counts as `recall`; a remember that replaces a record is `supersede`.
    """

    def __init__(self, context: Context, dispatched: Dispatched, token: str) -> None:
        self._context = context
        self.execution = dispatched.execution
        self.grant = dispatched.grant
        # Hand this to the member's harness (as $RESIDENT_GRANT_TOKEN) so that its calls back into
        # the runtime act as this session; `resume_session(context, token)` resumes it.
        self.token = token
        self.member = context.config.member(dispatched.execution.member)
        self.steps = 0
        self.produced: list[str] = []
        self._delegation = Delegation(grant=self.grant.id, holder=self.grant.holder, scopes=self.grant.scopes)

    def check(self, action: str, scope: str | None = None) -> None:
        """Refuse `action` (on `scope`, when the call names one) unless the grant covers it; count the step."""
        check(self.grant, action, None if scope is None else parse_scope(scope), self._context.clock.time())
        self.steps += 1

    def authorize(self, action: str) -> None:
        """Check a callback outside memory (skills, principles, engagement) against the grant."""
        self.check(action)

    async def _ask(self, message: Any, timeout: float | None) -> Any:
        return await self._context.ask_member_async(self.member.name, message, timeout)

    async def remember(
        self,
        text: str | bytes,
        *,
        scope: str = "AGENT_CORE",
        summary: str | bytes | None = None,
        kind: str = "experience",
        counterpart: str | None = None,
        world: str | None = None,
        importance: float = 0.5,
        confidence: float = 1.0,
        activation: ActivationLike = None,
        supersedes: str | None = None,
        canonical: bool = False,
        occurred_at: float | None = None,
        cites: tuple[str, ...] = (),
        timeout: float | None = None,
    ) -> Receipt:
        """Write a memory for the execution (`supersede` when it replaces `supersedes`)."""
        self.check("supersede" if supersedes else "remember", scope)
        message = remember_message(
            text, scope=scope, summary=summary, kind=kind, counterpart=counterpart, world=world,
            importance=importance, confidence=confidence, activation=activation, supersedes=supersedes,
            canonical=canonical, source=f"execution:{self.execution.id}", occurred_at=occurred_at, cites=cites,
            delegation=self._delegation,
        )
        receipt = await self._context.admissions.aremember(self.member.name, message, timeout)
        self.produced.append(receipt.id)
        return receipt

    async def remember_many(
        self, items: Iterable[Mapping[str, Any]], *, timeout: float | None = None
    ) -> list[Receipt | ResidentError]:
        """Write many memories for the execution (see `Member.remember_many`); each item is checked
        against the grant like a `remember` of its own, and one the grant does not cover is refused
        alone."""
        allowed: list[Mapping[str, Any]] = []
        outcomes: list[Receipt | ResidentError | None] = []
        for item in items:
            try:
                self._check_item(item)
            except ResidentError as error:
                outcomes.append(error)
                continue
            allowed.append({**item, "source": f"execution:{self.execution.id}"})
            outcomes.append(None)
        written = iter(
            await self._context.admissions.aremember_many(
                self.member.name, allowed, timeout, delegation=self._delegation
            )
        )
        results = [outcome if outcome is not None else next(written) for outcome in outcomes]
        self.produced.extend(result.id for result in results if isinstance(result, Receipt))
        return results

    def _check_item(self, item: Mapping[str, Any]) -> None:
        if not isinstance(item, Mapping):
            raise InvalidInput(f"an item is a mapping of remember's fields, not {type(item).__name__}")
        if "source" in item:
            raise InvalidInput("a session's memories name their execution as source; leave source out")
        scope = item.get("scope", "AGENT_CORE")
        if not isinstance(scope, str):
            raise InvalidInput(f"scope must be a scope name, not {scope!r}")
        self.check("supersede" if item.get("supersedes") else "remember", scope)

    async def supersede(self, record_id: str, text: str | bytes, **options: Any) -> Receipt:
        """Write a new version of `record_id` (which must be in a scope the grant covers)."""
        return await self.remember(text, supersedes=record_id, **options)

    async def recall(
        self,
        query: str | bytes,
        k: int = 10,
        *,
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        include_inactive: bool = False,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        """The member's best matches, searched only in the scopes the grant covers."""
        self.check("recall")
        message = recall_message(
            query, k, activation=activation, char_budget=char_budget, include_inactive=include_inactive,
            delegation=self._delegation,
        )
        hits: list[RecallHit] = await self._ask(message, timeout)
        return hits

    async def get(self, record_id: str, *, timeout: float | None = None) -> MemoryRecord:
        """One record by id, if the grant covers its scope."""
        self.check("recall")
        record: MemoryRecord = await self._ask(GetRecord(id=record_id, delegation=self._delegation), timeout)
        return record

    async def forget(self, record_id: str, reason: str = "", *, timeout: float | None = None) -> None:
        """Retract a record, if the grant covers its scope."""
        self.check("forget")
        await self._ask(Forget(id=record_id, reason=reason, delegation=self._delegation), timeout)

    async def reconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
        timeout: float | None = None,
    ) -> Reconciled:
        """Settle a withheld record in a scope the grant covers (see `Member.reconcile`)."""
        self.check("reconcile")
        message = reconcile_message(
            record_id, rollback=rollback, readmit=readmit, text=text, canonical=canonical, delegation=self._delegation
        )
        result = reconciled(message, await self._ask(message, timeout))
        if result.new_id:
            self.produced.append(result.new_id)
        return result

    def finish(
        self,
        outcome: Outcome,
        error: str = "",
        *,
        result: StepResult = "",
        verdict: Verdict = "",
        files: Iterable[str] = (),
        knowledge_candidate: Mapping[str, Any] | str | bytes | None = None,
    ) -> Execution:
        """Record how the execution ended (durably), with a digest of what it produced.

        `result` says whether the work is `complete` or `partial`; a review or audit step gives its
        `verdict`. An implementation step may hand in a `knowledge_candidate` about the `files`
        (paths in the repository) it worked on. The recorded execution is returned: a step whose
        candidate was invalid is recorded `failed`, with the reason in its error.
        """
        return finish(self._context, Call(Caller()), FinishRequest(
            self.execution.id, outcome, result_digest=result_digest(self.produced), error=error, steps=self.steps,
            result=result, verdict=verdict, files=tuple(files), knowledge_candidate=_candidate(knowledge_candidate),
        ))


def _candidate(raw: Mapping[str, Any] | str | bytes | None) -> dict[str, Any] | str | None:
    """A knowledge candidate as a request carries it: an object, or its JSON text (bytes are read as UTF-8; what
    does not read fails the step as an invalid candidate, like any other)."""
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return dict(raw)


def dispatch_session(
    context: Context,
    task: str,
    member: str,
    *,
    role: str,
    parent_grant: Grant,
    actions: Iterable[str] | None = None,
    scopes: Iterable[str] | None = None,
    ttl: float | None = None,
    work: WorkItem | None = None,
    reviews: str | None = None,
    engagement: EngagementContext | None = None,
    dispatched_by: str = "owner",
    harness: str = "",
) -> Session:
    """Record an execution of `task` by `member` under a child of `parent_grant`, and return its session.

    `work` is what the step works on (its fingerprint is computed here, by the host); a `review` or `audit`
    step names the step it examines in `reviews` and, without `work` of its own, takes that step's.
    `engagement` is what is known of the session for deciding the member's engagement (a harness session adds
    its working directory and harness to the task).
    """
    context.check_open()
    work = _work_of(context, role, work, reviews)
    if actions is None:
        if role not in ROLE_ACTIONS:
            raise InvalidInput(f"unknown role {role!r}; roles: {', '.join(sorted(ROLE_ACTIONS))}")
        actions = role_actions(role, parent_grant)
    now = context.clock.time()
    expires_at = parent_grant.expires_at if ttl is None else now + ttl
    token = new_token()
    message = Dispatch(
        task=task, member=member, role=role, actions=tuple(actions),
        scopes=tuple(parse_scope(s) for s in (scopes if scopes is not None else parent_grant.scopes)),
        expires_at=expires_at, parent_grant=parent_grant.id, token_digest=token_digest(token),
        work=work, reviews=reviews or "", fingerprint=fingerprint(work) if work is not None else "",
        dispatched_by=dispatched_by, harness=harness,
    )
    dispatched: Dispatched = context.coordinator.ask(message)
    # A session starts: decide the member's engagement for it (rules, then the judge, else ask).
    resolve_quietly(context, dispatched.execution.member, engagement or EngagementContext(task=task))
    return Session(context, dispatched, token)


def _work_of(context: Context, role: str, work: WorkItem | None, reviews: str | None) -> WorkItem | None:
    """The checked work item of a step: its own, or that of the step it examines."""
    if reviews is not None:
        if role not in EVIDENCE_ROLES:
            raise InvalidInput(f"only {' and '.join(EVIDENCE_ROLES)} steps examine another step, not {role}")
        examined = recorded(context, reviews)
        if work is None:
            work = examined.work
    if work is None:
        return None
    check_ref("project", work.project)
    check_ref("repository", work.repository)
    for name in ("item", "tree", "model", "scope", "provider"):
        value = getattr(work, name)
        if not isinstance(value, str) or len(value) > MAX_WORK_FIELD or (name != "provider" and not value.strip()):
            raise InvalidInput(f"the work item's {name} must be text of 1-{MAX_WORK_FIELD} characters")
    return work


def resume_session(context: Context, token: str) -> Session:
    """The running session a grant token stands for (`GrantInvalid` when it stands for none).

    This is how a member's harness, holding the token its session was started with, acts as that member
    again, in this process or another one, within the same grant.
    """
    context.check_open()
    digest = token_digest(token)
    with context.store.reader() as reader:
        stored = reader.get(GRANT_TOKENS, digest)
        execution = None if stored is None else reader.get(EXECUTIONS, stored.execution)
        grant = None if stored is None else reader.get(GRANTS, stored.grant)
    if stored is None or execution is None or grant is None:
        raise GrantInvalid("this grant token is not known to this home; use the token of a session it started")
    if execution.outcome != "running":
        raise GrantInvalid(
            f"the session's execution {execution.id} has ended ({execution.outcome}); its grant token is spent"
        )
    if context.clock.time() >= grant.expires_at:
        raise GrantInvalid(f"grant {grant.id} of {grant.holder} expired; the task must be dispatched again")
    return Session(context, Dispatched(execution, grant), token)
