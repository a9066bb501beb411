"""One request of a declared operation and its answer, whichever HTTP client carries them.

A request is the operation's method, its path with the segments filled in, the body encoded as JSON
(`resident.operations.wire.encode`) and the headers that go with it (the home's token, and a member
session's grant token). An answer is decoded into the operation's reply struct, or raised as the
same `ResidentError` the runtime raised (`statuses.error_from_body`); a body that is neither is
`ApiError`. Both the Python client (`transport`, over httpx) and the `resident` command (`oneshot`,
over the standard library) use these, so they read the wire the same way.

Light on purpose: msgspec and the message structs only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from resident.api.discovery import Discovery
from resident.api.statuses import error_from_body, os_error_from_body
from resident.api.wire import GRANT_HEADER, ErrorBody
from resident.errors import ApiError, RuntimeNotUp

__all__ = ["Request", "auth_headers", "decode_error", "decode_reply", "unreachable"]


@dataclass(frozen=True, slots=True)
class Request:
    """What to send for one operation: method, path, body (None for none) and its headers."""

    method: str
    path: str
    content: bytes | None
    headers: dict[str, str]


def auth_headers(discovery: Discovery, grant: str | None = None) -> dict[str, str]:
    """The home's token (none for a sandboxed session, which cannot read it), and a member session's grant token."""
    # A session's view holds its proof key, not the home's token: that key is never sent anywhere.
    owner = discovery.token and not discovery.session
    headers = {"Authorization": f"Bearer {discovery.token}"} if owner else {}
    if grant is not None:
        headers[GRANT_HEADER] = grant
    return headers


def decode_reply(reply: type[Any], status: int, content: bytes, name: str = "") -> Any:
    """A 200 answer decoded as `reply`; any other answer raised as its typed error."""
    if status == 200:
        try:
            return msgspec.json.decode(content, type=reply)
        except msgspec.DecodeError as error:
            raise ApiError(f"the answer to {name or reply.__name__} is not what the API promises ({error})") from None
    raise decode_error(status, content)


def decode_error(status: int, content: bytes) -> Exception:
    """The `ResidentError` an error answer stands for (`ApiError` for a body that is not an API error)."""
    try:
        body = msgspec.json.decode(content, type=ErrorBody)
    except msgspec.DecodeError:
        shown = content[:200].decode("utf-8", "replace")
        return ApiError(f"HTTP {status} with a body that is not an API error: {shown!r}")
    return os_error_from_body(body.error) or error_from_body(body.error, status)


def unreachable(discovery: Discovery, error: BaseException) -> RuntimeNotUp:
    """The error for a server that did not answer at all."""
    return RuntimeNotUp(
        f"the runtime of {discovery.home} at {discovery.address} does not answer "
        f"({type(error).__name__}: {error}); is `resident up` still running?"
    )
