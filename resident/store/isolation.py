"""Reading a file that may be damaged in a child process, so that damage cannot kill this one.

LMDB trusts its data file. On some damage it reports `MDB_CORRUPTED`, but on other damage (a
page whose type bits were overwritten, reached by moving to a sibling) it fails an assertion
and aborts the process, and reading past a truncated end is SIGBUS. So a first read of a file
that is not known to be sound happens in a forked child: the child opens its own environment
(an environment must not cross a fork), does the work and streams what it found back through a
pipe; if it dies of a signal, the parent keeps what arrived before and reports the crash as
damage.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import selectors
import signal
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import msgspec

__all__ = ["Emit", "Isolated", "deadline_for", "run_isolated"]

# What the work hands back, item by item: a (key, value) row, or a note (e.g. an LMDB error).
Emit = Callable[[bytes, bytes], None]
_LENGTH = struct.Struct(">I")
# A child that reads every page gets this long, plus a second per 20 MiB (a slow, cold disk).
_BASE_DEADLINE = 30.0
_SLOWEST_READ = 20 << 20
_ROW, _NOTE = 0, 1


@dataclass
class Isolated:
    """What the child emitted before it ended, its notes, and how it ended if not normally."""

    rows: list[tuple[bytes, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    crash: str = ""


def run_isolated(work: Callable[[Emit, Callable[[str], None]], None], *, deadline: float) -> Isolated:
    """Run `work(emit_row, note)` in a forked child and collect what it emits.

    A child still running after `deadline` seconds (damaged pages can make a walk go round in a
    loop) is killed, and that is reported as its crash.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_end)
        _child(work, write_end)
    os.close(write_end)
    data, finished = _read_until(read_end, time.monotonic() + deadline)
    if not finished:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    result = Isolated()
    for kind, first, second in _frames(data):
        if kind == _ROW:
            result.rows.append((first, second))
        else:
            result.notes.append(first.decode("utf-8", "replace"))
    if not finished:
        result.crash = f"reading it took more than {deadline:.0f} s (damaged pages may form a loop)"
    elif os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        result.crash = f"reading it crashed the LMDB engine ({name})"
    elif os.WEXITSTATUS(status) != 0:
        result.crash = f"the reading process failed (exit status {os.WEXITSTATUS(status)})"
    return result


def deadline_for(size: int) -> float:
    """How long a child may take over a file of `size` bytes: generous, since it reads every page."""
    return _BASE_DEADLINE + size / _SLOWEST_READ


def _read_until(fd: int, due: float) -> tuple[bytes, bool]:
    """Everything the child writes until it closes the pipe (True), or what came by `due` (False)."""
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector, os.fdopen(fd, "rb", buffering=0) as stream:
        selector.register(stream, selectors.EVENT_READ)
        while (left := due - time.monotonic()) > 0:
            if not selector.select(left):
                continue
            chunk = stream.read(1 << 20)
            if not chunk:
                return b"".join(chunks), True
            chunks.append(chunk)
    return b"".join(chunks), False


def _child(work: Callable[[Emit, Callable[[str], None]], None], fd: int) -> None:  # pragma: no cover
    status = 0
    try:
        # Every descriptor but the pipe is closed: one on the home's lock file would otherwise keep
        # the home locked after the parent is gone, for as long as the child runs.
        os.closerange(3, fd)
        os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
        # LMDB's assertion message on the way down is not for the user: the crash is reported.
        faulthandler.disable()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        # Unbuffered: every row is in the parent before the next page is read, so a crash loses none.
        with os.fdopen(fd, "wb", buffering=0) as out:

            def emit(key: bytes, value: bytes) -> None:
                _write(out, _ROW, key, value)

            def note(text: str) -> None:
                _write(out, _NOTE, text.encode("utf-8"), b"")

            try:
                work(emit, note)
            except Exception as error:  # noqa: BLE001 - reported to the parent, which decides
                note(f"{type(error).__name__}: {error}")
    except BaseException:  # noqa: BLE001 - whatever happens, the child must not return into the parent's code
        status = 1
    finally:
        os._exit(status)


def _write(out: object, kind: int, first: bytes, second: bytes) -> None:
    frame = msgspec.msgpack.encode((kind, first, second))
    out.write(_LENGTH.pack(len(frame)) + frame)  # type: ignore[attr-defined]


def _frames(data: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    offset = 0
    while offset + _LENGTH.size <= len(data):
        (length,) = _LENGTH.unpack_from(data, offset)
        end = offset + _LENGTH.size + length
        if end > len(data):
            return  # a frame cut short by the child's crash
        kind, first, second = msgspec.msgpack.decode(data[offset + _LENGTH.size : end], type=tuple[int, bytes, bytes])
        yield kind, first, second
        offset = end
