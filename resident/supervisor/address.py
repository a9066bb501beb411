"""Stable addresses: a name callers hold instead of a pykka ref, and a mailbox that survives restarts.

pykka refs die with their actor and a restarted actor is a new actor with a new URN, so nothing
outside the supervisor ever holds a ref. An `Address` forwards to the current incarnation while
it runs; while it is starting, restarting or backing off, messages wait in a bounded buffer
(default 1000) and are delivered in order once the next incarnation answers its start ping.
Overflow becomes counted dead letters whose replies fail at once. Messages that were still in a
crashed incarnation's inbox are rescued to the front of the buffer, so a crash costs only the
message that caused it (Akka's mailbox semantics rather than OTP's).

Two batching paths keep hand-offs few under load: inside an actor handler every `tell` is
collected and delivered per target when the handler's batch ends, and `ask_async` calls from one
event-loop iteration are delivered per target in one message.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import pykka

from resident.errors import ActorUnavailable, AskTimeout, DeadLetter
from resident.supervisor.reply import AsyncReply, Reply, ThreadReply, settle_all

__all__ = ["Address", "Deliver", "Item", "batching_outbox", "flush_outbox"]

Item = tuple[Any, Reply | None]
AddressState = Literal["down", "running", "closed"]


@dataclass(slots=True)
class Deliver:
    """The one pykka message kind an address sends: a batch of (message, reply) in order."""

    items: list[Item]


class _Outbox:
    """Messages collected for later delivery, grouped per target address, order kept per target."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[Address, list[Item]] = {}

    def add(self, address: Address, item: Item) -> None:
        items = self.pending.get(address)
        if items is None:
            self.pending[address] = [item]
        else:
            items.append(item)

    def flush(self) -> None:
        while self.pending:
            pending, self.pending = self.pending, {}
            for address, items in pending.items():
                address.deliver(items)


_thread_state = threading.local()


@contextmanager
def batching_outbox() -> Iterator[None]:
    """Collect every `tell` made by this thread until the block ends, then deliver per target."""
    outbox = _Outbox()
    previous = getattr(_thread_state, "outbox", None)
    _thread_state.outbox = outbox
    try:
        yield
    finally:
        _thread_state.outbox = previous
        outbox.flush()


def flush_outbox() -> None:
    """Deliver what this thread has collected so far (before it blocks on an ask)."""
    outbox: _Outbox | None = getattr(_thread_state, "outbox", None)
    if outbox is not None:
        outbox.flush()


_Watched = tuple[float, "weakref.ref[asyncio.Future[Any]]", "Address", Any]


class _LoopAsks:
    """What async asks made on one event loop share: an outbox and a deadline watchdog.

    The outbox collects the asks of one loop iteration and delivers them per target when the
    iteration's callbacks have run, so a thousand tasks asking at once cost one hand-off each way.

    The watchdog fails overdue asks with a single timer, not one per ask: `asyncio.wait_for` costs
    a timer handle, a waiter future and callbacks per call, which at thousands of concurrent asks
    outweighs the work itself. Deadlines are kept in one FIFO queue per distinct timeout, so each
    queue is already in deadline order.

    This object lives in a weak-keyed map under its loop, so it refers to the loop only weakly —
    the loop itself, the watched futures (which refer to their loop) and the timer handle (ditto)
    — or it would keep every loop that ever asked alive. The loop's own timer list keeps the
    sweep scheduled.
    """

    __slots__ = ("__weakref__", "_loop", "_queues", "_timer_due", "outbox")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = weakref.ref(loop)
        self.outbox: _Outbox | None = None
        self._queues: dict[float, deque[_Watched]] = {}
        self._timer_due: float | None = None

    def send(self, loop: asyncio.AbstractEventLoop, address: Address, item: Item) -> None:
        outbox = self.outbox
        if outbox is None:
            outbox = self.outbox = _Outbox()
            loop.call_soon(self._flush)
        outbox.add(address, item)

    def _flush(self) -> None:
        outbox, self.outbox = self.outbox, None
        if outbox is not None:
            outbox.flush()

    def watch(
        self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], timeout: float, address: Address,
        message: Any,
    ) -> None:
        """Fail `future` with `address`'s timeout error for `message` unless it is settled in time."""
        deadline = loop.time() + timeout
        queue = self._queues.get(timeout)
        if queue is None:
            queue = self._queues[timeout] = deque()
        # Answers come back roughly in ask order, so settled asks collect at the head: dropping
        # them here keeps the queue as long as what is in flight. Left until the sweep, every
        # settled ask and its message would live for the whole timeout, and the garbage
        # collector would walk them all again and again.
        while queue and _settled(queue[0][1]):
            queue.popleft()
        queue.append((deadline, weakref.ref(future), address, message))
        if self._timer_due is None or deadline < self._timer_due:
            self._arm(loop, deadline)

    def _arm(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        # A timer armed earlier for a later time is left to fire: its sweep finds nothing due and
        # changes nothing. Cancelling it would mean holding its handle, and with it the loop.
        self._timer_due = due
        loop.call_at(due, self._sweep, due)

    def _sweep(self, due: float) -> None:
        loop = self._loop()
        if loop is None:  # pragma: no cover - a collected loop runs no callbacks
            return
        if due == self._timer_due:
            self._timer_due = None
        now = loop.time()
        next_due: float | None = None
        for timeout, queue in list(self._queues.items()):
            while queue:
                deadline, watched, address, message = queue[0]
                future = watched()
                if future is None or future.done():
                    queue.popleft()
                elif deadline <= now:
                    queue.popleft()
                    future.set_exception(address._timeout(message, timeout))
                else:
                    next_due = deadline if next_due is None else min(next_due, deadline)
                    break
            if not queue:
                del self._queues[timeout]
        if next_due is not None and (self._timer_due is None or next_due < self._timer_due):
            self._arm(loop, next_due)


def _settled(watched: weakref.ref[asyncio.Future[Any]]) -> bool:
    """True when nobody waits for the watched future any more (it is done or was dropped)."""
    future = watched()
    return future is None or future.done()


# Weak keys: a closed, dropped event loop must not be kept alive by the runtime.
_loop_asks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopAsks] = weakref.WeakKeyDictionary()


