"""Realm: the governance service memory records are replicated to, and its HTTP client.

Realm runs as its own process on loopback (`serve`); the runtime's replication actor talks to it
through `RealmClient`, with the token Realm issued to its home. Its rules (`judge`) decide whether a
record is accepted or a conflict, and its invalidation feed withdraws accepted records. The server
side (`serve`, `create_app`) is loaded on first use, so a runtime that only needs the client never
imports starlette or uvicorn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from resident.realm.client import RealmClient
from resident.realm.governance import DELEGATED_PROMOTION, Precedent, different_content_reason, judge
from resident.realm.state import RealmState

if TYPE_CHECKING:
    from resident.realm.app import create_app
    from resident.realm.server import serve

__all__ = [
    "DELEGATED_PROMOTION",
    "Precedent",
    "RealmClient",
    "RealmState",
    "create_app",
    "different_content_reason",
    "judge",
    "serve",
]


def __getattr__(name: str) -> Any:
    # Deferred on purpose, see the docstring.
    if name == "create_app":
        from resident.realm import app  # noqa: PLC0415

        return app.create_app
    if name == "serve":
        from resident.realm import server  # noqa: PLC0415

        return server.serve
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
