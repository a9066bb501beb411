"""The bounds an operation's request declares on its fields, checked wherever a request is decoded.

They are wide on purpose: the runtime checks the finer rules itself (text length, visibility,
activation) and answers with its own typed errors, which say more than a schema can. A bound here
keeps what a request may carry finite and is written into `/openapi.json` beside the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec

__all__ = [
    "MAX_CHAR_BUDGET", "MAX_RECALL_K", "Budget", "FilePath", "Name", "Named", "Note", "RecallK", "RecordRef",
    "Seconds", "Text", "Timestamp", "Unit",
]

# Recall answers at most this many hits, within at most this many characters of memory text.
MAX_RECALL_K = 100
MAX_CHAR_BUDGET = 200_000

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# A name the runtime checks itself (an empty one is its UnknownMember or InvalidInput, with its own words).
Named = Annotated[str, msgspec.Meta(max_length=200)]
RecordRef = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
# Wider than any text the runtime admits, so that its own TextInvalid says what is too long.
Text = Annotated[str, msgspec.Meta(max_length=64_000)]
Note = Annotated[str, msgspec.Meta(max_length=4_000)]
Unit = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
# Seconds since the epoch, up to the year 5138: enough for any real timestamp, no inf.
Timestamp = Annotated[float, msgspec.Meta(ge=0.0, le=1e11)]
# How long a call may wait for the runtime, in seconds: from one (an actor answers a plain question well within
# it; less would only turn a healthy runtime's answer into a timeout) to a day.
Seconds = Annotated[float, msgspec.Meta(ge=1.0, le=86_400.0)]
RecallK = Annotated[int, msgspec.Meta(ge=1, le=MAX_RECALL_K)]
Budget = Annotated[int, msgspec.Meta(ge=1, le=MAX_CHAR_BUDGET)]
# A path on the runtime's machine: a `Path` in Python, text on the wire (`resident.operations.wire` converts it).
FilePath = Path
