"""Runs declared operations over the loopback API: the executor behind `Runtime.connect`'s surfaces.

A request is encoded from its operation's route (`resident.operations.wire`) and sent with the home's
token (and a member session's grant token, when the client acts for one); the answer is decoded into
the reply struct, or raised as the typed error the runtime raised. The request waits for the call's own
`timeout`, when it has one, plus the trip back.

Light on purpose: httpx, msgspec and the declarations, nothing of the runtime.
"""

from __future__ import annotations

from typing import Any

from resident.api.transport import Transport
from resident.api.wire import GRANT_HEADER
from resident.coordination.tokens import check_token
from resident.operations.declaration import Operation
from resident.operations.wire import encode

__all__ = ["RemoteExecutor"]

# How much longer than the call's own timeout its request may take: the trip there and back, and a runtime
# that answers at its deadline while inside one request to Realm (bounded by Realm's request timeout).
_MARGIN = 15.0


def _wait(op: Operation[Any, Any, Any], request: Any) -> float | None:
    timeout = getattr(request, "timeout", None)
    if timeout is None:
        return op.route.wait
    return float(timeout) + _MARGIN


class RemoteExecutor:
    """Operations sent to the `resident up` server that `transport` talks to."""

    def __init__(self, transport: Transport, grant: str | None = None) -> None:
        self._transport = transport
        # A member session's grant token, presented with every request (besides the home's token).
        self._headers = {} if grant is None else {GRANT_HEADER: check_token(grant)}

    def with_grant(self, grant: str) -> RemoteExecutor:
        return RemoteExecutor(self._transport, grant)

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        encoded = encode(op, request, member)
        return self._transport.send(encoded, op.reply, timeout=_wait(op, request), headers=self._headers)

    async def arun(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        encoded = encode(op, request, member)
        return await self._transport.asend(encoded, op.reply, timeout=_wait(op, request), headers=self._headers)
