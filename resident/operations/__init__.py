"""Operations, each declared once (`declaration`), and the facade derived from them (`facade`, `surfaces`).

Light on purpose: msgspec and the message structs only, so the remote client and the command line
load the whole table without the runtime.
"""

from __future__ import annotations

from resident.operations import apps
from resident.operations.declaration import Access, Operation, Route, declare

__all__ = ["DECLARED", "Access", "Operation", "Route", "declare"]

# Every operation declared this way, in the order the API lists them.
DECLARED: tuple[Operation, ...] = (apps.CREATE_BANK, apps.BANKS, apps.REMEMBER, apps.RECALL)  # type: ignore[type-arg]
