"""`GET /v1/events`: what a UI wants to hear about, as server-sent events that resume after a reconnect.

Two sources feed the stream, each with its own position:

* **the store's event log** — writes admitted, records superseded or retracted, replication verdicts
  (synced, conflict, invalidated), push attempts, memory switched on or off, executions started,
  finished and corrected. The log is append-only and ordered, so its sequence number is an exact
  position: a subscriber reads the log itself from its position, and nothing is ever lost or
  buffered for it.
* **supervision** — actors crashing and restarting, and the runtime stopping. These are not in the
  log (they change no durable state), so the hub watches the supervisor's statistics and records
  each change in a bounded ring in memory with its own counter. A subscriber that falls more than
  the ring behind, or comes back to a server that restarted, is told how many it lost (`stream.gap`).

Every event's SSE id carries both positions and the server's epoch, `STORE.ACTORS.EPOCH`; a client
that reconnects with it as `Last-Event-ID` gets exactly what it had not seen. The epoch is random
per server process, so actor positions from an earlier process are never mistaken for current ones.

Subscribers are bounded in number, and none is buffered for: each one pulls from the log at its own
pace, and one that stops reading is dropped when a send stalls for `send_timeout` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import msgspec
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from resident.api.wire import (
    ActorEvent,
    ApiEvent,
    CognitionBridgeEvent,
    MemorySwitchedEvent,
    ProgressEvent,
    RecordAdmittedEvent,
    RecordLifecycleEvent,
    RecordWithheldEvent,
    ReplicationAttemptEvent,
    ReplicationSyncedEvent,
    RuntimeStoppedEvent,
    StreamGapEvent,
    StreamStartedEvent,
)
from resident.errors import InvalidInput, TooManySubscribers
from resident.messages.coordination import CorrectionRecorded, ExecutionFinished, ExecutionStarted
from resident.messages.events import AnyEvent
from resident.messages.memory import (
    MemorySwitchedOff,
    MemorySwitchedOn,
    RecordAdmitted,
    RecordRetracted,
    RecordSuperseded,
)
from resident.messages.replication import RecordConflicted, RecordInvalidated, RecordsSynced, ReplicationAttempted
from resident.messages.supervision import ChildStatistics, SupervisorStatistics
from resident.store.store import Reader
from resident.store.tables import EVENTS, EXECUTIONS

if TYPE_CHECKING:
    from resident.runtime.context import Context

__all__ = ["Cursor", "EventHub", "HubSettings", "actor_changes", "api_event"]

logger = logging.getLogger(__name__)

_ENCODER = msgspec.json.Encoder()
_MAX_POSITION = 2**63 - 1


@dataclass(frozen=True, slots=True)
class HubSettings:
    """Bounds of the event stream (tests shrink them)."""

    max_subscribers: int = 32
    ring_size: int = 4096
    # How often the hub looks for new log events and supervision changes (the stream's latency).
    tick: float = 0.1
    # Log events read per pass; a subscriber far behind catches up in passes of this size.
    batch: int = 256
    # A subscriber whose send stalls this long (it stopped reading) is dropped.
    send_timeout: float = 10.0
    ping: float = 15.0


@dataclass(frozen=True, slots=True)
class Cursor:
    """A subscriber's position: the last log event and the last actor event it was sent."""

    store: int
    actors: int
    epoch: str

    def render(self) -> str:
        return f"{self.store}.{self.actors}.{self.epoch}"

    @classmethod
    def parse(cls, value: str) -> Cursor:
        """A cursor from a `Last-Event-ID` this stream sent (`InvalidInput` for anything else)."""
        parts = value.strip().split(".")
        numbers = parts[:2]
        if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 19 for p in numbers) or not (
            parts[2].isascii() and parts[2].isalnum() and len(parts[2]) <= 32
        ):
            raise InvalidInput(
                "Last-Event-ID must be the id of an event this stream sent (STORE.ACTORS.EPOCH); "
                "leave it out to start from the beginning"
            )
        store, actors = int(numbers[0]), int(numbers[1])
        if store > _MAX_POSITION or actors > _MAX_POSITION:
            raise InvalidInput("Last-Event-ID is out of range; leave it out to start from the beginning")
        return cls(store, actors, parts[2])


