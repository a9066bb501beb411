"""A typed error as data, and what each item of a batch came to: the same on the wire and in this process.

An error travels as `{"type", "message"}` (the `ResidentError` leaf's class name and its one-line
message, as the CLI prints them); a withheld record adds its id, state and reason. `detail_of` and
`error_of` turn one into the other, so `except RecordWithheld` works the same in and out of process,
and an item a batch refused is reported as the error that refused it.
"""

from __future__ import annotations

import msgspec

import resident.errors as errors_module
from resident.errors import ApiError, RecordWithheld, ResidentError
from resident.messages.memory import Receipt

__all__ = ["ErrorBody", "ErrorDetail", "ItemOutcome", "RememberedMany", "detail_of", "error_of"]


class ErrorDetail(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """`type` is the error's class name (a `ResidentError` leaf); a withheld record adds id, state, reason."""

    type: str
    message: str
    id: str | None = None
    state: str | None = None
    reason: str | None = None


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    """Every 4xx and 5xx answer: `{"error": {"type": ..., "message": ...}}`, as the CLI prints it."""

    error: ErrorDetail


class ItemOutcome(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one item of a `remember_many` came to: its receipt, or the error that refused it."""

    index: int
    receipt: Receipt | None = None
    error: ErrorDetail | None = None


class RememberedMany(msgspec.Struct, frozen=True, kw_only=True):
    """One outcome per item, in the order of the items."""

    outcomes: tuple[ItemOutcome, ...]


def detail_of(error: ResidentError) -> ErrorDetail:
    """`error` as data; a withheld record also names its id, state and reason."""
    message = " ".join(error.message.split())
    if isinstance(error, RecordWithheld):
        return ErrorDetail(
            type=type(error).__name__, message=message, id=error.record_id, state=error.state, reason=error.reason
        )
    return ErrorDetail(type=type(error).__name__, message=message)


def error_of(detail: ErrorDetail, status: int) -> ResidentError:
    """The `ResidentError` that `detail` stands for (`ApiError` for a type this version does not know)."""
    cls = getattr(errors_module, detail.type, None)
    if not (isinstance(cls, type) and issubclass(cls, ResidentError) and detail.type in errors_module.__all__):
        return ApiError(f"{detail.type} (HTTP {status}): {detail.message}")
    if issubclass(cls, RecordWithheld):  # RecordCorrupted too
        withheld: ResidentError = cls(
            detail.message, record_id=detail.id or "", state=detail.state or "", reason=detail.reason or ""
        )
        return withheld
    error: ResidentError = cls(detail.message)
    return error
