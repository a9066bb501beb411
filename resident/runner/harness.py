"""Runs a plan against an open runtime: one session per task, all tasks concurrently.

Each task is dispatched by the coordinator under a child of the run's grant and its steps are
played as the member's harness would: callbacks into the runtime, each checked against the grant.
The harness keeps live counters for the progress display and everything the final invariants
need: every acknowledged record id, every recall result served, every crash it caused.

Texts and queries are templates: `{i}` is the index within a repeated step, `{member}` the
member playing it and `{run}` a tag drawn once per run, so a plan can write a note no earlier
run in the same home wrote and then recall exactly that note.

A task that names a harness is real work: after its steps (if any), the coordinator's dispatch
becomes a member session (`rt.sessions`) whose command runs in a worker thread, its output in the
run's work folder (`logs/<task>.log`, beside the scratch repository `repo/` that `{scratch}`
names); the execution ends with the command's status and the task with the session's outcome.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from resident.coordination.grants import EVOLUTION_ACTIONS
from resident.coordination.plan import Plan, Step, TaskPlan
from resident.errors import RecordWithheld, ResidentError
from resident.memory.visibility import WITHHELD
from resident.messages.coordination import Grant, Outcome
from resident.messages.memory import Receipt, RecordAdmitted
from resident.messages.sessions import Harness
from resident.realm.client import RealmClient
from resident.realm.process import RealmProcess
from resident.runtime import Runtime
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_chaos, host_context
from resident.store.tables import EXECUTIONS, RECORDS

if TYPE_CHECKING:
    from resident.sessions.launch import SessionLaunch

__all__ = ["RunHarness", "RunMetrics", "StepFailed", "TaskProgress"]

logger = logging.getLogger(__name__)

# How many writes of one `repeat` step are in flight at once: several per member, so group
# commit has something to group, without letting one member flood the others.
WRITE_WINDOW = 8
WAIT_TIMEOUT = 60.0


class StepFailed(Exception):
    """A step's expectation did not hold; the message says which and why."""


@dataclass
class TaskProgress:
    task: str
    member: str
    steps_total: int
    steps_done: int = 0
    writes: int = 0
    state: str = "waiting"
    error: str = ""
    execution: str = ""
    session: str = ""


