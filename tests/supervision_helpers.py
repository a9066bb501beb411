"""Test actors and a harness for the supervision tests.

`Worker` is a supervised actor that can be made to end in every way OTP distinguishes (a normal
self-stop, an error in a tell handler, a failed start, a `SystemExit`) and writes its life cycle
into a shared `Journal`, so tests can check which incarnation did what, in which order.
`running_tree()` starts a `SupervisionTree` and always stops it, so no test leaves actors behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Container, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from resident.clock import Clock
from resident.messages.supervision import ChildState, ChildStatistics, SupervisorStatistics
from resident.supervisor import (
    Address,
    Backoff,
    ChildContext,
    ChildSpec,
    RestartType,
    StatisticsBoard,
    Strategy,
    SupervisedActor,
    SupervisionTree,
    Supervisor,
    SupervisorSpec,
)

# Generous: only reached when something is broken, and then it turns a hang into a failure.
WAIT = 5.0

Event = tuple[Any, ...]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll `condition` until it holds; fail the test with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting until {what}")
        time.sleep(0.001)


class Journal:
    """A thread-safe, ordered record of what the test actors did."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._changed = threading.Condition()

    def add(self, *event: Any) -> None:
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()

    def events(self, *kinds: str) -> list[Event]:
        """Every event, or only those of the given kinds, in the order they happened."""
        with self._changed:
            return [e for e in self._events if not kinds or e[0] in kinds]

    def lifecycle(self) -> list[tuple[str, str]]:
        """(kind, name) of every start, stop and crash, in order."""
        return [(e[0], e[1]) for e in self.events("start", "stop", "crash")]

    def count(self, kind: str, name: str) -> int:
        return sum(1 for e in self.events(kind) if e[1] == name)

    def wait_for(self, condition: Callable[[list[Event]], bool], what: str, timeout: float = WAIT) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: condition(self._events), timeout=timeout):
                raise AssertionError(f"timed out after {timeout:g} s waiting until {what}; journal: {self._events}")


# -- messages a Worker understands ------------------------------------------------------------------


@dataclass(frozen=True)
class Echo:
    """Answered with `value`."""

    value: Any


@dataclass(frozen=True)
class Note:
    """Journaled as ("got", name, value, incarnation) and answered with `value`."""

    value: Any


@dataclass(frozen=True)
class WhoAmI:
    """Answered with the incarnation that handled it."""


@dataclass(frozen=True)
class Fail:
    """Raises `ValueError` in the handler."""


@dataclass(frozen=True)
class Exit:
    """Raises `SystemExit` in the handler."""


@dataclass(frozen=True)
class StopSelf:
    """The actor stops itself: a normal exit."""


@dataclass(frozen=True)
class Hold:
    """Keeps the actor busy: sets `entered`, then waits (bounded) until `release` is set."""

    entered: threading.Event
    release: threading.Event


class Worker(SupervisedActor):
    """A supervised actor that journals its life and fails on request.

    Its start number `n` (the incarnation) fails when `n in fails_on`, raising `start_error` from
    `setup()` or, with `fail_in="constructor"`, from `__init__`;
    `start_gate` makes every start wait (bounded) until it is set. `teardown_error` and
    `crash_error` make the clean-up hooks raise.
    """

    def __init__(
        self,
        context: ChildContext,
        journal: Journal,
        fails_on: Container[int] = (),
        start_error: type[BaseException] = RuntimeError,
        fail_in: Literal["setup", "constructor"] = "setup",
        teardown_error: type[BaseException] | None = None,
        crash_error: type[BaseException] | None = None,
        start_gate: threading.Event | None = None,
    ) -> None:
        super().__init__(context)
        if fail_in == "constructor" and context.incarnation in fails_on:
            journal.add("start_failed", context.name, context.incarnation)
            raise start_error(f"{context.name} refuses construction {context.incarnation}")
        self.journal = journal
        self.fails_on = fails_on
        self.start_error = start_error
        self.teardown_error = teardown_error
        self.crash_error = crash_error
        self.start_gate = start_gate

    def setup(self) -> None:
        incarnation = self.context.incarnation
        if self.start_gate is not None:
            self.start_gate.wait(timeout=WAIT)
        if incarnation in self.fails_on:  # only reached when they fail in setup
            self.journal.add("start_failed", self.name, incarnation)
            raise self.start_error(f"{self.name} refuses start {incarnation}")
        self.journal.add("start", self.name, incarnation)

    def teardown(self) -> None:
        self.journal.add("stop", self.name, self.context.incarnation)
        if self.teardown_error is not None:
            raise self.teardown_error(f"{self.name} fails its teardown")

    def on_crash(self, error: BaseException) -> None:
        self.journal.add("crash", self.name, self.context.incarnation, type(error).__name__)
        if self.crash_error is not None:
            raise self.crash_error(f"{self.name} fails to clean up after its crash")

    def handle(self, message: Any) -> Any:
        if isinstance(message, Echo):
            return message.value
        if isinstance(message, Note):
            self.journal.add("got", self.name, message.value, self.context.incarnation)
            return message.value
        if isinstance(message, WhoAmI):
            return self.context.incarnation
        if isinstance(message, Fail):
            raise ValueError(f"{self.name} fails on purpose")
        if isinstance(message, Exit):
            raise SystemExit(f"{self.name} exits on purpose")
        if isinstance(message, StopSelf):
            self.stop()
            return None
        if isinstance(message, Hold):
            message.entered.set()
            message.release.wait(timeout=WAIT)
            return None
        return super().handle(message)


