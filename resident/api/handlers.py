"""What each operation of the API does to the runtime: one small handler per row of `routes.OPERATIONS`.

A handler gets the open runtime, the path segments and the decoded body, calls the same facade a
Python host calls, and returns the answer struct. Member calls use the facade's awaitable twins (the
event loop never blocks on an actor); the other facade calls block, so they run in the thread pool.
Errors are not caught here: the app turns every `ResidentError` into its typed answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from starlette.concurrency import run_in_threadpool

from resident.api import routes, wire
from resident.errors import ResidentError
from resident.messages.replication import ReplicationCounts

if TYPE_CHECKING:
    from resident.runtime import Member, Runtime

__all__ = ["HANDLERS", "Call", "Handler"]


@dataclass(frozen=True, slots=True)
class Call:
    """One request, decoded: the runtime it is for, its path segments, and its body (None without one)."""

    runtime: Runtime
    params: Mapping[str, str]
    body: Any

    def member(self) -> Member:
        """The member the path names (`UnknownMember` when it is not on the roster)."""
        return self.runtime.member(self.params["member"])


Handler = Callable[[Call], Awaitable[Any]]


def _bounded(counts: ReplicationCounts) -> ReplicationCounts:
    # Every withheld id would make the answer grow with the store; the first ones are enough to act on.
    if len(counts.withheld) <= wire.MAX_LISTED_IDS:
        return counts
    return msgspec.structs.replace(counts, withheld=counts.withheld[: wire.MAX_LISTED_IDS])


async def health(call: Call) -> wire.Health:
    try:
        call.runtime.check_open()
    except ResidentError:
        return wire.Health(status="stopped")
    return wire.Health(status="ok")


async def memory_status(call: Call) -> Any:
    return await run_in_threadpool(call.runtime.memory.status)


async def memory_enable(call: Call) -> wire.MemorySwitch:
    body: wire.EnableMemory = call.body
    changed = await run_in_threadpool(call.runtime.memory.enable, body.provider, body.embedder)
    return wire.MemorySwitch(changed=changed, enabled=True)


async def memory_disable(call: Call) -> wire.MemorySwitch:
    changed = await run_in_threadpool(call.runtime.memory.disable)
    return wire.MemorySwitch(changed=changed, enabled=False)


async def members(call: Call) -> wire.Members:
    config = call.runtime.config
    roster = (*config.members, *config.extra_members)
    return wire.Members(
        members=tuple(wire.MemberInfo(name=m.name, role=m.role, worlds=tuple(m.worlds)) for m in roster),
        coordinator=config.coordinator,
    )


async def remember(call: Call) -> Any:
    fields = msgspec.structs.asdict(call.body)
    text = fields.pop("text")
    return await call.member().aremember(text, **fields)


async def recall(call: Call) -> wire.RecallHits:
    body: wire.RecallQuery = call.body
    hits = await call.member().arecall(
        body.query, body.k, activation=body.activation, char_budget=body.char_budget,
        include_inactive=body.include_inactive,
    )
    return wire.RecallHits(hits=tuple(hits))


async def get_record(call: Call) -> Any:
    return await call.member().aget(call.params["record"])


async def forget(call: Call) -> wire.Forgotten:
    record = call.params["record"]
    await call.member().aforget(record, reason=call.body.reason)
    return wire.Forgotten(id=record)


async def member_reconcile(call: Call) -> Any:
    body: wire.Reconcile = call.body
    return await call.member().areconcile(
        call.params["record"], rollback=body.rollback, readmit=body.readmit, text=body.text, canonical=body.canonical
    )


async def reconcile(call: Call) -> Any:
    body: wire.Reconcile = call.body
    return await run_in_threadpool(
        lambda: call.runtime.reconcile(
            call.params["record"], rollback=body.rollback, readmit=body.readmit, text=body.text,
            canonical=body.canonical,
        )
    )


async def replication_status(call: Call) -> ReplicationCounts:
    counts = await run_in_threadpool(call.runtime.replication.status)
    return _bounded(counts)  # type: ignore[arg-type]  # without an id, status() answers counts


async def replication_record(call: Call) -> Any:
    return await run_in_threadpool(call.runtime.replication.status, call.params["record"])


async def sync(call: Call) -> ReplicationCounts:
    return _bounded(await run_in_threadpool(call.runtime.replication.sync, call.body.timeout))


async def progress(call: Call) -> Any:
    return await run_in_threadpool(call.runtime.coordinator.progress)


async def correct(call: Call) -> Any:
    body: wire.Correct = call.body
    return await run_in_threadpool(lambda: call.runtime.coordinator.correct(body.execution, body.note, by=body.by))


async def statistics(call: Call) -> Any:
    return call.runtime.statistics()


HANDLERS: dict[str, Handler] = {
    routes.HEALTH.name: health,
    routes.MEMORY_STATUS.name: memory_status,
    routes.MEMORY_ENABLE.name: memory_enable,
    routes.MEMORY_DISABLE.name: memory_disable,
    routes.MEMBERS.name: members,
    routes.REMEMBER.name: remember,
    routes.RECALL.name: recall,
    routes.GET_RECORD.name: get_record,
    routes.FORGET.name: forget,
    routes.MEMBER_RECONCILE.name: member_reconcile,
    routes.RECONCILE.name: reconcile,
    routes.REPLICATION_STATUS.name: replication_status,
    routes.REPLICATION_RECORD.name: replication_record,
    routes.SYNC.name: sync,
    routes.PROGRESS.name: progress,
    routes.CORRECT.name: correct,
    routes.STATISTICS.name: statistics,
}
