"""An operation, declared once: its request and reply structs, who may call it, its service and its route.

The request struct is at once the Python signature of the facade method, the HTTP body and the source of
the command line's options; the reply struct is what every surface answers. From one `Operation` the
in-process facade and `Runtime.connect`'s client derive their methods (`resident.operations.facade`),
the loopback API its route, and `/openapi.json` its entry, so the surfaces cannot drift apart.

The service is named, not imported (`"resident.runtime.apps.services:create_bank"`): declarations are
light, so the remote client and the command line can load them without the runtime, numpy or LMDB.
`tests/test_operations.py` resolves every service and checks its signature against the declaration.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Literal, ParamSpec, TypeVar, overload
from urllib.parse import quote

import msgspec

__all__ = ["MAX_BODY_BYTES", "Access", "Operation", "Route", "declare"]

P = ParamSpec("P")
Reply = TypeVar("Reply")
Out = TypeVar("Out")

# A remember of the longest text (16,000 characters), every one escaped as \\uXXXX, fits.
MAX_BODY_BYTES = 256 * 1024

_SEGMENT = re.compile(r"\{(\w+)\}")


class Access(enum.Enum):
    """Who may call an operation."""

    # The home's owner only: a request presenting a member's grant token is refused (OwnerOnlyAction).
    OWNER = "owner"
    # The owner, or a member session acting as its own member within its grant.
    MEMBER = "member"
    # A host acting for one of its apps or workspaces (with the home's token); never a member session.
    APP = "app"


@dataclass(frozen=True, slots=True)
class Route:
    """Where the loopback API serves an operation.

    Each `{segment}` of the path is the request field of that name, except `{member}`, which is the
    member the surface is bound to (`rt.member(name)`). A GET takes its other fields from the query
    string; a POST from its JSON body, at most `max_body` bytes.
    """

    method: Literal["GET", "POST"]
    path: str
    max_body: int = MAX_BODY_BYTES
    # How long a client waits for the answer when the request names no timeout of its own (seconds; None: the
    # client's default). An ingest of thousands of files answers when it is done.
    wait: float | None = None

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(_SEGMENT.findall(self.path))


@dataclass(frozen=True, eq=False)
class Operation(Generic[P, Reply, Out]):
    """One operation of the runtime (see the module's docstring); build it with `declare`."""

    name: str
    summary: str
    request: Callable[P, Any]
    reply: type[Reply]
    route: Route
    service: str
    access: Access = Access.OWNER
    # The awaitable service, where one avoids a thread hop (member memory calls await their actor).
    aservice: str | None = None
    # What the facade returns for a reply (`RecallHits` → its list of hits); the reply itself by default.
    result: Callable[[Reply], Out] | None = None
    # Statuses the route may answer besides 200, with what each means here (documented in /openapi.json).
    statuses: tuple[int, ...] = ()
    _resolved: dict[str, Callable[..., Any]] = field(default_factory=dict, repr=False)

    def url(self, **params: str) -> str:
        """The path with each segment filled in, escaped so a value stays one segment."""
        return self.route.path.format(**{name: quote(params[name], safe="") for name in self.route.segments})

    @property
    def request_type(self) -> type[msgspec.Struct]:
        kind: type[msgspec.Struct] = self.request  # type: ignore[assignment]  # declared with a Struct class
        return kind

    @cached_property
    def path_fields(self) -> tuple[str, ...]:
        """The request fields the route carries in its path (the bound member is not one)."""
        return tuple(name for name in self.route.segments if name != "member" or not self.binds_member)

    @cached_property
    def binds_member(self) -> bool:
        """Whether the operation is called on a member's surface: its path names `{member}` and its request
        holds no field of that name (where it does, the segment is that field)."""
        return "member" in self.route.segments and "member" not in self.request_type.__struct_fields__

    def finish(self, reply: Reply) -> Out:
        """What the facade returns for `reply`."""
        if self.result is None:
            return reply  # type: ignore[return-value]  # declared without `result`: Out is Reply
        return self.result(reply)

    def service_function(self, awaitable: bool = False) -> Callable[..., Any] | None:
        """The service (or its awaitable twin; None when there is none), imported on first use."""
        reference = self.aservice if awaitable else self.service
        if reference is None:
            return None
        function = self._resolved.get(reference)
        if function is None:
            module, _, name = reference.partition(":")
            function = getattr(importlib.import_module(module), name)
            self._resolved[reference] = function
        return function

    def signature(self) -> inspect.Signature:
        """The facade method's signature: the request's fields, returning what `finish` returns."""
        return self._signature

    @cached_property
    def _signature(self) -> inspect.Signature:
        # Computed once: a surface is made per call of `rt.member(name)`, and inspecting a struct costs tens of µs.
        return inspect.signature(self.request)

    @cached_property
    def doc(self) -> str:
        """The facade method's docstring: the operation's summary, then the request's."""
        return f"{self.summary}.\n\n{inspect.getdoc(self.request) or ''}".rstrip()


@overload
def declare(
    name: str, summary: str, request: Callable[P, Any], reply: type[Reply], *, route: Route, service: str,
    access: Access = ..., aservice: str | None = ..., result: None = ..., statuses: tuple[int, ...] = ...,
) -> Operation[P, Reply, Reply]: ...


@overload
def declare(
    name: str, summary: str, request: Callable[P, Any], reply: type[Reply], *, route: Route, service: str,
    access: Access = ..., aservice: str | None = ..., result: Callable[[Reply], Out], statuses: tuple[int, ...] = ...,
) -> Operation[P, Reply, Out]: ...


def declare(
    name: str,
    summary: str,
    request: Callable[P, Any],
    reply: type[Reply],
    *,
    route: Route,
    service: str,
    access: Access = Access.OWNER,
    aservice: str | None = None,
    result: Callable[[Reply], Any] | None = None,
    statuses: tuple[int, ...] = (),
) -> Operation[P, Reply, Any]:
    """Declare an operation (see `Operation`)."""
    if not (isinstance(request, type) and issubclass(request, msgspec.Struct)):
        raise TypeError(f"{name}: the request must be a msgspec Struct class")
    fields = set(msgspec.structs.fields(request) and (f.name for f in msgspec.structs.fields(request)))
    missing = [segment for segment in route.segments if segment not in fields and segment != "member"]
    if missing:
        raise TypeError(f"{name}: the path names {missing}, which the request {request.__name__} does not hold")
    return Operation(
        name=name, summary=summary, request=request, reply=reply, route=route, service=service, access=access,
        aservice=aservice, result=result, statuses=statuses,
    )
