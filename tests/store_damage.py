"""Damaging a home's data file on purpose, the way a bad disk or a stray write would.

Pages are found by what they hold: a record's row in the `records` table is its id (the key)
followed by its encoding; its copy in the event log is the same encoding behind the msgpack key
`record`. LMDB 0.9's pages are 4 KiB with a 16-byte header.
"""

from __future__ import annotations

import random
from pathlib import Path

from resident import Runtime
from resident.messages.events import encode_event
from resident.messages.memory import MemoryRecord, RecordAdmitted
from resident.store.home import current_store_dir
from resident.store.tables import RECORDS

__all__ = ["MARK", "PAGE", "data_file", "make_home", "rot_text", "scramble_pages", "stored"]

PAGE = 4096
_HEADER = 16
MARK = "zebra"


def data_file(home: Path) -> Path:
    return current_store_dir(home) / "data.mdb"


def make_home(home: Path, count: int, *, body: str = "") -> list[MemoryRecord]:
    """A home with memory on and `count` records of deven's (with `body` appended to each text)."""
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        member = runtime.member("deven")
        ids = []
        for index in range(count):
            ids.append(member.remember(f"note {index} about the {MARK} deploy {body}").id)
            # Its derived entries stored before the next write: the same commits in the same order
            # every run, so the data file's layout (which damage tests cut into) does not vary.
            runtime.memory.wait_indexed()
        with runtime._internal.store.reader() as reader:
            records = [reader.get(RECORDS, record_id) for record_id in ids]
    assert all(records)
    return [record for record in records if record is not None]


def stored(home: Path, record: MemoryRecord) -> tuple[list[int], list[int]]:
    """Byte offsets of `record`'s row in the records table and of its copy in the event log.

    Each is a list: LMDB copies a page on write, so freed pages still hold older copies, and
    damage meant for the live copy is done to all of them.
    """
    data = data_file(home).read_bytes()
    encoded = RECORDS.encode(record)
    rows = [at + len(record.id) for at in _all(data, record.id.encode() + encoded)]
    assert rows, f"no row of {record.id} in the data file"
    event = encode_event(RecordAdmitted(at=record.recorded_at, record=record))
    logged = [at + event.index(encoded) for at in _all(data, event)]
    assert logged, f"no event of {record.id} in the data file"
    return rows, logged


def _all(data: bytes, needle: bytes) -> list[int]:
    found: list[int] = []
    at = data.find(needle)
    while at >= 0:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def rot_text(home: Path, offsets: list[int], text: str = MARK) -> None:
    """At each offset, replace the next occurrence of ASCII `text` by the same text reversed."""
    path = data_file(home)
    data = bytearray(path.read_bytes())
    for offset in offsets:
        at = data.find(text.encode(), offset)
        assert at >= 0
        data[at : at + len(text)] = text[::-1].encode()
    path.write_bytes(bytes(data))


def scramble_pages(home: Path, offsets: list[int], seed: int = 7) -> None:
    """Overwrite everything but the header of each page holding one of `offsets` with noise."""
    path = data_file(home)
    noise = random.Random(seed).randbytes(PAGE - _HEADER)
    with path.open("r+b") as stream:
        for page in {offset // PAGE for offset in offsets}:
            stream.seek(page * PAGE + _HEADER)
            stream.write(noise)
