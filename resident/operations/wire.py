"""An operation's request on the wire: the path, query and body it travels in, and back into its struct.

Both sides read the same declaration (`Operation.route`): the client (`encode`) puts the request's path
fields into the path, and its other fields into the query string (GET) or the JSON body (POST); the
server (`decode`) gathers them again and checks them against the struct, its bounds included. A field
may come one way only: a path field repeated in the body is refused.

Light: msgspec and the standard library.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import msgspec
import msgspec.inspect as types

from resident.operations.declaration import Operation
from resident.web.decoding import Refusal

__all__ = ["MAX_SEGMENT", "Encoded", "decode", "decode_hook", "encode", "encode_hook", "python_values", "schema_hook"]

# A path segment longer than this names nothing the runtime holds.
MAX_SEGMENT = 200
# A file path a request names is at most this long.
MAX_PATH = 4_096


@dataclass(frozen=True, slots=True)
class Encoded:
    """One request as HTTP carries it."""

    method: str
    path: str
    query: dict[str, str]
    body: bytes | None


def encode_hook(value: Any) -> Any:
    """How a value msgspec does not know travels: a path as its text."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise NotImplementedError(f"{type(value).__name__} does not travel in a request")


def decode_hook(kind: type, value: Any) -> Any:
    """A value msgspec does not know, read back: a path from its text."""
    if kind is Path:
        if not isinstance(value, str) or not value or len(value) > MAX_PATH or "\0" in value:
            raise ValueError(f"a path is 1 to {MAX_PATH} characters of text without NUL")
        return Path(value)
    raise NotImplementedError(f"{kind.__name__} does not travel in a request")


def schema_hook(kind: type) -> dict[str, Any]:
    """The JSON Schema of a value msgspec does not know: a path is text."""
    if kind is Path:
        return {"type": "string", "minLength": 1, "maxLength": MAX_PATH,
                "description": "a path on the runtime's machine"}
    raise NotImplementedError(f"{kind.__name__} has no schema")


def python_values(request: msgspec.Struct) -> msgspec.Struct:
    """`request` as a Python caller's values travel: text, a path, an activation, a list.

    A Python caller may hand text as bytes (the runtime checks them as UTF-8, `TextInvalid` otherwise), a
    path as a `Path`, an activation as a mapping, a batch as any iterable; JSON has no bytes (msgspec would
    send base64) nor paths, and an activation's unknown keys would be dropped by the server rather than
    refused as in process.
    """
    changes: dict[str, Any] = {}
    text_fields = _text_fields(type(request))
    for name in request.__struct_fields__:
        value = getattr(request, name)
        if isinstance(value, bytes | bytearray) and name in text_fields:
            from resident.memory.records import utf8_text  # noqa: PLC0415 - light: only when bytes were given

            changes[name] = utf8_text(bytes(value), name)
        elif name == "activation" and isinstance(value, Mapping):
            from resident.memory.records import as_activation  # noqa: PLC0415 - light: only for a mapping

            changes[name] = as_activation(value)
        elif isinstance(value, Iterator):
            changes[name] = tuple(value)
    return msgspec.structs.replace(request, **changes) if changes else request


@functools.cache
def _text_fields(kind: type[msgspec.Struct]) -> frozenset[str]:
    """The fields of `kind` that hold text (bytes given for one are the caller's text, not data)."""
    info = types.type_info(kind)
    assert isinstance(info, types.StructType)
    return frozenset(field.name for field in info.fields if _is_text(field.type))


def _is_text(kind: types.Type) -> bool:
    if isinstance(kind, types.Metadata):
        return _is_text(kind.type)
    if isinstance(kind, types.UnionType):
        return any(_is_text(member) for member in kind.types)
    return isinstance(kind, types.StrType)


def encode(op: Operation[Any, Any, Any], request: msgspec.Struct, member: str | None) -> Encoded:
    """`request` of `op` (on `member`'s surface) as method, path, query and body."""
    fields = msgspec.to_builtins(python_values(request), enc_hook=encode_hook)
    segments: dict[str, str] = {}
    if op.binds_member:
        segments["member"] = member or ""
    for name in op.path_fields:
        segments[name] = str(fields.pop(name))
    path = op.route.path.format(**{name: quote(value, safe="") for name, value in segments.items()})
    if op.route.method == "GET":
        query = {name: _query_value(value) for name, value in fields.items() if value is not None}
        return Encoded("GET", path, query, None)
    return Encoded("POST", path, {}, msgspec.json.encode(fields))


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise TypeError(f"a GET request carries only plain values in its query, not {type(value).__name__}")


def decode(
    op: Operation[Any, Any, Any], segments: Mapping[str, str], query: Mapping[str, str], body: bytes | None
) -> Any:
    """The request struct of `op` from its path segments, query string and body (`Refusal` when it is not one)."""
    kind = op.request_type
    if op.route.method == "GET":
        data: dict[str, Any] = dict(query)
    else:
        if query:
            raise Refusal(400, "InvalidInput", f"{op.route.method} {op.route.path} takes no query parameters; "
                          "send options in the body")
        data = _body_fields(body, kind.__name__)
    for name in op.path_fields:
        if name in data:
            raise Refusal(400, "InvalidInput", f"`{name}` comes from the path of {op.route.path}; leave it out")
        value = segments[name]
        if len(value) > MAX_SEGMENT:
            raise Refusal(400, "InvalidInput", f"the {name} in the path is longer than {MAX_SEGMENT} characters")
        data[name] = value
    try:
        # A query string carries only text: its numbers and booleans are read from it (not strict).
        return msgspec.convert(data, kind, strict=op.route.method != "GET", dec_hook=decode_hook)
    except msgspec.ValidationError as error:
        raise Refusal(400, "InvalidInput", f"invalid {kind.__name__}: {error}") from error


def _body_fields(body: bytes | None, name: str) -> dict[str, Any]:
    try:
        data = msgspec.json.decode(body or b"{}")
    except msgspec.DecodeError as error:
        raise Refusal(400, "MalformedJSON", f"request body is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise Refusal(400, "InvalidInput", f"invalid {name}: the body must be a JSON object")
    return data
