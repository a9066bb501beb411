"""Realm's HTTP protocol (`/v1`) as an ASGI app over `RealmState`.

Every answer is JSON. Bad input gets a 4xx with `{"error": {"type", "message"}}` and changes
nothing; a failure inside Realm gets the same shape with a 5xx, which clients treat as transient.
A request is answered only after its writes are durably committed.

Every route but `GET /v1/health` needs a bearer token (see `resident.realm.tokens`): a missing or
unknown one is 401, one of the wrong kind 403 — a home's token for replication, the admin token
for governance. A push that names record ids another home pushed first is 409 and stores nothing.

When bound to loopback, requests must also name a loopback `Host`, and POST bodies must be declared
`application/json`: together these stop a web page in the user's browser from reaching Realm
(DNS rebinding, or a cross-site form post that needs no CORS preflight). A body that trickles in
more slowly than the read timeout is answered 408.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import msgspec
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from resident.errors import InvalidInput, RecordNotFound, StoreClosed, StoreFailed
from resident.loopback import is_loopback_host
from resident.messages.limits import MAX_RECORD_ID_CHARS
from resident.messages.realm import (
    ADMIN,
    DEFAULT_PAGE_LIMIT,
    MAX_BODY_BYTES,
    MAX_PAGE_LIMIT,
    ErrorBody,
    ErrorDetail,
    InvalidateRequest,
    ReplicateRequest,
    ReplicateResponse,
)
from resident.realm.state import IdsOwnedElsewhere, RealmState
from resident.realm.tokens import token_digest, token_name, tokens_match

__all__ = ["READ_TIMEOUT", "create_app"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")
Endpoint = Callable[[Request], Awaitable[Response]]
# Who may call a route: anyone, a home (its own token), the governance side (the admin token), or either.
Access = Literal["public", "home", "admin", "home_or_admin"]

# A whole request body arrives within this many seconds or is answered 408: a client that
# trickles its body would otherwise hold a connection (and a task) open for as long as it likes.
READ_TIMEOUT = 10.0
# An oversized body is still read (and dropped) up to this size, so that the client, which sends
# its whole body before it reads, sees the 413 rather than a reset connection.
_DRAIN_LIMIT = 64 * 1024 * 1024
_MAX_SEQ = 2**63 - 1
_PATHS = "/v1/health, /v1/replicate, /v1/invalidations, /v1/invalidate and /v1/records"
# Compared against when a token names no enrolled home, so that a miss costs what a hit costs.
_NO_SUCH_HOME = token_digest("nobody.none")


class _Refusal(Exception):
    """A request Realm answers with an error status; raised inside endpoints, never escapes."""

    def __init__(self, status: int, kind: str, message: str, ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.ids = ids


def _json(body: msgspec.Struct, status: int = 200) -> Response:
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json")


def _error(status: int, kind: str, message: str, ids: tuple[str, ...] = ()) -> Response:
    response = _json(ErrorBody(error=ErrorDetail(type=kind, message=message, ids=ids)), status)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="resident"'
    return response


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


async def _read_body(request: Request, read_timeout: float) -> bytes:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise _Refusal(415, "UnsupportedMediaType", "send the body as JSON with Content-Type: application/json")
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > _DRAIN_LIMIT
    chunks: list[bytes] = []
    size = 0
    if not too_large:
        try:
            async with asyncio.timeout(read_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size <= MAX_BODY_BYTES:
                        chunks.append(chunk)
                    elif size > _DRAIN_LIMIT:
                        break
        except TimeoutError:
            raise _Refusal(
                408, "RequestTimeout", f"the request body did not arrive within {read_timeout:g} s; send it whole"
            ) from None
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


def _one_param(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise _Refusal(400, "InvalidInput", f"query parameter `{name}` may be given once")
    return values[0] if values else None


def _int_param(request: Request, name: str, default: int, high: int, low: int = 0) -> int:
    raw = _one_param(request, name)
    if raw is None:
        return default
    # isdigit() alone also accepts non-ASCII digits; a length bound keeps int() cheap.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 20) or not low <= int(raw) <= high:
        raise _Refusal(400, "InvalidInput", f"query parameter `{name}` must be one integer from {low} to {high}")
    return int(raw)


def _only_params(request: Request, *allowed: str) -> None:
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise _Refusal(400, "InvalidInput", f"unknown query parameter `{unknown[0]}`; use {' and '.join(allowed)}")


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise _Refusal(
            401, "Unauthorized", "send `Authorization: Bearer TOKEN` (a home's token from `resident realm enroll`)"
        )
    return token.strip()


class _Api:
    """The `/v1` endpoints over one `RealmState`."""

    def __init__(self, state: RealmState, *, admin_token: str, loopback_only: bool, read_timeout: float) -> None:
        self._state = state
        self._admin_digest = token_digest(admin_token)
        self._loopback_only = loopback_only
        self._read_timeout = read_timeout

    def _caller(self, request: Request, access: Access) -> str:
        """Who is calling (a home's name, or `admin`), once its token checks out for `access`."""
        if access == "public":
            return ""
        token = _bearer(request)
        name = token_name(token)
        if name == ADMIN:
            known = tokens_match(token, self._admin_digest)
        else:
            stored = self._state.home_token_digest(name) if name is not None else None
            known = tokens_match(token, stored or _NO_SUCH_HOME) and stored is not None
        if name is None or not known:
            raise _Refusal(401, "Unauthorized", "Realm does not know this token; enroll the home again")
        if (name == ADMIN) != (access == "admin") and access != "home_or_admin":
            needed = "the admin token (admin.token in Realm's data)" if access == "admin" else "a home's token"
            raise _Refusal(403, "Forbidden", f"{request.method} {request.url.path} needs {needed}")
        return name

    def guarded(self, handler: Callable[[Request, str], Awaitable[Response]], access: Access) -> Endpoint:
        """Wrap `handler` so that it runs only for a caller `access` admits, and no failure escapes."""

        async def endpoint(request: Request) -> Response:
            try:
                if self._loopback_only:
                    _require_loopback_host(request)
                return await handler(request, self._caller(request, access))
            except _Refusal as exc:
                return _error(exc.status, exc.kind, exc.message, exc.ids)
            except IdsOwnedElsewhere as exc:
                shown = ", ".join(exc.ids[:5]) + (" …" if len(exc.ids) > 5 else "")
                message = f"record ids {shown} belong to another home; nothing was stored"
                return _error(409, "IdOwnedElsewhere", message, exc.ids)
            except InvalidInput as exc:
                return _error(400, "InvalidInput", exc.message)
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

    async def health(self, _request: Request, _caller: str) -> Response:
        return _json(await run_in_threadpool(self._state.health))

    async def replicate(self, request: Request, home: str) -> Response:
        body = _decode(await _read_body(request, self._read_timeout), ReplicateRequest)
        results = await run_in_threadpool(self._state.replicate, home, body.records)
        return _json(ReplicateResponse(results=tuple(results)))

    async def invalidate(self, request: Request, _admin: str) -> Response:
        body = _decode(await _read_body(request, self._read_timeout), InvalidateRequest)
        return _json(await run_in_threadpool(self._state.invalidate, body.id, body.reason))

    async def invalidations(self, request: Request, caller: str) -> Response:
        _only_params(request, "since", "limit")
        since = _int_param(request, "since", 0, _MAX_SEQ)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        home = None if caller == ADMIN else caller
        return _json(await run_in_threadpool(lambda: self._state.invalidations(since, limit, home=home)))

    async def records(self, request: Request, _admin: str) -> Response:
        _only_params(request, "after", "limit")
        after = _one_param(request, "after") or ""
        if len(after) > MAX_RECORD_ID_CHARS:
            message = f"query parameter `after` is a record id (at most {MAX_RECORD_ID_CHARS} characters)"
            raise _Refusal(400, "InvalidInput", message)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        return _json(await run_in_threadpool(self._state.records, after, limit))


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


def create_app(
    state: RealmState, *, admin_token: str, loopback_only: bool = True, read_timeout: float = READ_TIMEOUT
) -> Starlette:
    """The Realm ASGI app over `state`; `loopback_only` also refuses requests with a foreign `Host`."""
    api = _Api(state, admin_token=admin_token, loopback_only=loopback_only, read_timeout=read_timeout)
    routes = [
        Route("/v1/health", api.guarded(api.health, "public"), methods=["GET"]),
        Route("/v1/replicate", api.guarded(api.replicate, "home"), methods=["POST"]),
        Route("/v1/invalidations", api.guarded(api.invalidations, "home_or_admin"), methods=["GET"]),
        Route("/v1/invalidate", api.guarded(api.invalidate, "admin"), methods=["POST"]),
        Route("/v1/records", api.guarded(api.records, "admin"), methods=["GET"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_exception, Exception: _unexpected})
    # A redirect is not part of the protocol; "/v1/health/" is simply an unknown path.
    app.router.redirect_slashes = False
    return app
