"""Typed errors across the wire: which HTTP status each `ResidentError` gets, and back again.

The server answers an error with `{"error": {"type", "message"}}` (the class name and its one-line
message, as the CLI prints them) and the status from `STATUS_BY_ERROR`, found by walking the
error's class hierarchy, so a new leaf inherits its parent's status. The client turns the body
back into the same class, so `except RecordWithheld` works the same in and out of process.
Refusals of bad input are 4xx; a runtime that cannot serve right now (restarting actor, stopped
runtime, failing store, Realm or embedder down) is 503, which a caller may retry.

An operating-system error from a file operation the request asked for (a backup into a folder that
may not be written) is answered 400 with the builtin's name (`PermissionError`) and the one line the
CLI prints for it, and a client raises that builtin again: so such a failure reads the same in and
out of process too.
"""

from __future__ import annotations

from resident.errors import (
    ActorUnavailable,
    BackupInvalid,
    CognitionDisabled,
    CognitionUnavailable,
    ConfigError,
    DiskFull,
    EmbedderNotLoopback,
    EmbedderUnavailable,
    EntryNotFound,
    ExecutionSettled,
    ExportInvalid,
    GrantExceeded,
    GrantInvalid,
    HarnessNotFound,
    HomeInUse,
    HomeReadOnly,
    InvalidInput,
    KnowledgeDisabled,
    MapFull,
    MemoryDisabled,
    NotVisible,
    ProjectionRefused,
    PromotionRefused,
    RealmRejected,
    RealmUnavailable,
    RecordNotFound,
    RecordWithheld,
    ResidentError,
    RuntimeNotUp,
    RuntimeStopped,
    SandboxUnavailable,
    SchemaMismatch,
    ScopeNotAllowed,
    ShutdownTimeout,
    StateChanged,
    StateDiverged,
    StoreBusy,
    StoreClosed,
    StoreCorrupted,
    StoreFailed,
    TooManySubscribers,
    Unauthorized,
    UnknownBank,
    UnknownChange,
    UnknownExecution,
    UnknownMember,
    UnknownPrinciple,
    UnknownQuestion,
    UnknownSession,
    UnknownSkill,
    WriteFailed,
)
from resident.messages.outcomes import ErrorBody, ErrorDetail, detail_of, error_of

__all__ = [
    "OS_ERROR_STATUS",
    "STATUS_BY_ERROR",
    "error_body",
    "error_from_body",
    "os_error_from_body",
    "status_of",
]

STATUS_BY_ERROR: dict[type[ResidentError], int] = {
    InvalidInput: 400,
    ConfigError: 400,
    ExportInvalid: 400,
    BackupInvalid: 400,
    EmbedderNotLoopback: 400,
    Unauthorized: 401,
    NotVisible: 403,
    ScopeNotAllowed: 403,
    GrantExceeded: 403,
    GrantInvalid: 403,
    UnknownMember: 404,
    UnknownBank: 404,
    UnknownExecution: 404,
    RecordNotFound: 404,
    UnknownSkill: 404,
    UnknownPrinciple: 404,
    UnknownQuestion: 404,
    UnknownChange: 404,
    MemoryDisabled: 409,
    RecordWithheld: 409,
    RealmRejected: 409,
    HomeInUse: 409,
    HomeReadOnly: 409,
    SchemaMismatch: 409,
    StateDiverged: 409,
    ExecutionSettled: 409,
    TooManySubscribers: 429,
    ActorUnavailable: 503,
    RuntimeStopped: 503,
    RuntimeNotUp: 503,
    StoreClosed: 503,
    StoreFailed: 503,
    WriteFailed: 503,
    EmbedderUnavailable: 503,
    RealmUnavailable: 503,
    CognitionUnavailable: 503,
    ShutdownTimeout: 503,
    StoreBusy: 503,
    StoreCorrupted: 503,
    # Insufficient Storage: the write fits once the disk (or the map's limit) has room again.
    DiskFull: 507,
    MapFull: 507,
    # Knowledge and sessions: unknown ones are 404, a switched-off feature or a lost race a conflict.
    EntryNotFound: 404,
    UnknownSession: 404,
    KnowledgeDisabled: 409,
    CognitionDisabled: 409,
    PromotionRefused: 409,
    StateChanged: 409,
    ProjectionRefused: 409,
    HarnessNotFound: 400,
    SandboxUnavailable: 400,
}
_DEFAULT_STATUS = 400
OS_ERROR_STATUS = 400
# The operating-system errors a client raises again by name (others come back as `OSError`).
_OS_ERRORS: dict[str, type[OSError]] = {
    kind.__name__: kind
    for kind in (
        OSError, PermissionError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
    )
}


def os_error_from_body(detail: ErrorDetail) -> OSError | None:
    """The builtin error an answer names (`PermissionError`, ...), None when it names none."""
    kind = _OS_ERRORS.get(detail.type)
    return None if kind is None else kind(detail.message)


def status_of(error: ResidentError) -> int:
    """The HTTP status of `error`: that of its nearest class in `STATUS_BY_ERROR`."""
    for cls in type(error).__mro__:
        status = STATUS_BY_ERROR.get(cls)
        if status is not None:
            return status
    return _DEFAULT_STATUS


def error_body(error: ResidentError) -> ErrorBody:
    """The wire form of `error`; a withheld record also names its id, state and reason."""
    return ErrorBody(error=detail_of(error))


def error_from_body(detail: ErrorDetail, status: int) -> ResidentError:
    """The `ResidentError` a client raises for an error answer (`ApiError` for types it does not know)."""
    return error_of(detail, status)
