"""Runs declared operations in this process: the executor behind `Runtime.open`'s surfaces and the API server.

It decides who is calling (the owner, or the member session a presented grant token stands for) and
refuses a caller the operation's access rule does not admit, then calls the service with the runtime's
`Context`. Blocking calls run the service in the caller's thread; awaitable calls await the service's
awaitable twin where it has one, and otherwise run it in a worker thread so the event loop never waits
on an actor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from resident.operations.declaration import Access, Operation
from resident.runtime.caller import Caller, refuse_member_session
from resident.runtime.context import Call, Context

__all__ = ["LocalExecutor"]


class LocalExecutor:
    """Operations run against this process's runtime, as the owner or as the session of `grant`."""

    def __init__(
        self, context: Context, resolve: Callable[[str], Caller], grant: str | None = None, *, remote: bool = False
    ) -> None:
        self._context = context
        self._resolve = resolve
        self._grant = grant
        self._remote = remote
        # How a presented grant reached the runtime, for the owner-only refusal's message.
        self.presented = "a grant token is presented"

    def with_grant(
        self, grant: str | None, presented: str = "a grant token is presented", *, remote: bool = False
    ) -> LocalExecutor:
        """The same runtime, called by the session `grant` stands for (the owner when None); `remote` when the
        call came over the loopback API."""
        executor = LocalExecutor(self._context, self._resolve, grant, remote=remote)
        executor.presented = presented
        return executor

    def _call(self, op: Operation[Any, Any, Any], member: str | None) -> Call:
        if op.access is not Access.MEMBER:
            refuse_member_session(self._grant, f"{op.name} ({op.route.method} {op.route.path})", self.presented)
        caller = Caller() if self._grant is None else self._resolve(self._grant)
        if op.binds_member and not caller.is_owner:
            # A session acts as its own member only: naming another is refused (GrantExceeded).
            member = caller.acting_as(member)
        return Call(caller, member, self._remote)

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        service = op.service_function()
        assert service is not None  # every declaration names its service
        return service(self._context, self._call(op, member), request)

    async def arun(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        twin = op.service_function(awaitable=True)
        if twin is not None:
            return await twin(self._context, self._call(op, member), request)
        return await asyncio.to_thread(self.run, op, request, member)
