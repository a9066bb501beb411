"""Realm: the governance service memory records are replicated to, and its HTTP client.

Realm runs as its own process on loopback (`serve`); the runtime's replication actor talks to it
through `RealmClient`, with the token Realm issued to its home. Its rules (`judge`) decide whether a
record is accepted or a conflict, and its invalidation feed withdraws accepted records. Every name
below is loaded on first use: a runtime that only needs the client never imports starlette or
uvicorn, and the `resident` command reads a token file (`resident.realm.tokens`) without loading
httpx or LMDB.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from resident.realm.app import create_app
    from resident.realm.client import RealmClient
    from resident.realm.governance import DELEGATED_PROMOTION, Precedent, different_content_reason, judge
    from resident.realm.server import serve
    from resident.realm.state import RealmState

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


_MODULES = {
    "DELEGATED_PROMOTION": "governance", "Precedent": "governance", "RealmClient": "client", "RealmState": "state",
    "create_app": "app", "different_content_reason": "governance", "judge": "governance", "serve": "server",
}


def __getattr__(name: str) -> Any:
    # Deferred on purpose, see the docstring.
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
