"""Realm's HTTP server: the `/v1` protocol over `RealmState`, served by uvicorn on loopback.

Every answer is JSON. Bad input gets a 4xx with `{"error": {"type", "message"}}` and changes
nothing; a failure inside Realm gets the same shape with a 5xx, which clients treat as transient.
A request is answered only after its writes are durably committed.

When bound to loopback, requests must also name a loopback `Host`, and POST bodies must be declared
`application/json`: together these stop a web page in the user's browser from reaching Realm
(DNS rebinding, or a cross-site form post that needs no CORS preflight).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TypeVar

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from resident.errors import InvalidInput, RecordNotFound, ResidentError, StoreClosed, StoreFailed
from resident.files import write_private_file
from resident.loopback import is_loopback_host
from resident.messages.realm import (
    DEFAULT_PAGE_LIMIT,
    MAX_BODY_BYTES,
    MAX_PAGE_LIMIT,
    ErrorBody,
    ErrorDetail,
    InvalidateRequest,
    ReplicateRequest,
    ReplicateResponse,
)
from resident.realm.state import RealmState

__all__ = ["create_app", "main", "serve"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
Endpoint = Callable[[Request], Awaitable[Response]]

# An oversized body is still read (and dropped) up to this size, so that the client, which sends
# its whole body before it reads, sees the 413 rather than a reset connection.
_DRAIN_LIMIT = 64 * 1024 * 1024
_MAX_SEQ = 2**63 - 1
_PATHS = "/v1/health, /v1/replicate, /v1/invalidations and /v1/invalidate"


class _Refusal(Exception):
    """A request Realm answers with an error status; raised inside endpoints, never escapes."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def _json(body: msgspec.Struct, status: int = 200) -> Response:
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json")


def _error(status: int, kind: str, message: str) -> Response:
    return _json(ErrorBody(error=ErrorDetail(type=kind, message=message)), status)


def _host_header_name(value: str) -> str:
    if value.startswith("["):
        return value[1 : value.find("]")]
    return value.rsplit(":", 1)[0]


def _require_loopback_host(request: Request) -> None:
    if not is_loopback_host(_host_header_name(request.headers.get("host", ""))):
        raise _Refusal(
            421,
            "HostNotAllowed",
            "this Realm answers only requests addressed to 127.0.0.1, ::1 or localhost; "
            "use such a URL, or start Realm with --allow-remote",
        )


async def _read_body(request: Request) -> bytes:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise _Refusal(415, "UnsupportedMediaType", "send the body as JSON with Content-Type: application/json")
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > _DRAIN_LIMIT
    chunks: list[bytes] = []
    size = 0
    if not too_large:
        async for chunk in request.stream():
            size += len(chunk)
            if size <= MAX_BODY_BYTES:
                chunks.append(chunk)
            elif size > _DRAIN_LIMIT:
                break
    if too_large or size > MAX_BODY_BYTES:
        raise _Refusal(
            413,
            "BodyTooLarge",
            f"request body is larger than {MAX_BODY_BYTES} bytes; split it into smaller requests",
        )
    return b"".join(chunks)


