"""The event stream: which log events it shows (and that it shows no memory text), actor crashes and
restarts, resuming after a reconnect, the gap report, and the bounds on subscribers and slow readers.

Crash, bound and slow-reader tests run the API in this process (a runtime opened here, served by
uvicorn in a thread) so they can crash actors and shrink the bounds; the resume test runs against a
real `resident up` process."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import uvicorn

from resident import Runtime
from resident.api.app import create_app
from resident.api.challenge import CHALLENGE_PATH, answer_challenge
from resident.api.discovery import Discovery
from resident.api.events import Cursor, EventHub, HubSettings, actor_changes
from resident.api.transport import StreamItem, Transport
from resident.api.wire import (
    ActorEvent,
    ProgressEvent,
    RecordAdmittedEvent,
    RecordWithheldEvent,
    ReplicationAttemptEvent,
    StreamGapEvent,
    StreamStartedEvent,
)
from resident.coordination.grants import ROLE_ACTIONS
from resident.errors import InvalidInput, TooManySubscribers
from resident.messages.replication import RecordConflicted, ReplicationAttempted
from resident.messages.store import Commit
from resident.messages.supervision import ChildStatistics, SupervisorStatistics
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.web import ReadyServer, listen_tcp
from tests.api_helpers import UpProcess
from tests.loopback_server import LoopbackServer
from tests.supervision_helpers import wait_until

TOKEN = "test-token"


def child(name: str, state: str, incarnation: int, last_exit: str = "") -> ChildStatistics:
    return ChildStatistics(
        name=name, state=state, restart="permanent", incarnation=incarnation,  # type: ignore[arg-type]
        restarts_in_window=0, total_restarts=incarnation - 1, buffered=0, dead_letters=0, last_exit=last_exit,
    )


def stats(*children: ChildStatistics) -> SupervisorStatistics:
    return SupervisorStatistics(name="root", strategy="one_for_one", intensity=10, period=10.0, children=children)


# -- pure parts ---------------------------------------------------------------------------------


def test_a_crash_and_restart_between_two_looks_shows_as_both() -> None:
    before = {"substrate": child("substrate", "running", 1)}
    after = stats(child("substrate", "running", 2, "error: boom"))
    changes = actor_changes(before, after, at=5.0)
    assert [(c.change, c.name, c.incarnation, c.reason) for c in changes] == [
        ("crashed", "substrate", 2, "error: boom"),
        ("restarted", "substrate", 2, "error: boom"),
    ]


def test_an_actor_seen_down_is_a_crash_and_a_normal_exit_is_a_stop() -> None:
    before = {"a": child("a", "running", 1), "b": child("b", "running", 1), "c": child("c", "running", 3)}
    after = stats(
        child("a", "backoff", 1, "error: x"), child("b", "stopped", 1, "normal: done"), child("c", "running", 3)
    )
    assert [(c.name, c.change) for c in actor_changes(before, after, at=0.0)] == [("a", "crashed"), ("b", "stopped")]


def test_a_cursor_round_trips_and_forged_ids_are_refused() -> None:
    cursor = Cursor(41, 7, "a1b2c3d4")
    assert Cursor.parse(cursor.render()) == cursor
    for forged in ("", "1", "1.2", "a.b.c", "1.2.3.4", "1.2.e/f", "1.-2.abc", f"{2**64}.0.abc", "\u0661.0.abc"):
        with pytest.raises(InvalidInput):
            Cursor.parse(forged)


def test_stream_events_name_records_but_carry_no_memory_text() -> None:
    fields = set(RecordAdmittedEvent.__struct_fields__) | set(RecordWithheldEvent.__struct_fields__)
    assert not fields & {"body", "summary", "text"}


# -- served in this process ----------------------------------------------------------------------


@dataclass
class Served:
    runtime: Runtime
    hub: EventHub
    transport: Transport
    address: str


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Serve a fresh runtime's API in a thread, with the hub bounds a test asks for."""
    stops: list[Callable[[], None]] = []

    def start(**settings: float) -> Served:
        runtime = Runtime.open(tmp_path / f"home{len(stops)}")
        runtime.memory.enable()
        hub = EventHub(host_context(runtime), HubSettings(**settings))  # type: ignore[arg-type]
        sock = listen_tcp("127.0.0.1", 0, "the test API")
        address = f"http://127.0.0.1:{sock.getsockname()[1]}"
        started = threading.Event()
        tasks: list[asyncio.Task[None]] = []

        def on_started() -> None:
            tasks.append(asyncio.get_running_loop().create_task(hub.run()))
            started.set()

        config = uvicorn.Config(create_app(runtime, TOKEN, hub), log_level="warning", lifespan="off")
        server = ReadyServer(config, on_started=on_started, on_stopping=hub.close)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="api-test-server")
        thread.start()
        assert started.wait(30)
        discovery = Discovery(address=address, pid=0, token=TOKEN, api_version=1, home=str(runtime.home))
        transport = Transport(discovery)

        def stop() -> None:
            transport.close()
            server.should_exit = True
            thread.join(30)
            sock.close()
            runtime.close()

        stops.append(stop)
        return Served(runtime, hub, transport, address)

    yield start
    for stop in reversed(stops):
        stop()