# -- specs ------------------------------------------------------------------------------------------


def worker(
    name: str,
    journal: Journal,
    *,
    restart: RestartType = "permanent",
    backoff: Backoff | None = None,
    fails_on: Container[int] = (),
    start_error: type[BaseException] = RuntimeError,
    fail_in: Literal["setup", "constructor"] = "setup",
    teardown_error: type[BaseException] | None = None,
    crash_error: type[BaseException] | None = None,
    start_gate: threading.Event | None = None,
    capacity: int = 1000,
    start_timeout: float = WAIT,
    actor: type[Worker] | None = None,
    address: Address | None = None,
) -> ChildSpec:
    return ChildSpec(
        address=address if address is not None else Address(name, capacity=capacity),
        actor=actor if actor is not None else Worker,
        kwargs={
            "journal": journal,
            "fails_on": fails_on,
            "start_error": start_error,
            "fail_in": fail_in,
            "teardown_error": teardown_error,
            "crash_error": crash_error,
            "start_gate": start_gate,
        },
        restart=restart,
        backoff=backoff,
        start_timeout=start_timeout,
        shutdown_timeout=WAIT,
    )


def nested(
    name: str,
    children: Sequence[ChildSpec],
    *,
    strategy: Strategy = "one_for_one",
    intensity: int = 3,
    period: float = 5.0,
) -> ChildSpec:
    spec = SupervisorSpec(name, children, strategy=strategy, intensity=intensity, period=period)
    return ChildSpec(
        address=Address(name),
        actor=Supervisor,
        kwargs={"spec": spec, "board": StatisticsBoard(spec)},
        start_timeout=WAIT,
        shutdown_timeout=WAIT,
    )


def find_address(children: Sequence[ChildSpec], path: str) -> Address:
    """The address at `path` (`sub/child` for a nested supervisor's child)."""
    head, _, rest = path.partition("/")
    for child in children:
        if child.name == head:
            if not rest:
                return child.address
            return find_address(child.kwargs["spec"].children, rest)
    raise KeyError(path)


# -- running a tree ---------------------------------------------------------------------------------


class Harness:
    """A started tree, its escalations, and waits on its statistics."""

    def __init__(self, spec: SupervisorSpec, clock: Clock) -> None:
        self.spec = spec
        self.clock = clock
        self.escalations: list[str] = []
        self._escalated = threading.Event()
        self.tree = SupervisionTree(spec, clock, self._on_escalate, start_timeout=WAIT)

    def _on_escalate(self, reason: str) -> None:
        self.escalations.append(reason)
        self._escalated.set()

    def address(self, path: str) -> Address:
        return find_address(self.spec.children, path)

    def stats(self) -> SupervisorStatistics:
        return self.tree.statistics()

    def child(self, path: str) -> ChildStatistics:
        return self.stats().child(path)

    def wait_child(
        self,
        path: str,
        *,
        state: ChildState | None = None,
        incarnation: int | None = None,
        timeout: float = WAIT,
    ) -> ChildStatistics:
        """Wait until the child at `path` is in `state` with `incarnation` (either may be left out)."""

        def matches() -> bool:
            try:
                child = self.child(path)
            except KeyError:
                return False
            return (state is None or child.state == state) and (incarnation is None or child.incarnation == incarnation)

        wait_until(matches, f"{path} is {state or 'any state'} in incarnation {incarnation or 'any'}", timeout)
        return self.child(path)

    def wait_escalation(self, timeout: float = WAIT) -> str:
        if not self._escalated.wait(timeout):
            raise AssertionError(f"the tree did not escalate within {timeout:g} s")
        return self.escalations[0]


@contextmanager
def running_tree(spec: SupervisorSpec, clock: Clock) -> Iterator[Harness]:
    harness = Harness(spec, clock)
    harness.tree.start()
    try:
        yield harness
    finally:
        assert harness.tree.stop(timeout=WAIT), "the tree did not stop in time"


class Background:
    """One blocking call run in its own thread, so the test thread can drive the clock meanwhile."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call = call
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="test-background", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call()
        except BaseException as error:  # handed to the test thread by result()
            self._error = error

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self, timeout: float = WAIT) -> Any:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"the background call did not return within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self._value
