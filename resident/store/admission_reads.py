"""What admitting a remember reads from the store (`resident.memory.admission.AdmissionReads`).

One short LMDB read per question, in whichever thread admits: the caller's own
(`resident.runtime.memory.admissions`) or the member actor's.
"""

from __future__ import annotations

from resident.messages.memory import MemoryRecord
from resident.store.store import Store
from resident.store.tables import BANKS, RECORDS

__all__ = ["StoredReads"]


class StoredReads:
    """Does a bank exist, and the record being superseded, read from `store`.

    Banks are never deleted, so a bank once seen stored is remembered and not read again.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._banks: set[str] = set()

    def bank_exists(self, name: str) -> bool:
        if name in self._banks:
            return True
        with self._store.reader() as reader:
            exists = reader.get(BANKS, name) is not None
        if exists:
            self._banks.add(name)
        return exists

    def record(self, record_id: str) -> MemoryRecord | None:
        with self._store.reader() as reader:
            return reader.get(RECORDS, record_id)
