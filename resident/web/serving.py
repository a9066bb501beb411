"""Serving an ASGI app with uvicorn on a socket we bound: a ready hook, a stopping hook, graceful signals.

The caller binds the socket itself (so port 0 is resolved before anything is announced, and a bind
failure is one typed error), runs a `ReadyServer` on it, and learns through `on_started` when it
accepts connections and through `on_stopping` when it begins its graceful shutdown (before it waits
for open connections: long-lived streams must end there, or the shutdown would wait them out).

Servers are strict with slow clients (`strict_http`): a connection that has not finished sending a
request's headers within the read timeout is closed (a body that trickles is answered 408 by
`read_json_body`), and on a stop, connections still waiting for a client's body are let go at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from resident.errors import InvalidInput

__all__ = ["ReadyServer", "listen_tcp", "stop_on_signals", "strict_http"]

# Connections the kernel queues before they are accepted: a burst of clients connecting at once
# must not wait out a SYN retransmission (a second) for want of room.
_BACKLOG = 1024


def _nothing() -> None:
    return None


class ReadyServer(uvicorn.Server):
    """A uvicorn server that reports, once each, when it accepts connections and when it starts stopping."""

    def __init__(
        self,
        config: uvicorn.Config,
        on_started: Callable[[], None] = _nothing,
        on_stopping: Callable[[], None] = _nothing,
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._on_stopping = on_stopping

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._on_stopping()
        await super().shutdown(sockets=sockets)


def listen_tcp(
    host: str, port: int, what: str, *, host_option: str = "--host", port_option: str = "--port"
) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: a free one).

    `what` names the server in errors, and the options name the flags that choose host and port.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InvalidInput(f"{what} cannot listen on {host}:{port}: {exc}; check {host_option}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise InvalidInput(
            f"{what} cannot listen on {host}:{port}: {exc.strerror}; choose another {port_option} (0 picks a free one)"
        ) from exc
    return sock


@contextlib.contextmanager
def stop_on_signals(server: uvicorn.Server) -> Iterator[None]:
    """Make SIGTERM and SIGINT stop `server` gracefully and let its `run()` return normally.

    uvicorn installs its own handlers while it runs, but afterwards re-raises the signal it caught
    against the handlers it found; these are those handlers, so the process goes on to clean up.
    """

    def stop(_signum: int, _frame: FrameType | None) -> None:
        server.should_exit = True

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def strict_http(read_timeout: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, closing connections that trickle and letting go of them on stop."""

    class StrictProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _waiting_for: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_request()

        def _await_request(self) -> None:
            """Give the client `read_timeout` seconds to complete the next request's headers."""
            self._cancel_deadline()
            self._waiting_for = self.cycle
            self._deadline = self.loop.call_later(read_timeout, self._too_slow)

        def _cancel_deadline(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            if self.cycle is self._waiting_for and not self.transport.is_closing():
                self.transport.close()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self._waiting_for:
                self._cancel_deadline()  # a new request's headers are complete

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_deadline()
            super().connection_lost(exc)

        def shutdown(self) -> None:
            # A request still waiting for its body would hold the stop until the grace period
            # ends and its task is cancelled (a traceback); the client has not sent what it asks
            # for, so nothing was acknowledged: let its handler see a disconnect now.
            if self.cycle is not None and not self.cycle.response_complete and self.cycle.more_body:
                self.transport.close()
                return
            super().shutdown()

    return StrictProtocol
