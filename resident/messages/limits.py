"""Bounds every surface applies to a memory record, the runtime's and Realm's alike.

A record's text stays within `MAX_SUMMARY_CHARS` and `MAX_BODY_CHARS`; a record id is printable
ASCII without spaces and at most `MAX_RECORD_ID_CHARS` long, so it is safe in a URL, a log line and
an LMDB key (511 bytes at most, and Realm keys its decisions by id and digest together).
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_RECORD_ID_CHARS",
    "MAX_SUMMARY_CHARS",
    "RECORD_ID_PATTERN",
    "RecordId",
    "is_record_id",
]

MAX_SUMMARY_CHARS = 500
MAX_BODY_CHARS = 16_000
MAX_RECORD_ID_CHARS = 200
RECORD_ID_PATTERN = rf"^[!-~]{{1,{MAX_RECORD_ID_CHARS}}}$"
RecordId = Annotated[str, msgspec.Meta(pattern=RECORD_ID_PATTERN)]
_RECORD_ID = re.compile(RECORD_ID_PATTERN)


def is_record_id(value: object) -> bool:
    """Whether `value` is a well-formed record id (see the module docstring)."""
    return isinstance(value, str) and _RECORD_ID.fullmatch(value) is not None
