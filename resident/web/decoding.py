"""Reading a request body into its struct, and the refusal a server answers when it cannot.

Apart from the rest of `resident.web` (and from starlette): the `resident` command runs the API's
operations in-process when no runtime is up, and checks their bodies exactly as the server does.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

__all__ = ["Refusal", "decode_json"]

_T = TypeVar("_T")


class Refusal(Exception):
    """A request answered with an error status; raised inside a server, never escapes it.

    `details` are extra fields of the error object (JSON values), such as the ids it is about.
    """

    def __init__(self, status: int, kind: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.details = details


def decode_json(body: bytes, kind: type[_T]) -> _T:
    """`body` decoded as `kind`: malformed JSON and values outside the schema are 400s naming the problem."""
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise Refusal(400, "InvalidInput", f"invalid {kind.__name__}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise Refusal(400, "MalformedJSON", f"request body is not valid JSON: {exc}") from exc