def api_event(event: AnyEvent, reader: Reader) -> ApiEvent | None:
    """What the stream says about one log event (None for events a UI has no use for)."""
    match event:
        case RecordAdmitted(record=record):
            return RecordAdmittedEvent(
                at=event.at, id=record.id, owner=record.owner, author=record.author or record.owner,
                bank=record.bank, scope=record.scope, kind=record.kind,
            )
        case RecordSuperseded(id=record_id, by=by):
            return RecordLifecycleEvent(at=event.at, id=record_id, lifecycle="superseded", by=by)
        case RecordRetracted(id=record_id, by=by):
            return RecordLifecycleEvent(at=event.at, id=record_id, lifecycle="retracted", by=by)
        case RecordsSynced(ids=ids):
            return ReplicationSyncedEvent(at=event.at, ids=ids)
        case RecordConflicted(id=record_id, reason=reason):
            return RecordWithheldEvent(at=event.at, id=record_id, state="conflict", reason=reason)
        case RecordInvalidated(id=record_id, reason=reason):
            return RecordWithheldEvent(at=event.at, id=record_id, state="invalidated", reason=reason)
        case ReplicationAttempted(ids=ids, error=error):
            return ReplicationAttemptEvent(at=event.at, records=len(ids), error=error)
        case MemorySwitchedOn(provider=provider, embedder=embedder):
            return MemorySwitchedEvent(at=event.at, enabled=True, provider=provider, embedder=embedder)
        case MemorySwitchedOff():
            return MemorySwitchedEvent(at=event.at, enabled=False)
        case ExecutionStarted(execution=execution):
            return ProgressEvent(
                at=event.at, execution=execution.id, member=execution.member, task=execution.task, outcome="running"
            )
        case ExecutionFinished(id=execution_id, outcome=outcome, error=error):
            return _progress(reader, event.at, execution_id, outcome, error)
        case CorrectionRecorded(correction=correction):
            return _progress(reader, event.at, correction.execution, "corrected", "")
        case _:
            return None


def _progress(reader: Reader, at: float, execution_id: str, outcome: str, error: str) -> ProgressEvent:
    execution = reader.get(EXECUTIONS, execution_id)
    return ProgressEvent(
        at=at, execution=execution_id, member=execution.member if execution else "",
        task=execution.task if execution else "", outcome=outcome, error=error,  # type: ignore[arg-type]
    )


def actor_changes(before: dict[str, ChildStatistics], after: SupervisorStatistics, at: float) -> list[ActorEvent]:
    """The crashes and restarts between two looks at the supervisor's statistics.

    A restart bumps the child's incarnation, so one that went down and came back between two looks
    still shows as a crash (with the exit that caused it) followed by a restart.
    """
    changes: list[ActorEvent] = []
    for child in after.children:
        old = before.get(child.name)
        if old is None:
            continue
        went_down = old.state == "running" and (child.incarnation > old.incarnation or child.state != "running")
        if went_down:
            normal = child.last_exit.startswith(("normal:", "shutdown:"))
            changes.append(_actor_event(child, "stopped" if normal else "crashed", at))
        if child.incarnation > old.incarnation and child.state == "running":
            changes.append(_actor_event(child, "restarted", at))
    return changes


def _actor_event(child: ChildStatistics, change: str, at: float) -> ActorEvent:
    return ActorEvent(
        at=at, name=child.name, change=change, state=child.state,  # type: ignore[arg-type]
        incarnation=child.incarnation, restarts=child.total_restarts, reason=child.last_exit,
    )


