"""The facade's methods, derived from the operations: one line per method, the same in every surface.

    class AppsSurface(Surface):
        create_bank = method(apps.CREATE_BANK)
        acreate_bank = awaitable(apps.CREATE_BANK)

`method(op)` is a method whose signature is the request struct's (mypy sees it through the ParamSpec of
`Operation`, `inspect.signature` and `help()` through `__signature__`): calling it builds the request
and hands it to the surface's `Executor`, then returns what the operation's `finish` makes of the reply.
`Runtime.open` gives the surfaces an executor that runs the service in this process; `Runtime.connect`
one that sends the request to a `resident up` server. Both build the very same surface classes, which
is what keeps the two APIs identical (`tests/test_facade_parity.py`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, overload

from resident.errors import InvalidArguments
from resident.operations.declaration import Operation

__all__ = ["Executor", "Surface", "awaitable", "method"]

P = ParamSpec("P")
Out = TypeVar("Out")


class Executor(Protocol):
    """Runs an operation's request for a surface: in this process, or over the loopback API."""

    def run(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        """The operation's reply struct for `request` (on `member`'s surface, when it is bound to one)."""

    async def arun(self, op: Operation[Any, Any, Any], request: Any, member: str | None) -> Any:
        """`run`, awaitable."""

    def with_grant(self, grant: str) -> Executor:
        """The same runtime, called by the member session whose grant token is `grant`."""


class Surface:
    """One facade (`rt.apps`, `rt.member(name)`, ...): operations run through one executor."""

    def __init__(self, executor: Executor, member: str | None = None) -> None:
        self._executor = executor
        self._member = member


def _request(op: Operation[Any, Any, Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The request a facade call makes; `InvalidArguments` (a `TypeError` too) for arguments it does not take."""
    try:
        return op.request(*args, **kwargs)
    except TypeError as error:
        raise InvalidArguments(f"{name}: {error}; it takes {op.signature()}") from None


def _described(function: Callable[..., Any], op: Operation[Any, Any, Any], name: str, returns: Any) -> None:
    function.__name__ = function.__qualname__ = name
    function.__doc__ = op.doc
    function.__signature__ = _signature(op, returns)  # type: ignore[attr-defined]


@functools.cache
def _signature(op: Operation[Any, Any, Any], returns: Any) -> inspect.Signature:
    return op.signature().replace(return_annotation=returns)


class method(Generic[P, Out]):  # noqa: N801 - used like the `property` it resembles
    """A blocking facade method derived from `op`."""

    def __init__(self, op: Operation[P, Any, Out]) -> None:
        self.op = op
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, surface: None, owner: type) -> method[P, Out]: ...

    @overload
    def __get__(self, surface: Surface, owner: type) -> Callable[P, Out]: ...

    def __get__(self, surface: Surface | None, owner: type) -> method[P, Out] | Callable[P, Out]:
        if surface is None:
            return self
        op, executor, member = self.op, surface._executor, surface._member

        def call(*args: P.args, **kwargs: P.kwargs) -> Out:
            return op.finish(executor.run(op, _request(op, self.name, args, kwargs), member))

        _described(call, op, self.name, op.reply if op.result is None else inspect.Signature.empty)
        # Cached on the surface: later lookups find the bound function without building it again.
        surface.__dict__[self.name] = call
        return call


class awaitable(Generic[P, Out]):  # noqa: N801 - used like the `property` it resembles
    """The awaitable twin of a facade method derived from `op` (`aremember` for `remember`)."""

    def __init__(self, op: Operation[P, Any, Out]) -> None:
        self.op = op
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, surface: None, owner: type) -> awaitable[P, Out]: ...

    @overload
    def __get__(self, surface: Surface, owner: type) -> Callable[P, Awaitable[Out]]: ...

    def __get__(self, surface: Surface | None, owner: type) -> awaitable[P, Out] | Callable[P, Awaitable[Out]]:
        if surface is None:
            return self
        op, executor, member = self.op, surface._executor, surface._member

        async def call(*args: P.args, **kwargs: P.kwargs) -> Out:
            reply = await executor.arun(op, _request(op, self.name, args, kwargs), member)
            return op.finish(reply)

        _described(call, op, self.name, inspect.Signature.empty)
        surface.__dict__[self.name] = call
        return call
