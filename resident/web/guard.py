"""What a loopback JSON server checks before a handler runs, and how it answers a refusal.

Every answer is JSON; a refusal is `{"error": {"type", "message"}}` with a 4xx status (plus any
fields that name what the error is about, such as Realm's `ids`). Two checks stop a web page in the
user's browser from reaching a loopback server: the `Host` header must name a loopback host (DNS
rebinding gives a page a foreign host name that resolves to 127.0.0.1), and a POST body must be
declared `application/json` (a cross-site form post, which needs no CORS preflight, can only send
form or text types). Bodies are read up to a bound and no further, and within a deadline: a client
that trickles its body would otherwise hold a connection (and a task) open for as long as it likes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from resident.loopback import is_loopback_host
from resident.web.decoding import Refusal, decode_json

__all__ = [
    "BEARER_CHALLENGE",
    "READ_TIMEOUT",
    "Refusal",
    "decode_json",
    "error_response",
    "host_header_name",
    "json_response",
    "read_json_body",
    "refused",
    "require_loopback_host",
    "routing_error_handler",
    "unexpected_error_handler",
]

# A whole request body arrives within this many seconds or is answered 408.
READ_TIMEOUT = 10.0
# What a 401 answer asks for (RFC 6750): a bearer token.
BEARER_CHALLENGE = 'Bearer realm="resident"'
# An oversized body is still read (and dropped) up to this size, so that a client that sends its
# whole body before it reads sees the 413 rather than a reset connection.
_DRAIN_LIMIT = 64 * 1024 * 1024


def refused(refusal: Refusal) -> Response:
    """The answer to a refused request."""
    return error_response(refusal.status, refusal.kind, refusal.message, **refusal.details)


def json_response(body: Any, status: int = 200) -> Response:
    """`body` (a struct, or builtins) encoded as JSON."""
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json")


def error_response(status: int, kind: str, message: str, **details: Any) -> Response:
    """`{"error": {"type": kind, "message": message, **details}}` with `status`; a 401 also says it wants a token."""
    response = json_response({"error": {"type": kind, "message": message, **details}}, status)
    if status == 401:
        response.headers["WWW-Authenticate"] = BEARER_CHALLENGE
    return response


def host_header_name(value: str) -> str:
    """The host part of a `Host` header (`[::1]:8080` → `::1`, `localhost:80` → `localhost`)."""
    if value.startswith("["):
        return value[1 : value.find("]")]
    return value.rsplit(":", 1)[0]


def require_loopback_host(host_header: str, hint: str) -> None:
    """Refuse (421) a request whose `Host` is not 127.0.0.0/8, ::1 or localhost; `hint` says what to do."""
    if not is_loopback_host(host_header_name(host_header)):
        raise Refusal(421, "HostNotAllowed", hint)


async def read_json_body(request: Request, limit: int, timeout: float = READ_TIMEOUT) -> bytes:
    """The request body, which must be declared JSON (415), hold at most `limit` bytes (413) and
    arrive whole within `timeout` seconds (408)."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        raise Refusal(415, "UnsupportedMediaType", "send the body as JSON with Content-Type: application/json")
    drain_limit = max(limit, _DRAIN_LIMIT)
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > drain_limit
    chunks: list[bytes] = []
    size = 0
    if not too_large:
        try:
            async with asyncio.timeout(timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size <= limit:
                        chunks.append(chunk)
                    elif size > drain_limit:
                        break
        except TimeoutError:
            raise Refusal(
                408, "RequestTimeout", f"the request body did not arrive within {timeout:g} s; send it whole"
            ) from None
    if too_large or size > limit:
        raise Refusal(413, "BodyTooLarge", f"request body is larger than {limit} bytes; split it into smaller requests")
    return b"".join(chunks)


def routing_error_handler(server: str, served: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    """An exception handler for the router's 404 (unknown path) and 405 (wrong method), as typed JSON.

    `server` names the server and `served` lists what it serves, for the 404 message.
    """

    async def handle(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, HTTPException):
            return error_response(500, "InternalError", f"{server} failed to route the request ({type(exc).__name__})")
        if exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            response = error_response(
                405, "MethodNotAllowed", f"{request.method} is not allowed on {request.url.path}; use {allowed}"
            )
            response.headers["Allow"] = allowed
            return response
        if exc.status_code == 404:
            return error_response(404, "NotFound", f"no such path {request.url.path}; {server} serves {served}")
        return error_response(exc.status_code, "HTTPError", exc.detail)

    return handle


def unexpected_error_handler(server: str) -> Callable[[Request, Exception], Awaitable[Response]]:
    """The last-resort exception handler: 500 without details (the server logs the failure after it)."""

    async def handle(_request: Request, exc: Exception) -> Response:
        return error_response(500, "InternalError", f"{server} failed to handle the request ({type(exc).__name__}); "
                                                    "see its log")

    return handle
