"""`Runtime.connect(home)`: the runtime a `resident up` process serves, used from Python like `Runtime.open`.

    with Runtime.connect("~/team") as rt:
        deven = rt.member("deven")
        receipt = deven.remember("the staging deploy needs the migration first")
        hits = await deven.arecall("deploy order")
        for item in rt.events():          # live: writes, replication, progress, actor crashes
            ...

The surfaces mirror the in-process facade: `rt.memory` (enable, disable, status), `rt.member(name)`
(remember, recall, get, forget, reconcile, each with its awaitable twin), `rt.replication` (status,
sync), `rt.coordinator` (progress, correct), `rt.reconcile`, `rt.statistics()`. They take the same
arguments, return the same structs and raise the same typed errors, checked by the server.
Differences: `sync` waits at most 120 s per call; coordination sessions (dispatch, grant tokens)
stay in the process that runs them; closing a connected runtime closes the connection, not the
runtime (stop that with `resident down`).

Importing this module loads httpx and msgspec, not the runtime, numpy or LMDB.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from resident.api import routes, wire
from resident.api.discovery import DISCOVERY_FILE, check_version, pid_alive, read_discovery
from resident.api.remote import RemoteExecutor
from resident.api.statuses import error_from_body
from resident.api.transport import StreamItem, Transport
from resident.errors import InvalidInput, ResidentError, RuntimeNotUp, UnknownMember
from resident.memory.records import ActivationLike, as_activation, utf8_text
from resident.messages.coordination import Correction, Progress
from resident.messages.memory import MemoryRecord, MemoryStatus, RecallHit, Receipt, Reconciled
from resident.messages.replication import RecordReplication, ReplicationCounts
from resident.messages.supervision import SupervisorStatistics
from resident.operations.surfaces import AppsSurface

__all__ = ["RemoteMember", "RemoteRuntime", "StreamItem", "connect"]

# A sync's answer comes when it settles or at its deadline; the request waits a little longer.
_SYNC_MARGIN = 15.0


def _many_body(items: Iterable[Mapping[str, Any]]) -> wire.RememberMany:
    batch = tuple(dict(item) if isinstance(item, Mapping) else item for item in items)
    if len(batch) > wire.MAX_REMEMBER_ITEMS:
        raise InvalidInput(
            f"remember_many takes at most {wire.MAX_REMEMBER_ITEMS} items at once, not {len(batch)}; split them"
        )
    return wire.RememberMany(items=batch)


def _outcomes(answer: wire.RememberedMany) -> list[Receipt | ResidentError]:
    """Each item's receipt, or its refusal raised again as the typed error the runtime raised."""
    return [
        outcome.receipt if outcome.receipt is not None
        else error_from_body(outcome.error or wire.ErrorDetail(type="ApiError", message="no outcome"), 400)
        for outcome in answer.outcomes
    ]


def _wait(timeout: float | None) -> float | None:
    # How long the HTTP request may take: the caller's ask timeout plus the trip back.
    return None if timeout is None else timeout + 5.0


