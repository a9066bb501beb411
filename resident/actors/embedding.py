"""The embedding worker: runs every embedder that may be slow, so the substrate never waits for one.

The substrate embeds with the hash embedder itself (microseconds per text). Any other embedder —
the local model in its child process, a llama.cpp server over HTTP — runs here, in this actor's
own thread: the substrate tells it `EmbedTexts` and goes on answering recall and writes; the
vectors come back to the substrate as a `TextsEmbedded` message (or `EmbeddingFailed`). A stalled
server stalls this thread only.

The local model's process dying is this worker's crash: it reports the failure, then lets the
exception end the incarnation, and its supervisor starts a new worker (with backoff), which starts
a new model process. Every other failure (a server down, slow or answering garbage) is reported and
the worker goes on; the substrate decides when to try again. The embedder is made when the first
request for its spec arrives, or as soon as memory is switched to it, so a model loads before the
first recall needs it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from resident.errors import EmbedderCrashed
from resident.memory.embedders import runs_inline
from resident.memory.embedding import Embedder
from resident.messages.memory import (
    EmbedderWorkerStatus,
    EmbeddingFailed,
    EmbedTexts,
    GetEmbedderWorkerStatus,
    MemorySwitchedOn,
    TextsEmbedded,
)
from resident.messages.store import Published
from resident.store.store import Store
from resident.store.tables import MEMORY_CONFIG
from resident.supervisor import Address, ChildContext, SupervisedActor

__all__ = ["EmbeddingWorker"]

logger = logging.getLogger(__name__)

_MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class _Warm:
    """Make the embedder for `spec` now (told by the worker to itself)."""

    spec: str


class EmbeddingWorker(SupervisedActor):
    """Embeds texts for the substrate with the embedder its requests name, answering by message."""

    def __init__(
        self, context: ChildContext, store: Store, substrate: Address, embedder_factory: Callable[[str], Embedder]
    ) -> None:
        super().__init__(context)
        self.store = store
        self.substrate = substrate
        self._make_embedder = embedder_factory
        self._spec = ""
        self._embedder: Embedder | None = None

    def setup(self) -> None:
        with self.store.reader() as reader:
            config = reader.get(MEMORY_CONFIG, "memory")
        if config is not None and config.enabled and not runs_inline(config.embedder):
            # After the first message, so a slow model load never holds up this worker's start.
            self.tell_self(_Warm(config.embedder))

    def teardown(self) -> None:
        self._close()

    def on_crash(self, error: BaseException) -> None:  # noqa: ARG002 - the cause is already logged
        self._close()

    def handle(self, message: Any) -> Any:
        match message:
            case EmbedTexts():
                self._embed(message)
            case Published(events=events):
                self._published(events)
            case _Warm(spec=spec):
                self._warm(spec)
            case GetEmbedderWorkerStatus():
                pid = getattr(self._embedder, "pid", None)
                return EmbedderWorkerStatus(spec=self._spec, pid=pid if isinstance(pid, int) else None)
            case _:
                return super().handle(message)
        return None

    def _embed(self, request: EmbedTexts) -> None:
        started = time.perf_counter()
        try:
            embedder = self._embedder_for(request.spec)
            texts = list(request.texts)
            vectors = embedder.embed_queries(texts) if request.query else embedder.embed(texts)
            matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
        except EmbedderCrashed as error:
            self._failed(request, error)
            raise  # the model's process is gone: a new incarnation starts a new one
        except Exception as error:  # noqa: BLE001 - every other failure is the substrate's to weigh
            self._failed(request, error)
            return
        self.substrate.tell(
            TextsEmbedded(
                token=request.token,
                spec=request.spec,
                dim=int(matrix.shape[1]),
                vectors=matrix.tobytes(),
                seconds=time.perf_counter() - started,
            )
        )

    def _failed(self, request: EmbedTexts, error: Exception) -> None:
        detail = " ".join((str(error) or type(error).__name__).split())[:_MAX_ERROR_CHARS]
        self.substrate.tell(EmbeddingFailed(token=request.token, spec=request.spec, error=detail))

    def _published(self, events: Sequence[Any]) -> None:
        for event in events:
            if isinstance(event, MemorySwitchedOn) and not runs_inline(event.embedder):
                self._warm(event.embedder)

    def _warm(self, spec: str) -> None:
        start = getattr(self._try_embedder(spec), "start", None)
        if not callable(start):
            return
        try:
            start()
        except EmbedderCrashed:
            raise
        except Exception as error:  # noqa: BLE001 - a failed warm-up shows again at the first request
            logger.warning("embedder %s could not start: %s", spec, error)

    def _try_embedder(self, spec: str) -> Embedder | None:
        try:
            return self._embedder_for(spec)
        except Exception as error:  # noqa: BLE001 - reported to the substrate at its first request
            logger.warning("embedder %s could not be made: %s", spec, error)
            return None

    def _embedder_for(self, spec: str) -> Embedder:
        if self._embedder is None or spec != self._spec:
            self._close()
            self._embedder = self._make_embedder(spec)
            self._spec = spec
        return self._embedder

    def _close(self) -> None:
        embedder, spec = self._embedder, self._spec
        self._embedder, self._spec = None, ""
        close = getattr(embedder, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                logger.exception("embedder %s did not close cleanly", spec)
