"""A command's options from its operation's request struct: name, type, bounds, default and help, written once.

    @field_options(RememberRequest, ("kind", "summary", "importance"))
    def remember(..., kind: str, summary: str | None, importance: float) -> None:
        request = RememberRequest(text, kind=kind, summary=summary, importance=importance)

Each field becomes `--its-name` (underscores as dashes); a `Literal` is a choice, a bounded number a range, a
bool a flag, a tuple a repeatable option; the default is the struct's; the help is the field's
`Meta(description=...)`, the metavar its `Meta(extra={"metavar": ...})`. The description is the one
`/openapi.json` shows for the field, so the command's help and the API's document say the same.
A command still writes its own options where its shape differs from the request (an argument, or two options
that make one struct, such as `--domain` and `--project` for an activation).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click
import msgspec
import msgspec.inspect as types

from resident.cli.common import UTF8

__all__ = ["field_options"]

F = TypeVar("F", bound=Callable[..., Any])


def field_options(
    request: type[msgspec.Struct],
    fields: Sequence[str],
    *,
    kinds: Mapping[str, click.ParamType[Any]] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Callable[[F], F]:
    """Add an option for each of `fields` of `request`; `kinds` overrides a field's click type, `flags` the
    command line's name for it (`-k`, `--budget`), which then still fills the field."""
    info = types.type_info(request)
    assert isinstance(info, types.StructType)
    by_name = {field.name: field for field in info.fields}
    unknown = [name for name in fields if name not in by_name]
    if unknown:
        raise TypeError(f"{request.__name__} has no field {unknown}")

    def decorate(function: F) -> F:
        # click applies decorators bottom up: the first field's option is added last so it is listed first.
        for name in reversed(fields):
            function = _option(by_name[name], (kinds or {}).get(name), (flags or {}).get(name))(function)
        return function

    return decorate


def _option(field: types.Field, kind: click.ParamType[Any] | None, flag: str | None) -> Callable[[F], F]:
    annotation, description, extra = _unwrapped(field.type)
    names = (flag or "--" + field.name.replace("_", "-"), field.name)
    default = None if field.default is msgspec.NODEFAULT else field.default
    options: dict[str, Any] = {"help": description or None, "default": default, "metavar": extra.get("metavar")}
    if isinstance(annotation, types.BoolType):
        return click.option(*names, is_flag=True, help=description or None)
    if isinstance(annotation, types.TupleType | types.VarTupleType | types.ListType):
        options["multiple"] = True
        options["default"] = ()
        annotation = annotation.item_type if isinstance(annotation, types.VarTupleType | types.ListType) else annotation
    options["type"] = kind or _click_type(annotation)
    options["show_default"] = default not in (None, ())
    return click.option(*names, **options)


def _unwrapped(kind: types.Type) -> tuple[types.Type, str, dict[str, Any]]:
    """The field's type without `None` and metadata, its description and its extra."""
    description: str = ""
    extra: dict[str, Any] = {}
    while True:
        if isinstance(kind, types.Metadata):
            description = description or str((kind.extra_json_schema or {}).get("description", ""))
            extra = {**(kind.extra or {}), **extra}
            kind = kind.type
        elif isinstance(kind, types.UnionType) and sum(not isinstance(m, types.NoneType) for m in kind.types) == 1:
            kind = next(member for member in kind.types if not isinstance(member, types.NoneType))
        else:
            return kind, description, extra


def _click_type(kind: types.Type) -> click.ParamType[Any]:
    if isinstance(kind, types.LiteralType):
        return click.Choice([str(value) for value in kind.values])
    if isinstance(kind, types.IntType):
        return click.IntRange(kind.ge, kind.le) if kind.ge is not None or kind.le is not None else click.INT
    if isinstance(kind, types.FloatType):
        if kind.ge is not None or kind.le is not None:
            return click.FloatRange(kind.ge, kind.le)
        return click.FLOAT
    return UTF8