def _asks_of(loop: asyncio.AbstractEventLoop) -> _LoopAsks:
    # An event loop runs in one thread and an app usually has one: remembering the last one per
    # thread (weakly) spares every ask the weak-keyed lookup, which builds a weak reference per call.
    cached: tuple[weakref.ref[asyncio.AbstractEventLoop], _LoopAsks] | None = getattr(_thread_state, "asks", None)
    if cached is not None and cached[0]() is loop:
        return cached[1]
    asks = _loop_asks.get(loop)
    if asks is None:
        asks = _loop_asks[loop] = _LoopAsks(loop)
    _thread_state.asks = (weakref.ref(loop), asks)
    return asks


class Address:
    """A stable, restart-surviving name for one supervised actor."""

    def __init__(
        self,
        name: str,
        *,
        capacity: int = 1000,
        default_timeout: float = 10.0,
        timeout_error: type[ActorUnavailable] = AskTimeout,
    ) -> None:
        if capacity < 1:
            raise ValueError("an address buffer needs room for at least one message")
        self.name = name
        self.capacity = capacity
        self.default_timeout = default_timeout
        self._timeout_error = timeout_error
        self._lock = threading.Lock()
        self._ref: pykka.ActorRef[Any] | None = None
        self._state: AddressState = "down"
        self._closed_reason = ""
        self._closed_error: Callable[[str], BaseException] | None = None
        self._buffer: deque[Item] = deque()
        self._dead_letters = 0

    def __repr__(self) -> str:
        return f"<Address {self.name} {self._state}>"

    # -- the caller side --------------------------------------------------------------------------

    def tell(self, message: Any, reply: Reply | None = None) -> None:
        """Send without waiting. With `reply`, whoever handles the message settles it."""
        outbox: _Outbox | None = getattr(_thread_state, "outbox", None)
        if outbox is not None:
            outbox.add(self, (message, reply))
        else:
            self.deliver([(message, reply)])

    def ask(self, message: Any, timeout: float | None = None) -> Any:
        """Send and block for the answer; raises the handler's error, or a timeout error in time."""
        limit = self.default_timeout if timeout is None else timeout
        reply = ThreadReply(self.name)
        flush_outbox()
        self.deliver([(message, reply)])
        try:
            return reply.wait(limit)
        except AskTimeout:
            raise self._timeout(message, limit) from None

    def ask_async(self, message: Any, timeout: float | None = None) -> asyncio.Future[Any]:
        """Send now and return the future of the answer, to await without blocking the event loop.

        Call it from a coroutine on the running loop. It returns the future itself rather than
        being a coroutine: one coroutine frame less on a path taken thousands of times a second.
        """
        limit = self.default_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        reply = AsyncReply(loop)
        asks = _asks_of(loop)
        asks.send(loop, self, (message, reply))
        asks.watch(loop, reply.future, limit, self, message)
        return reply.future

    def _timeout(self, message: Any, limit: float) -> ActorUnavailable:
        return self._timeout_error(
            f"{self.name} did not answer {type(message).__name__} within {limit:g} s "
            f"(it is {self.state}); check `resident status`"
        )

    def deliver(self, items: Sequence[Item]) -> None:
        """Hand a batch to the current incarnation, or buffer it while there is none."""
        closed: Sequence[Item] = ()
        overflow: Sequence[Item] = ()
        with self._lock:
            if self._state == "running" and self._ref is not None:
                try:
                    self._ref.tell(Deliver(list(items)))
                except pykka.ActorDeadError:
                    # It is dying and has not detached yet; buffer, its rescue goes in front of this.
                    self._state = "down"
                    self._ref = None
                else:
                    return
            if self._state == "closed":
                closed = items
            else:
                room = self.capacity - len(self._buffer)
                self._buffer.extend(items[:room])
                overflow = items[room:]
                self._dead_letters += len(overflow)
        if closed:
            self._fail(closed, self._closed_failure())
        if overflow:
            self._fail(overflow, self._dead_letter())

    def _closed_failure(self) -> BaseException:
        # Whatever `close` was given, so a message sent after the close fails like a buffered one.
        error, reason = self._closed_error, self._closed_reason
        return error(reason) if error is not None else ActorUnavailable(f"{self.name} is stopped: {reason}")

    def _dead_letter(self) -> DeadLetter:
        return DeadLetter(
            f"{self.name} is restarting and its buffer of {self.capacity} messages is full; "
            "the message was dropped, retry later"
        )

    # -- the supervisor side ----------------------------------------------------------------------

    @property
    def state(self) -> AddressState:
        return self._state

    def attach(self, ref: pykka.ActorRef[Any]) -> bool:
        """Route to a new, started incarnation, delivering what was buffered first.

        False when the address is closed or the incarnation already died (it can crash between
        answering its start ping and being attached); the buffer then waits for the next one.
        """
        with self._lock:
            if self._state == "closed":
                return False
            # A dying incarnation is marked stopped before it detaches and drains its inbox, so
            # a batch told while it is still alive is drained and rescued, never lost.
            if self._buffer:
                try:
                    ref.tell(Deliver(list(self._buffer)))
                except pykka.ActorDeadError:
                    return False
                self._buffer.clear()
            elif not ref.is_alive():
                return False
            self._ref = ref
            self._state = "running"
            return True

    def detach(self, ref: pykka.ActorRef[Any] | None = None) -> bool:
        """Start buffering. With `ref`, only if that incarnation is the attached one."""
        with self._lock:
            if ref is not None and self._ref is not ref:
                return False
            if self._state == "running":
                self._state = "down"
            self._ref = None
            return True

    def rescue(self, items: Sequence[Item]) -> None:
        """Put messages a dead incarnation never handled back at the front of the buffer."""
        if not items:
            return
        overflow: Sequence[Item] = ()
        with self._lock:
            if self._state == "closed":
                closed = items
            else:
                closed = ()
                self._buffer.extendleft(reversed(items))
                dropped = [self._buffer.pop() for _ in range(max(0, len(self._buffer) - self.capacity))]
                self._dead_letters += len(dropped)
                overflow = list(reversed(dropped))
        if closed:
            self._fail(closed, self._closed_failure())
        if overflow:
            self._fail(overflow, self._dead_letter())

    def close(self, reason: str, error: Callable[[str], BaseException] | None = None) -> None:
        """Stop for good: fail what is buffered and everything sent from now on (with `error`, if given)."""
        with self._lock:
            self._state = "closed"
            self._closed_reason = reason
            self._closed_error = error
            self._ref = None
            items = list(self._buffer)
            self._buffer.clear()
        self._fail(items, self._closed_failure())

    def reopen(self) -> None:
        """Accept messages again after `close` (buffering until the next `attach`)."""
        with self._lock:
            if self._state == "closed":
                self._state = "down"
                self._closed_reason = ""
                self._closed_error = None

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    @property
    def dead_letters(self) -> int:
        return self._dead_letters

    @staticmethod
    def _fail(items: Sequence[Item], error: BaseException) -> None:
        settle_all((reply, None, error) for _, reply in items if reply is not None)
