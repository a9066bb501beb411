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
the mapped files against the shapes the index needs, so a torn one does not load either.

The mapped files' contents are checksummed too, but not at load: reading a million records' postings
to check them took a load from 0.6 s to 7 s, which is what mapping saves. The save computes each
file's CRC-32 (on the substrate's I/O thread, where the writing happens anyway) and records it, with
the file's size, in the header. At load only the sizes are compared (a `stat`, free); the CRCs are
checked afterwards in the background (`verify_snapshot`, on the same I/O thread, reading the files
through the page cache) and a file that does not match makes the substrate throw the loaded index
away and build it from the store. A forged file of the right size can therefore serve for the
moment the check takes (about a second at a million records) before the rebuild: a window chosen
over making every start pay for a check that almost never fails.

Saving is split in two so that it never holds up a recall: `snapshot_state` takes a consistent view
of the index's arrays on the substrate's thread (copying only the small ones that change, no I/O),
and `write_snapshot` writes it to disk on another thread. Writes are serialised by a lock, so a save at a stop cannot
interleave with one still running in the background.
"""

from __future__ import annotations

import logging
import os
import threading
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident.errors import InvalidInput
from resident.files import fsync_dir
from resident.memory.index import RecallIndex
from resident.memory.stored_terms import TERMS_TAG

__all__ = [
    "FORMAT",
    "Snapshot",
    "SnapshotState",
    "load_snapshot",
    "save_snapshot",
    "snapshot_path",
    "snapshot_state",
    "verify_snapshot",
    "write_snapshot",
]

logger = logging.getLogger(__name__)

# 4: the mapped files' sizes and CRC-32s are in the header.
FORMAT = 4
_HEADER = "header"
_VECTORS = "vectors.columns"
# Arrays of at least this many bytes are kept in files of their own, and mapped at load.
_MAPPED_BYTES = 1 << 20
_COPY_COLUMNS = 65_536
_CRC_BLOCK = 1 << 22
# One snapshot write at a time per process (a stop's save may meet a background one).
_WRITING = threading.Lock()


class _Header(msgspec.Struct, frozen=True):
    format: int
    embedder: str
    terms_tag: str
    seq: int
    names: dict[str, list[str]]
    # The arrays kept in files of their own beside this one (`<this>.<token>.<key>.npy`).
    token: str = ""
    mapped: list[str] = msgspec.field(default_factory=list)
    # Per mapped array: [size in bytes, CRC-32] of its file, as written.
    checks: dict[str, list[int]] = msgspec.field(default_factory=dict)


class Snapshot(msgspec.Struct, frozen=True):
    """A loaded snapshot: the index, and the last event it reflects."""

    index: Any  # RecallIndex (msgspec does not know the class; never encoded)
    seq: int
    # The mapped files and their recorded CRC-32s, for `verify_snapshot` to check after the load.
    unverified: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class SnapshotState:
    """A copy of an index's arrays and names, independent of the live index, ready to be written."""

    arrays: dict[str, npt.NDArray[Any]]
    names: dict[str, list[str]]
    records: int


def snapshot_path(store_path: Path) -> Path:
    """Where the snapshot of the store at `store_path` lives: beside it, named after it."""
    return store_path.with_name(f"{store_path.name}.recall-index.npz")


def save_snapshot(path: Path, index: RecallIndex, *, embedder: str, seq: int) -> None:
    """Persist `index`, which reflects the store's events up to `seq`, replacing any earlier snapshot."""
    write_snapshot(path, snapshot_state(index), embedder=embedder, seq=seq)


def snapshot_state(index: RecallIndex) -> SnapshotState:
    """`index`'s arrays, which later changes to the index do not reach (`RecallIndex.state` copies the
    few that change and shares the large ones that do not), ready for `write_snapshot` on another thread.
    """
    arrays, names = index.state()
    return SnapshotState(dict(arrays), {key: list(value) for key, value in names.items()}, len(index))


def write_snapshot(path: Path, state: SnapshotState, *, embedder: str, seq: int) -> None:
    """Write `state`, which reflects the store's events up to `seq`, replacing any earlier snapshot.

    Arrays of `_MAPPED_BYTES` or more (the vectors, the postings, the forward index) go to files of
    their own first, named with a token new each time, so that the next start maps them instead of
    reading them; the main file, renamed into place last, names the token and each file's size and
    CRC-32. Files of another token are removed afterwards.
    """
    with _WRITING:
        _write(path, state, embedder=embedder, seq=seq)


def _write(path: Path, state: SnapshotState, *, embedder: str, seq: int) -> None:
    arrays = dict(state.arrays)
    token = os.urandom(6).hex()
    base, grown = arrays.pop("vectors.base"), arrays.pop("vectors.grown")
    mapped: list[str] = []
    checks: dict[str, list[int]] = {}
    if base.size or grown.size:
        checks[_VECTORS] = _save_columns(_mapped_path(path, token, _VECTORS), base, grown)
        mapped.append(_VECTORS)
    for key in [key for key, value in arrays.items() if value.nbytes >= _MAPPED_BYTES]:
        checks[key] = _save_columns(_mapped_path(path, token, key), arrays.pop(key))
        mapped.append(key)
    header = _Header(FORMAT, embedder, TERMS_TAG.decode("ascii"), seq, state.names, token, mapped, checks)
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


def _save_columns(final: Path, first: npt.NDArray[Any], second: npt.NDArray[Any] | None = None) -> list[int]:
    """Write `first` (then `second`, side by side along the last axis) as one `.npy` file at `final`;
    its size and CRC-32."""
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
    # Read back through the page cache it was just written to: the CRC is of the bytes on disk.
    size, crc = temporary.stat().st_size, _file_crc(temporary)
    temporary.replace(final)
    return [size, crc]


def _file_crc(path: Path) -> int:
    crc = 0
    with path.open("rb") as file:
        while block := file.read(_CRC_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def verify_snapshot(unverified: tuple[tuple[str, int], ...]) -> str:
    """Why the mapped files of a loaded snapshot are not the ones its save wrote ("" if they are)."""
    for name, crc in unverified:
        try:
            found = _file_crc(Path(name))
        except OSError as error:
            return f"{name} cannot be read ({error})"
        if found != crc:
            return f"{name} does not match the checksum recorded when it was written"
    return ""


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
        unverified: list[tuple[str, int]] = []
        for key in header.mapped:
            mapped_path = _mapped_path(path, header.token, key)
            size, crc = header.checks[key]
            # The size now, the contents in the background (`verify_snapshot`): see the module's doc.
            if mapped_path.stat().st_size != size:
                logger.warning("recall index snapshot %s is torn (%s has the wrong size)", path, mapped_path.name)
                return None
            arrays[key] = np.load(mapped_path, mmap_mode="c", allow_pickle=False)
            unverified.append((str(mapped_path), crc))
        arrays.setdefault(_VECTORS, np.zeros((0, 0), dtype=np.float32))
        return Snapshot(RecallIndex.from_state(arrays, header.names), header.seq, tuple(unverified))
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
