"""A real loopback HTTP proxy in front of one upstream (a Realm), with switchable failure modes.

Modes:

* `pass`     — forward the request and relay the answer (a dead upstream becomes 502);
* `down`     — stop listening, so connections are refused, and reset the open ones; the proxy
  comes back on the same port when the mode changes again;
* `reset`    — accept and read the request head, then reset the connection without answering;
* `slow`     — hold the request `delay` seconds, then forward it (the upstream still gets it);
* `trickle`  — answer 200 and send a valid body one byte every `delay` seconds;
* `error503` — answer 503 with a plain-text body, as a load balancer in trouble would;
* `garbage`  — answer `status` (200 by default) with `body` instead of forwarding.

Every request that arrives is counted by path (without the query) before the mode applies, so
tests can assert how many attempts a client made (`down` refuses them before they arrive). The
proxy runs in background threads; stopping it releases held requests and resets open connections,
and every wait has a bound.
"""

from __future__ import annotations

import http.client
import socket
import socketserver
import struct
import sys
import threading
import urllib.parse
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.loopback_server import LoopbackServer

__all__ = ["FaultProxy", "Mode", "start_proxy"]

Mode = Literal["pass", "down", "reset", "slow", "trickle", "error503", "garbage"]

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade", "host"}
)
_UPSTREAM_TIMEOUT = 10.0
_NOT_REALM = b"<html>this is not Realm</html>"
_TRICKLE_BODY = b'{"status": "ok", "records": 0, "invalidations": 0, "version": 1}'


@dataclass(frozen=True)
class _Behaviour:
    mode: Mode = "pass"
    delay: float = 5.0
    status: int = 200
    body: bytes = _NOT_REALM


class FaultProxy(LoopbackServer["_ProxyServer"]):
    """A proxy on 127.0.0.1 in front of `upstream` (http://host:port); its port never changes."""

    label = "fault proxy"

    def __init__(self, upstream: str) -> None:
        super().__init__()
        parts = urllib.parse.urlsplit(upstream)
        assert parts.hostname is not None, upstream
        assert parts.port is not None, upstream
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port
        self._behaviour = _Behaviour()
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _make_server(self, port: int) -> _ProxyServer:
        return _ProxyServer(port, self)

    def _closing(self, server: _ProxyServer) -> None:
        # Connections the proxy holds open upstream or downstream would outlive a "down".
        server.reset_connections()

    # -- controls and observations ---------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        with self._lock:
            return self._behaviour.mode

    def set_mode(self, mode: Mode, *, delay: float = 5.0, status: int = 200, body: bytes | None = None) -> None:
        """Switch the failure mode; `delay` is for `slow` and `trickle`, `status`/`body` for `garbage`."""
        behaviour = _Behaviour(mode=mode, delay=delay, status=status, body=_NOT_REALM if body is None else body)
        with self._lock:
            self._behaviour = behaviour
        if mode == "down":
            self.stop()
        else:
            self.start()

    def count(self, path: str) -> int:
        """How many requests for `path` arrived since the start or the last `reset_counts()`."""
        with self._lock:
            return self._counts[path]

    def counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset_counts(self) -> None:
        with self._lock:
            self._counts.clear()

    # -- used by the handler ---------------------------------------------------------------------

    def _arrived(self, path: str) -> _Behaviour:
        with self._lock:
            self._counts[path] += 1
            return self._behaviour

    def _hold(self, delay: float) -> bool:
        """Wait `delay` seconds; False when the proxy stops meanwhile and the request is dropped."""
        return not self._release.wait(delay)


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a dead client must never block shutdown

    def __init__(self, port: int, proxy: FaultProxy) -> None:
        self.proxy = proxy
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn), which can stall in sandboxes.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def reset_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            _reset(conn)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out and hang up are the point of several modes; their broken pipes are noise.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


def _reset(conn: socket.socket) -> None:
    """Abort `conn`: the peer sees a reset, and a handler blocked reading it wakes up."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib signature
        pass

    def _handle(self) -> None:
        proxy = self.server.proxy
        behaviour = proxy._arrived(urllib.parse.urlsplit(self.path).path)
        if behaviour.mode in ("reset", "down"):
            self.close_connection = True
            _reset(self.connection)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if behaviour.mode == "slow" and not proxy._hold(behaviour.delay):
            self.close_connection = True
            return
        if behaviour.mode == "error503":
            self._answer(503, b"Service Unavailable", "text/plain")
        elif behaviour.mode == "garbage":
            self._answer(behaviour.status, behaviour.body, "application/json")
        elif behaviour.mode == "trickle":
            self._trickle(behaviour.delay)
        else:
            self._forward(body)

    def _forward(self, body: bytes) -> None:
        proxy = self.server.proxy
        headers = {name: value for name, value in self.headers.items() if name.lower() not in _HOP_BY_HOP}
        upstream = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=_UPSTREAM_TIMEOUT)
        try:
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
            content = answer.read()
        except OSError as exc:
            self._answer(502, f"upstream unreachable: {exc}".encode(), "text/plain")
            return
        finally:
            upstream.close()
        allow = answer.getheader("Allow")
        extra = {"Allow": allow} if allow else {}
        self._answer(answer.status, content, answer.getheader("Content-Type") or "text/plain", extra)

    def _trickle(self, interval: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(_TRICKLE_BODY)))
        self.end_headers()
        for index in range(len(_TRICKLE_BODY)):
            self.wfile.write(_TRICKLE_BODY[index : index + 1])
            self.wfile.flush()
            if not self.server.proxy._hold(interval):
                self.close_connection = True
                return

    def _answer(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


def start_proxy(upstream: str) -> FaultProxy:
    """A running proxy in `pass` mode in front of `upstream`; stop it (or use `with`) when done."""
    return FaultProxy(upstream).start()
