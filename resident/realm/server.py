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
import json
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from resident.errors import InvalidInput, RecordNotFound, ResidentError, StoreClosed, StoreFailed
from resident.loopback import is_loopback_host
from resident.messages.realm import (
    DEFAULT_PAGE_LIMIT,
    MAX_BODY_BYTES,
    MAX_PAGE_LIMIT,
    InvalidateRequest,
    ReplicateRequest,
    ReplicateResponse,
)
from resident.realm.state import RealmState
from resident.web import (
    ReadyServer,
    Refusal,
    decode_json,
    error_response,
    json_response,
    listen_tcp,
    read_json_body,
    require_loopback_host,
    routing_error_handler,
    stop_on_signals,
)

__all__ = ["create_app", "main", "serve"]

logger = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]

_MAX_SEQ = 2**63 - 1
_PATHS = "/v1/health, /v1/replicate, /v1/invalidations and /v1/invalidate"
_HOST_HINT = (
    "this Realm answers only requests addressed to 127.0.0.1, ::1 or localhost; "
    "use such a URL, or start Realm with --allow-remote"
)


def _int_param(request: Request, name: str, default: int, high: int, low: int = 0) -> int:
    values = request.query_params.getlist(name)
    if not values:
        return default
    raw = values[0]
    # isdigit() alone also accepts non-ASCII digits; a length bound keeps int() cheap.
    if len(values) > 1 or not (raw.isascii() and raw.isdigit() and len(raw) <= 20) or not low <= int(raw) <= high:
        raise Refusal(400, "InvalidInput", f"query parameter `{name}` must be one integer from {low} to {high}")
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
                    require_loopback_host(request.headers.get("host", ""), _HOST_HINT)
                return await handler(request)
            except Refusal as exc:
                return error_response(exc.status, exc.kind, exc.message)
            except RecordNotFound as exc:
                return error_response(404, "RecordNotFound", exc.message)
            except (StoreFailed, StoreClosed) as exc:
                logger.error("Realm store failure: %s", exc.message)
                return error_response(503, type(exc).__name__, exc.message)
            except ClientDisconnect:
                return error_response(400, "ClientDisconnect", "the client went away before sending the whole body")
            except Exception as exc:
                logger.exception("Realm failed to answer %s %s", request.method, request.url.path)
                return error_response(
                    500, "InternalError", f"Realm failed to handle the request ({type(exc).__name__})"
                )

        return endpoint

    async def health(self, _request: Request) -> Response:
        return json_response(await run_in_threadpool(self._state.health))

    async def replicate(self, request: Request) -> Response:
        body = decode_json(await read_json_body(request, MAX_BODY_BYTES), ReplicateRequest)
        results = await run_in_threadpool(self._state.replicate, body.records)
        return json_response(ReplicateResponse(results=tuple(results)))

    async def invalidate(self, request: Request) -> Response:
        body = decode_json(await read_json_body(request, MAX_BODY_BYTES), InvalidateRequest)
        return json_response(await run_in_threadpool(self._state.invalidate, body.id, body.reason))

    async def invalidations(self, request: Request) -> Response:
        unknown = sorted(set(request.query_params) - {"since", "limit"})
        if unknown:
            raise Refusal(400, "InvalidInput", f"unknown query parameter `{unknown[0]}`; use since and limit")
        since = _int_param(request, "since", 0, _MAX_SEQ)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        return json_response(await run_in_threadpool(self._state.invalidations, since, limit))


async def _unexpected(_request: Request, exc: Exception) -> Response:
    # Only failures outside the endpoints get here; the server logs them after this answer.
    return error_response(
        500, "InternalError", f"Realm failed to handle the request ({type(exc).__name__}); see its log"
    )


def create_app(state: RealmState, *, loopback_only: bool = True) -> Starlette:
    """The Realm ASGI app over `state`; `loopback_only` also refuses requests with a foreign `Host`."""
    api = _Api(state, loopback_only=loopback_only)
    routes = [
        Route("/v1/health", api.guarded(api.health), methods=["GET"]),
        Route("/v1/replicate", api.guarded(api.replicate), methods=["POST"]),
        Route("/v1/invalidations", api.guarded(api.invalidations), methods=["GET"]),
        Route("/v1/invalidate", api.guarded(api.invalidate), methods=["POST"]),
    ]
    app = Starlette(
        routes=routes, exception_handlers={HTTPException: routing_error_handler(_PATHS), Exception: _unexpected}
    )
    # A redirect is not part of the protocol; "/v1/health/" is simply an unknown path.
    app.router.redirect_slashes = False
    return app


# -- serving -------------------------------------------------------------------------------------


def _write_ready_file(path: Path, sock: socket.socket) -> None:
    host, port = sock.getsockname()[:2]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"host": host, "port": port, "pid": os.getpid()}, out)
    # A reader sees either no file or the whole file, never a half-written one.
    tmp.replace(path)


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
        sock = listen_tcp(host, port, "Realm")
        try:
            config = uvicorn.Config(
                create_app(state, loopback_only=not allow_remote),
                log_level="warning",
                lifespan="off",
                timeout_graceful_shutdown=5,
            )
            on_started = (lambda: _write_ready_file(ready_file, sock)) if ready_file else (lambda: None)
            server = ReadyServer(config, on_started=on_started)
            with stop_on_signals(server):
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
