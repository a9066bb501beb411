"""The base class of every supervised actor: it reports its own death, whatever kills it.

pykka leaves gaps a supervisor cannot see through: an exception in a `tell` handler stops the
actor silently, an `on_start` failure never reaches `on_failure`, and a `SystemExit` in any handler
stops every actor in the process. `SupervisedActor` closes them:

* every message arrives through its `Address` as a `Deliver` batch and is handled here, so an
  exception with a waiting reply goes back to the caller (the actor lives, like an `ask`), and an
  exception without one — or any `BaseException` — runs the crash protocol: stop buffering into
  this incarnation, rescue its unhandled messages to the address, release resources, stop, and
  report `ChildExit` to the supervisor;
* `setup()` runs in `on_start`; a failure is kept in the context for the supervisor, which also
  confirms every start with a `Ping`.

Subclasses implement `handle(message)`. A handler that passes its reply on to another actor calls
`defer()` and hands the returned `Reply` along; otherwise its return value answers the caller.
"""

from __future__ import annotations

import logging
import queue
from typing import Any, Literal

import pykka

from resident.clock import Clock, Timer
from resident.errors import ActorUnavailable
from resident.messages.supervision import Crash, Ping, Pong
from resident.supervisor.address import Deliver, Item, batching_outbox
from resident.supervisor.reply import Outcome, Reply, settle_all
from resident.supervisor.spec import ChildContext, ChildExit
from resident.supervisor.wakeup import WakeUp

__all__ = ["ChaosCrash", "StartFailed", "SupervisedActor", "UnknownMessage"]

logger = logging.getLogger(__name__)


class ChaosCrash(RuntimeError):
    """The failure a `Crash` message causes on purpose."""


class StartFailed(RuntimeError):
    """`setup()` raised; the original error is the cause and is kept in the child's context."""


class UnknownMessage(TypeError):
    """An actor was sent a message it has no handler for."""


class _Started:
    """The message an actor tells itself on answering its start ping: run `started` next."""


