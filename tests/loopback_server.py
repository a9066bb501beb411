"""A background HTTP server on 127.0.0.1 that tests start, stop and restart on the same port.

The fake llama and the fault proxy both need this: a free port the first time and the same one
afterwards (so a client keeps its URL across `down` and back), handlers that can be released
when the server stops, and a stop that is bounded even when a handler is wedged.
"""

from __future__ import annotations

import abc
import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Generic, Self, TypeVar

__all__ = ["STOP_TIMEOUT", "LoopbackServer"]

STOP_TIMEOUT = 5.0
S = TypeVar("S", bound=ThreadingHTTPServer)


class LoopbackServer(abc.ABC, Generic[S]):
    """The life cycle of one test server; subclasses say how to build it (`_make_server`)."""

    label = "test server"

    def __init__(self) -> None:
        self._port = 0  # 0 until the first start, then kept so a restart comes back at the same URL
        self._server: S | None = None
        self._thread: threading.Thread | None = None
        # Set when the server stops, so handlers that wait (slow answers, held requests) let go.
        self._release = threading.Event()

    @abc.abstractmethod
    def _make_server(self, port: int) -> S:
        """A server listening on 127.0.0.1:`port` (0 for a free port)."""

    def _closing(self, server: S) -> None:
        """Called once the server stopped serving, before its threads are joined."""

    def start(self) -> Self:
        """Start listening (on a free port the first time, the same port afterwards)."""
        if self._server is not None:
            return self
        self._release = threading.Event()
        server = self._make_server(self._port)
        self._port = server.server_address[1]
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, name=self.label, daemon=True
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop listening and release waiting handlers; bounded, raises if the server will not stop."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        self._release.set()
        # shutdown() waits without a timeout; run it aside so a wedged server cannot hang a test.
        stopper = threading.Thread(target=server.shutdown, daemon=True)
        stopper.start()
        stopper.join(STOP_TIMEOUT)
        server.server_close()
        self._closing(server)
        thread.join(STOP_TIMEOUT)
        if stopper.is_alive() or thread.is_alive():
            raise RuntimeError(f"{self.label} on port {self._port} did not stop within {STOP_TIMEOUT}s")

    @property
    def url(self) -> str:
        """The base URL (`http://127.0.0.1:<port>`); the port survives a stop and start."""
        if self._port == 0:
            raise RuntimeError(f"the {self.label} has not been started")
        return f"http://127.0.0.1:{self._port}"

    @property
    def port(self) -> int:
        """The TCP port, fixed at the first start."""
        return self._port

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