class RemoteMember:
    """A member's memory surface over the wire; every call has an awaitable twin."""

    def __init__(self, runtime: RemoteRuntime, name: str) -> None:
        self._transport = runtime._transport
        self.name = name

    def __repr__(self) -> str:
        return f"<RemoteMember {self.name}>"

    @staticmethod
    def _remember_body(
        text: str | bytes, summary: str | bytes | None, activation: ActivationLike, options: dict[str, Any]
    ) -> wire.Remember:
        try:
            return wire.Remember(
                text=utf8_text(text, "text"), summary=None if summary is None else utf8_text(summary, "summary"),
                activation=as_activation(activation), **options,
            )
        except TypeError as error:
            raise InvalidInput(f"remember: {error}; see Member.remember for its options") from None

    def remember(
        self,
        text: str | bytes,
        *,
        summary: str | bytes | None = None,
        activation: ActivationLike = None,
        timeout: float | None = None,
        **options: Any,
    ) -> Receipt:
        """Admit a memory durably (options as `Member.remember`: scope, kind, counterpart, world, ...)."""
        body = self._remember_body(text, summary, activation, options)
        receipt: Receipt = self._transport.call(routes.REMEMBER, body, timeout=_wait(timeout), member=self.name)
        return receipt

    async def aremember(
        self,
        text: str | bytes,
        *,
        summary: str | bytes | None = None,
        activation: ActivationLike = None,
        timeout: float | None = None,
        **options: Any,
    ) -> Receipt:
        body = self._remember_body(text, summary, activation, options)
        receipt: Receipt = await self._transport.acall(routes.REMEMBER, body, timeout=_wait(timeout), member=self.name)
        return receipt

    def remember_many(
        self, items: Iterable[Mapping[str, Any]], *, timeout: float | None = None
    ) -> list[Receipt | ResidentError]:
        """Admit many memories (as `Member.remember_many`): one outcome per item, its receipt or its refusal."""
        answer: wire.RememberedMany = self._transport.call(
            routes.REMEMBER_MANY, _many_body(items), timeout=_wait(timeout), member=self.name
        )
        return _outcomes(answer)

    async def aremember_many(
        self, items: Iterable[Mapping[str, Any]], *, timeout: float | None = None
    ) -> list[Receipt | ResidentError]:
        answer: wire.RememberedMany = await self._transport.acall(
            routes.REMEMBER_MANY, _many_body(items), timeout=_wait(timeout), member=self.name
        )
        return _outcomes(answer)

    @staticmethod
    def _recall_body(
        query: str | bytes, k: int, activation: ActivationLike, char_budget: int, include_inactive: bool
    ) -> wire.RecallQuery:
        return wire.RecallQuery(
            query=utf8_text(query, "query"), k=k, activation=as_activation(activation), char_budget=char_budget,
            include_inactive=include_inactive,
        )

    def recall(
        self,
        query: str | bytes,
        k: int = 10,
        *,
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        include_inactive: bool = False,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        """The member's best-matching served memories (at most `k`, within `char_budget` characters)."""
        body = self._recall_body(query, k, activation, char_budget, include_inactive)
        hits: wire.RecallHits = self._transport.call(routes.RECALL, body, timeout=_wait(timeout), member=self.name)
        return list(hits.hits)

    async def arecall(
        self,
        query: str | bytes,
        k: int = 10,
        *,
        activation: ActivationLike = None,
        char_budget: int = 8_000,
        include_inactive: bool = False,
        timeout: float | None = None,
    ) -> list[RecallHit]:
        body = self._recall_body(query, k, activation, char_budget, include_inactive)
        hits: wire.RecallHits = await self._transport.acall(
            routes.RECALL, body, timeout=_wait(timeout), member=self.name
        )
        return list(hits.hits)

    def get(self, record_id: str, *, timeout: float | None = None) -> MemoryRecord:
        """One record by id; `RecordWithheld` (with state and reason) if Realm withheld it."""
        record: MemoryRecord = self._transport.call(
            routes.GET_RECORD, timeout=_wait(timeout), member=self.name, record=record_id
        )
        return record

    async def aget(self, record_id: str, *, timeout: float | None = None) -> MemoryRecord:
        record: MemoryRecord = await self._transport.acall(
            routes.GET_RECORD, timeout=_wait(timeout), member=self.name, record=record_id
        )
        return record

    def forget(self, record_id: str, *, reason: str = "", timeout: float | None = None) -> None:
        """Retract a record: it stays stored, marked retracted, and is no longer recalled."""
        self._transport.call(
            routes.FORGET, wire.Forget(reason=reason), timeout=_wait(timeout), member=self.name, record=record_id
        )

    async def aforget(self, record_id: str, *, reason: str = "", timeout: float | None = None) -> None:
        await self._transport.acall(
            routes.FORGET, wire.Forget(reason=reason), timeout=_wait(timeout), member=self.name, record=record_id
        )

    def reconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
        timeout: float | None = None,
    ) -> Reconciled:
        """Settle a withheld record: roll it back, or re-admit it corrected (see `Member.reconcile`)."""
        body = _reconcile_body(rollback, readmit, text, canonical)
        result: Reconciled = self._transport.call(
            routes.MEMBER_RECONCILE, body, timeout=_wait(timeout), member=self.name, record=record_id
        )
        return result

    async def areconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
        timeout: float | None = None,
    ) -> Reconciled:
        body = _reconcile_body(rollback, readmit, text, canonical)
        result: Reconciled = await self._transport.acall(
            routes.MEMBER_RECONCILE, body, timeout=_wait(timeout), member=self.name, record=record_id
        )
        return result


def _reconcile_body(rollback: bool, readmit: bool, text: str | bytes | None, canonical: bool | None) -> wire.Reconcile:
    return wire.Reconcile(
        rollback=rollback, readmit=readmit, text=None if text is None else utf8_text(text, "text"), canonical=canonical
    )


class RemoteMemory:
    """`rt.memory` over the wire: memory on or off, and its status."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def enable(self, provider: str = "hindsight", embedder: str = "hash") -> bool:
        """Turn memory on; False if it was already on like this."""
        switch: wire.MemorySwitch = self._transport.call(
            routes.MEMORY_ENABLE, wire.EnableMemory(provider=provider, embedder=embedder)
        )
        return switch.changed

    def disable(self) -> bool:
        """Turn memory off (nothing is deleted); False if it was already off."""
        switch: wire.MemorySwitch = self._transport.call(routes.MEMORY_DISABLE, wire.NoBody())
        return switch.changed

    def status(self) -> MemoryStatus:
        status: MemoryStatus = self._transport.call(routes.MEMORY_STATUS)
        return status


class RemoteReplication:
    """`rt.replication` over the wire: where records stand with Realm, and pushing now."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def status(
        self, id: str | None = None, timeout: float | None = None  # noqa: A002 - the facade names it `id`
    ) -> ReplicationCounts | RecordReplication:
        """Counts per state (at most 1,000 withheld ids listed); with `id`, that record's replication."""
        if id is None:
            counts: ReplicationCounts = self._transport.call(routes.REPLICATION_STATUS, timeout=_wait(timeout))
            return counts
        record: RecordReplication = self._transport.call(routes.REPLICATION_RECORD, timeout=_wait(timeout), record=id)
        return record

    def sync(self, timeout: float = 30.0) -> ReplicationCounts:
        """Push pending records and poll now; wait until nothing is pending or `timeout` (at most 120 s)."""
        # The server checks the timeout (a positive number up to 120); the request waits a little longer.
        wait = timeout + _SYNC_MARGIN if isinstance(timeout, int | float) and math.isfinite(timeout) else None
        counts: ReplicationCounts = self._transport.call(routes.SYNC, wire.Sync(timeout=timeout), timeout=wait)
        return counts