class SupervisedActor(pykka.ThreadingActor):
    """A pykka actor that a `Supervisor` can watch, restart and address by a stable name."""

    # A stuck actor must never keep the host process from exiting; shutdown is cooperative anyway.
    use_daemon_thread = True

    def __init__(self, context: ChildContext) -> None:
        super().__init__()
        self.context = context
        self._reply: Reply | None = None
        self._deferred = False
        self._chaos = False
        self._wake_ups: list[WakeUp] = []

    # -- hooks for subclasses ---------------------------------------------------------------------

    def setup(self) -> None:
        """Prepare state before the first message (runs in the actor's thread); raise to fail the start."""

    def started(self) -> None:
        """Begin work that may take long, once the start ping is answered (runs as this actor's next message).

        A start is confirmed by the ping within a fixed time; work that grows with the data (a
        substrate's index) begins here, so no start waits on it.
        """

    def teardown(self) -> None:
        """Release resources on a normal or supervisor-requested stop."""

    def on_crash(self, error: BaseException) -> None:
        """Release resources after a crash, before the supervisor starts the next incarnation."""

    def handle(self, message: Any) -> Any:
        """Handle one message; the return value answers the caller, if one waits."""
        raise UnknownMessage(f"{self.name} has no handler for {type(message).__name__}")

    # -- helpers for subclasses -------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.context.name

    @property
    def clock(self) -> Clock:
        return self.context.clock

    def defer(self) -> Reply | None:
        """Take over the current message's reply; the caller is answered when someone settles it."""
        self._deferred = True
        return self._reply

    def schedule(self, delay: float, message: Any) -> Timer:
        """Tell this incarnation `message` after `delay` seconds (dropped if it has died by then)."""
        tell = self._tell_unless_dead
        return self.clock.call_later(delay, lambda: tell(message))

    def wake_up(self, message: Any) -> WakeUp:
        """A recurring `message` to self, at most one pending, cancelled when this incarnation ends."""
        wake_up = WakeUp(self.clock, self._tell_unless_dead, message)
        self._wake_ups.append(wake_up)
        return wake_up

    def set_condition(self, condition: str) -> None:
        """Say why this actor cannot do all of its work ("" once it can again).

        Statistics show a running actor with a condition as `degraded`, with the condition beside
        it; a restart starts the next incarnation without one.
        """
        self.context.condition = condition

    def tell_self(self, message: Any) -> None:
        """Queue `message` behind everything already in this incarnation's inbox."""
        self.actor_ref.tell(message)

    def _tell_unless_dead(self, message: Any) -> None:
        # A timer may fire after this incarnation ended: its message is for nobody then.
        try:
            self.actor_ref.tell(message)
        except pykka.ActorDeadError:
            return

    # -- pykka hooks ------------------------------------------------------------------------------

    def on_start(self) -> None:
        try:
            self.setup()
        except BaseException as error:
            # A BaseException escaping on_start would kill the thread without stopping the actor.
            self.context.start_error = error
            raise StartFailed(f"{self.name} failed to start: {type(error).__name__}: {error}") from error

    def on_stop(self) -> None:
        self.context.address.detach(self.actor_ref)
        self.context.address.rescue(self._drain_inbox())
        try:
            self.teardown()
        except BaseException:  # a SystemExit escaping on_stop would make pykka stop every actor
            logger.exception("%s failed to tear down", self.name)
        self._cancel_wake_ups()
        if not self.context.expected_stop:
            self._report("normal", "stopped itself")

    @staticmethod
    def _create_actor_inbox() -> queue.SimpleQueue[Any]:
        # pykka's default inbox is a `queue.Queue`, whose every blocking get builds a lock for its
        # condition variable in Python. `SimpleQueue` does put and get in C and meets pykka's inbox
        # protocol (put, get, empty): with 40 threads remembering, per-write CPU fell by a quarter.
        return queue.SimpleQueue()

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, Deliver):
            self._deliver(message.items)
            return None
        if isinstance(message, Ping):
            # Queued behind the ping's answer: `started` runs once the supervisor has its start.
            self.tell_self(_Started())
            return Pong(incarnation=self.context.incarnation)
        if isinstance(message, _Started):
            with batching_outbox():
                try:
                    self.started()
                except BaseException as error:  # noqa: BLE001 - the crash protocol handles every kind
                    self._crash(error, [])
            return None
        # Direct tells: scheduled messages and reports to supervisors. A failure here is a crash.
        with batching_outbox():
            try:
                self.handle(message)
            except BaseException as error:  # noqa: BLE001 - the crash protocol handles every kind
                self._crash(error, [])
        return None

    # -- internals --------------------------------------------------------------------------------

    def _deliver(self, items: list[Item]) -> None:
        settlements: list[Outcome] = []
        with batching_outbox():
            for index, (message, reply) in enumerate(items):
                if reply is not None and reply.cancelled:
                    continue
                if isinstance(message, Crash):
                    if reply is not None:
                        settlements.append((reply, None, None))
                    chaos: BaseException = (
                        SystemExit(message.reason) if message.kind == "exit" else ChaosCrash(message.reason)
                    )
                    self._chaos = True
                    self._crash(chaos, items[index + 1 :])
                    break
                self._reply = reply
                self._deferred = False
                try:
                    result = self.handle(message)
                except Exception as error:  # noqa: BLE001 - a handler's error goes to its caller
                    if reply is None:
                        self._crash(error, items[index + 1 :])
                        break
                    if not self._deferred:
                        settlements.append((reply, None, error))
                except BaseException as error:  # noqa: BLE001 - SystemExit must not stop other actors
                    if reply is not None and not self._deferred:
                        settlements.append((reply, None, error_for_caller(self.name, error)))
                    self._crash(error, items[index + 1 :])
                    break
                else:
                    if reply is not None and not self._deferred:
                        settlements.append((reply, result, None))
            self._reply = None
        settle_all(settlements)

    def _drain_inbox(self) -> list[Item]:
        rescued: list[Item] = []
        others = []
        inbox = self.actor_inbox
        while not inbox.empty():
            envelope = inbox.get()
            if isinstance(envelope.message, Deliver) and envelope.reply_to is None:
                rescued.extend(envelope.message.items)
            else:
                others.append(envelope)
        # Pings and stop requests go back for pykka's own teardown to answer.
        for envelope in others:
            inbox.put(envelope)
        return rescued

    def _crash(self, error: BaseException, unhandled: list[Item]) -> None:
        kind: Literal["error", "killed"] = "error" if isinstance(error, Exception) else "killed"
        if self._chaos:
            # Asked for (`Crash`): worth a line, not an alarm with a traceback.
            logger.warning("%s crashed on purpose: %s", self.name, error)
        else:
            logger.error("%s crashed: %s: %s", self.name, type(error).__name__, error, exc_info=error)
        # Stop first, as pykka's own stop does: once this incarnation is not alive, `attach` refuses
        # it and `deliver` buffers instead, so nothing reaches the inbox after it has been drained.
        pykka.ActorRegistry.unregister(self.actor_ref)
        self.actor_stopped.set()
        address = self.context.address
        address.detach(self.actor_ref)
        address.rescue(list(unhandled) + self._drain_inbox())
        try:
            self.on_crash(error)
        except BaseException:  # a SystemExit escaping here would make pykka stop every actor
            logger.exception("%s failed to clean up after its crash", self.name)
        self._cancel_wake_ups()
        self._report(kind, f"{type(error).__name__}: {error}")

    def _cancel_wake_ups(self) -> None:
        for wake_up in self._wake_ups:
            wake_up.cancel()

    def _report(self, kind: Literal["normal", "error", "killed"], reason: str) -> None:
        self.context.report(
            ChildExit(name=self.name, incarnation=self.context.incarnation, kind=kind, reason=reason)
        )


def error_for_caller(name: str, error: BaseException) -> Exception:
    """What a waiting caller receives when the actor dies of a `BaseException` while handling its message."""
    return ActorUnavailable(f"{name} crashed while handling the request ({type(error).__name__}: {error})")
