"""What each operation of the API does to the runtime: one small handler per row of `routes.OPERATIONS`.

A handler gets the open runtime, who is calling, the path segments and the decoded body, calls the
same facade a Python host calls, and returns the answer struct. The same handlers serve the loopback
API and the `resident` command in-process (`resident.api.inprocess`), so a command answers the same
either way. Member memory calls use the facade's awaitable twins (the event loop never blocks on an
actor); the other facade calls block, so they go through `Call.blocking`, which the server runs in
its thread pool. Errors are not caught here: the server turns every `ResidentError` into its typed
answer.

`perform` is the one entry: it refuses a member session on an owner's operation, resolves the
caller from the presented grant token (exactly as the CLI does in-process), and runs the handler.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from resident.api import routes, wire
from resident.runtime.caller import Caller, refuse_member_session, resolve_caller
from resident.runtime.portability import export_document, import_document

if TYPE_CHECKING:
    from resident.runtime import Runtime

__all__ = ["HANDLERS", "Blocking", "Call", "Handler", "check_grant", "perform", "refuse_grant"]

_T = TypeVar("_T")
# Runs a blocking call without holding up the event loop (the server's thread pool), or in place.
Blocking = Callable[[Callable[[], Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Call:
    """One request, decoded: the runtime it is for, who calls, its path segments and its body (None without one)."""

    runtime: Runtime
    caller: Caller
    params: Mapping[str, str]
    body: Any
    blocking: Blocking


    async def run(self, function: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`function(*args, **kwargs)`, a blocking facade call, off the event loop."""
        result: _T = await self.blocking(partial(function, *args, **kwargs))
        return result


Handler = Callable[[Call], Awaitable[Any]]


async def perform(
    runtime: Runtime,
    op: routes.Operation,
    *,
    params: Mapping[str, str],
    body: Any,
    grant: str | None,
    blocking: Blocking,
) -> Any:
    """Run `op` for the caller the grant token `grant` stands for (the owner when None)."""
    check_grant(op, grant)
    caller = Caller() if grant is None else await blocking(partial(resolve_caller, runtime, grant))
    return await HANDLERS[op.name](Call(runtime, caller, params, body, blocking))


def check_grant(op: routes.Operation, grant: str | None) -> None:
    """`OwnerOnlyAction` when a grant token is presented for an operation no member session may call."""
    if not op.member:
        refuse_grant(grant, f"{op.method} {op.path}")


def refuse_grant(grant: str | None, what: str) -> None:
    """`OwnerOnlyAction` when a grant token is presented: `what` belongs to the owner."""
    refuse_member_session(grant, what, "a grant token is presented")


def _by(caller: Caller) -> str:
    """Who an action is recorded as done by: the session's member, or the owner."""
    return caller.member or "owner"


# -- the home ------------------------------------------------------------------------------------


# -- memory --------------------------------------------------------------------------------------


async def export(call: Call) -> Any:
    return await call.run(export_document, call.runtime, call.params["member"])


async def import_member(call: Call) -> wire.Imported:
    body: wire.ImportMember = call.body
    result = await call.run(import_document, call.runtime, body.data, body.source, body.world)
    return wire.Imported(
        member=result.member, imported=result.imported, skipped=result.skipped, joined=result.joined,
        sessions=result.sessions,
    )


HANDLERS: dict[str, Handler] = {
    routes.EXPORT.name: export,
    routes.IMPORT.name: import_member,
}
