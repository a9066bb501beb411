"""The substrate's recall index persisted beside the store, so a restart replays a tail instead of rebuilding.

A snapshot is a file next to the store's directory (`<store>.recall-index.npz`): the index's
small arrays (`RecallIndex.state`), and a header naming the files of its large ones beside it
(`<store>.recall-index.npz.<token>.<array>.npy`: the vectors, the postings, the forward index,
memory-mapped copy-on-write at load, so a restart reads none of them and a million hash vectors
cost page cache rather than the process's own memory), the format, the embedder whose vectors it holds,
the keyword analysis that made its terms, and `seq`, the last event of the store's log it reflects.
A substrate that finds a snapshot fitting its store loads it and replays the events after `seq`;
any other (missing, unreadable, of another embedder or analysis, or claiming events the log does
not have) is ignored and the index is built from LMDB as if there were none.

Each file is written to a temporary file, flushed to disk, and renamed into place, the large
arrays first (under a new token) and the main file last, then the directory is flushed: a process killed
while writing leaves the previous snapshot whole (or none) and stray temporary files, which the
next write removes. Every member of the main file is checked against its CRC as it is read, and
the mapped files against the shapes the index needs, so a torn one does not load either (their
contents are not checksummed: reading them all would cost what mapping saves).
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
from resident.files import fsync_dir
from resident.memory.index import RecallIndex
from resident.memory.stored_terms import TERMS_TAG

__all__ = ["FORMAT", "Snapshot", "load_snapshot", "save_snapshot", "snapshot_path"]

logger = logging.getLogger(__name__)

FORMAT = 3
_HEADER = "header"
_VECTORS = "vectors.columns"
# Arrays of at least this many bytes are kept in files of their own, and mapped at load.
_MAPPED_BYTES = 1 << 20
_COPY_COLUMNS = 65_536


class _Header(msgspec.Struct, frozen=True):
    format: int
    embedder: str
    terms_tag: str
    seq: int
    names: dict[str, list[str]]
    # The arrays kept in files of their own beside this one (`<this>.<token>.<key>.npy`).
    token: str = ""
    mapped: list[str] = msgspec.field(default_factory=list)


class Snapshot(msgspec.Struct, frozen=True):
    """A loaded snapshot: the index, and the last event it reflects."""

    index: Any  # RecallIndex (msgspec does not know the class; never encoded)
    seq: int


def snapshot_path(store_path: Path) -> Path:
    """Where the snapshot of the store at `store_path` lives: beside it, named after it."""
    return store_path.with_name(f"{store_path.name}.recall-index.npz")


def save_snapshot(path: Path, index: RecallIndex, *, embedder: str, seq: int) -> None:
    """Persist `index`, which reflects the store's events up to `seq`, replacing any earlier snapshot.

    Arrays of `_MAPPED_BYTES` or more (the vectors, the postings, the forward index) go to files of
    their own first, named with a token new each time, so that the next start maps them instead of
    reading them; the main file, renamed into place last, names the token. Files of another token
    are removed afterwards.
    """
    arrays, names = index.state()
    token = os.urandom(6).hex()
    base, grown = arrays.pop("vectors.base"), arrays.pop("vectors.grown")
    mapped: list[str] = []
    if base.size or grown.size:
        _save_columns(_mapped_path(path, token, _VECTORS), base, grown)
        mapped.append(_VECTORS)
    for key in [key for key, value in arrays.items() if value.nbytes >= _MAPPED_BYTES]:
        _save_columns(_mapped_path(path, token, key), arrays.pop(key))
        mapped.append(key)
    header = _Header(FORMAT, embedder, TERMS_TAG.decode("ascii"), seq, names, token, mapped)
    encoded: dict[str, npt.NDArray[Any]] = {_HEADER: np.frombuffer(msgspec.json.encode(header), dtype=np.uint8)}
    encoded.update(arrays)
    temporary = path.with_name(f"{path.name}.tmp")
    with temporary.open("wb") as file:
        # numpy's stub types every keyword array as its `allow_pickle` flag.
        np.savez(file, **encoded)  # type: ignore[arg-type]
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    fsync_dir(path.parent)
    for stale in path.parent.glob(f"{path.name}.*.npy*"):
        if not stale.name.startswith(f"{path.name}.{token}."):
            stale.unlink(missing_ok=True)


def _mapped_path(path: Path, token: str, key: str) -> Path:
    return path.with_name(f"{path.name}.{token}.{key}.npy")


def _save_columns(final: Path, first: npt.NDArray[Any], second: npt.NDArray[Any] | None = None) -> None:
    """Write `first` (then `second`, side by side along the last axis) as one `.npy` file at `final`."""
    temporary = final.with_name(f"{final.name}.tmp")
    parts = [first] if second is None else [first, second]
    shape = (*first.shape[:-1], sum(part.shape[-1] for part in parts))
    joined = np.lib.format.open_memmap(temporary, mode="w+", dtype=first.dtype, shape=shape)
    at = 0
    # A block at a time: a plain concatenation would hold a second copy of them all.
    for part in parts:
        for lo in range(0, part.shape[-1], _COPY_COLUMNS):
            hi = min(lo + _COPY_COLUMNS, part.shape[-1])
            joined[..., at + lo : at + hi] = part[..., lo:hi]
        at += part.shape[-1]
    joined.flush()
    del joined
    with temporary.open("rb+") as file:
        os.fsync(file.fileno())
    temporary.replace(final)


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
        # Copy-on-write maps: pages are read from the files as used; a vector set later is a
        # private copy of its page, never written back.
        for key in header.mapped:
            arrays[key] = np.load(_mapped_path(path, header.token, key), mmap_mode="c", allow_pickle=False)
        arrays.setdefault(_VECTORS, np.zeros((0, 0), dtype=np.float32))
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
