"""The ASGI app of the loopback API: the guard in front, then one endpoint per operation.

The guard runs before routing, so nothing — not even a 404 — answers a request that names a foreign
`Host` (a browser page reaching loopback through DNS rebinding) or, except `/v1/health` and the
challenge a client puts before it sends its token (`/v1/challenge`, see `challenge`), lacks both the
home's token and a grant token (a sandboxed member session holds only its grant token; it acts as
that session and never as the owner). Tokens are compared in constant time. The guard also bounds
the requests in flight.

Each endpoint serves one declared operation (`declared_endpoint`): it reads and checks its input
(declared JSON, bounded, arriving within the read timeout, decoded into the operation's request,
unknown fields refused), runs it for the caller (the owner, or the member session whose grant token
the `Resident-Grant-Token` header presents) and encodes the reply. A `ResidentError` becomes its
typed JSON answer with the status of `statuses.STATUS_BY_ERROR`; anything else is logged and
answered 500 without details, and the server keeps serving.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from resident.api.challenge import CHALLENGE_PATH, NONCE_BYTES, answer_challenge, session_proof_key
from resident.api.events import EventHub
from resident.api.openapi import openapi_document
from resident.api.statuses import OS_ERROR_STATUS, error_body, status_of
from resident.api.wire import EVENTS_PATH, GRANT_HEADER, OPENAPI_PATH, READ_TIMEOUT, ErrorDetail
from resident.coordination.tokens import check_token
from resident.errors import GrantInvalid, ResidentError, Unauthorized, os_error_message
from resident.operations import DECLARED
from resident.operations.declaration import Access, Operation
from resident.operations.home import HEALTH
from resident.operations.wire import decode as decode_request
from resident.runtime.caller import refuse_member_session
from resident.web import (
    Refusal,
    error_response,
    json_response,
    read_json_body,
    refused,
    require_loopback_host,
    routing_error_handler,
    unexpected_error_handler,
)

if TYPE_CHECKING:
    from resident.runtime import Runtime

__all__ = ["MAX_IN_FLIGHT", "Guard", "create_app"]

Endpoint = Callable[[Request], Awaitable[Response]]

logger = logging.getLogger(__name__)

MAX_IN_FLIGHT = 2048
_HOST_HINT = "this API answers only requests addressed to 127.0.0.1, ::1 or localhost; use the address in api.json"
_SERVED = "/v1/... (see /openapi.json)"


def _typed(error: ResidentError) -> Response:
    detail = error_body(error).error
    return error_response(status_of(error), detail.type, detail.message, **_details(detail))


def _details(detail: ErrorDetail) -> dict[str, str]:
    """The fields a typed error adds to its type and message (a withheld record's id, state, reason)."""
    return {name: value for name in ("id", "state", "reason") if (value := getattr(detail, name)) is not None}


class Guard:
    """ASGI middleware: loopback `Host`, the bearer token, and a bound on requests in flight."""

    def __init__(self, app: ASGIApp, token: str, *, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self.app = app
        self._token = token.encode("utf-8")
        self._open_paths = frozenset({HEALTH.route.path, CHALLENGE_PATH})
        self._max_in_flight = max_in_flight
        self._in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["path"] == CHALLENGE_PATH:
            await self._challenge(scope)(scope, receive, send)
            return
        self._in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._in_flight -= 1

    def _refusal(self, scope: Scope) -> Response | None:
        headers = Headers(scope=scope)
        try:
            require_loopback_host(headers.get("host", ""), _HOST_HINT)
        except Refusal as refusal:
            return refused(refusal)
        if (
            scope["path"] not in self._open_paths
            and not self._authorized(headers.get("authorization", ""))
            and not _grant_shaped(headers.get(GRANT_HEADER))
        ):
            return _typed(Unauthorized(
                "send the home's token (the `token` in its api.json) as `Authorization: Bearer TOKEN`, or a member "
                f"session's grant token as `{GRANT_HEADER}`"
            ))
        if self._in_flight >= self._max_in_flight:
            return error_response(429, "ServerBusy", f"{self._in_flight} requests are in flight already; retry shortly")
        return None

    def _challenge(self, scope: Scope) -> Response:
        """The proof that this server holds the home's token, for a client about to send it (see `challenge`)."""
        if scope["method"] != "GET":
            return error_response(405, "MethodNotAllowed", f"{CHALLENGE_PATH} answers GET only")
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        nonces, sessions = query.get("nonce", []), query.get("session", [])
        token = self._token.decode("utf-8", "surrogateescape")
        if len(sessions) > 1 or (sessions and not _SESSION_ID.fullmatch(sessions[0])):
            return error_response(400, "InvalidInput", "send at most one session id (ses_…) as ?session=ID")
        if sessions:
            # A member session's harness checks with its own key, made from the home's token.
            token = session_proof_key(token, sessions[0])
        proof = answer_challenge(token, nonces[0]) if len(nonces) == 1 else None
        if proof is None:
            return error_response(400, "InvalidInput", f"send one nonce of {NONCE_BYTES} bytes as hex: ?nonce=HEX")
        return json_response({"proof": proof})

    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), self._token)


