"""`/openapi.json`: the API described from the same table and structs that serve it.

Schemas come from `msgspec.json.schema_components` over every request, answer and event struct, so
a bound declared on a field (`k` from 1 to 100, text length, enumerations) is the bound the server
enforces. Paths come from the declared operations (`resident.operations.DECLARED`). The document is
OpenAPI 3.1 (its schemas are JSON Schema 2020-12, which msgspec writes).
"""

from __future__ import annotations

import typing
from typing import Any, Union

import msgspec

from resident.api import wire
from resident.messages.home_calls import API_VERSION
from resident.operations import DECLARED, Access, Operation
from resident.operations.home import HEALTH
from resident.operations.wire import schema_hook

__all__ = ["openapi_document"]

_REF = "#/components/schemas/{name}"
_PARAMETER_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200}
_GRANT_PARAMETER = {
    "name": wire.GRANT_HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "maxLength": 100},
    "description": "A member session's grant token: the call acts as that member, within that session's grant "
    "(an operation a member session may not call refuses any grant token with OwnerOnlyAction)",
}
_ERROR_STATUSES = {
    "4XX": "Refused: bad input (400), no or wrong token (401), not allowed (403), unknown member or record "
    "(404), wrong method (405), a body that did not arrive in time (408), state conflict such as memory off, "
    "a withheld record or a runtime that must be stopped first (409), body too large (413), body not declared "
    "JSON (415), foreign Host (421), too many subscribers or requests (429)",
    "500": "The runtime failed unexpectedly (the error is logged; the server keeps serving)",
    "503": "The runtime cannot serve right now (an actor restarting, the runtime stopped, the store, Realm "
    "or embedder failing); retry",
    "507": "The disk or the store's map is full (DiskFull, MapFull): nothing was written; free space and retry",
}


def _ref(kind: type[Any]) -> dict[str, str]:
    return {"$ref": _REF.format(name=kind.__name__)}


def _json_content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _reply_schema(reply: Any) -> dict[str, Any]:
    """A reference to the reply's schema; one of several for a reply that is a union of tagged structs."""
    members = typing.get_args(reply)
    if members:
        return {"oneOf": [_ref(member) for member in members]}
    return _ref(reply)


def _declared(op: Operation[Any, Any, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """The entry of a declared operation: its path fields, its query or body, every status it may answer."""
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _json_content(_reply_schema(op.reply))}}
    for status, description in _ERROR_STATUSES.items():
        responses[status] = {"description": description, "content": _json_content(_ref(wire.ErrorBody))}
    spec: dict[str, Any] = {"operationId": op.name, "summary": op.summary, "responses": responses}
    if op is HEALTH:
        spec["security"] = []
    fields = schemas[op.request_type.__name__]
    properties: dict[str, Any] = fields.get("properties", {})
    required = set(fields.get("required", ()))
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": properties.get(name, dict(_PARAMETER_SCHEMA))}
        for name in op.route.segments
    ]
    if op.route.method == "GET":
        parameters += [
            {"name": name, "in": "query", "required": name in required, "schema": schema}
            for name, schema in properties.items() if name not in op.path_fields
        ]
    else:
        body = {
            "type": "object",
            "properties": {name: schema for name, schema in properties.items() if name not in op.path_fields},
            "required": sorted(required - set(op.path_fields)),
            "additionalProperties": False,
        }
        if "description" in fields:
            body["description"] = fields["description"]
        spec["requestBody"] = {"required": True, "content": _json_content(body)}
    if op.access is Access.MEMBER:
        parameters.append(dict(_GRANT_PARAMETER))
    if parameters:
        spec["parameters"] = parameters
    return spec


def _events_operation() -> dict[str, Any]:
    responses: dict[str, Any] = {
        "200": {
            "description": "Server-sent events; each `data` is one event (its `type` is also the SSE `event` "
            "field) and each `id` resumes the stream when sent back as `Last-Event-ID`",
            "content": {"text/event-stream": {"schema": {"$ref": _REF.format(name="ApiEvents")}}},
        }
    }
    for status, description in _ERROR_STATUSES.items():
        responses[status] = {"description": description, "content": _json_content(_ref(wire.ErrorBody))}
    return {
        "operationId": "events",
        "summary": "Writes admitted, replication changes, withheld records, progress, actor crashes and restarts",
        "parameters": [
            {
                "name": "Last-Event-ID",
                "in": "header",
                "required": False,
                "schema": {"type": "string", "maxLength": 100},
                "description": "Resume after this event (the id of the last event received); wins over `from`",
            },
            {
                "name": "from",
                "in": "query",
                "required": False,
                "schema": {"type": "string", "enum": ["start", "now"], "default": "start"},
                "description": "`now`: replay nothing; the first event is `stream.started`, its id the current "
                "position",
            },
        ],
        "responses": responses,
    }


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the API."""
    kinds: list[Any] = [wire.ErrorBody]
    for declared in DECLARED:
        kinds.extend((*(typing.get_args(declared.reply) or (declared.reply,)), declared.request_type))
    events = Union[wire.API_EVENTS]  # type: ignore[valid-type]  # noqa: UP007 - a runtime union of a tuple
    _, components = msgspec.json.schema_components(
        [*dict.fromkeys(kinds), events], ref_template=_REF, schema_hook=schema_hook
    )
    components["ApiEvents"] = msgspec.json.schema(events, ref_template=_REF)
    components["ApiEvents"].pop("$defs", None)
    paths: dict[str, dict[str, Any]] = {}
    for declared in DECLARED:
        paths.setdefault(declared.route.path, {})[declared.route.method.lower()] = _declared(declared, components)
    for declared in DECLARED:
        # A request struct is the body's schema only without its path fields, so it is inlined, not shared.
        components.pop(declared.request_type.__name__, None)
    paths[wire.EVENTS_PATH] = {"get": _events_operation()}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "resident runtime API",
            "version": str(API_VERSION),
            "description": "The runtime of one home, served on loopback by `resident up`. Every request but "
            "health carries the home's token (from its api.json) as `Authorization: Bearer TOKEN`; every "
            "POST body is JSON (`Content-Type: application/json`).",
        },
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
