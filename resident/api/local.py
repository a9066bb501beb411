"""What only a call run in this process can carry: a progress callback for an ingest's files.

A command that runs its operations in-process (no runtime up) sets `INGEST_PROGRESS` around the
call, and the handler passes it to the ingest; a request over the wire has no one to report to, so
the server never sets it. Light: the command imports it before it knows where its call runs.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["INGEST_PROGRESS"]

# Called with (files done, files in all) as an ingest goes.
INGEST_PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("ingest_progress", default=None)