class EventHub:
    """Watches the runtime for the stream and serves each subscriber from its own position."""

    def __init__(
        self,
        context: Context,
        settings: HubSettings | None = None,
        on_runtime_stopped: Callable[[str], None] = lambda _reason: None,
    ) -> None:
        # The runtime's store, clock and supervision statistics (`resident.runtime.host_context`).
        self.context = context
        self.settings = settings or HubSettings()
        self.epoch = secrets.token_hex(4)
        self._on_runtime_stopped = on_runtime_stopped
        self._ring: deque[tuple[int, ApiEvent]] = deque(maxlen=self.settings.ring_size)
        self._last_actor_id = 0
        self._subscribers = 0
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._log_size = self._read_log_size()
        self._children = {child.name: child for child in context.statistics().children}
        self._stopped = ""
        # The bridge's state as last told (it changes no durable state, so it is watched like the actors).
        self._bridge = context.cognition.report().state

    @property
    def subscribers(self) -> int:
        return self._subscribers

    @property
    def stop_reported(self) -> bool:
        """Whether the stream has already said the runtime stopped (its root supervisor gave up)."""
        return bool(self._stopped)

    # -- watching ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Look for changes every `tick` seconds until `close()`."""
        while not self._closing.is_set():
            try:
                self.look()
            except Exception:
                logger.exception("the event stream failed to read the runtime's changes")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.settings.tick)

    def look(self) -> None:
        """Take in new log events and supervision changes, and wake the subscribers if there are any."""
        changed = False
        size = self._read_log_size()
        if size != self._log_size:
            self._log_size = size
            changed = True
        statistics = self.context.statistics()
        now = self.context.clock.time()
        news: list[ApiEvent] = list(actor_changes(self._children, statistics, now))
        self._children = {child.name: child for child in statistics.children}
        bridge = self.context.cognition.report()
        if bridge.state != self._bridge:
            self._bridge = bridge.state
            news.append(CognitionBridgeEvent(at=now, state=bridge.state, reason=bridge.reason, breaker=bridge.breaker))
        if statistics.escalated and not self._stopped:
            self._stopped = statistics.escalated
            news.append(RuntimeStoppedEvent(at=now, reason=statistics.escalated))
            self._on_runtime_stopped(statistics.escalated)
        for event in news:
            self._last_actor_id += 1
            self._ring.append((self._last_actor_id, event))
            changed = True
        if changed:
            self._wake()

    def close(self) -> None:
        """End every stream (the server is stopping) and stop watching."""
        self._closing.set()
        self._wake()

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _read_log_size(self) -> int:
        with self.context.store.reader() as reader:
            return reader.count(EVENTS)

    # -- serving ----------------------------------------------------------------------------------

    def start_cursor(self, last_event_id: str | None, *, from_now: bool = False) -> Cursor:
        """Where a new subscriber starts: after `last_event_id`, else now or at the beginning.

        A resume id wins over `from_now`: a browser's EventSource reconnects to the same URL with the
        last id it saw, and must resume there, not skip to the end again.
        """
        if last_event_id is not None:
            return Cursor.parse(last_event_id)
        if from_now:
            return self.position()
        return Cursor(0, 0, self.epoch)

    def position(self) -> Cursor:
        """The current end of both sources: a subscriber starting here is sent only what comes next."""
        with self.context.store.reader() as reader:
            last = reader.last_event()
        return Cursor(last[0] if last is not None else 0, self._last_actor_id, self.epoch)

    def response(self, request: Request) -> Response:
        """The SSE answer to `GET /v1/events` (`TooManySubscribers` when the stream is full)."""
        start = request.query_params.get("from", "")
        if start not in ("", "now", "start"):
            raise InvalidInput(f"from={start[:20]!r} is not a start; use from=now (only what comes next) or from=start")
        last_event_id = request.headers.get("last-event-id")
        cursor = self.start_cursor(last_event_id, from_now=start == "now")
        if self._subscribers >= self.settings.max_subscribers:
            raise TooManySubscribers(
                f"the event stream already has {self._subscribers} subscribers (its limit); close one and retry"
            )
        self._subscribers += 1
        return _Subscription(
            self._stream(cursor, announce=start == "now" and last_event_id is None),
            release=self._release,
            ping=self.settings.ping,
            send_timeout=self.settings.send_timeout,
        )

    def _release(self) -> None:
        self._subscribers -= 1

    async def _stream(self, cursor: Cursor, *, announce: bool = False) -> AsyncGenerator[ServerSentEvent, None]:
        opening, cursor = self.opening(cursor, announce=announce)
        for event, position in opening:
            yield self._sse(event, position)
        while not self._closing.is_set():
            changed = self._changed
            news, cursor = self.next_events(cursor)
            for event, position in news:
                yield self._sse(event, position)
            if not news:
                await changed.wait()

    def opening(self, cursor: Cursor, *, announce: bool = False) -> tuple[list[tuple[ApiEvent, Cursor]], Cursor]:
        """What a new subscriber at `cursor` is told before the events themselves, and where it goes on from."""
        out: list[tuple[ApiEvent, Cursor]] = []
        now = self.context.clock.time()
        if announce:
            out.append((StreamStartedEvent(at=now), cursor))
        end = self.position()
        if cursor.store > end.store:
            # Past the log's end (a restore from backup, or an id from another home): the events that
            # will take those positions are not the ones the subscriber saw, so say so, and go on
            # from the end rather than skip them silently.
            cursor = replace(cursor, store=end.store)
            out.append((StreamGapEvent(at=now, lost=-1, reason="ahead"), cursor))
        if cursor.epoch != self.epoch:
            # Actor events of another server process are gone; this one's are all still to come.
            out.append((StreamGapEvent(at=now, lost=-1), cursor))
            cursor = replace(cursor, actors=0, epoch=self.epoch)
        return out, cursor

    def next_events(self, cursor: Cursor) -> tuple[list[tuple[ApiEvent, Cursor]], Cursor]:
        """The log's events after `cursor`, then the actor events, each with the cursor after it."""
        sent, cursor = self._read_log(cursor)
        actor_events, cursor = self._read_ring(cursor)
        return sent + actor_events, cursor

    def _read_log(self, cursor: Cursor) -> tuple[list[tuple[ApiEvent, Cursor]], Cursor]:
        """Up to `batch` log events after `cursor`, as stream events with the cursor after each."""
        out: list[tuple[ApiEvent, Cursor]] = []
        with self.context.store.reader() as reader:
            for count, (seq, event) in enumerate(reader.events(cursor.store + 1), 1):
                cursor = replace(cursor, store=seq)
                shown = api_event(event, reader)
                if shown is not None:
                    out.append((shown, cursor))
                if count >= self.settings.batch:
                    break
        return out, cursor

    def _read_ring(self, cursor: Cursor) -> tuple[list[tuple[ApiEvent, Cursor]], Cursor]:
        """Actor events after `cursor` still in the ring, led by a gap event when some fell out of it."""
        out: list[tuple[ApiEvent, Cursor]] = []
        newest = self._last_actor_id
        if cursor.actors >= newest:
            return out, cursor
        oldest = self._ring[0][0] if self._ring else newest + 1
        if cursor.actors + 1 < oldest:
            lost = oldest - cursor.actors - 1
            cursor = replace(cursor, actors=oldest - 1)
            out.append((StreamGapEvent(at=self.context.clock.time(), lost=lost), cursor))
        for actor_id, event in _after(self._ring, cursor.actors):
            cursor = replace(cursor, actors=actor_id)
            out.append((event, cursor))
        return out, cursor

    @staticmethod
    def _sse(event: ApiEvent, cursor: Cursor) -> ServerSentEvent:
        tag = event.__struct_config__.tag
        return ServerSentEvent(data=_ENCODER.encode(event).decode("utf-8"), event=str(tag), id=cursor.render())


class _Subscription(EventSourceResponse):
    """An event stream that gives its subscriber slot back however it ends (even before it started)."""

    def __init__(self, content: AsyncIterator[ServerSentEvent], *, release: Callable[[], None], **options: Any) -> None:
        super().__init__(content, **options)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        except SendTimeoutError:
            logger.info("dropped an event-stream subscriber that stopped reading")
        finally:
            self._release()


def _after(ring: Iterable[tuple[int, ApiEvent]], position: int) -> list[tuple[int, ApiEvent]]:
    return [(actor_id, event) for actor_id, event in ring if actor_id > position]
