"""The substrate's recall index persisted beside the store, so a restart replays a tail instead of rebuilding.

A snapshot is one file next to the store's directory (`<store>.recall-index.npz`): the index's
arrays (`RecallIndex.state`) and a header naming the format, the embedder whose vectors it holds,
the keyword analysis that made its terms, and `seq`, the last event of the store's log it reflects.
A substrate that finds a snapshot fitting its store loads it and replays the events after `seq`;
any other (missing, unreadable, of another embedder or analysis, or claiming events the log does
not have) is ignored and the index is built from LMDB as if there were none.

It is written to a temporary file, flushed to disk, and renamed over the previous one, then the
directory is flushed: a process killed while writing leaves the previous snapshot whole (or none)
and a stray temporary file, which the next write replaces. Every member of the file is checked
against its CRC as it is read, so a file damaged after the rename does not load either.
"""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.memory.index import RecallIndex
from resident.memory.stored_terms import TERMS_TAG

__all__ = ["FORMAT", "Snapshot", "load_snapshot", "save_snapshot", "snapshot_path"]

logger = logging.getLogger(__name__)

FORMAT = 1
_HEADER = "header"


class _Header(msgspec.Struct, frozen=True):
    format: int
    embedder: str
    terms_tag: str
    seq: int
    names: dict[str, list[str]]


class Snapshot(msgspec.Struct, frozen=True):
    """A loaded snapshot: the index, and the last event it reflects."""

    index: Any  # RecallIndex (msgspec does not know the class; never encoded)
    seq: int


def snapshot_path(store_path: Path) -> Path:
    """Where the snapshot of the store at `store_path` lives: beside it, named after it."""
    return store_path.with_name(f"{store_path.name}.recall-index.npz")


def save_snapshot(path: Path, index: RecallIndex, *, embedder: str, seq: int) -> None:
    """Persist `index`, which reflects the store's events up to `seq`, replacing any earlier snapshot."""
    arrays, names = index.state()
    header = _Header(FORMAT, embedder, TERMS_TAG.decode("ascii"), seq, names)
    encoded: dict[str, npt.NDArray[Any]] = {_HEADER: np.frombuffer(msgspec.json.encode(header), dtype=np.uint8)}
    encoded.update(arrays)
    temporary = path.with_name(f"{path.name}.tmp")
    with temporary.open("wb") as file:
        # numpy's stub types every keyword array as its `allow_pickle` flag.
        np.savez(file, **encoded)  # type: ignore[arg-type]
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load_snapshot(path: Path, *, embedder: str, last_seq: int) -> Snapshot | None:
    """The snapshot at `path` if it fits a store whose log ends at `last_seq` and uses `embedder`."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            header = msgspec.json.decode(stored[_HEADER].tobytes(), type=_Header)
            unfit = _unfit(header, embedder, last_seq)
            if unfit:
                logger.info("recall index snapshot %s not used: %s", path, unfit)
                return None
            arrays = {key: stored[key] for key in stored.files if key != _HEADER}
        return Snapshot(RecallIndex.from_state(arrays, header.names), header.seq)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, msgspec.DecodeError, InvalidInput) as error:
        logger.warning(
            "recall index snapshot %s does not load (%s: %s); building from the store",
            path,
            type(error).__name__,
            error,
        )
        return None


def _unfit(header: _Header, embedder: str, last_seq: int) -> str:
    """Why a snapshot with `header` cannot serve this store ("" if it can)."""
    if header.format != FORMAT:
        return f"format {header.format}, this version reads {FORMAT}"
    if header.embedder != embedder:
        return f"it holds {header.embedder}'s vectors, memory uses {embedder}"
    if header.terms_tag != TERMS_TAG.decode("ascii"):
        return f"its terms are of analysis {header.terms_tag}"
    if header.seq > last_seq:
        return f"it reflects event {header.seq}, the store's log ends at {last_seq}"
    return ""