class RemoteCoordinator:
    """`rt.coordinator` over the wire: progress and owner corrections."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport

    def progress(self) -> Progress:
        progress: Progress = self._transport.call(routes.PROGRESS)
        return progress

    def correct(self, execution_id: str, note: str, *, by: str = "owner") -> Correction:
        correction: Correction = self._transport.call(
            routes.CORRECT, wire.Correct(execution=execution_id, note=note, by=by)
        )
        return correction


class RemoteRuntime:
    """The runtime of a home as a `resident up` process serves it; see the module docstring."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.home = Path(transport.discovery.home)
        self.address = transport.discovery.address
        self.memory = RemoteMemory(transport)
        self.replication = RemoteReplication(transport)
        self.coordinator = RemoteCoordinator(transport)
        self.apps = AppsSurface(RemoteExecutor(transport))
        self._roster: frozenset[str] = frozenset()

    @classmethod
    def connect(cls, home: str | os.PathLike[str] | None = None) -> RemoteRuntime:
        """Connect to the runtime up for `home` (else `$RESIDENT_HOME`, else the user data dir).

        `RuntimeNotUp` when none is (no discovery file, or its process is gone), `Unauthorized` when
        its token is refused.
        """
        path = _resolve(home)
        found = read_discovery(path)
        if found is None:
            raise RuntimeNotUp(f"no runtime is up for {path} (no {DISCOVERY_FILE}); start one with `resident up`")
        if not pid_alive(found.pid):
            raise RuntimeNotUp(
                f"the runtime recorded in {path / DISCOVERY_FILE} (pid {found.pid}) is gone; start it again with "
                "`resident up`"
            )
        runtime = cls(Transport(check_version(found)))
        try:
            runtime.members()  # proves the address and the token at once
        except BaseException:
            runtime.close()
            raise
        return runtime

    # -- surfaces ---------------------------------------------------------------------------------

    def member(self, name: str) -> RemoteMember:
        """The memory surface of one member of the roster (`UnknownMember` otherwise)."""
        if name not in self._roster:
            self.members()
            if name not in self._roster:
                known = ", ".join(sorted(self._roster))
                raise UnknownMember(f"no member named {name!r}; the roster is: {known}")
        return RemoteMember(self, name)

    def members(self) -> tuple[wire.MemberInfo, ...]:
        """The roster (configured and imported members)."""
        roster: wire.Members = self._transport.call(routes.MEMBERS)
        self._roster = frozenset(member.name for member in roster.members)
        return roster.members

    def reconcile(
        self,
        record_id: str,
        *,
        rollback: bool = False,
        readmit: bool = False,
        text: str | bytes | None = None,
        canonical: bool | None = None,
    ) -> Reconciled:
        """Reconcile a withheld record as the member who wrote it."""
        result: Reconciled = self._transport.call(
            routes.RECONCILE, _reconcile_body(rollback, readmit, text, canonical), record=record_id
        )
        return result

    def statistics(self) -> SupervisorStatistics:
        """Every supervised actor: state, restarts, buffered, dead letters."""
        statistics: SupervisorStatistics = self._transport.call(routes.STATISTICS)
        return statistics

    def health(self) -> wire.Health:
        health: wire.Health = self._transport.call(routes.HEALTH)
        return health

    def events(self, last_event_id: str | None = None) -> Iterator[StreamItem]:
        """The live event stream (from the beginning, or after `last_event_id`); see `resident.api.events`."""
        return self._transport.events(last_event_id)

    def aevents(self, last_event_id: str | None = None) -> AsyncIterator[StreamItem]:
        return self._transport.aevents(last_event_id)

    # -- closing ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (the runtime keeps running; `resident down` stops it)."""
        self._transport.close()

    async def aclose(self) -> None:
        """Close the connection, including this event loop's async client."""
        await self._transport.aclose()
        self._transport.close()

    def __enter__(self) -> RemoteRuntime:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> RemoteRuntime:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _resolve(home: str | os.PathLike[str] | None) -> Path:
    if home is not None and str(home) != "":
        return Path(home).expanduser().absolute()
    # The default home needs platformdirs' answer, which lives with the store's home rules.
    from resident.store.home import resolve_home  # noqa: PLC0415 - only for the default home

    return resolve_home(None)


def connect(home: str | os.PathLike[str] | None = None) -> RemoteRuntime:
    """The runtime `resident up` serves for `home`; see `RemoteRuntime.connect`."""
    return RemoteRuntime.connect(home)

