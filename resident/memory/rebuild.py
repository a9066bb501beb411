"""Rebuilding the recall index from what LMDB holds: the records, their stored terms, one embedder's vectors.

The index is a cache; LMDB is the truth. A (re)started substrate reads three columns in one read
transaction — every record, the terms stored beside them, and the current embedder's run of the
vectors table — and `rebuild_index` turns them into a `RecallIndex` without touching LMDB again,
so the rule can be tested on plain bytes: a rebuild from stored columns equals the live index.

Speed (100k records, the 2-core machine): only what the index keeps of a record is decoded
(`IndexEntry`); keyword terms come from the terms table instead of analysing every text again;
the vectors are stacked on the second core while this thread decodes records and terms; and the
cyclic garbage collector is paused while a few hundred thousand acyclic objects are made. Records
without current terms (written before terms were stored, or by an older analysis) are analysed
here, and their terms handed back to be stored.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from resident.memory.index import IndexEntry, RecallIndex
from resident.memory.records import indexed_text
from resident.memory.stored_terms import decode_terms, split_terms
from resident.memory.stored_vectors import stored_matrix
from resident.memory.text import Terms, term_ids_batch
from resident.messages.memory import MemoryRecord

__all__ = ["Rebuilt", "StoredColumns", "aligned", "index_columns", "rebuild_index"]

Buffer = bytes | memoryview
T = TypeVar("T")
# A stored record decoded as just what the index keeps of it (see `IndexEntry`).
_STORED_ENTRY = msgspec.msgpack.Decoder(IndexEntry)
_STORED_RECORD = msgspec.msgpack.Decoder(MemoryRecord)


@dataclass(frozen=True)
class StoredColumns:
    """What a rebuild reads: record keys and values in key order, and the terms and vectors tables'
    keys (record ids; the vectors' without their embedder prefix) and values."""

    record_keys: list[bytes]
    records: Sequence[Buffer]
    term_keys: list[bytes]
    terms: Sequence[Buffer]
    vector_keys: list[bytes]
    vectors: Sequence[Buffer]


@dataclass(frozen=True)
class Rebuilt:
    """The rebuilt index, and the terms of records that had none stored (by record id), to store."""

    index: RecallIndex
    unstored_terms: list[tuple[str, npt.NDArray[np.uint64]]]


def rebuild_index(columns: StoredColumns, embedder: str) -> Rebuilt:
    """The recall index of the stored records, with `embedder`'s vectors (others' count as missing)."""
    index = RecallIndex()
    return Rebuilt(index, index_columns(index, columns, embedder))


Unstored = list[tuple[str, npt.NDArray[np.uint64]]]


def index_columns(index: RecallIndex, columns: StoredColumns, embedder: str) -> Unstored:
    """Add the stored records of `columns` that `index` lacks, with `embedder`'s vectors; the terms of
    records that had none stored (by record id), to store.

    A whole rebuild is one call; an index built a chunk at a time (`resident.memory.build`) makes one
    per chunk, and skips records indexed meanwhile because their commit was published to it.
    """
    columns = _not_indexed(index, columns)
    count = len(columns.record_keys)
    if not count:
        return []
    with _bulk_load():
        rows, vectors = aligned(columns.record_keys, columns.vector_keys, columns.vectors)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="resident-rebuild") as pool:
            # The vectors are mostly copied, which lets go of the interpreter lock: assembled on the
            # other core while this thread decodes records and terms.
            stacked = pool.submit(stored_matrix, rows, vectors, count, embedder)
            entries: list[IndexEntry] = _decode_records(_STORED_ENTRY, columns.record_keys, columns.records)
            terms, unstored = _stored_terms(columns)
            matrix, present = stacked.result()
        index.add(entries, matrix, present, terms)
    return unstored


def _not_indexed(index: RecallIndex, columns: StoredColumns) -> StoredColumns:
    """`columns` without the records `index` holds already (their terms and vectors are matched by key)."""
    if not len(index):
        return columns
    keep = [row for row, key in enumerate(columns.record_keys) if key.decode("utf-8") not in index]
    if len(keep) == len(columns.record_keys):
        return columns
    return StoredColumns(
        [columns.record_keys[row] for row in keep],
        [columns.records[row] for row in keep],
        columns.term_keys,
        columns.terms,
        columns.vector_keys,
        columns.vectors,
    )


def aligned(keys: list[bytes], stored_keys: list[bytes], stored: Sequence[Buffer]) -> tuple[list[int], list[Buffer]]:
    """The `stored` values that belong to `keys`: which row of `keys` each belongs to, and the value.

    One pass rather than a lookup per key: at 100k records, a sizeable part of a rebuild. Values
    whose key is not among `keys` are left out.
    """
    if stored_keys == keys:
        # Keyed by record id like the records, with a value for every record: they line up.
        return list(range(len(keys))), list(stored)
    row_of = {key: row for row, key in enumerate(keys)}
    rows: list[int] = []
    values: list[Buffer] = []
    for key, value in zip(stored_keys, stored, strict=True):
        row = row_of.get(key)
        if row is not None:
            rows.append(row)
            values.append(value)
    return rows, values


def _stored_terms(columns: StoredColumns) -> tuple[Terms, list[tuple[str, npt.NDArray[np.uint64]]]]:
    """`(row, term)` pairs for `RecallIndex.add`: stored terms, and an analysis of the texts without;
    and the terms of those, by record id, to be stored."""
    keys = columns.record_keys
    rows, values = aligned(keys, columns.term_keys, columns.terms)
    (docs, terms), covered = decode_terms(rows, values, len(keys))
    missing = np.flatnonzero(~covered)
    if not len(missing):
        return (docs, terms), []
    ids = [keys[row].decode("utf-8") for row in missing.tolist()]
    rows = missing.tolist()
    records = _decode_records(_STORED_RECORD, [keys[row] for row in rows], [columns.records[row] for row in rows])
    texts = [indexed_text(record) for record in records]
    analysed = term_ids_batch(texts)
    analysed_docs, analysed_terms = analysed
    joined = (
        np.concatenate((docs, missing[analysed_docs].astype(np.int32))),
        np.concatenate((terms, analysed_terms)),
    )
    return joined, list(zip(ids, split_terms(analysed, len(ids)), strict=True))


def _decode_records(decoder: msgspec.msgpack.Decoder[T], keys: Sequence[bytes], values: Sequence[Buffer]) -> list[T]:
    """Every value decoded; a value that does not decode is named by its record's key."""
    try:
        return [decoder.decode(raw) for raw in values]
    except msgspec.DecodeError:
        for key, raw in zip(keys, values, strict=True):
            try:
                decoder.decode(raw)
            except msgspec.DecodeError as error:
                named = key.decode("utf-8", "replace")
                raise msgspec.DecodeError(f"records/{named} does not decode: {error}") from None
        raise


@contextmanager
def _bulk_load() -> Iterator[None]:
    """Pause the cyclic garbage collector while a rebuild allocates its few hundred thousand objects.

    None of them form cycles, yet every few thousand allocations the collector would walk all of
    them again; at 100k records that is a fifth of the rebuild. Collection resumes afterwards.
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
