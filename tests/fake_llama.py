"""A fake `llama-server --embeddings` on a free 127.0.0.1 port, for testing embedder clients.

It is a real HTTP server in a background thread speaking llama.cpp's `/v1/embeddings` format:
`{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}],
"model": ..., "usage": {"prompt_tokens": n, "total_tokens": n}}`, and errors as
`{"error": {"code": 500, "message": ..., "type": "server_error"}}` with the same HTTP status
(as in llama.cpp's tools/server `format_error_response` and `res_error`).

Vectors are deterministic (a hash of the text seeds them) and deliberately not unit length, so a
client's normalisation is observable; a text starting with `zero:` gets the zero vector.

Modes (set `fake.mode`):
* `ok` — answers correctly;
* `down` — the listening socket is closed, so connections are refused; any other mode reopens it
  on the same port;
* `slow` — answers correctly after `slow_seconds` (or as soon as the fake stops);
* `trickle` — sends headers, then one body byte every `trickle_interval` seconds, never finishing;
* `garbage` — 200 with a body that is not JSON;
* `wrong_shape` — 200 with valid JSON that is not a correct answer; `fake.wrong_shape` says how;
* `error500` — llama.cpp's 500 `server_error` body;
* `loading` — llama.cpp's 503 `unavailable_error` "Loading model" body;
* `redirect` — 307 to a non-loopback host.
"""

from __future__ import annotations

import hashlib
import json
import socket
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from tests.loopback_server import LoopbackServer

__all__ = ["FakeLlama", "Mode", "WrongShape", "refuses_connections"]

Mode = Literal["ok", "down", "slow", "trickle", "garbage", "wrong_shape", "error500", "loading", "redirect"]
WrongShape = Literal[
    "not_object",
    "missing_data",
    "data_not_list",
    "too_few",
    "too_many",
    "item_not_object",
    "missing_index",
    "index_not_int",
    "index_out_of_range",
    "duplicate_index",
    "missing_embedding",
    "empty_embedding",
    "base64_embedding",
    "non_numeric",
    "bool_values",
    "null_value",
    "nan_literal",
    "overflow",
    "ragged",
]



class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a dead client must never block shutdown

    def __init__(self, port: int, fake: FakeLlama) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn), which can stall in sandboxes.
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out and hang up are the point of several modes; their broken pipes are noise.
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        try:
            self.server.fake._answer(self)
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib signature
        pass


