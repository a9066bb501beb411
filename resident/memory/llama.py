"""The llama loopback embedder: a client for llama.cpp's OpenAI-compatible `/v1/embeddings`.

`llama-server --embeddings` answers `POST /v1/embeddings` with
`{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}, ...],
"model": ..., "usage": {...}}`, and failures with `{"error": {"code", "message", "type"}}` and the
matching HTTP status. Only loopback endpoints are accepted, so memory text never leaves the machine.

The embedder never retries: every failure (refused, slow, non-2xx, malformed answer) is one
`EmbedderUnavailable`, and the caller decides what to do — the substrate keeps admitting writes
without vectors and fills them in when the endpoint answers again.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

import httpx
import numpy as np
import numpy.typing as npt

from resident.errors import EmbedderNotLoopback, EmbedderUnavailable, InvalidInput
from resident.loopback import is_loopback_host

__all__ = ["LlamaEmbedder", "validate_loopback_url"]

_EXAMPLE_URL = "http://127.0.0.1:8080"
_ENDPOINT_PATH = "/v1/embeddings"
# Far above any real answer (64 texts x 8192 dims is ~15 MB of JSON) but bounds memory if
# something else on that port streams forever.
_MAX_BODY_BYTES = 256 * 1024 * 1024
_MAX_DETAIL_CHARS = 200


def validate_loopback_url(url: str) -> str:
    """Check that an embedder URL points at this machine and return its normalised base URL.

    Accepts http(s) URLs whose host is in 127.0.0.0/8, `[::1]` or `localhost`, with an optional
    port and path; a trailing `/v1` or `/v1/embeddings` is dropped, so the result is the base the
    client appends `/v1/embeddings` to (no trailing slash, lower-case scheme and host).
    """
    refused = EmbedderNotLoopback(
        f"embedder url {_shorten(repr(url))} refused: only loopback endpoints are allowed "
        f"(127.0.0.0/8, [::1] or localhost), e.g. {_EXAMPLE_URL}"
    )
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        raise refused from None
    scheme = parts.scheme.lower()
    # Any userinfo is refused: `http://127.0.0.1@evil.com` reads as loopback but connects to evil.com.
    if scheme not in ("http", "https") or "@" in parts.netloc:
        raise refused
    host = parts.hostname
    if not host or not is_loopback_host(host):
        raise refused
    try:
        port = parts.port
    except ValueError:
        raise InvalidInput(f"embedder url {_shorten(repr(url))} has an invalid port; use e.g. {_EXAMPLE_URL}") from None
    if port == 0 or parts.query or parts.fragment:
        raise InvalidInput(
            f"embedder url {_shorten(repr(url))} must be a base url without query, fragment or port 0, "
            f"e.g. {_EXAMPLE_URL}"
        )
    path = parts.path.rstrip("/")
    path = path.removesuffix("/embeddings") if path.endswith(_ENDPOINT_PATH) else path
    path = path.removesuffix("/v1")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc = f"{netloc}:{port}"
    base = f"{scheme}://{netloc}{path}"
    # The request goes out through httpx's own parser; it must land on the host checked above.
    try:
        reparsed = httpx.URL(base + _ENDPOINT_PATH)
    except httpx.InvalidURL:
        raise refused from None
    if reparsed.host != host or reparsed.port != port:
        raise refused
    return base


class LlamaEmbedder:
    """Embeds texts through a loopback llama.cpp server; rows are float32 and L2-normalised.

    `dim` is None until the first successful answer and fixed from then on; an answer of another
    dimension is treated as garbage. Each request is bounded by `timeout` for connecting and for
    every read, and the whole answer must arrive within `timeout` of sending, so a call fails within
    about twice `timeout` per batch of `batch_size` texts. Safe to share between threads.
    """

    def __init__(self, url: str, *, timeout: float = 5.0, model: str = "default", batch_size: int = 64) -> None:
        base_url = validate_loopback_url(url)
        if not (math.isfinite(timeout) and timeout > 0):
            raise InvalidInput(f"embedder timeout must be a positive number of seconds, got {timeout!r}")
        if batch_size < 1:
            raise InvalidInput(f"embedder batch_size must be at least 1, got {batch_size!r}")
        if not model:
            raise InvalidInput("embedder model must be a non-empty string, e.g. 'default'")
        self.name: str = "llama:" + base_url
        self.dim: int | None = None
        self.base_url = base_url
        self._endpoint = base_url + _ENDPOINT_PATH
        self._timeout = timeout
        self._model = model
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._closed = False
        # trust_env=False: a configured HTTP(S)_PROXY must not carry loopback traffic off the machine.
        # Redirects are not followed, so the endpoint cannot send the texts to another host.
        self._client = httpx.Client(timeout=httpx.Timeout(timeout), trust_env=False, follow_redirects=False)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed `texts` in order; returns a float32 (len(texts), dim) array of unit (or zero) rows."""
        if isinstance(texts, str):
            raise InvalidInput("embed() takes a sequence of texts, not one string; wrap it in a list")
        batch = list(texts)
        if not all(isinstance(text, str) for text in batch):
            raise InvalidInput("embed() takes only strings")
        if self._closed:
            raise self._unavailable("is closed")
        if not batch:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        size = self._batch_size
        chunks = [self._embed_chunk(batch[start : start + size]) for start in range(0, len(batch), size)]
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Queries embed like any text (llama-server takes no query prefix)."""
        return self.embed(texts)

    def close(self) -> None:
        """Close the connection pool; later `embed` calls raise `EmbedderUnavailable`."""
        self._closed = True
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LlamaEmbedder({self.base_url!r}, dim={self.dim!r})"

    def _embed_chunk(self, chunk: list[str]) -> npt.NDArray[np.float32]:
        payload = {"input": chunk, "model": self._model, "encoding_format": "float"}
        status, body = self._post(payload)
        if not 200 <= status < 300:
            raise self._unavailable(f"answered HTTP {status}{_error_detail(body)}")
        try:
            matrix = _parse_answer(body, len(chunk))
        except _MalformedAnswer as exc:
            raise self._unavailable(f"answered {exc}") from None
        with self._lock:
            if self.dim is None:
                self.dim = matrix.shape[1]
            elif matrix.shape[1] != self.dim:
                raise self._unavailable(
                    f"answered {matrix.shape[1]}-dimensional vectors after earlier {self.dim}-dimensional "
                    "ones (was the model changed?)"
                )
        return _unit_rows(matrix)

    def _post(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        deadline = time.monotonic() + self._timeout
        try:
            with self._client.stream("POST", self._endpoint, json=payload) as response:
                return response.status_code, self._read_body(response.iter_bytes(), deadline)
        except httpx.TimeoutException as exc:
            raise self._unavailable(f"did not answer within {self._timeout:g}s ({type(exc).__name__})") from exc
        except httpx.ConnectError as exc:
            raise self._unavailable(f"could not be reached ({_one_line(str(exc)) or 'connection failed'})") from exc
        except httpx.HTTPError as exc:
            raise self._unavailable(f"broke off the answer ({type(exc).__name__}: {_one_line(str(exc))})") from exc
        except RuntimeError as exc:
            # httpx refuses to send on a client that close() shut down from another thread meanwhile.
            raise self._unavailable("is closed") from exc

    def _read_body(self, pieces: Iterator[bytes], deadline: float) -> bytes:
        # httpx bounds each read, not the whole answer; a server trickling bytes must not hold us.
        body = bytearray()
        for piece in pieces:
            body += piece
            if len(body) > _MAX_BODY_BYTES:
                raise self._unavailable(f"answered more than {_MAX_BODY_BYTES} bytes")
            if time.monotonic() > deadline:
                raise self._unavailable(f"did not finish answering within {self._timeout:g}s")
        return bytes(body)

    def _unavailable(self, what: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"llama embedder at {self.base_url} {what}; check that `llama-server --embeddings` is serving there"
        )


class _MalformedAnswer(ValueError):
    """A 2xx body that is not a `/v1/embeddings` answer for the texts sent; the message says how."""


def _parse_answer(body: bytes, expected: int) -> npt.NDArray[np.float64]:
    """Read a `/v1/embeddings` body into an (expected, dim) matrix, rows ordered by `index`."""
    try:
        # NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise.
        document = json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise _MalformedAnswer("a body that is not JSON") from None
    if not isinstance(document, dict):
        raise _MalformedAnswer("JSON that is not an object")
    data = document.get("data")
    if not isinstance(data, list):
        raise _MalformedAnswer("without a `data` list")
    if len(data) != expected:
        raise _MalformedAnswer(f"{len(data)} embeddings for {expected} texts")
    rows: list[list[float] | None] = [None] * expected
    for item in data:
        if not isinstance(item, dict):
            raise _MalformedAnswer("a `data` item that is not an object")
        index = item.get("index")
        # bool is an int subclass; `true` is not an index.
        if type(index) is not int or not 0 <= index < expected:
            raise _MalformedAnswer(f"an `index` of {_shorten(repr(index))}, expected 0..{expected - 1}")
        if rows[index] is not None:
            raise _MalformedAnswer(f"index {index} twice")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not vector:
            raise _MalformedAnswer(f"no list of numbers as the embedding at index {index}")
        if not all(type(value) is float or type(value) is int for value in vector):
            raise _MalformedAnswer(f"non-numeric values in the embedding at index {index}")
        rows[index] = vector
    filled = [row for row in rows if row is not None]
    widths = {len(row) for row in filled}
    if len(widths) != 1:
        raise _MalformedAnswer(f"vectors of different lengths ({sorted(widths)})")
    try:
        matrix = np.array(filled, dtype=np.float64)
    except OverflowError:
        raise _MalformedAnswer("numbers too large for a float") from None
    if not np.isfinite(matrix).all():
        raise _MalformedAnswer("NaN or infinite values")
    return matrix


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _unit_rows(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    # Scaling by each row's peak first keeps squares of huge values from overflowing to inf.
    peak = np.abs(matrix).max(axis=1, keepdims=True)
    scaled = np.divide(matrix, peak, out=np.zeros_like(matrix), where=peak > 0)
    norms = np.linalg.norm(scaled, axis=1, keepdims=True)
    unit: npt.NDArray[np.float64] = np.divide(scaled, norms, out=np.zeros_like(scaled), where=norms > 0)
    return unit.astype(np.float32)


def _error_detail(body: bytes) -> str:
    """The `type: message` of a llama.cpp error body (`{"error": {"code", "message", "type"}}`), if any."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    error = document.get("error") if isinstance(document, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return ""
    kind = error.get("type")
    prefix = f"{_one_line(kind)}: " if isinstance(kind, str) and kind else ""
    return f" ({prefix}{_one_line(error['message'])})"


def _one_line(text: str) -> str:
    return _shorten(" ".join(text.split()))


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_DETAIL_CHARS else text[: _MAX_DETAIL_CHARS - 3] + "..."
