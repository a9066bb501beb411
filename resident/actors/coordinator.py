"""The coordinator (Samuel): dispatches work under grants and answers progress from executions.

Every dispatch is recorded as an `Execution` (task, member, grant, role, start, finish, outcome,
result digest) written with its events, and the member's grant is derived from a parent grant
the owner issued — never wider. Progress is read from those execution records at the moment of
asking, never from memory, with the member sessions (harnesses) at work on running executions.
Owner corrections of an execution are recorded as events too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from resident.actors.awaiting import Awaiting
from resident.config import Config
from resident.coordination.grants import derive
from resident.errors import GrantExceeded, InvalidInput, UnknownExecution
from resident.ids import new_id
from resident.knowledge.evidence import seal
from resident.messages.coordination import (
    AcceptExecution,
    AwaitExecution,
    CorrectExecution,
    Correction,
    CorrectionRecorded,
    Dispatch,
    Execution,
    ExecutionAccepted,
    ExecutionFinished,
    ExecutionRejected,
    ExecutionStarted,
    FinishExecution,
    GetProgress,
    Grant,
    GrantIssued,
    GrantToken,
    GrantTokenIssued,
    MemberProgress,
    Progress,
    RejectExecution,
)
from resident.messages.knowledge import EntryProposed
from resident.messages.principles import PrincipleProposed
from resident.messages.sessions import SessionProgress, SessionRecord
from resident.messages.skills import SkillSessionOpened
from resident.messages.store import Commit
from resident.principles.rules import candidate
from resident.store.store import Store
from resident.store.tables import EXECUTIONS, GRANTS, SESSIONS
from resident.supervisor import Address, ChildContext, Completed, ForwardReply, Reply, SupervisedActor, settle_all

__all__ = ["Coordinator", "Dispatched", "correction_principle"]


@dataclass(frozen=True, slots=True)
class Dispatched:
    """What a dispatch answers: the recorded execution and the grant it runs under."""

    execution: Execution
    grant: Grant


def correction_principle(execution: Execution, correction: Correction) -> tuple[PrincipleProposed, ...]:
    """The principle candidate an owner's correction suggests to the corrected member (the owner decides).

    A note that cannot be a principle's text (say, it holds a control character) proposes nothing:
    the correction itself is what matters.
    """
    try:
        principle = candidate(
            new_id("prn"), member=execution.member, text=correction.note,
            basis=f"the owner's correction {correction.id} of execution {execution.id} ({execution.task})",
            by="runtime", at=correction.at,
        )
    except InvalidInput:
        return ()
    return (PrincipleProposed(at=correction.at, principle=principle),)


@dataclass(frozen=True, slots=True)
class _Recorded:
    reply: Reply | None
    answer: Any
    # The execution this write ended, whose awaiting callers are answered once it is durable.
    ended: str = ""


class Coordinator(SupervisedActor):
    """Samuel: the roster, dispatch under grants, progress, corrections."""

    def __init__(
        self, context: ChildContext, *, config: Config, store: Store, writer: Address, awaiting: Awaiting | None = None
    ) -> None:
        super().__init__(context)
        self.config = config
        self.store = store
        self.writer = writer
        # Callers awaiting a running execution's end. The runtime passes the same `Awaiting` to every
        # incarnation, so a restart does not lose them.
        self._awaiting = awaiting if awaiting is not None else Awaiting()

    def setup(self) -> None:
        # An execution may have ended while the last incarnation died before answering its waiters (the
        # writer's confirmation went to the dead one): answer those now, from the record.
        with self.store.reader() as reader:
            ended = [
                execution_id for execution_id in self._awaiting.executions()
                if (execution := reader.get(EXECUTIONS, execution_id)) is None or execution.outcome != "running"
            ]
        for execution_id in ended:
            self._answer_awaiting(execution_id)

    def handle(self, message: Any) -> Any:
        match message:
            case Dispatch():
                self._dispatch(message)
            case FinishExecution():
                self._finish(message)
            case CorrectExecution():
                self._correct(message)
            case AcceptExecution():
                self._accept(message)
            case RejectExecution():
                self._reject(message)
            case AwaitExecution():
                return self._await(message)
            case GetProgress():
                return self._progress()
            case Completed():
                self._recorded(message)
            case _:
                return super().handle(message)
        return None

    def _recorded(self, message: Completed) -> None:
        """Answer the callers whose events the writer made durable (or refused), then those awaiting what ended."""
        recorded = [(c, error) for c, _value, error in message.outcomes if isinstance(c, _Recorded)]
        settle_all((context.reply, context.answer if error is None else None, error) for context, error in recorded)
        for context, error in recorded:
            if context.ended and error is None:
                self._answer_awaiting(context.ended)

    def _record(self, events: tuple[Any, ...], answer: Any, ended: str = "") -> None:
        """Write `events`; the caller is answered with `answer` once they are durable."""
        recorded = _Recorded(self.defer(), answer, ended)
        self.writer.tell(Commit(events=events), ForwardReply(self.context.address, recorded))

    def _await(self, message: AwaitExecution) -> Execution | None:
        with self.store.reader() as reader:
            execution = reader.get(EXECUTIONS, message.id)
        if execution is None:
            raise UnknownExecution(f"no execution {message.id}; see `resident executions` for the recorded ones")
        if execution.outcome != "running":
            return execution
        reply = self.defer()
        if reply is not None:
            self._awaiting.add(message.id, reply)
        return None

    def _answer_awaiting(self, execution_id: str) -> None:
        waiting = self._awaiting.take(execution_id)
        if not waiting:
            return
        with self.store.reader() as reader:
            execution = reader.get(EXECUTIONS, execution_id)
        settle_all((reply, execution, None) for reply in waiting)

    def _dispatch(self, message: Dispatch) -> None:
        member = self.config.member(message.member)
        now = self.clock.time()
        if message.parent_grant is None:
            raise GrantExceeded("a dispatch needs the parent grant the owner issued for this work")
        with self.store.reader() as reader:
            parent = reader.get(GRANTS, message.parent_grant)
        if parent is None:
            raise GrantExceeded(f"no grant {message.parent_grant}; the owner issues grants first")
        grant = derive(
            parent, new_id("grant"), holder=member.name, actions=message.actions, scopes=message.scopes,
            expires_at=message.expires_at, now=now,
        )
        execution = Execution(
            id=new_id("exec"), task=message.task, member=member.name, role=message.role, grant=grant.id,
            started_at=now, work=message.work, reviews=message.reviews, fingerprint=message.fingerprint,
            dispatched_by=message.dispatched_by, harness=message.harness,
        )
        events: tuple[Any, ...] = (
            GrantIssued(at=now, grant=grant),
            ExecutionStarted(at=now, execution=execution),
            # The execution is a session of the member: the unit its skills decay by.
            SkillSessionOpened(at=now, member=member.name, execution=execution.id),
        )
        if message.token_digest:
            token = GrantToken(
                digest=message.token_digest, grant=grant.id, member=member.name, execution=execution.id, issued_at=now
            )
            events = (*events, GrantTokenIssued(at=now, token=token))
        self._record(events, Dispatched(execution, grant))

    def _accept(self, message: AcceptExecution) -> None:
        self._record((ExecutionAccepted(at=self.clock.time(), id=message.id, by=message.by),), None)

    def _reject(self, message: RejectExecution) -> None:
        event = ExecutionRejected(
            at=self.clock.time(), id=message.id, by=message.by, reason=message.reason,
            reassigned_to=message.reassigned_to,
        )
        self._record((event,), None)

    def _finish(self, message: FinishExecution) -> None:
        with self.store.reader() as reader:
            execution = reader.get(EXECUTIONS, message.id)
        if execution is None:
            raise UnknownExecution(f"no execution {message.id}; see `resident progress` for the recorded ones")
        # The seal covers the record as this finish leaves it, so later tampering shows.
        finished = msgspec.structs.replace(
            execution, outcome=message.outcome, result_digest=message.result_digest, result=message.result,
            verdict=message.verdict,
        )
        event = ExecutionFinished(
            at=self.clock.time(), id=message.id, outcome=message.outcome, result_digest=message.result_digest,
            error=message.error, steps=message.steps, result=message.result, verdict=message.verdict,
            seal=seal(finished),
        )
        events: tuple[Any, ...] = (event,)
        if message.proposed is not None:
            events = (*events, EntryProposed(at=event.at, entry=message.proposed))
        self._record(events, None, ended=message.id)

    def _correct(self, message: CorrectExecution) -> None:
        with self.store.reader() as reader:
            execution = reader.get(EXECUTIONS, message.id)
        if execution is None:
            raise UnknownExecution(f"no execution {message.id}; see `resident progress` for the recorded ones")
        correction = Correction(
            id=new_id("corr"), execution=message.id, note=message.note, by=message.by, at=self.clock.time()
        )
        recorded = CorrectionRecorded(at=correction.at, correction=correction)
        events = (recorded, *correction_principle(execution, correction))
        self._record(events, correction)

    def _progress(self) -> Progress:
        per_member: dict[str, dict[str, Any]] = {name: {} for name in self.config.member_names()}
        executions = running = 0
        sessions: list[SessionProgress] = []
        with self.store.reader() as reader:
            for _, execution in reader.items(EXECUTIONS):
                executions += 1
                running += execution.outcome == "running"
                if execution.outcome == "running" and execution.session:
                    sessions += _running_session(reader.get(SESSIONS, execution.session))
                row = per_member.setdefault(execution.member, {})
                row[execution.outcome] = row.get(execution.outcome, 0) + 1
                row["steps"] = row.get("steps", 0) + execution.steps
                row["corrections"] = row.get("corrections", 0) + execution.corrections
                if execution.started_at >= row.get("_last", 0.0):
                    row["_last"] = execution.started_at
                    row["last_task"] = execution.task
        members = tuple(
            MemberProgress(
                member=name,
                running=row.get("running", 0),
                succeeded=row.get("succeeded", 0),
                failed=row.get("failed", 0),
                cancelled=row.get("cancelled", 0),
                steps=row.get("steps", 0),
                corrections=row.get("corrections", 0),
                last_task=row.get("last_task", ""),
            )
            for name, row in per_member.items()
        )
        return Progress(
            members=members, executions=executions, running=running, at=self.clock.time(),
            sessions=tuple(sorted(sessions, key=lambda s: s.started_at)),
        )


def _running_session(session: SessionRecord | None) -> list[SessionProgress]:
    """A running execution's session as progress shows it (none once it was recovered)."""
    if session is None or session.state != "running":
        return []
    return [
        SessionProgress(
            id=session.id, member=session.member, harness=session.harness, execution=session.execution,
            task=session.task, directory=session.directory, started_at=session.started_at,
        )
    ]
