"""Scopes and bank names: which bank a memory goes to, and who may create which kind of bank.

Bank names are readable paths: `agent_core/deven`, `agent_dyadic/deven/alice`,
`world_shared/team`, `app_private/notes/cache`, `workspace_private/acme/drafts`.
`AGENT_*` and `WORLD_SHARED` banks are made by the runtime (on a member's first write there);
the app surface may create only `APP_PRIVATE` and `WORKSPACE_PRIVATE` banks.
"""

from __future__ import annotations

import re

from resident.errors import InvalidInput, ScopeNotAllowed, UnknownScope
from resident.messages.memory import SCOPES, Bank, Scope

__all__ = ["APP_SCOPES", "RUNTIME_SCOPES", "app_bank", "bank_name", "check_part", "parse_scope", "runtime_bank"]

RUNTIME_SCOPES: frozenset[Scope] = frozenset({"AGENT_CORE", "AGENT_DYADIC", "WORLD_SHARED"})
APP_SCOPES: frozenset[Scope] = frozenset({"APP_PRIVATE", "WORKSPACE_PRIVATE"})
_PART = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


def parse_scope(value: str) -> Scope:
    """A scope from its name, case-insensitively (`agent_core` → `AGENT_CORE`)."""
    normalized = value.strip().upper().replace("-", "_") if isinstance(value, str) else ""
    for scope in SCOPES:
        if scope == normalized:
            return scope
    raise UnknownScope(f"unknown scope {value!r}; use one of {', '.join(SCOPES)}")


def check_part(kind: str, value: str | None) -> str:
    """`value` if it may be part of a bank name (a member, counterpart, world, app or bank name)."""
    if not isinstance(value, str) or not _PART.match(value):
        raise InvalidInput(
            f"{kind} {value!r} is not valid: use 1-32 lower-case letters, digits, '-' or '_', starting with a letter"
        )
    return value


def bank_name(scope: Scope, owner: str, *, counterpart: str | None = None, world: str | None = None,
              name: str | None = None) -> str:
    """The readable name of the bank a scope and its parts designate."""
    if scope == "AGENT_CORE":
        return f"agent_core/{check_part('member', owner)}"
    if scope == "AGENT_DYADIC":
        if counterpart is None:
            raise InvalidInput("AGENT_DYADIC memories need a counterpart (--counterpart NAME)")
        if counterpart == owner:
            raise InvalidInput("a dyadic memory is about someone else; use AGENT_CORE for the member itself")
        return f"agent_dyadic/{check_part('member', owner)}/{check_part('counterpart', counterpart)}"
    if scope == "WORLD_SHARED":
        if world is None:
            raise InvalidInput("WORLD_SHARED memories need a world (--world NAME)")
        return f"world_shared/{check_part('world', world)}"
    prefix = "app_private" if scope == "APP_PRIVATE" else "workspace_private"
    kind = "app" if scope == "APP_PRIVATE" else "workspace"
    return f"{prefix}/{check_part(kind, owner)}/{check_part('bank', name)}"


def runtime_bank(scope: Scope, member: str, *, counterpart: str | None, world: str | None, at: float) -> Bank:
    """The runtime-made bank a member writes to for `scope` (never an app scope)."""
    if scope in APP_SCOPES:
        raise ScopeNotAllowed(
            f"members do not write {scope} banks; those belong to apps (rt.apps.create_bank)"
        )
    # An option the scope does not use would be silently dropped; say so instead.
    if counterpart is not None and scope != "AGENT_DYADIC":
        raise InvalidInput(f"a counterpart goes with AGENT_DYADIC memories, not {scope}; drop it or change the scope")
    if world is not None and scope != "WORLD_SHARED":
        raise InvalidInput(f"a world goes with WORLD_SHARED memories, not {scope}; drop it or change the scope")
    name = bank_name(scope, member, counterpart=counterpart, world=world)
    return Bank(
        name=name,
        scope=scope,
        owner=world if scope == "WORLD_SHARED" and world is not None else member,
        counterpart=counterpart if scope == "AGENT_DYADIC" else None,
        world=world if scope == "WORLD_SHARED" else None,
        created_at=at,
        created_by="runtime",
    )


def app_bank(owner: str, scope: Scope, name: str, *, at: float) -> Bank:
    """A bank created through the app surface; only `APP_PRIVATE` and `WORKSPACE_PRIVATE` are allowed."""
    if scope not in APP_SCOPES:
        raise ScopeNotAllowed(
            f"apps may create only APP_PRIVATE or WORKSPACE_PRIVATE banks, not {scope}; "
            f"{scope} banks are managed by the runtime"
        )
    return Bank(
        name=bank_name(scope, owner, name=name),
        scope=scope,
        owner=owner,
        created_at=at,
        created_by="app",
    )