@dataclass
class RunMetrics:
    """What the run did so far (read by the live display) and what the invariants check."""

    started: float = field(default_factory=time.monotonic)
    tasks: dict[str, TaskProgress] = field(default_factory=dict)
    acknowledged: set[str] = field(default_factory=set)
    # Records the members' own sessions wrote (their `resident remember` calls back into the run's
    # API), found in the event log once the plan has played: acknowledged to them, not to the harness.
    session_writes: set[str] = field(default_factory=set)
    recalls: int = 0
    served_withheld: list[str] = field(default_factory=list)
    crashes: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    # The work folder of a plan with harness tasks: `repo/` ({scratch}) and each task's `logs/`.
    work: Path | None = None

    @property
    def writes(self) -> int:
        return len(self.acknowledged | self.session_writes)

    def writes_per_second(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.writes / elapsed if elapsed > 0 else 0.0


@dataclass(frozen=True, slots=True)
class _At:
    """Where a step is played: its session, task, the step itself and the task's progress."""

    session: Session
    task: TaskPlan
    step: Step
    progress: TaskProgress


class RunHarness:
    """Plays `plan` on `runtime`; `realm` is the child Realm process when the run owns one."""

    def __init__(
        self,
        runtime: Runtime,
        plan: Plan,
        *,
        realm_url: str | None,
        realm_process: RealmProcess | None,
        admin_token: str | None = None,
        metrics: RunMetrics | None = None,
        run_tag: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.run_tag = run_tag or f"r{secrets.token_hex(4)}"
        self.plan = plan
        self.realm_url = realm_url
        self.realm_process = realm_process
        self.admin_token = admin_token
        self.metrics = metrics or RunMetrics()
        self._started_at = host_context(runtime).clock.time()
        if realm_url is None:
            self.metrics.notes.append("no Realm: records stay pending; nothing is replicated, withheld or invalidated")
        self._refs: dict[str, str] = {}
        self._ref_events: dict[str, asyncio.Event] = {}
        self._done: dict[str, asyncio.Event] = {}
        self._noted: set[str] = set()
        # Which task writes each named record: waiting for a record gives up when its task ended without it.
        self._writer_of = {step.as_: task.id for task in plan.tasks for step in task.steps if step.as_}
        self._launches: dict[str, SessionLaunch] = {}

    # -- the run ----------------------------------------------------------------------------------

    def note_session_writes(self) -> None:
        """Count the records the plan's members wrote themselves since the run began (their callbacks).

        Each was acknowledged to its caller once its commit was durable, and that commit holds its
        `RecordAdmitted` event: the event log lists them whatever the surface they came by.
        """
        members = {task.member for task in self.plan.tasks}
        with host_context(self.runtime).store.reader() as reader:
            admitted = [
                event.record for _, event in reader.events()
                if isinstance(event, RecordAdmitted) and event.at >= self._started_at
            ]
        self.metrics.session_writes = {
            record.id for record in admitted
            if record.delegated and record.author in members and record.id not in self.metrics.acknowledged
        }

    async def run(self) -> None:
        """Dispatch every task and play them concurrently until all have finished."""
        self._done = {task.id: asyncio.Event() for task in self.plan.tasks}
        for task in self.plan.tasks:
            self.metrics.tasks[task.id] = TaskProgress(task.id, task.member, len(task.steps))
        grant = await asyncio.to_thread(
            self.runtime.coordinator.issue_grant,
            actions={"remember", "recall", "forget", "supersede", "reconcile", "write_back", "push", "deploy", "review",
                     "dispatch", *EVOLUTION_ACTIONS},
        )
        try:
            await asyncio.gather(*(self._play(task, grant) for task in self.plan.tasks))
        except BaseException:
            # Interrupted: the harnesses stop, so their worker threads end their sessions and return.
            for launch in list(self._launches.values()):
                launch.stop()
            raise

    async def _play(self, task: TaskPlan, grant: Grant) -> None:
        progress = self.metrics.tasks[task.id]
        try:
            session = await asyncio.to_thread(
                functools.partial(dispatch_session, host_context(self.runtime)),
                    task.task, task.member, role=task.role, parent_grant=grant
            )
        except ResidentError as error:
            progress.state, progress.error = "failed", f"dispatch: {error}"
            self._done[task.id].set()
            return
        progress.execution = session.execution.id
        progress.state = "running"
        outcome: Outcome = "succeeded"
        error_text = ""
        try:
            for index, step in enumerate(task.steps):
                try:
                    await self._step(session, task, step, progress)
                except (StepFailed, ResidentError) as error:
                    raise StepFailed(f"{task.id} step {index + 1} ({step.do}): {error}") from None
                progress.steps_done += 1
            if task.harness is not None:
                # The session ends the execution itself, with the command's status.
                outcome, error_text = await asyncio.to_thread(self._work, session, task, progress)
                progress.error = error_text
        except StepFailed as error:
            outcome, error_text = "failed", str(error)
            progress.error = error_text
        progress.state = outcome
        self._done[task.id].set()
        await asyncio.to_thread(self._finish, session, outcome, error_text)

    def _finish(self, session: Session, outcome: Outcome, error: str) -> None:
        """End the task's execution, unless its member session ended it already."""
        with host_context(self.runtime).store.reader() as reader:
            execution = reader.get(EXECUTIONS, session.execution.id)
        if execution is not None and execution.outcome == "running":
            session.finish(outcome, error)

    # -- harness tasks ------------------------------------------------------------------------------

    def _work_folder(self) -> Path:
        if self.metrics.work is None:
            work = Path(tempfile.mkdtemp(prefix="resident-plan-"))
            (work / "repo").mkdir()
            (work / "logs").mkdir()
            if shutil.which("git"):
                # A scratch repository is a repository: harnesses that insist on one find one.
                subprocess.run(["git", "init", "-q", str(work / "repo")], check=False, capture_output=True)  # noqa: S603, S607 - fixed argv, no shell; git from PATH
            self.metrics.work = work
        return self.metrics.work

    def _fill_work(self, template: str, member: str) -> str:
        text = self._fill(template, member)
        if "{scratch}" in text:
            text = text.replace("{scratch}", str(self._work_folder() / "repo"))
        plan_dir = str(Path(self.plan.source).absolute().parent)
        return text.replace("{python}", sys.executable).replace("{plan_dir}", plan_dir)

    def _work(self, session: Session, task: TaskPlan, progress: TaskProgress) -> tuple[Outcome, str]:
        """Run `task`'s command as the member session of its execution (in a worker thread)."""
        sessions = self.runtime.sessions
        try:
            # The session takes over the execution dispatched for the task (its task is that execution's id).
            launch = sessions.start(
                task.member, harness=cast("Harness", task.harness or ""), task=session.execution.id,
                command=tuple(self._fill_work(part, task.member) for part in task.command),
                directory=self._fill_work(task.dir, task.member),
            )
        except ResidentError as error:
            raise StepFailed(f"{task.id}: its session did not start: {error}") from None
        progress.session, progress.state = launch.session, "session"
        self._launches[task.id] = launch
        status: int | None = None
        try:
            status = launch.run(log=self._work_folder() / "logs" / f"{task.id}.log")
        finally:
            del self._launches[task.id]
            record = sessions.end(launch.session, status, interrupted=status is None, token=launch.token)
        if record is not None and record.outcome == "succeeded":
            return "succeeded", ""
        return "failed", f"{task.id}: {record.note if record is not None else 'its session was lost'}"

    # -- steps ------------------------------------------------------------------------------------

    def _define(self, name: str | None, record_id: str) -> None:
        if name is None:
            return
        self._refs[name] = record_id
        self._ref_event(name).set()

    def _ref_event(self, name: str) -> asyncio.Event:
        event = self._ref_events.get(name)
        if event is None:
            event = self._ref_events[name] = asyncio.Event()
        return event

    def _ref(self, name: str) -> str:
        if name not in self._refs:
            raise StepFailed(f"{name!r} has not been written yet (add a wait-for step before this one)")
        return self._refs[name]

    def _skip(self, step: Step, why: str) -> None:
        note = f"{step.do} steps skipped: {why}"
        if note not in self._noted:
            self._noted.add(note)
            self.metrics.notes.append(note)

    def _fill(self, template: str, member: str, index: int | None = None) -> str:
        text = template.replace("{member}", member).replace("{run}", self.run_tag)
        return text if index is None else text.replace("{i}", str(index))

    async def _step(self, session: Session, task: TaskPlan, step: Step, progress: TaskProgress) -> None:
        handler: Callable[[_At], Awaitable[None]] = getattr(self, f"_do_{step.do.replace('-', '_')}")
        await handler(_At(session, task, step, progress))

    async def _write(self, pending: Awaitable[Receipt], progress: TaskProgress) -> str:
        started = time.perf_counter()
        receipt = await pending
        self.metrics.latencies.append(time.perf_counter() - started)
        self.metrics.acknowledged.add(receipt.id)
        progress.writes += 1
        return str(receipt.id)

    async def _do_remember(self, at: _At) -> None:
        last = ""
        for start in range(0, at.step.repeat, WRITE_WINDOW):
            window = range(start, min(at.step.repeat, start + WRITE_WINDOW))
            ids = await asyncio.gather(
                *(
                    self._write(
                        at.session.remember(
                            self._fill(at.step.text, at.task.member, i), scope=at.step.scope,
                            summary=at.step.summary, counterpart=at.step.counterpart,
                            world=at.step.world, kind=at.step.kind, canonical=bool(at.step.canonical),
                        ),
                        at.progress,
                    )
                    for i in window
                )
            )
            last = ids[-1]
        self._define(at.step.as_, last)

    async def _do_supersede(self, at: _At) -> None:
        old = self._ref(at.step.ref or "")
        text = self._fill(at.step.text, at.task.member)
        new = await self._write(at.session.remember(text, supersedes=old), at.progress)
        self._define(at.step.as_, new)

    async def _do_forget(self, at: _At) -> None:
        await at.session.forget(self._ref(at.step.ref or ""), reason=f"forgotten by {at.task.id}")

    async def _do_recall(self, at: _At) -> None:
        query = self._fill(at.step.query, at.task.member)
        hits = await at.session.recall(query, at.step.k)
        self.metrics.recalls += 1
        ids = [hit.id for hit in hits]
        self.metrics.served_withheld.extend(hit.id for hit in hits if hit.replication in WITHHELD)
        if at.step.expect is not None and self._ref(at.step.expect) not in ids:
            raise StepFailed(f"recall {query!r} did not return {at.step.expect} ({len(ids)} results)")
        absent = self._refs.get(at.step.expect_absent or "")
        if absent is not None and absent in ids:
            raise StepFailed(f"recall {query!r} returned {at.step.expect_absent}, which must not be served")

    async def _do_reconcile(self, at: _At) -> None:
        if self.realm_url is None:
            self._skip(at.step, "no Realm, so nothing is ever withheld")
            return
        result = await at.session.reconcile(
            self._ref(at.step.ref or ""), readmit=at.step.readmit, rollback=at.step.rollback,
            text=self._fill(at.step.text, at.task.member) or None, canonical=at.step.canonical,
        )
        if result.new_id:
            self.metrics.acknowledged.add(result.new_id)
            at.progress.writes += 1
            self._define(at.step.as_, result.new_id)
            await self._probe_readmitted(at.session, result.new_id)

    async def _probe_readmitted(self, session: Session, record_id: str) -> None:
        """A readmitted version is withheld until Realm accepts it: a direct read must not serve it before."""
        try:
            record = await session.get(record_id)
        except RecordWithheld:
            return
        if record.replication in WITHHELD:
            self.metrics.served_withheld.append(record_id)

    def _state(self, record_id: str) -> str:
        with host_context(self.runtime).store.reader() as reader:
            record = reader.get(RECORDS, record_id)
        return "missing" if record is None else record.replication

    async def _do_expect_state(self, at: _At) -> None:
        if self.realm_url is None:
            self._skip(at.step, "no Realm, so records stay pending")
            return
        state = self._state(self._ref(at.step.ref or ""))
        if state != at.step.state:
            raise StepFailed(f"{at.step.ref} is {state}, expected {at.step.state}")

    async def _do_sync(self, at: _At) -> None:
        if self.realm_url is None:
            self._skip(at.step, "no Realm to sync with")
            return
        await asyncio.to_thread(self.runtime.replication.sync, 15.0)

    async def _do_wait_for(self, at: _At) -> None:
        at.progress.state = "waiting"
        try:
            if at.step.task is not None:
                await asyncio.wait_for(self._done[at.step.task].wait(), WAIT_TIMEOUT)
            else:
                await self._wait_ref(at.step.ref or "")
                if at.step.state is not None:
                    await asyncio.wait_for(self._wait_state(at.step), WAIT_TIMEOUT)
        except TimeoutError:
            raise StepFailed(f"waited {WAIT_TIMEOUT:g} s for {at.step.task or at.step.ref}") from None
        finally:
            at.progress.state = "running"

    async def _wait_ref(self, name: str) -> None:
        written = asyncio.ensure_future(self._ref_event(name).wait())
        writer_done = asyncio.ensure_future(self._done[self._writer_of[name]].wait())
        try:
            await asyncio.wait({written, writer_done}, timeout=WAIT_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        finally:
            written.cancel()
            writer_done.cancel()
        if name not in self._refs:
            if self._done[self._writer_of[name]].is_set():
                raise StepFailed(f"{name} will never be written: task {self._writer_of[name]} ended without it")
            raise TimeoutError

    async def _wait_state(self, step: Step) -> None:
        if self.realm_url is None:
            self._skip(step, "no Realm, so records stay pending")
            return
        record_id = self._ref(step.ref or "")
        # Each round pushes and polls Realm and waits for it: the loop waits on the runtime, not a timer.
        while self._state(record_id) != step.state:
            await asyncio.to_thread(self.runtime.replication.sync, 5.0)

    async def _do_crash(self, at: _At) -> None:
        host_chaos(self.runtime).crash(at.step.actor, reason=f"planned crash by {at.task.id}")
        self.metrics.crashes[at.step.actor] += 1

    async def _do_realm_outage(self, at: _At) -> None:
        if self.realm_process is None:
            self._skip(at.step, "the run does not own its Realm (use --realm auto)")
            return
        await asyncio.to_thread(self.realm_process.stop)
        at.progress.state = "realm down"
        # The outage itself is the scenario: Realm stays down this long while members keep writing.
        await asyncio.sleep(at.step.seconds)
        await asyncio.to_thread(self.realm_process.start)
        at.progress.state = "running"

    async def _do_invalidate(self, at: _At) -> None:
        if self.realm_url is None or self.admin_token is None:
            self._skip(at.step, "the run holds no Realm admin token (use --realm auto)")
            return
        record_id = self._ref(at.step.ref or "")
        url, token = self.realm_url, self.admin_token

        def invalidate() -> None:
            with RealmClient(url, token=token) as client:
                client.invalidate(record_id, at.step.reason)

        await asyncio.to_thread(invalidate)
