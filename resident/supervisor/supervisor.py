"""The supervisor actor: OTP restart semantics on top of pykka.

A supervisor starts its children in order, confirming each start with a ping, and restarts them
by its strategy when they exit:

* `one_for_one` restarts only the child that exited;
* `one_for_all` stops every other child (in reverse start order) and restarts them all;
* `rest_for_one` stops and restarts the exited child and the children started after it.

Restart types decide whether an exit calls for a restart at all (`permanent`: always;
`transient`: only after an abnormal exit; `temporary`: never — a temporary child stopped as a
bystander of a group restart is not started again either). Each restart is counted in the
supervisor's sliding window before the start; more than `intensity` restarts within `period`
seconds make the supervisor stop all its children and escalate to its own parent by crashing.
A start that fails counts as another exit of that child, so a child that can never start exhausts
the window too. Per-child backoff delays a restart with a scheduled message, never a sleep.

Shutdown is cooperative and in reverse start order, each child with its own timeout. While a
child is down its address buffers messages, so callers never see the restart, only its latency.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pykka

from resident.messages.supervision import ChildState, ChildStatistics, Ping, SupervisorStatistics
from resident.supervisor.actor import SupervisedActor
from resident.supervisor.rules import RestartWindow
from resident.supervisor.spec import ChildContext, ChildExit, ChildSpec, SupervisorSpec

__all__ = ["StartChild", "StatisticsBoard", "Supervisor", "SupervisorGaveUp", "await_start"]

logger = logging.getLogger(__name__)

# How often a start that has not been answered yet checks that the new actor is still alive.
_PING_SLICE = 0.05


class SupervisorGaveUp(RuntimeError):
    """A supervisor exceeded its restart intensity; it stopped its children and escalates."""


@dataclass(frozen=True, slots=True)
class StartChild:
    """Ask a running supervisor to add and start one more child (OTP's `start_child`).

    The child is remembered on the supervisor's statistics board, so a restart of the
    supervisor itself starts it again with the children of its spec.
    """

    spec: ChildSpec


@dataclass(frozen=True, slots=True)
class _RestartDue:
    names: tuple[str, ...]
    token: int


@dataclass
class _Child:
    spec: ChildSpec
    state: ChildState = "stopped"
    ref: pykka.ActorRef[Any] | None = None
    context: ChildContext | None = None
    incarnation: int = 0
    total_restarts: int = 0
    consecutive: int = 0
    # When the running incarnation started; None after a failed start, so that a child that
    # keeps failing to start never counts as "stayed up" and its backoff keeps growing.
    started_at: float | None = None
    # The backoff timer this child waits for; each child keeps its own, because one child's
    # backoff must not cancel another's that is still pending (one_for_one).
    backoff_token: int = 0
    last_exit: str = ""
    restart_times: deque[float] = field(default_factory=deque)


@dataclass(frozen=True, slots=True)
class _ChildRow:
    name: str
    state: ChildState
    restart: Any
    incarnation: int
    restarts_in_window: int
    total_restarts: int
    last_exit: str
    spec: ChildSpec
    # The running incarnation's context: its condition is read live, as it changes between publishes.
    context: ChildContext | None = None


class StatisticsBoard:
    """Where a supervisor publishes its state; survives the supervisor's own restarts.

    Reading never asks the supervisor actor, so statistics stay available while it is busy
    restarting children. Nested supervisors' boards are found through their child specs.
    """

    def __init__(self, spec: SupervisorSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._rows: tuple[_ChildRow, ...] = tuple(
            _ChildRow(c.name, "stopped", c.restart, 0, 0, 0, "", c) for c in spec.children
        )
        self._escalated = ""
        # Children added at run time (StartChild); a restarted supervisor starts them too.
        self.added: list[ChildSpec] = []

    def publish(self, rows: tuple[_ChildRow, ...], escalated: str | None = None) -> None:
        with self._lock:
            self._rows = rows
            if escalated is not None:
                self._escalated = escalated

    def snapshot(self) -> SupervisorStatistics:
        """An immutable view of every child, nested supervisors flattened as `parent/child`."""
        with self._lock:
            rows = self._rows
            escalated = self._escalated
        children: list[ChildStatistics] = []
        for row in rows:
            address = row.spec.address
            condition = row.context.condition if row.context is not None and row.state == "running" else ""
            children.append(
                ChildStatistics(
                    name=row.name,
                    state="degraded" if condition else row.state,
                    restart=row.restart,
                    incarnation=row.incarnation,
                    restarts_in_window=row.restarts_in_window,
                    total_restarts=row.total_restarts,
                    buffered=address.buffered,
                    dead_letters=address.dead_letters,
                    last_exit=row.last_exit,
                    condition=condition,
                )
            )
            nested = row.spec.kwargs.get("board")
            if isinstance(nested, StatisticsBoard):
                children.extend(
                    ChildStatistics(**{**_fields(child), "name": f"{row.name}/{child.name}"})
                    for child in nested.snapshot().children
                )
        return SupervisorStatistics(
            name=self.spec.name,
            strategy=self.spec.strategy,
            intensity=self.spec.intensity,
            period=self.spec.period,
            children=tuple(children),
            escalated=escalated,
        )


def _fields(stats: ChildStatistics) -> dict[str, Any]:
    return {name: getattr(stats, name) for name in stats.__struct_fields__}


class Supervisor(SupervisedActor):
    """Starts, watches and restarts the children of one `SupervisorSpec`."""

    def __init__(self, context: ChildContext, spec: SupervisorSpec, board: StatisticsBoard) -> None:
        super().__init__(context)
        self.spec = spec
        self.board = board
        self._children = [_Child(spec=child) for child in (*spec.children, *board.added)]
        self._window = RestartWindow(spec.intensity, spec.period)
        self._token = 0
        self._random = random.Random()

    # -- life cycle -------------------------------------------------------------------------------

    def setup(self) -> None:
        self.board.publish(self._rows(), escalated="")
        for index, child in enumerate(self._children):
            if not self._start_child(child):
                self._stop_all(self._children[:index])
                self.board.publish(self._rows())
                raise SupervisorGaveUp(
                    f"{self.spec.name}: child {child.spec.name} failed to start: {child.last_exit}"
                )
        self.board.publish(self._rows())

    def teardown(self) -> None:
        self._stop_all(self._children)
        self.board.publish(self._rows())

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        # Whatever killed the supervisor, its children must not outlive it unsupervised.
        self._stop_all(self._children)
        self.board.publish(self._rows())

    def handle(self, message: Any) -> Any:
        if isinstance(message, ChildExit):
            self._on_exit(message)
        elif isinstance(message, _RestartDue):
            self._on_restart_due(message)
        elif isinstance(message, StartChild):
            self._add_child(message.spec)
        else:
            return super().handle(message)
        self.board.publish(self._rows())
        return None

    def _add_child(self, spec: ChildSpec) -> None:
        if self._child(spec.name) is not None:
            raise ValueError(f"supervisor {self.spec.name} already has a child named {spec.name}")
        child = _Child(spec=spec)
        self._children.append(child)
        if not self._start_child(child):
            self._children.remove(child)
            raise RuntimeError(f"{spec.name} failed to start: {child.last_exit}")
        self.board.added.append(spec)

    # -- exits and restarts -----------------------------------------------------------------------

    def _on_exit(self, exit_: ChildExit) -> None:
        child = self._child(exit_.name)
        if child is None or exit_.incarnation != child.incarnation or child.state != "running":
            return  # a late report from an incarnation this supervisor already replaced or stopped
        child.ref = None
        child.state = "stopped"
        child.last_exit = f"{exit_.kind}: {exit_.reason}"
        restart = child.spec.restart
        if restart == "temporary" or (restart == "transient" and exit_.kind == "normal"):
            logger.info("%s exited (%s) and is not restarted (%s)", child.spec.name, exit_.kind, restart)
            child.spec.address.close(f"it exited ({child.last_exit}) and is {restart}")
            if restart == "temporary":
                self._children.remove(child)
            return
        self._restart_after_failure(child)

    def _restart_after_failure(self, child: _Child) -> None:
        now = self.clock.monotonic()
        if not self._window.admit(now):
            self._give_up(
                f"more than {self.spec.intensity} restarts in {self.spec.period:g} s; "
                f"last: {child.spec.name} ({child.last_exit})"
            )
            return
        if child.started_at is not None and now - child.started_at >= _reset_after(child):
            child.consecutive = 0
        child.consecutive += 1
        group = self._group_of(child)
        for sibling in reversed(group):
            if sibling is not child and sibling.state == "running":
                self._stop_child(sibling)
        # Temporary bystanders of a group restart are not started again (OTP).
        for sibling in [s for s in group if s is not child and s.spec.restart == "temporary"]:
            sibling.spec.address.close("it was stopped by a group restart and is temporary")
            self._children.remove(sibling)
            group.remove(sibling)
        for member in group:
            member.total_restarts += 1
            member.restart_times.append(now)
        backoff = child.spec.backoff
        delay = backoff.delay(child.consecutive, self._random.random()) if backoff is not None else 0.0
        if delay > 0:
            self._token += 1
            for member in group:
                member.state = "backoff"
                member.backoff_token = self._token
            self.schedule(delay, _RestartDue(tuple(m.spec.name for m in group), self._token))
            return
        self._start_group(group)

    def _on_restart_due(self, due: _RestartDue) -> None:
        # Members a later restart took over (a new timer, or started already) are not due here.
        group = [
            c
            for c in self._children
            if c.spec.name in due.names and c.state == "backoff" and c.backoff_token == due.token
        ]
        self._start_group(group)

    def _start_group(self, group: list[_Child]) -> None:
        for member in group:
            member.state = "restarting"
        for member in group:
            if not self._start_child(member):
                # A failed start is another exit of that child: count it and apply the strategy.
                self._restart_after_failure(member)
                return

    def _give_up(self, reason: str) -> None:
        logger.error("supervisor %s gives up: %s", self.spec.name, reason)
        self._stop_all(self._children)
        self.board.publish(self._rows(), escalated=reason)
        raise SupervisorGaveUp(f"{self.spec.name} gave up: {reason}")

    # -- starting and stopping one child ----------------------------------------------------------

    def _start_child(self, child: _Child) -> bool:
        spec = child.spec
        child.incarnation += 1
        child.state = "starting"
        context = ChildContext(
            name=spec.name,
            address=spec.address,
            incarnation=child.incarnation,
            clock=self.clock,
            report=self._report_to_self,
        )
        # A child given up earlier (a transient child that ended normally, a temporary child of
        # a supervisor that is itself restarted) is reachable again once it runs again.
        spec.address.reopen()
        try:
            ref = spec.actor.start(context, **spec.kwargs)
        except BaseException as error:  # noqa: BLE001 - any constructor error is a failed start
            child.state = "stopped"
            child.started_at = None
            child.last_exit = f"start failed: {type(error).__name__}: {error}"
            return False
        try:
            await_start(ref, spec.start_timeout)
        except Exception as error:  # noqa: BLE001 - pykka.Timeout, ActorDeadError, or the start error
            cause = context.start_error or error
            if isinstance(cause, pykka.Timeout):
                detail = f"no answer to its start ping within {spec.start_timeout:g} s"
            else:
                detail = str(cause) or "it stopped before answering its start ping"
            child.state = "stopped"
            child.started_at = None
            child.last_exit = f"start failed: {type(cause).__name__}: {detail}"
            context.expected_stop = True
            if ref.is_alive():
                ref.stop(block=False)
            return False
        child.ref = ref
        child.context = context
        child.started_at = self.clock.monotonic()
        child.state = "running"
        # Refused when the child died right after its ping; its exit report follows and restarts it.
        spec.address.attach(ref)
        return True

    def _stop_child(self, child: _Child) -> None:
        ref, context = child.ref, child.context
        child.ref = None
        child.state = "stopped"
        child.spec.address.detach()
        if ref is None or context is None:
            return
        context.expected_stop = True
        try:
            stopped = ref.stop(block=False)
            stopped.get(timeout=child.spec.shutdown_timeout)
        except pykka.Timeout:
            logger.error(
                "%s did not stop within %g s; leaving it behind", child.spec.name, child.spec.shutdown_timeout
            )
        except pykka.ActorDeadError:
            return

    def _stop_all(self, children: list[_Child]) -> None:
        for child in reversed(children):
            if child.state in ("running", "starting"):
                self._stop_child(child)
            elif child.state in ("backoff", "restarting"):
                child.state = "stopped"

    def _report_to_self(self, exit_: ChildExit) -> None:
        try:
            self.actor_ref.tell(exit_)
        except pykka.ActorDeadError:
            return  # the supervisor itself is gone; its own parent deals with the subtree

    # -- bookkeeping ------------------------------------------------------------------------------

    def _child(self, name: str) -> _Child | None:
        return next((c for c in self._children if c.spec.name == name), None)

    def _group_of(self, child: _Child) -> list[_Child]:
        if self.spec.strategy == "one_for_one":
            return [child]
        if self.spec.strategy == "one_for_all":
            return list(self._children)
        index = self._children.index(child)
        return list(self._children[index:])

    def _rows(self) -> tuple[_ChildRow, ...]:
        now = self.clock.monotonic()
        rows = []
        for child in self._children:
            while child.restart_times and now - child.restart_times[0] > self.spec.period:
                child.restart_times.popleft()
            rows.append(
                _ChildRow(
                    name=child.spec.name,
                    state=child.state,
                    restart=child.spec.restart,
                    incarnation=child.incarnation,
                    restarts_in_window=len(child.restart_times),
                    total_restarts=child.total_restarts,
                    last_exit=child.last_exit,
                    spec=child.spec,
                    context=child.context,
                )
            )
        return tuple(rows)


def await_start(ref: pykka.ActorRef[Any], timeout: float) -> None:
    """Wait for a new actor's answer to its start ping, giving up early if the actor dies first.

    Raises `pykka.ActorDeadError` when it stopped before answering (its start failed) and
    `pykka.Timeout` when it is still starting after `timeout` seconds. pykka can drop an ask that
    races the actor's death (the reply is never set, so a plain `ask(timeout=...)` would wait out
    the whole start timeout for a start that failed at once), so the wait is sliced and ends
    early once the actor is no longer alive.
    """
    future = ref.ask(Ping(), block=False)
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            future.get(timeout=max(0.0, min(remaining, _PING_SLICE)))
        except pykka.Timeout:
            if not ref.is_alive():
                raise pykka.ActorDeadError(f"{ref} stopped before answering its start ping") from None
            if remaining <= _PING_SLICE:
                raise
        else:
            return


def _reset_after(child: _Child) -> float:
    backoff = child.spec.backoff
    return backoff.reset_after if backoff is not None else 0.0
