"""Vectors stored beside each record, one per embedder, so switching back to an embedder costs nothing.

A record's vector of embedder E is stored in the derived `vectors` table under the key
`<tag of E> NUL <record id>`, where the tag is 16 hex digits of a hash of E's name. Each embedder's
vectors are thus one contiguous run of keys in record-id order: a rebuild reads exactly the current
embedder's run (`Reader.raw_columns(VECTORS, prefix)`) and its rows line up with the records table.
A switch from E to F re-embeds what F lacks in the background, and a switch back to E finds E's
vectors where they were.

A value is the embedder's name, a NUL, then float32 bytes: the name is checked again when a value
is read, so a tag collision could never mix two embedders' vectors. Homes written before vectors
were kept per embedder stored them under the bare record id; those are ignored, and the backfill
embeds the records again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["decode_vector", "encode_vector", "stored_matrix", "stored_vector", "vector_key", "vector_prefix"]

_TAG_BYTES = 8

Buffer = bytes | memoryview


def vector_prefix(embedder: str) -> bytes:
    """The key prefix under which `embedder`'s vectors are stored."""
    return hashlib.blake2b(embedder.encode("utf-8"), digest_size=_TAG_BYTES).hexdigest().encode("ascii") + b"\0"


def vector_key(embedder: str, record_id: str) -> str:
    """The key of `record_id`'s vector by `embedder`."""
    return vector_prefix(embedder).decode("ascii") + record_id


def encode_vector(embedder: str, vector: npt.NDArray[np.float32]) -> bytes:
    """A stored vector: the embedder's name, a NUL, then float32 bytes."""
    return embedder.encode("utf-8") + b"\0" + np.asarray(vector, dtype=np.float32).tobytes()


def decode_vector(raw: Buffer) -> tuple[str, npt.NDArray[np.float32]]:
    name, _, data = bytes(raw).partition(b"\0")
    return name.decode("utf-8"), np.frombuffer(data, dtype=np.float32)


def stored_vector(raw: Buffer | None, embedder: str) -> npt.NDArray[np.float32] | None:
    """A stored vector if `embedder` made it; a value of another embedder counts as missing."""
    if raw is None:
        return None
    stored_by, values = decode_vector(raw)
    return values if stored_by == embedder and len(values) else None


def stored_matrix(
    rows: Sequence[int], values: Sequence[Buffer], count: int, embedder: str
) -> tuple[npt.NDArray[np.float32] | None, npt.NDArray[np.bool_] | None]:
    """Rows for `RecallIndex.add` from stored vectors (value i is row `rows[i]` of `count`) that
    `embedder` made: a matrix with zero rows where a vector is missing, and the mask of real rows.

    Whole-array work over all of them instead of a decode per record: at 100k records this is a
    sizeable part of a rebuild. Vectors of another embedder or of another width count as missing
    (the backfill embeds those again).
    """
    prefix = embedder.encode("utf-8") + b"\0"
    width = next((len(value) for value in values if value[: len(prefix)] == prefix), 0)
    if not width or (width - len(prefix)) % 4 or width == len(prefix):
        return None, None
    keep = [i for i, value in enumerate(values) if len(value) == width]
    kept = values if len(keep) == len(values) else [values[i] for i in keep]
    joined = b"".join(kept)
    raw = np.frombuffer(joined, dtype=np.uint8).reshape(len(kept), width)
    ours = (raw[:, : len(prefix)] == np.frombuffer(prefix, dtype=np.uint8)).all(axis=1)
    chosen = np.asarray(rows, dtype=np.intp)[keep][ours]
    dim = (width - len(prefix)) // 4
    present = np.zeros(count, dtype=bool)
    present[chosen] = True
    if len(chosen) == count and bool((chosen == np.arange(count)).all()):
        # Every record has one of ours, in order: the rows are read where they lie in the joined
        # values, past each prefix, rather than copied out (100 MB at 100k records).
        in_place: npt.NDArray[np.float32] = np.ndarray(
            (count, dim), dtype=np.float32, buffer=joined, offset=len(prefix), strides=(width, 4)
        )
        return in_place, present
    matrix = np.zeros((count, dim), dtype=np.float32)
    matrix[chosen] = np.ascontiguousarray(raw[ours, len(prefix) :]).view(np.float32)
    return matrix, present