def read_until(stream: Iterator[StreamItem], done: Callable[[list[StreamItem]], bool]) -> list[StreamItem]:
    items: list[StreamItem] = []
    for item in stream:
        items.append(item)
        if done(items):
            return items
    raise AssertionError(f"the stream ended after {items}")


def test_the_stream_shows_writes_withheld_records_and_progress(serve: Callable[..., Served]) -> None:
    served = serve(tick=0.02)
    runtime = served.runtime
    receipt = runtime.member("deven").remember("ship the release on friday")
    conflicted = RecordConflicted(at=runtime._internal.clock.time(), id=receipt.id, reason="no")
    runtime._internal.write(Commit(events=(conflicted,)))
    grant = runtime.coordinator.issue_grant(actions=ROLE_ACTIONS["implement"], ttl=600)
    session = dispatch_session(host_context(runtime), "write the notes", "alice", role="implement", parent_grant=grant)
    session.finish("succeeded")
    stream = served.transport.events()
    try:
        items = read_until(
            stream, lambda seen: any(isinstance(i.event, ProgressEvent) and i.event.outcome != "running" for i in seen)
        )
    finally:
        stream.close()  # type: ignore[attr-defined]
    events = [item.event for item in items]
    admitted = [e for e in events if isinstance(e, RecordAdmittedEvent)]
    assert [(e.id, e.owner, e.scope) for e in admitted] == [(receipt.id, "deven", "AGENT_CORE")]
    assert [(e.id, e.state, e.reason) for e in events if isinstance(e, RecordWithheldEvent)] == [
        (receipt.id, "conflict", "no")
    ]
    progress = [(e.member, e.task, e.outcome) for e in events if isinstance(e, ProgressEvent)]
    assert progress == [("alice", "write the notes", "running"), ("alice", "write the notes", "succeeded")]
    positions = [Cursor.parse(item.id).store for item in items]
    assert positions == sorted(positions)


def test_actor_crashes_and_restarts_reach_the_stream(serve: Callable[..., Served]) -> None:
    served = serve(tick=0.02)
    served.runtime._internal.chaos.crash("substrate", reason="chaos from the test")
    stream = served.transport.events()
    try:
        items = read_until(
            stream, lambda seen: any(isinstance(i.event, ActorEvent) and i.event.change == "restarted" for i in seen)
        )
    finally:
        stream.close()  # type: ignore[attr-defined]
    actors = [(i.event.name, i.event.change) for i in items if isinstance(i.event, ActorEvent)]
    assert actors == [("substrate", "crashed"), ("substrate", "restarted")]
    crashed = next(i.event for i in items if isinstance(i.event, ActorEvent))
    assert "chaos from the test" in crashed.reason


