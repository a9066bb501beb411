"""The declared operations run in this process, against a runtime opened here, exactly as the server runs them.

When no runtime is up for a home, the `resident` command opens one itself and runs each command's
operations through `InProcess.run`: the same executor as the API (which also resolves who is calling
from a grant token), after the same checks of the request against the operation's struct, with the
reply passed through its JSON form. So a command prints the same bytes, exits with the same status and
refuses bad input with the same typed error whether a `resident up` served it or not; the only
difference is who opened the runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from resident.api.statuses import error_from_body
from resident.api.wire import ErrorDetail
from resident.operations.declaration import Operation
from resident.operations.wire import decode_hook, encode_hook, python_values
from resident.web.decoding import Refusal

if TYPE_CHECKING:
    from resident.runtime import Runtime

__all__ = ["InProcess"]


class InProcess:
    """Operations on a runtime open in this process; `grant` acts as a member session."""

    def __init__(self, runtime: Runtime, grant: str | None = None) -> None:
        self.runtime = runtime
        self._grant = grant

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None = None) -> Any:
        """Run a declared operation's `request` as the server would: checked against its struct's bounds first,
        and the reply passed through its JSON form."""
        checked = self._checked(op.request_type, python_values(request))
        executor = self.runtime._local.with_grant(self._grant)
        reply = executor.run(op, checked, member)
        return msgspec.json.decode(msgspec.json.encode(reply), type=op.reply)

    @staticmethod
    def _checked(kind: type[Any], body: Any) -> Any:
        """`body` as the server would decode it: within the bounds its struct declares."""
        try:
            encoded = msgspec.json.encode({} if body is None else body, enc_hook=encode_hook)
            return msgspec.json.decode(encoded, type=kind, dec_hook=decode_hook)
        except msgspec.ValidationError as error:
            detail = ErrorDetail(type="InvalidInput", message=f"invalid {kind.__name__}: {error}")
            raise error_from_body(detail, 400) from None
        except Refusal as refusal:
            raise error_from_body(ErrorDetail(type=refusal.kind, message=refusal.message), refusal.status) from None