class FakeLlama(LoopbackServer["_Server"]):
    """A controllable llama.cpp embeddings server; use as a context manager or start()/stop()."""

    label = "fake llama"

    def __init__(
        self,
        *,
        dim: int = 8,
        slow_seconds: float = 10.0,
        trickle_interval: float = 0.05,
        model: str = "fake-embed.gguf",
    ) -> None:
        super().__init__()
        self.dim = dim
        self.slow_seconds = slow_seconds
        self.trickle_interval = trickle_interval
        self.model = model
        self.wrong_shape: WrongShape = "missing_data"
        self.reverse_order = False  # answer `data` last index first; clients must order by `index`
        self._lock = threading.Lock()
        self._mode: Mode = "ok"
        self._requests = 0
        self._bodies: list[Any] = []

    def _make_server(self, port: int) -> _Server:
        return _Server(port, self)

    # -- controls and observations -----------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        with self._lock:
            return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        with self._lock:
            self._mode = mode
        if mode == "down":
            self.stop()
        else:
            self.start()

    @property
    def requests(self) -> int:
        """How many POSTs reached the server (in any mode but `down`)."""
        with self._lock:
            return self._requests

    @property
    def bodies(self) -> list[Any]:
        """The decoded JSON bodies of the POSTs received, oldest first."""
        with self._lock:
            return list(self._bodies)

    def vector_for(self, text: str) -> list[float]:
        """The raw (not normalised) vector this fake answers for `text`."""
        if text.startswith("zero:"):
            return [0.0] * self.dim
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
        return [float(x) for x in np.random.default_rng(seed).standard_normal(self.dim) * 3.0]

    # -- serving -----------------------------------------------------------------------------------

    def _answer(self, handler: _Handler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length)
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self._requests += 1
            self._bodies.append(body)
            mode = self._mode
        if handler.path != "/v1/embeddings":
            _send_json(handler, 404, _error(404, "File Not Found", "not_found_error"))
            return
        texts = body.get("input") if isinstance(body, dict) else None
        if not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
            _send_json(handler, 400, _error(400, '"input" or "content" must be provided', "invalid_request_error"))
            return
        if mode == "slow":
            self._release.wait(self.slow_seconds)
        if mode in ("ok", "slow"):
            _send_json(handler, 200, self._payload(texts))
        elif mode == "trickle":
            self._trickle(handler)
        elif mode == "garbage":
            _send(handler, 200, b"<html>definitely not json", "text/html")
        elif mode == "wrong_shape":
            _send(handler, 200, self._wrong_shape_body(texts), "application/json")
        elif mode == "error500":
            _send_json(handler, 500, _error(500, "llama_decode failed", "server_error"))
        elif mode == "loading":
            _send_json(handler, 503, _error(503, "Loading model", "unavailable_error"))
        elif mode == "redirect":
            handler.send_response(307)
            handler.send_header("Location", "http://example.com/v1/embeddings")
            handler.send_header("Content-Length", "0")
            handler.end_headers()

    def _payload(self, texts: list[str]) -> dict[str, Any]:
        data = [{"object": "embedding", "index": i, "embedding": self.vector_for(text)} for i, text in enumerate(texts)]
        if self.reverse_order:
            data.reverse()
        tokens = sum(len(text.split()) + 1 for text in texts)
        return {
            "model": self.model,
            "object": "list",
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            "data": data,
        }

    def _trickle(self, handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(1 << 20))
        handler.end_headers()
        handler.wfile.flush()
        while not self._release.wait(self.trickle_interval):
            handler.wfile.write(b" ")
            handler.wfile.flush()

    def _wrong_shape_body(self, texts: list[str]) -> bytes:
        payload = self._payload(texts)
        data: list[Any] = payload["data"]
        blank = {"object": "embedding", "index": 0, "embedding": [0.5] * self.dim}
        first: dict[str, Any] = data[0] if data else blank
        shape = self.wrong_shape
        if shape == "not_object":
            return json.dumps([payload]).encode()
        if shape == "missing_data":
            del payload["data"]
        elif shape == "data_not_list":
            payload["data"] = {"0": first}
        elif shape == "too_few":
            payload["data"] = data[:-1]
        elif shape == "too_many":
            payload["data"] = [*data, {**first, "index": len(data)}]
        elif shape == "item_not_object":
            data[0] = first["embedding"]
        elif shape == "missing_index":
            del first["index"]
        elif shape == "index_not_int":
            first["index"] = str(first["index"])
        elif shape == "index_out_of_range":
            first["index"] = len(data)
        elif shape == "duplicate_index":
            for item in data:
                item["index"] = 0
        elif shape == "missing_embedding":
            del first["embedding"]
        elif shape == "empty_embedding":
            for item in data:
                item["embedding"] = []
        elif shape == "base64_embedding":
            first["embedding"] = "AACAPwAAAEA="
        elif shape == "non_numeric":
            first["embedding"][0] = "0.5"
        elif shape == "bool_values":
            first["embedding"] = [True] * self.dim
        elif shape == "null_value":  # how nlohmann::json (llama.cpp) writes a NaN float
            first["embedding"][0] = None
        elif shape == "nan_literal":
            first["embedding"][0] = float("nan")  # json.dumps writes the non-JSON token NaN
        elif shape == "overflow":
            return json.dumps(payload).replace(repr(first["embedding"][0]), "1e999", 1).encode()
        elif shape == "ragged":
            data[-1]["embedding"] = data[-1]["embedding"][:-1]
        return json.dumps(payload).encode()

    def __repr__(self) -> str:
        return f"FakeLlama(port={self._port}, mode={self.mode!r}, requests={self.requests})"


def _error(code: int, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": kind}}


def _send_json(handler: _Handler, status: int, payload: dict[str, Any]) -> None:
    _send(handler, status, json.dumps(payload).encode(), "application/json; charset=utf-8")


def _send(handler: _Handler, status: int, body: bytes, content_type: str) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)
    handler.wfile.flush()


def refuses_connections(port: int) -> bool:
    """Whether nothing accepts connections on 127.0.0.1:`port` (to check that `down` is real)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) != 0
