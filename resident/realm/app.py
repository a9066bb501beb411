"""Realm's HTTP protocol (`/v1`) as an ASGI app over `RealmState`.

Every answer is JSON. Bad input gets a 4xx with `{"error": {"type", "message"}}` and changes
nothing; a failure inside Realm gets the same shape with a 5xx, which clients treat as transient.
A request is answered only after its writes are durably committed. The HTTP plumbing (refusals, JSON
answers, the `Host` check, bounded and timed body reads) is `resident.web`'s, shared with the API.

Every route but `GET /v1/health` needs a bearer token (see `resident.realm.tokens`): a missing or
unknown one is 401, one of the wrong kind 403 — a home's token for replication, the admin token
for governance. A push that names record ids another home pushed first is 409 and stores nothing.

When bound to loopback, requests must also name a loopback `Host`, and POST bodies must be declared
`application/json`: together these stop a web page in the user's browser from reaching Realm
(DNS rebinding, or a cross-site form post that needs no CORS preflight). A body that trickles in
more slowly than the read timeout is answered 408.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from resident.errors import InvalidInput, RecordNotFound, StoreClosed, StoreFailed
from resident.messages.limits import MAX_RECORD_ID_CHARS
from resident.messages.realm import (
    ADMIN,
    DEFAULT_PAGE_LIMIT,
    MAX_BODY_BYTES,
    MAX_PAGE_LIMIT,
    InvalidateRequest,
    ReplicateRequest,
    ReplicateResponse,
)
from resident.realm.state import IdsOwnedElsewhere, RealmState
from resident.realm.tokens import token_digest, token_name, tokens_match
from resident.web import (
    READ_TIMEOUT,
    Refusal,
    decode_json,
    error_response,
    json_response,
    read_json_body,
    refused,
    require_loopback_host,
    routing_error_handler,
    unexpected_error_handler,
)

__all__ = ["create_app"]

logger = logging.getLogger(__name__)

Endpoint = Callable[[Request], Awaitable[Response]]
# Who may call a route: anyone, a home (its own token), the governance side (the admin token), or either.
Access = Literal["public", "home", "admin", "home_or_admin"]

_MAX_SEQ = 2**63 - 1
_PATHS = "/v1/health, /v1/replicate, /v1/invalidations, /v1/invalidate and /v1/records"
_HOST_HINT = (
    "this Realm answers only requests addressed to 127.0.0.1, ::1 or localhost; "
    "use such a URL, or start Realm with --allow-remote"
)
# Compared against when a token names no enrolled home, so that a miss costs what a hit costs.
_NO_SUCH_HOME = token_digest("nobody.none")


def _one_param(request: Request, name: str) -> str | None:
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise Refusal(400, "InvalidInput", f"query parameter `{name}` may be given once")
    return values[0] if values else None


def _int_param(request: Request, name: str, default: int, high: int, low: int = 0) -> int:
    raw = _one_param(request, name)
    if raw is None:
        return default
    # isdigit() alone also accepts non-ASCII digits; a length bound keeps int() cheap.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 20) or not low <= int(raw) <= high:
        raise Refusal(400, "InvalidInput", f"query parameter `{name}` must be one integer from {low} to {high}")
    return int(raw)


def _only_params(request: Request, *allowed: str) -> None:
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise Refusal(400, "InvalidInput", f"unknown query parameter `{unknown[0]}`; use {' and '.join(allowed)}")


def _bearer(request: Request) -> str:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refusal(
            401, "Unauthorized", "send `Authorization: Bearer TOKEN` (a home's token from `resident realm enroll`)"
        )
    return token.strip()


class _Api:
    """The `/v1` endpoints over one `RealmState`."""

    def __init__(self, state: RealmState, *, admin_digest: str, loopback_only: bool, read_timeout: float) -> None:
        self._state = state
        self._admin_digest = admin_digest
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
            raise Refusal(401, "Unauthorized", "Realm does not know this token; enroll the home again")
        if (name == ADMIN) != (access == "admin") and access != "home_or_admin":
            needed = "the admin token (admin.token in Realm's data)" if access == "admin" else "a home's token"
            raise Refusal(403, "Forbidden", f"{request.method} {request.url.path} needs {needed}")
        return name

    def guarded(self, handler: Callable[[Request, str], Awaitable[Response]], access: Access) -> Endpoint:
        """Wrap `handler` so that it runs only for a caller `access` admits, and no failure escapes."""

        async def endpoint(request: Request) -> Response:
            try:
                if self._loopback_only:
                    require_loopback_host(request.headers.get("host", ""), _HOST_HINT)
                return await handler(request, self._caller(request, access))
            except Refusal as exc:
                return refused(exc)
            except IdsOwnedElsewhere as exc:
                shown = ", ".join(exc.ids[:5]) + (" …" if len(exc.ids) > 5 else "")
                message = f"record ids {shown} belong to another home; nothing was stored"
                return error_response(409, "IdOwnedElsewhere", message, ids=exc.ids)
            except InvalidInput as exc:
                return error_response(400, "InvalidInput", exc.message)
            except RecordNotFound as exc:
                return error_response(404, "RecordNotFound", exc.message)
            except (StoreFailed, StoreClosed) as exc:
                logger.error("Realm store failure: %s", exc.message)
                return error_response(503, type(exc).__name__, exc.message)
            except ClientDisconnect:
                return error_response(400, "ClientDisconnect", "the client went away before sending the whole body")
            except Exception as exc:
                logger.exception("Realm failed to answer %s %s", request.method, request.url.path)
                message = f"Realm failed to handle the request ({type(exc).__name__})"
                return error_response(500, "InternalError", message)

        return endpoint

    async def health(self, _request: Request, _caller: str) -> Response:
        return json_response(await run_in_threadpool(self._state.health))

    async def replicate(self, request: Request, home: str) -> Response:
        body = decode_json(await read_json_body(request, MAX_BODY_BYTES, self._read_timeout), ReplicateRequest)
        results = await run_in_threadpool(self._state.replicate, home, body.records)
        return json_response(ReplicateResponse(results=tuple(results)))

    async def invalidate(self, request: Request, _admin: str) -> Response:
        body = decode_json(await read_json_body(request, MAX_BODY_BYTES, self._read_timeout), InvalidateRequest)
        return json_response(await run_in_threadpool(self._state.invalidate, body.id, body.reason))

    async def invalidations(self, request: Request, caller: str) -> Response:
        _only_params(request, "since", "limit")
        since = _int_param(request, "since", 0, _MAX_SEQ)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        home = None if caller == ADMIN else caller
        return json_response(await run_in_threadpool(lambda: self._state.invalidations(since, limit, home=home)))

    async def records(self, request: Request, _admin: str) -> Response:
        _only_params(request, "after", "limit")
        after = _one_param(request, "after") or ""
        if len(after) > MAX_RECORD_ID_CHARS:
            message = f"query parameter `after` is a record id (at most {MAX_RECORD_ID_CHARS} characters)"
            raise Refusal(400, "InvalidInput", message)
        limit = _int_param(request, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, low=1)
        return json_response(await run_in_threadpool(self._state.records, after, limit))


def create_app(
    state: RealmState,
    *,
    admin_token: str | None = None,
    admin_digest: str | None = None,
    loopback_only: bool = True,
    read_timeout: float = READ_TIMEOUT,
) -> Starlette:
    """The Realm ASGI app over `state`; `loopback_only` also refuses requests with a foreign `Host`.

    Governance calls are checked against the admin token, or only its digest (all a PostgreSQL Realm keeps).
    """
    if admin_digest is None:
        if admin_token is None:
            raise InvalidInput("Realm needs its admin token, or the token's digest")
        admin_digest = token_digest(admin_token)
    api = _Api(state, admin_digest=admin_digest, loopback_only=loopback_only, read_timeout=read_timeout)
    routes = [
        Route("/v1/health", api.guarded(api.health, "public"), methods=["GET"]),
        Route("/v1/replicate", api.guarded(api.replicate, "home"), methods=["POST"]),
        Route("/v1/invalidations", api.guarded(api.invalidations, "home_or_admin"), methods=["GET"]),
        Route("/v1/invalidate", api.guarded(api.invalidate, "admin"), methods=["POST"]),
        Route("/v1/records", api.guarded(api.records, "admin"), methods=["GET"]),
    ]
    handlers = {HTTPException: routing_error_handler("Realm", _PATHS), Exception: unexpected_error_handler("Realm")}
    app = Starlette(routes=routes, exception_handlers=handlers)
    # A redirect is not part of the protocol; "/v1/health/" is simply an unknown path.
    app.router.redirect_slashes = False
    return app
