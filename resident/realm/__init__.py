"""Realm: the governance service memory records are replicated to, and its HTTP client.

Realm runs as its own process on loopback (`serve`); the runtime's replication actor talks to it
through `RealmClient`. Its rules (`judge`) decide whether a record is accepted or a conflict, and
its invalidation feed withdraws accepted records. The server side (`serve`, `create_app`) is loaded
on first use, so a runtime that only needs the client never imports starlette or uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.realm.client import RealmClient
from resident.realm.governance import DELEGATED_PROMOTION, different_content_reason, judge
from resident.realm.state import RealmState

if TYPE_CHECKING:
    from resident.realm.server import create_app, serve

__all__ = [
    "DELEGATED_PROMOTION",
    "RealmClient",
    "RealmState",
    "create_app",
    "different_content_reason",
    "judge",
    "serve",
]

_SERVER_NAMES = frozenset({"create_app", "serve"})


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from resident.realm import server  # noqa: PLC0415 - deferred on purpose, see the docstring

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
