"""`rt.replication`: where records stand with Realm, and pushing now; which token a home uses."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from resident.errors import ActorUnavailable, InvalidInput
from resident.ids import check_record_id
from resident.messages.replication import GetReplicationStatus, RecordReplication, ReplicationCounts, SyncNow
from resident.realm.tokens import HOME_TOKEN_FILE, TOKEN_ENV, check_token, read_token_file

if TYPE_CHECKING:
    from resident.runtime.runtime import Runtime

__all__ = ["ReplicationControl", "home_realm_token"]

# The actor answers a sync at its deadline, but it may be inside one Realm request (bounded by the
# request timeout) or restarting when the deadline falls; the caller waits this much longer.
ANSWER_MARGIN = 10.0
STATUS_TIMEOUT = 10.0


class ReplicationControl:
    """Replication state per record and overall; `sync()` pushes and polls now and waits."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def status(
        self, id: str | None = None, timeout: float | None = None  # noqa: A002 - the spec names it `id`
    ) -> ReplicationCounts | RecordReplication:
        """Counts per state; with `id`, that record's state, reason, attempts and last error."""
        self._runtime.check_open()
        result: ReplicationCounts | RecordReplication = self._runtime._internal.wiring.replication.ask(
            GetReplicationStatus(id=None if id is None else check_record_id(id)),
            STATUS_TIMEOUT if timeout is None else timeout,
        )
        return result

    def sync(self, timeout: float = 30.0) -> ReplicationCounts:
        """Push pending records and poll invalidations now; wait until nothing is pending or `timeout`.

        Returns the counts either way: `pending == 0` means everything settled (records Realm
        refused stay pending, parked, and are counted).
        """
        self._runtime.check_open()
        number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
        if not number or not math.isfinite(timeout) or timeout <= 0:
            raise InvalidInput(f"timeout must be a positive number of seconds, not {timeout!r}")
        address = self._runtime._internal.wiring.replication
        try:
            counts: ReplicationCounts = address.ask(SyncNow(timeout=float(timeout)), timeout + ANSWER_MARGIN)
        except ActorUnavailable:
            # The actor restarted (or stalled) before answering: report where things stand now.
            counts = address.ask(GetReplicationStatus(), STATUS_TIMEOUT)
        return counts


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