def _decode(body: bytes, kind: type[_T]) -> _T:
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise _Refusal(400, "InvalidInput", f"invalid {kind.__name__}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise _Refusal(400, "MalformedJSON", f"request body is not valid JSON: {exc}") from exc


def _int_param(request: Request, name: str, default: int, high: int, low: int = 0) -> int:
    values = request.query_params.getlist(name)
    if not values:
        return default
    raw = values[0]
    # isdigit() alone also accepts non-ASCII digits; a length bound keeps int() cheap.
    if len(values) > 1 or not (raw.isascii() and raw.isdigit() and len(raw) <= 20) or not low <= int(raw) <= high:
        raise _Refusal(400, "InvalidInput", f"query parameter `{name}` must be one integer from {low} to {high}")
    return int(raw)


class _Api:
    """The `/v1` endpoints over one `RealmState`."""

    def __init__(self, state: RealmState, *, loopback_only: bool) -> None:
        self._state = state
        self._loopback_only = loopback_only

    def guarded(self, handler: Endpoint) -> Endpoint:
        """Wrap `handler` so that every failure becomes a typed JSON error and none escapes."""

        async def endpoint(request: Request) -> Response:
            try:
                if self._loopback_only:
                    _require_loopback_host(request)
                return await handler(request)
            except _Refusal as exc:
                return _error(exc.status, exc.kind, exc.message)
            except RecordNotFound as exc:
                return _error(404, "RecordNotFound", exc.message)
            except (StoreFailed, StoreClosed) as exc:
                logger.error("Realm store failure: %s", exc.message)
                return _error(503, type(exc).__name__, exc.message)
            except ClientDisconnect:
                return _error(400, "ClientDisconnect", "the client went away before sending the whole body")
            except Exception as exc:
                logger.exception("Realm failed to answer %s %s", request.method, request.url.path)
                return _error(500, "InternalError", f"Realm failed to handle the request ({type(exc).__name__})")

        return endpoint

    async def health(self, _request: Request) -> Response:
        return _json(await run_in_threadpool(self._state.health))

    async def replicate(self, request: Request) -> Response:
        body = _decode(await _read_body(request), ReplicateRequest)
        results = await run_in_threadpool(self._state.replicate, body.records)
        return _json(ReplicateResponse(results=tuple(results)))

    async def invalidate(self, request: Request) -> Response:
        body = _decode(await _read_body(request), InvalidateRequest)
        return _json(await run_in_threadpool(self._state.invalidate, body.id, body.reason))

    async def invalidations(self, request: Request) -> Response:
        unknown = sorted(set(request.query_params) - {"since", "limit"})
        if unknown:
            raise _Refusal(400, "InvalidInput", f"unknown query parameter `{unknown[0]}`; use since and limit")
        since = _int_param(request, "since", 0, _MAX_SEQ)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        return _json(await run_in_threadpool(self._state.invalidations, since, limit))


async def _http_exception(request: Request, exc: Exception) -> Response:
    # The router raises these for an unknown path (404) and a wrong method (405).
    if not isinstance(exc, HTTPException):
        return _error(500, "InternalError", f"Realm failed to route the request ({type(exc).__name__})")
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        message = f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        response = _error(405, "MethodNotAllowed", message)
        response.headers["Allow"] = allowed
        return response
    if exc.status_code == 404:
        return _error(404, "NotFound", f"no such path {request.url.path}; Realm serves {_PATHS}")
    return _error(exc.status_code, "HTTPError", exc.detail)


async def _unexpected(_request: Request, exc: Exception) -> Response:
    # Only failures outside the endpoints get here; the server logs them after this answer.
    return _error(500, "InternalError", f"Realm failed to handle the request ({type(exc).__name__}); see its log")


def create_app(state: RealmState, *, loopback_only: bool = True) -> Starlette:
    """The Realm ASGI app over `state`; `loopback_only` also refuses requests with a foreign `Host`."""
    api = _Api(state, loopback_only=loopback_only)
    routes = [
        Route("/v1/health", api.guarded(api.health), methods=["GET"]),
        Route("/v1/replicate", api.guarded(api.replicate), methods=["POST"]),
        Route("/v1/invalidations", api.guarded(api.invalidations), methods=["GET"]),
        Route("/v1/invalidate", api.guarded(api.invalidate), methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_exception, Exception: _unexpected})
    # A redirect is not part of the protocol; "/v1/health/" is simply an unknown path.
    app.router.redirect_slashes = False
    return app


# -- serving -------------------------------------------------------------------------------------


class _Server(uvicorn.Server):
    """A uvicorn server that reports, once, when it is accepting connections."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()


def _listen(host: str, port: int) -> socket.socket:
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InvalidInput(f"Realm cannot listen on {host}:{port}: {exc}; check --host") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InvalidInput(
            f"Realm cannot listen on {host}:{port}: {exc.strerror}; choose another --port (0 picks a free one)"
        ) from exc
    return sock


def _write_ready_file(path: Path, sock: socket.socket) -> None:
    host, port = sock.getsockname()[:2]
    path.parent.mkdir(parents=True, exist_ok=True)
    # A reader sees either no file or the whole file, never a half-written one.
    write_private_file(path, json.dumps({"host": host, "port": port, "pid": os.getpid()}).encode("utf-8"))


@contextlib.contextmanager
def _stop_on_signals(server: uvicorn.Server) -> Iterator[None]:
    """Make SIGTERM and SIGINT stop `server` gracefully and let `serve()` return normally.

    uvicorn installs its own handlers while it runs, but afterwards re-raises the signal it caught
    against the handlers it found; these are those handlers, so the process exits cleanly.
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


def serve(
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_remote: bool = False,
    ready_file: Path | None = None,
) -> None:
    """Run Realm on `host:port` over the store in `data_dir` until SIGTERM or SIGINT.

    Port 0 picks a free port; `ready_file`, if given, receives `{"host", "port", "pid"}` once the
    server accepts connections (and is removed on a clean exit).
    """
    if not allow_remote and not is_loopback_host(host):
        raise InvalidInput(
            f"Realm listens on loopback only and {host!r} is not loopback; "
            "pass --allow-remote to expose it beyond this machine"
        )
    if not 0 <= port <= 65535:
        raise InvalidInput(f"port {port} is out of range; use 0..65535 (0 picks a free one)")
    with RealmState.open(data_dir) as state:
        sock = _listen(host, port)
        try:
            config = uvicorn.Config(
                create_app(state, loopback_only=not allow_remote),
                log_level="warning",
                lifespan="off",
                timeout_graceful_shutdown=5,
            )
            on_started = (lambda: _write_ready_file(ready_file, sock)) if ready_file else (lambda: None)
            server = _Server(config, on_started)
            with _stop_on_signals(server):
                server.run(sockets=[sock])
        finally:
            sock.close()
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m resident.realm.server`: parse arguments, serve, and exit 0 after a clean stop."""
    parser = argparse.ArgumentParser(prog="python -m resident.realm.server", description="Run the Realm server.")
    parser.add_argument("--data", type=Path, required=True, help="directory of Realm's LMDB store")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on; 0 picks a free one")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    parser.add_argument("--ready-file", type=Path, help="write {host, port, pid} JSON here once listening")
    args = parser.parse_args(argv)
    try:
        serve(args.data, args.host, args.port, args.allow_remote, args.ready_file)
    except ResidentError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
