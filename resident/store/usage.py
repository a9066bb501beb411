"""Recall usage: how often recall served each record, counted in place rather than logged per read.

Every recall used to append a `RecordsRecalled` event (about 0.6 KB a flush), so a home's file grew
with its reads. Now the substrate's usage flush is a `Commit` with `usage` entries and no event,
and the writer adds them to one `USAGE` row per record in the same transaction as whatever else it
commits: a read rewrites a counter, it appends nothing.

A record's served usage is what its own row says (from `RecordsRecalled` events of older homes,
which still replay, or from an import) plus its counter (`with_usage`); every surface that hands a
record out (a read, an export) serves it so. The counters are not events, so a replay of the log
leaves them as they are: a home rebuilt from its log serves the same counts as the live one, and a
backup or restore copies them with the rest of the data file. Like the events they replace, they
are best effort: a flush lost in a crash only undercounts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import lmdb
import msgspec

from resident.messages.memory import MemoryRecord, RecallUsage
from resident.store.reader import Reader
from resident.store.tables import USAGE

__all__ = ["count_usage", "served_usage", "usage_entries", "with_usage"]


def usage_entries(ids: Iterable[str], at: float) -> tuple[tuple[str, int, float], ...]:
    """The `Commit.usage` of records served at `at`, once per id occurrence, one entry per record."""
    return tuple((record_id, times, at) for record_id, times in sorted(Counter(ids).items()))


def count_usage(
    txn: lmdb.Transaction, records_db: Any, usage_db: Any, usage: Sequence[tuple[str, int, float]]
) -> None:
    """Add `usage` to the counters inside the writer's transaction (records that do not exist are skipped)."""
    for record_id, times, at in usage:
        key = record_id.encode("utf-8")
        if times <= 0 or txn.get(key, db=records_db) is None:
            continue
        raw = txn.get(key, db=usage_db)
        before = RecallUsage() if raw is None else USAGE.decode(bytes(raw))
        last = at if before.last_at is None else max(before.last_at, at)
        txn.put(key, USAGE.encode(RecallUsage(count=before.count + times, last_at=last)), db=usage_db)


def served_usage(record: MemoryRecord, usage: RecallUsage | None) -> MemoryRecord:
    """`record` with its counter added to the usage its own row holds."""
    if usage is None or usage.count == 0:
        return record
    last = record.last_recalled_at
    if usage.last_at is not None:
        last = usage.last_at if last is None else max(last, usage.last_at)
    return msgspec.structs.replace(record, recall_count=record.recall_count + usage.count, last_recalled_at=last)


def with_usage(reader: Reader, record: MemoryRecord | None) -> MemoryRecord | None:
    """`record` as it is served: with its recall usage counted in."""
    if record is None:
        return None
    return served_usage(record, reader.get(USAGE, record.id))
