"""Base classes every message, event and stored record derives from.

All of them are frozen msgspec structs with keyword-only fields, so they are immutable when they
cross threads and can be encoded to msgpack for LMDB or JSON for HTTP. Families are tagged unions:
each concrete class sets a stable `tag` string (never derived from the class name, so renaming a
class cannot change the stored format), and one decoder per family dispatches on the `type` field.

None of them is tracked by the garbage collector (`gc=False`): they are immutable and hold only
other messages, scalars and plain containers of scalars, so they cannot form a reference cycle,
and the write path creates several per write — tracked, they made every collection longer.

Schema evolution follows msgspec's rules: a field added later must have a default, a field is
never renamed or given a new meaning, and unknown fields from newer writers are ignored.
"""

from __future__ import annotations

import msgspec

__all__ = ["Event", "Message", "Record"]


class Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """A command or reply passed between actors (and, for some, over the wire)."""


class Record(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A durable value stored under a key in one of the store's tables."""


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", gc=False):
    """An append-only fact about a state change, written in the same transaction as the change.

    `at` is wall-clock seconds taken from the runtime's clock by whoever created the event, so that
    replaying events rebuilds exactly the state that was written live.
    """

    at: float
