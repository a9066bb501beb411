"""The substrate's recall index persisted beside the store, so a restart replays a tail instead of rebuilding.

A snapshot is a file next to the store's directory (`<store>.recall-index.npz`): the index's
arrays (`RecallIndex.state`) but its vectors, and a header naming the file of the vectors beside
it (`<store>.recall-index.npz.<token>.vectors.npy`, memory-mapped at load, so a million hash
vectors cost page cache rather than the process's own memory), the format, the embedder whose vectors it holds,
the keyword analysis that made its terms, and `seq`, the last event of the store's log it reflects.
A substrate that finds a snapshot fitting its store loads it and replays the events after `seq`;
any other (missing, unreadable, of another embedder or analysis, or claiming events the log does
not have) is ignored and the index is built from LMDB as if there were none.

Each file is written to a temporary file, flushed to disk, and renamed into place, the vectors
first (under a new name) and the main file last, then the directory is flushed: a process killed
while writing leaves the previous snapshot whole (or none) and stray temporary files, which the
next write removes. Every member of the main file is checked against its CRC as it is read, and
the vectors' file against the shape the header gives, so a damaged snapshot does not load either.
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

FORMAT = 2
_HEADER = "header"
_COPY_COLUMNS = 65_536


class _Header(msgspec.Struct, frozen=True):
    format: int
    embedder: str
    terms_tag: str
    seq: int
    names: dict[str, list[str]]
    # The file of the vectors (dim x records float32, `.npy`) beside this one; "" when none.
    vectors: str = ""


class Snapshot(msgspec.Struct, frozen=True):
    """A loaded snapshot: the index, and the last event it reflects."""

    index: Any  # RecallIndex (msgspec does not know the class; never encoded)
    seq: int


def snapshot_path(store_path: Path) -> Path:
    """Where the snapshot of the store at `store_path` lives: beside it, named after it."""
    return store_path.with_name(f"{store_path.name}.recall-index.npz")


def save_snapshot(path: Path, index: RecallIndex, *, embedder: str, seq: int) -> None:
    """Persist `index`, which reflects the store's events up to `seq`, replacing any earlier snapshot.

    The vectors go to a file of their own first, named anew each time, so that the next start can
    map it instead of reading it (a million hash vectors are 1 GB); the main file, renamed into place
    last, names it. Vector files no main file names any more are removed afterwards.
    """
    arrays, names = index.state()
    base, grown = arrays.pop("vectors.base"), arrays.pop("vectors.grown")
    vectors = _save_vectors(path, base, grown) if base.size or grown.size else ""
    header = _Header(FORMAT, embedder, TERMS_TAG.decode("ascii"), seq, names, vectors)
    encoded: dict[str, npt.NDArray[Any]] = {_HEADER: np.frombuffer(msgspec.json.encode(header), dtype=np.uint8)}
    encoded.update(arrays)
    temporary = path.with_name(f"{path.name}.tmp")
    with temporary.open("wb") as file:
        # numpy's stub types every keyword array as its `allow_pickle` flag.
        np.savez(file, **encoded)  # type: ignore[arg-type]
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    _sync_directory(path.parent)
    for stale in path.parent.glob(f"{path.name}.*.vectors.npy*"):
        if stale.name != vectors:
            stale.unlink(missing_ok=True)


def _save_vectors(path: Path, base: npt.NDArray[np.float32], grown: npt.NDArray[np.float32]) -> str:
    """Write the columns `base` then `grown` as one `.npy` file beside `path`; its name."""
    name = f"{path.name}.{os.urandom(6).hex()}.vectors.npy"
    final = path.with_name(name)
    temporary = final.with_name(f"{name}.tmp")
    dim = base.shape[0] if base.size else grown.shape[0]
    joined = np.lib.format.open_memmap(
        temporary, mode="w+", dtype=np.float32, shape=(dim, base.shape[1] + grown.shape[1])
    )
    # A block of columns at a time: a plain concatenation would hold a second copy of them all.
    for source, at in ((base, 0), (grown, base.shape[1])):
        for lo in range(0, source.shape[1], _COPY_COLUMNS):
            hi = min(lo + _COPY_COLUMNS, source.shape[1])
            joined[:, at + lo : at + hi] = source[:, lo:hi]
    joined.flush()
    del joined
    with temporary.open("rb+") as file:
        os.fsync(file.fileno())
    temporary.replace(final)
    return name


def _sync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


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
        if header.vectors:
            # Copy-on-write: pages are read from the file as searched; a vector set later is a
            # private copy of its page, never written back to the file.
            arrays["vectors.columns"] = np.load(path.with_name(header.vectors), mmap_mode="c", allow_pickle=False)
        else:
            arrays["vectors.columns"] = np.zeros((0, 0), dtype=np.float32)
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
