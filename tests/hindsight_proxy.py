"""A loopback server in front of a Hindsight service, for the bridge's tests: it records every request the bridge
sends, and can stall, claim another version, or (with no Hindsight behind it) answer the part of Hindsight's HTTP
API the bridge uses by itself.

Modes (set `proxy.mode`):
* `forward` — passes each request on to `upstream` (a real Hindsight server) and its answer back; with no
  upstream, answers `GET /v1/version`, `GET /openapi.json` and `POST …/memories/recall` itself, in Hindsight's
  shapes (`hindsight_api.api.http`: `VersionResponse`, FastAPI's OpenAPI document, `RecallResponse`), from
  `proxy.memories`;
* `stall` — reads the request and never answers until the server stops (a wedged service);
* `error` — answers 500;
* `redirect` — answers 307 to a host that is not this machine (a bridge must not follow it).

`proxy.version`, when set, replaces the `api_version` the service claims (an upgrade the bridge does not know).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import httpx

from tests.loopback_server import LoopbackServer

__all__ = ["HindsightProxy"]

Mode = Literal["forward", "stall", "error", "redirect"]
# The paths a Hindsight 1.x lists that the bridge reads (the rest of its ~80 are of no matter here).
_PATHS = (
    "/v1/default/banks/{bank_id}/memories/recall", "/v1/default/banks/{bank_id}/memories",
    "/v1/default/banks/{bank_id}/reflect", "/v1/default/banks/{bank_id}/mental-models",
)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, proxy: HindsightProxy) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", port), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the name BaseHTTPRequestHandler uses
        return

    def do_GET(self) -> None:
        self._serve(b"")

    def do_POST(self) -> None:
        self._serve(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _serve(self, body: bytes) -> None:
        proxy = self.server.proxy
        proxy.record(self.command, self.path, body, self.headers.get("Authorization"))
        match proxy.mode:
            case "stall":
                proxy.released.wait()
                return
            case "error":
                self._answer(500, {"detail": "boom"})
                return
            case "redirect":
                self.send_response(307)
                self.send_header("Location", f"http://evil.example{self.path}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            case "forward":
                status, answer = proxy.answer(self.command, self.path, body, self.headers.get("Authorization"))
                self._answer(status, answer)

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class HindsightProxy(LoopbackServer[_Server]):
    label = "hindsight proxy"

    def __init__(self, upstream: str | None = None) -> None:
        super().__init__()
        self.upstream = upstream
        self.mode: Mode = "forward"
        self.version: str | None = None
        # With no upstream: the memories of each bank, answered by recall (every one of them, in order).
        self.memories: dict[str, list[str]] = {}
        self.requests: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()
        self.released = threading.Event()

    def _make_server(self, port: int) -> _Server:
        self.released = threading.Event()
        return _Server(port, self)

    def _closing(self, server: _Server) -> None:
        self.released.set()

    def record(self, method: str, path: str, body: bytes, _authorization: str | None) -> None:
        with self._lock:
            self.requests.append((method, path, body))

    def sent(self) -> bytes:
        """Everything the bridge has sent so far, paths and bodies."""
        with self._lock:
            return b"\n".join(path.encode() + b" " + body for _, path, body in self.requests)

    def answer(self, method: str, path: str, body: bytes, authorization: str | None) -> tuple[int, Any]:
        if self.upstream is not None:
            headers = {"Content-Type": "application/json"} | ({"Authorization": authorization} if authorization else {})
            response = httpx.request(method, self.upstream + path, content=body or None, headers=headers, timeout=30)
            status, answer = response.status_code, response.json()
        else:
            status, answer = self._own(path, body)
        if self.version is not None and path in ("/v1/version", "/version") and status == 200:
            answer = {**answer, "api_version": self.version}
        return status, answer

    def _own(self, path: str, body: bytes) -> tuple[int, Any]:
        if path in ("/v1/version", "/version"):
            return 200, {"api_version": "1.1.0", "features": {}}
        if path == "/openapi.json":
            return 200, {"openapi": "3.1.0", "paths": {template: {} for template in _PATHS}}
        prefix, _, rest = path.partition("/v1/default/banks/")
        bank, _, tail = rest.partition("/")
        if not prefix and tail == "memories/recall":
            query = json.loads(body)["query"]
            found = self.memories.get(bank, [])
            return 200, {"results": [
                {"id": f"hs-{bank}-{index}", "text": text, "type": "world", "tags": [],
                 "scores": {"final": 1.0 / (1 + index), "semantic": None, "keyword": 0.5}}
                for index, text in enumerate(found) if any(word in text for word in query.split())
            ]}
        return 404, {"detail": "Not Found"}
