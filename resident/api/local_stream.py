"""The event stream of a runtime open in this process: what `GET /v1/events` sends, without a server.

`Runtime.open(home).events()` yields the same `StreamItem`s, with the same ids and the same resume rules, as
`Runtime.connect(home).events()`: both read the store's log from the subscriber's position and watch the
supervisor through an `EventHub` (`resident.api.events`). Here the hub belongs to the one subscriber and is
looked at once per `tick` while nothing is new; the stream ends when the runtime is closed or gives up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

from resident.api.events import Cursor, EventHub, HubSettings
from resident.api.transport import StreamItem
from resident.api.wire import RuntimeStoppedEvent
from resident.errors import RuntimeStopped
from resident.runtime.context import Context

__all__ = ["alocal_events", "local_events"]


def _start(context: Context, last_event_id: str | None, from_now: bool, settings: HubSettings | None
           ) -> tuple[EventHub, list[StreamItem], Cursor]:
    hub = EventHub(context, settings)
    cursor = hub.start_cursor(last_event_id, from_now=from_now)
    opening, cursor = hub.opening(cursor, announce=from_now and last_event_id is None)
    return hub, [StreamItem(id=position.render(), event=event) for event, position in opening], cursor


def _step(hub: EventHub, cursor: Cursor) -> tuple[list[StreamItem], Cursor, bool]:
    """What happened since `cursor`, the cursor after it, and whether the stream ends there.

    A closed runtime's store is closed too, so the stream ends without reading it; a runtime whose root
    supervisor gave up ends the stream with `runtime.stopped`, as the server says before it shuts down.
    """
    try:
        hub.context.check_open()
    except RuntimeStopped:
        reason = hub.context.statistics().escalated
        said = hub.stop_reported
        last = [RuntimeStoppedEvent(at=hub.context.clock.time(), reason=reason)] if reason and not said else []
        return [StreamItem(id=cursor.render(), event=event) for event in last], cursor, True
    hub.look()
    news, cursor = hub.next_events(cursor)
    return [StreamItem(id=position.render(), event=event) for event, position in news], cursor, False


def local_events(
    context: Context, last_event_id: str | None = None, *, from_now: bool = False, settings: HubSettings | None = None
) -> Iterator[StreamItem]:
    """The live event stream of the runtime `context` belongs to (see the module docstring)."""
    hub, opening, cursor = _start(context, last_event_id, from_now, settings)
    yield from opening
    while True:
        items, cursor, ended = _step(hub, cursor)
        yield from items
        if ended:
            return
        if not items:
            # Nothing new: no one wakes the hub in this process, so it looks again after a tick.
            time.sleep(hub.settings.tick)


async def alocal_events(
    context: Context, last_event_id: str | None = None, *, from_now: bool = False, settings: HubSettings | None = None
) -> AsyncIterator[StreamItem]:
    """`local_events` for asyncio hosts: it waits between looks without blocking the loop."""
    hub, opening, cursor = _start(context, last_event_id, from_now, settings)
    for item in opening:
        yield item
    while True:
        items, cursor, ended = _step(hub, cursor)
        for item in items:
            yield item
        if ended:
            return
        if not items:
            await asyncio.sleep(hub.settings.tick)
