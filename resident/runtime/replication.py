"""`rt.replication`'s services: where records stand with Realm, and pushing now; which token a home uses.

Declared in `resident.operations.replication`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import msgspec

from resident.errors import ActorUnavailable, InvalidInput
from resident.ids import check_record_id
from resident.messages.home_calls import RecordReplicationQuery, ReplicationQuery, SyncRequest
from resident.messages.replication import GetReplicationStatus, RecordReplication, ReplicationCounts, SyncNow
from resident.realm.tokens import HOME_TOKEN_FILE, TOKEN_ENV, check_token, read_token_file
from resident.runtime.context import Call, Context

__all__ = ["CA_ENV", "MAX_LISTED_IDS", "home_realm_ca", "home_realm_token", "record", "status", "sync"]

# Names the CA bundle a home pins for Realm, over `[realm] ca_file`.
CA_ENV = "RESIDENT_REALM_CA"

# The actor answers a sync at its deadline, but it may be inside one Realm request (bounded by the
# request timeout) or restarting when the deadline falls; the caller waits this much longer.
ANSWER_MARGIN = 10.0
STATUS_TIMEOUT = 10.0
# Id lists in answers (withheld records in replication status) are cut to this many.
MAX_LISTED_IDS = 1_000


def status(context: Context, _call: Call, request: ReplicationQuery) -> ReplicationCounts | RecordReplication:
    """Counts per state (at most `MAX_LISTED_IDS` withheld ids listed); with `id`, that record's state, reason,
    attempts and last error."""
    context.check_open()
    result: ReplicationCounts | RecordReplication = context.replication.ask(
        GetReplicationStatus(id=None if request.id is None else check_record_id(request.id)),
        STATUS_TIMEOUT if request.timeout is None else request.timeout,
    )
    return _bounded(result) if isinstance(result, ReplicationCounts) else result


def record(context: Context, call: Call, request: RecordReplicationQuery) -> RecordReplication:
    """One record's replication state, reason and attempts."""
    answer = status(context, call, ReplicationQuery(request.record_id, timeout=request.timeout))
    assert isinstance(answer, RecordReplication)  # asked about one record, the actor answers about it
    return answer


def sync(context: Context, _call: Call, request: SyncRequest) -> ReplicationCounts:
    """Push pending records and poll invalidations now; wait until nothing is pending or `timeout`.

    Returns the counts either way: `pending == 0` means everything settled (records Realm
    refused stay pending, parked, and are counted).
    """
    context.check_open()
    timeout = request.timeout
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if not number or not math.isfinite(timeout) or timeout <= 0:
        raise InvalidInput(f"timeout must be a positive number of seconds, not {timeout!r}")
    try:
        counts: ReplicationCounts = context.replication.ask(SyncNow(timeout=float(timeout)), timeout + ANSWER_MARGIN)
    except ActorUnavailable:
        # The actor restarted (or stalled) before answering: report where things stand now.
        counts = context.replication.ask(GetReplicationStatus(), STATUS_TIMEOUT)
    return _bounded(counts)


def _bounded(counts: ReplicationCounts) -> ReplicationCounts:
    # Every withheld id would make the answer grow with the store; the first ones are enough to act on.
    if len(counts.withheld) <= MAX_LISTED_IDS:
        return counts
    return msgspec.structs.replace(counts, withheld=counts.withheld[:MAX_LISTED_IDS])


def home_realm_ca(home: Path, configured: str | None, explicit: str | None = None) -> str | None:
    """The CA bundle a home pins for Realm: `explicit`, else `$RESIDENT_REALM_CA`, else `[realm] ca_file`.

    A relative path is read from the home. None: the system's trust store (or `$SSL_CERT_FILE`).
    """
    chosen = explicit or os.environ.get(CA_ENV) or configured
    if not chosen:
        return None
    path = home / Path(chosen).expanduser()
    if not path.is_file():
        raise InvalidInput(f"the Realm CA bundle {path} does not exist")
    return str(path)


def home_realm_token(home: Path, explicit: str | None = None) -> str | None:
    """The token a home presents to Realm: `explicit`, else `$RESIDENT_REALM_TOKEN`, else `<home>/realm.token`.

    None when there is none: replication then reports Realm's 401 as its last error.
    """
    if explicit is not None:
        return check_token(explicit, "the Realm token given")
    from_env = os.environ.get(TOKEN_ENV)
    if from_env:
        return check_token(from_env, f"${TOKEN_ENV}")
    path = home / HOME_TOKEN_FILE
    if not path.exists():
        return None
    return read_token_file(path)
