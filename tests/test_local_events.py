"""`Runtime.open(home).events()`: the event stream of an in-process runtime, the same items and ids as the server's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from resident import Runtime
from resident.api.events import Cursor
from resident.api.transport import StreamItem
from resident.api.wire import RecordAdmittedEvent, StreamGapEvent, StreamStartedEvent
from resident.errors import InvalidInput

pytestmark = pytest.mark.timeout(60)


def _admitted(items: list[StreamItem]) -> list[str]:
    return [item.event.id for item in items if isinstance(item.event, RecordAdmittedEvent)]


def test_from_now_starts_at_the_current_position_and_sends_what_comes_next(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as rt:
        rt.memory.enable()
        before = rt.member("deven").remember("written before the subscriber came")
        stream = rt.events(from_now=True)
        started = next(stream)
        assert isinstance(started.event, StreamStartedEvent)
        after = rt.member("deven").remember("written after")
        item = next(stream)
        while not isinstance(item.event, RecordAdmittedEvent):
            item = next(stream)
        assert item.event.id == after.id != before.id
        assert Cursor.parse(item.id).store > Cursor.parse(started.id).store


def test_a_resume_id_gets_exactly_what_followed_it(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as rt:
        rt.memory.enable()
        first = rt.member("deven").remember("one")
        second = rt.member("alice").remember("two")
        items: list[StreamItem] = []
        stream = rt.events()
        while len(_admitted(items)) < 2:
            items.append(next(stream))
        resume_after = next(item.id for item in items if _admitted([item]) == [first.id])
        resumed = rt.events(resume_after)
        item = next(resumed)
        while not isinstance(item.event, RecordAdmittedEvent):
            item = next(resumed)
    assert item.event.id == second.id


def test_a_resume_id_ahead_of_the_log_gets_a_gap_event(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as rt:
        stream = rt.events(Cursor(10_000, 0, "0ther0ne").render())
        gap = next(stream)
    assert isinstance(gap.event, StreamGapEvent)
    assert gap.event.reason == "ahead"


def test_a_forged_resume_id_is_refused_in_one_line(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as rt, pytest.raises(InvalidInput, match="Last-Event-ID"):
        next(rt.events("1.2.\x1b[31mred"))


def test_closing_the_runtime_ends_a_waiting_stream(tmp_path: Path) -> None:
    rt = Runtime.open(tmp_path / "home")
    rt.memory.enable()
    heard, ended = threading.Event(), threading.Event()

    def read() -> None:
        for item in rt.events():  # waits while nothing is new; ends when the runtime closes
            if isinstance(item.event, RecordAdmittedEvent):
                heard.set()
        ended.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rt.member("deven").remember("said while a subscriber waits")
    assert heard.wait(30), "the write never reached the stream"
    rt.close()  # the reader is now waiting for something new
    assert ended.wait(30), "the stream did not end when its runtime closed"
    reader.join(5)


def test_aevents_yields_the_same_items_as_events(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as rt:
        rt.memory.enable()
        receipt = rt.member("deven").remember("heard by both streams")

        async def first_admitted() -> StreamItem:
            async for item in rt.aevents():
                if isinstance(item.event, RecordAdmittedEvent):
                    return item
            raise AssertionError("the stream ended")

        async_item = asyncio.run(first_admitted())
        stream = rt.events()
        sync_item = next(item for item in stream if isinstance(item.event, RecordAdmittedEvent))
    assert async_item.event == sync_item.event
    assert async_item.event.id == receipt.id  # type: ignore[attr-defined]
    # The store part of the id is the log position, the same from either stream; the epoch is per stream.
    assert Cursor.parse(async_item.id).store == Cursor.parse(sync_item.id).store