def test_a_subscriber_behind_the_ring_is_told_how_many_actor_events_it_lost(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as runtime:
        hub = EventHub(host_context(runtime), HubSettings(ring_size=2))
        for incarnation in (2, 3, 4):
            runtime._internal.chaos.crash("coordinator")
            wait_until(lambda: runtime.statistics().child("coordinator").incarnation == incarnation, "a restart")  # noqa: B023 - the lambda runs at once inside this iteration
            hub.look()  # each look sees a crash and a restart: six actor events, two kept

        async def first_three() -> list[tuple[str | None, object]]:
            stream = hub._stream(Cursor(hub.position().store, 0, hub.epoch))  # at the log's end: actor events only
            out = [await anext(stream) for _ in range(3)]
            await stream.aclose()
            return [(sse.id, sse.data) for sse in out]

        sent = asyncio.run(first_three())
    assert '"type":"stream.gap"' in str(sent[0][1])
    assert '"lost":4' in str(sent[0][1])
    assert [str(position).split(".")[1] for position, _ in sent] == ["4", "5", "6"]


def test_a_cursor_from_another_server_process_starts_actor_events_over_with_a_gap(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home") as runtime:
        hub = EventHub(host_context(runtime))

        async def first() -> str:
            stream = hub._stream(Cursor(0, 99, "0ther0ne"))
            sse = await anext(stream)
            await stream.aclose()
            return str(sse.data)

        assert '"lost":-1' in asyncio.run(first())


def test_a_stream_from_now_replays_nothing_and_its_first_id_is_the_current_position(
    serve: Callable[..., Served],
) -> None:
    served = serve(tick=0.02)
    deven = served.runtime.member("deven")
    deven.remember("an old decision the subscriber has no use for")
    stream = served.transport.events(from_now=True)
    try:
        started = next(stream)
        fresh = deven.remember("a new decision made after the subscriber came")
        items = read_until(stream, lambda seen: any(isinstance(i.event, RecordAdmittedEvent) for i in seen))
    finally:
        stream.close()  # type: ignore[attr-defined]
    assert isinstance(started.event, StreamStartedEvent)
    assert started.id is not None
    assert Cursor.parse(started.id).store == Cursor.parse(items[-1].id or "").store - 1
    assert [i.event.id for i in items if isinstance(i.event, RecordAdmittedEvent)] == [fresh.id]


def test_a_resume_id_from_ahead_of_the_log_gets_a_gap_and_then_what_comes_next(serve: Callable[..., Served]) -> None:
    served = serve(tick=0.02)
    end = served.hub.position()
    ahead = Cursor(end.store + 1000, end.actors, served.hub.epoch).render()  # as after a restore from backup
    stream = served.transport.events(ahead)
    try:
        gap = next(stream)
        fresh = served.runtime.member("deven").remember("written after the restore")
        items = read_until(stream, lambda seen: any(isinstance(i.event, RecordAdmittedEvent) for i in seen))
    finally:
        stream.close()  # type: ignore[attr-defined]
    assert isinstance(gap.event, StreamGapEvent)
    assert (gap.event.lost, gap.event.reason) == (-1, "ahead")
    assert Cursor.parse(gap.id or "").store == end.store, "the stream goes on from the log's end"
    assert [i.event.id for i in items if isinstance(i.event, RecordAdmittedEvent)] == [fresh.id]


def test_a_start_that_is_neither_now_nor_start_is_refused(serve: Callable[..., Served]) -> None:
    served = serve()
    answer = httpx.get(f"{served.address}/v1/events?from=yesterday", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 400
    assert "from=now" in answer.json()["error"]["message"]


def test_the_stream_refuses_subscribers_past_its_limit_and_frees_a_slot_on_disconnect(
    serve: Callable[..., Served],
) -> None:
    served = serve(max_subscribers=1)
    first = served.transport.events()
    next(first)
    with pytest.raises(TooManySubscribers):
        next(served.transport.events())
    first.close()  # type: ignore[attr-defined]
    wait_until(lambda: served.hub.subscribers == 0, "the slot to be released")
    again = served.transport.events()
    assert next(again).id.startswith("1.0.")  # the log's first event, again
    again.close()  # type: ignore[attr-defined]


def test_a_subscriber_that_stops_reading_is_dropped_instead_of_buffered(serve: Callable[..., Served]) -> None:
    served = serve(send_timeout=0.5, tick=0.02)
    host, port = served.address.removeprefix("http://").split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.connect((host, int(port)))
    try:
        reader.sendall(f"GET /v1/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
        wait_until(lambda: served.hub.subscribers == 1, "the subscriber to be admitted")
        # Far more than the kernel's socket buffers hold, and never read: the sends must stall.
        error = "x" * 60_000
        for _ in range(200):
            served.runtime._internal.write(
                Commit(events=(ReplicationAttempted(at=served.runtime._internal.clock.time(), ids=(), error=error),))
            )
        wait_until(lambda: served.hub.subscribers == 0, "the stalled subscriber to be dropped")
    finally:
        reader.close()
    # The stream still serves others.
    stream = served.transport.events()
    items = read_until(stream, lambda seen: isinstance(seen[-1].event, ReplicationAttemptEvent))
    stream.close()  # type: ignore[attr-defined]
    assert len(items[-1].event.error) == 60_000  # type: ignore[attr-defined]


def test_the_stream_of_a_real_server_resumes_after_a_reconnect(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
    with UpProcess(home), Runtime.connect(home) as rt:
        deven = rt.member("deven")
        before = [deven.remember(f"resume marker {i}").id for i in range(6)]
        stream = rt.events()
        seen = read_until(stream, lambda items: sum(isinstance(i.event, RecordAdmittedEvent) for i in items) == 3)
        stream.close()  # type: ignore[attr-defined]
        last = seen[-1].id
        after = [deven.remember(f"after the reconnect {i}").id for i in range(3)]
        resumed = rt.events(last)
        again = read_until(
            resumed, lambda items: sum(isinstance(i.event, RecordAdmittedEvent) for i in items) == 6
        )
        resumed.close()  # type: ignore[attr-defined]
    admitted = [i.event.id for i in again if isinstance(i.event, RecordAdmittedEvent)]
    assert admitted == before[3:] + after
    assert not any(isinstance(i.event, StreamGapEvent) for i in again)


def test_events_from_a_server_with_the_wrong_token_are_unauthorized(serve: Callable[..., Served]) -> None:
    served = serve()
    with httpx.Client(base_url=served.address, trust_env=False) as client:
        response = client.get("/v1/events", headers={"Authorization": "Bearer nope"})
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "Unauthorized"


class _CannedStream(BaseHTTPRequestHandler):
    """Answers every GET with the same event stream: an event, keep-alive pings, another event."""

    body = (
        b'id: 1.0.e\r\nevent: memory.switched\r\ndata: {"type":"memory.switched","enabled":false,"at":1.0}\r\n\r\n'
        b": ping - 2026-12-03 00:00:00\r\n\r\n"
        b": ping - 2026-12-03 00:00:15\r\n\r\n"
        b'id: 2.0.e\r\nevent: memory.switched\r\ndata: {"type":"memory.switched","enabled":true,"at":2.0}\r\n\r\n'
    )

    token = "t"

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == CHALLENGE_PATH:
            proof = answer_challenge(self.token, query.removeprefix("nonce="))
            self._answer("application/json", b'{"proof": "%s"}' % (proof or "").encode())
            return
        self._answer("text/event-stream", self.body)

    def _answer(self, media_type: str, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


class CannedSseServer(LoopbackServer[ThreadingHTTPServer]):
    label = "canned SSE server"

    def _make_server(self, port: int) -> ThreadingHTTPServer:
        return ThreadingHTTPServer(("127.0.0.1", port), _CannedStream)


def test_keep_alive_pings_between_events_are_not_events() -> None:
    with CannedSseServer() as server:
        transport = Transport(
            Discovery(address=server.url, pid=0, token=_CannedStream.token, api_version=1, home="/nowhere")
        )
        try:
            items = list(transport.events())
        finally:
            transport.close()
    assert [(item.id, item.event.enabled) for item in items] == [("1.0.e", False), ("2.0.e", True)]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_runtime_that_gives_up_is_reported_once_and_ends_the_server(tmp_path: Path) -> None:
    reasons: list[str] = []
    with Runtime.open(tmp_path / "home") as runtime:
        hub = EventHub(host_context(runtime), on_runtime_stopped=reasons.append)
        # More crashes than the root supervisor's intensity (10 in 10 s): it stops and escalates.
        for incarnation in range(2, 13):
            runtime._internal.chaos.crash("coordinator")
            wait_until(
                lambda: bool(runtime.statistics().escalated)
                or runtime.statistics().child("coordinator").incarnation == incarnation,  # noqa: B023 - the lambda runs at once inside this iteration
                "a restart or the escalation",
            )
        assert runtime.statistics().escalated
        hub.look()
        hub.look()
        kinds = [type(event).__name__ for event, _ in hub._read_ring(Cursor(0, 0, hub.epoch))[0]]
    assert len(reasons) == 1
    assert "restarts" in reasons[0]
    assert kinds.count("RuntimeStoppedEvent") == 1