# A session id as the runtime makes them (`new_id("ses")`); see `resident.runtime.sessions.tree`.
_SESSION_ID = re.compile(r"ses_[0-9a-f]{28}")


def _grant_shaped(grant: str | None) -> bool:
    """Whether a request presents something shaped like a grant token, so that it may come in without the
    home's token (a sandboxed session cannot read api.json): it then acts only as the session the token
    stands for, or is refused, and never as the owner (an empty or malformed header does not count)."""
    if grant is None:
        return False
    try:
        check_token(grant)
    except GrantInvalid:
        return False
    return True


def _refuse_grant(grant: str | None, what: str) -> None:
    """`OwnerOnlyAction` when a grant token is presented: `what` belongs to the owner."""
    refuse_member_session(grant, what, "a grant token is presented")


def declared_endpoint(runtime: Runtime, op: Operation[Any, Any, Any], read_timeout: float) -> Endpoint:
    """The endpoint of a declared operation: its request decoded from path, query and body, run for the caller."""

    async def endpoint(request: Request) -> Response:
        try:
            grant = request.headers.get(GRANT_HEADER)
            if op.access is not Access.MEMBER:
                # Refused before the body is read: a member session learns nothing of an owner's route.
                _refuse_grant(grant, f"{op.route.method} {op.route.path}")
            executor = runtime._local.with_grant(grant, remote=True)
            body = None
            if op.route.method == "POST":
                body = await read_json_body(request, op.route.max_body, read_timeout)
            decoded = decode_request(op, request.path_params, request.query_params, body)
            member = request.path_params.get("member") if op.binds_member else None
            return json_response(await executor.arun(op, decoded, member))
        except Exception as error:  # noqa: BLE001 - every failure becomes its typed answer
            return _answer_error(op.name, request, error)

    return endpoint


def _answer_error(name: str, request: Request, error: Exception) -> Response:
    if isinstance(error, Refusal):
        return refused(error)
    if isinstance(error, ResidentError):
        return _typed(error)
    if isinstance(error, ClientDisconnect):
        return error_response(400, "ClientDisconnect", "the client went away before sending the whole body")
    if isinstance(error, OSError):
        return error_response(OS_ERROR_STATUS, type(error).__name__, os_error_message(error))
    logger.error("the API failed to answer %s %s (%s)", request.method, request.url.path, name, exc_info=error)
    return error_response(500, "InternalError", f"the runtime failed to answer ({type(error).__name__}); see its log")


def create_app(
    runtime: Runtime,
    token: str,
    hub: EventHub,
    *,
    max_in_flight: int = MAX_IN_FLIGHT,
    read_timeout: float = READ_TIMEOUT,
) -> ASGIApp:
    """The guarded API over `runtime`; `hub` serves its event stream; bodies arrive within `read_timeout` s."""
    document = openapi_document()

    async def openapi(request: Request) -> Response:
        try:
            _refuse_grant(request.headers.get(GRANT_HEADER), f"GET {OPENAPI_PATH}")
        except ResidentError as error:
            return _typed(error)
        return json_response(document)

    async def events(request: Request) -> Response:
        try:
            _refuse_grant(request.headers.get(GRANT_HEADER), f"GET {EVENTS_PATH}")
            return hub.response(request)
        except ResidentError as error:
            return _typed(error)

    table = [
        Route(op.route.path, declared_endpoint(runtime, op, read_timeout), methods=[op.route.method])
        for op in DECLARED
    ]
    app = Starlette(
        routes=[
            *table,
            Route(EVENTS_PATH, events, methods=["GET"]),
            Route(OPENAPI_PATH, openapi, methods=["GET"]),
        ],
        exception_handlers={
            HTTPException: routing_error_handler("this API", _SERVED),
            Exception: unexpected_error_handler("the runtime"),
        },
    )
    # A redirect is not part of the API; "/v1/health/" is simply an unknown path.
    app.router.redirect_slashes = False
    return Guard(app, token, max_in_flight=max_in_flight)
