"""Every declared operation is whole: its service exists and takes (context, call, request) -> reply, its route
names only fields its request holds, it is served by the API and listed in /openapi.json, and it is a method
(with its awaitable twin) of exactly one surface of the facade.
"""

from __future__ import annotations

import importlib
import inspect
import keyword
import pkgutil
import typing
from typing import Any

import pytest

from resident import operations
from resident.api.openapi import openapi_document
from resident.operations import DECLARED, Operation
from resident.operations.facade import Surface, awaitable, method
from resident.runtime.context import Call, Context


def _surface_entries() -> list[tuple[str, str, method[Any, Any] | awaitable[Any, Any]]]:
    modules = [importlib.import_module(f"resident.operations.{info.name}") for info in pkgutil.iter_modules(
        operations.__path__)]
    return [
        (kind.__name__, name, value)
        for module in modules
        for kind in vars(module).values()
        if isinstance(kind, type) and issubclass(kind, Surface) and kind.__module__ == module.__name__
        for name, value in vars(kind).items()
        if isinstance(value, method | awaitable)
    ]


@pytest.mark.parametrize("op", DECLARED, ids=lambda op: op.name)
def test_a_declared_service_takes_the_context_the_call_and_the_request_and_answers_the_reply(
    op: Operation[Any, Any, Any],
) -> None:
    for awaitable_twin in (False, True):
        service = op.service_function(awaitable=awaitable_twin)
        if service is None:
            assert awaitable_twin, f"{op.name} names no service"
            continue
        hints = typing.get_type_hints(service)
        parameters = list(inspect.signature(service).parameters)
        assert len(parameters) == 3, f"{op.service}: a service takes (context, call, request)"
        assert [hints[name] for name in parameters] == [Context, Call, op.request]
        returned = hints["return"]
        if awaitable_twin:
            returned = typing.get_args(returned)[-1] if typing.get_origin(returned) else returned
        assert returned == op.reply, f"{op.service} answers {returned}, the declaration says {op.reply}"


@pytest.mark.parametrize("op", DECLARED, ids=lambda op: op.name)
def test_a_declared_operation_is_served_and_documented(op: Operation[Any, Any, Any]) -> None:
    document = openapi_document()
    entry = document["paths"][op.route.path][op.route.method.lower()]
    assert entry["operationId"] == op.name
    for status in ("200", "4XX", "500", "503", "507"):
        assert status in entry["responses"], f"{op.name} does not document {status}"


def test_every_declared_operation_is_one_surface_method_and_its_awaitable_twin() -> None:
    entries = _surface_entries()
    for op in DECLARED:
        blocking = [(kind, name) for kind, name, entry in entries if isinstance(entry, method) and entry.op is op]
        twins = [(kind, name) for kind, name, entry in entries if isinstance(entry, awaitable) and entry.op is op]
        assert len(blocking) == 1, f"{op.name} is the method of {blocking}"
        assert len(twins) == 1, f"{op.name} has the awaitable twins {twins}"
        twin = "a" + blocking[0][1]
        twin += "_" if keyword.iskeyword(twin) else ""  # PEP 8: `async` becomes `async_`
        assert twins[0] == (blocking[0][0], twin), f"{op.name}: the twin of {blocking} is {twins}"
    declared = set(DECLARED)
    assert all(entry.op in declared for _, _, entry in entries), "a surface method whose operation is not declared"


def test_two_operations_never_share_a_name_or_a_route() -> None:
    assert len({op.name for op in DECLARED}) == len(DECLARED)
    assert len({(op.route.method, op.route.path) for op in DECLARED}) == len(DECLARED)
