"""The bridge to an independent Hindsight service: its HTTP API, asked within a deadline behind a circuit breaker.

Consuming, not absorbing: what the service answers is handed to the one caller that asked and kept nowhere
else (no cache, no store, no event carries it). What goes to the service is a query and the bank that stands
for the member, never a record of the runtime; retained memories go only through `retain`, which its caller
(`resident.runtime.cognition.service.retain`) feeds with served records alone.

Every call counts in the bridge's statistics, and a failure (refused connection, an error status, an answer
it cannot read, or the deadline passed) counts toward the breaker, which then keeps the bridge from being
asked for its cooldown on the runtime's clock. `report()` says how it stands.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from resident.clock import Clock
from resident.cognition.breaker import CircuitBreaker
from resident.cognition.offer import OPTIONAL, RECALL, RETAIN, Offer, read_offer
from resident.cognition.settings import BankBinding, CognitionSettings
from resident.errors import CognitionDisabled, CognitionUnavailable, ConfigError, InvalidInput
from resident.messages.cognition import BridgedHit, BridgeReport

__all__ = ["Bridge", "BridgeAnswer", "open_bridge", "read_token"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

_MAX_TOKEN_BYTES = 4_096


class _Version(msgspec.Struct):
    api_version: str = ""


class _OpenApi(msgspec.Struct):
    paths: dict[str, Any] = msgspec.field(default_factory=dict)


class _Scores(msgspec.Struct):
    final: float | None = None
    semantic: float | None = None
    keyword: float | None = None


class _Result(msgspec.Struct):
    id: str
    text: str
    type: str | None = None
    mentioned_at: str | None = None
    occurred_start: str | None = None
    tags: list[str] | None = None
    scores: _Scores | None = None


class _Recalled(msgspec.Struct):
    results: list[_Result] = msgspec.field(default_factory=list)


class BridgeAnswer(msgspec.Struct, frozen=True):
    """Hits of one recall, best first, and how the bridge stood when it answered."""

    hits: tuple[BridgedHit, ...]
    report: BridgeReport


class Bridge:
    """One configured bridge (see the module's docstring); thread-safe. `settings.provider == "none"`: off."""

    def __init__(self, settings: CognitionSettings, token: str | None, clock: Clock) -> None:
        self.settings = settings
        self._clock = clock
        self._lock = threading.Lock()
        # On the clock's monotonic time: a wall-clock step must not open or close it.
        self._breaker = CircuitBreaker(threshold=settings.failures, cooldown=settings.cooldown)
        self._offer: Offer | None = None
        # Set by a failure: the next call asks the service again what it offers before using it.
        self._stale = True
        self._reason = ""
        self._counts = {"answered": 0, "failed": 0, "timed_out": 0, "refused": 0}
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        # A few threads of its own: each bridged answer is asked while the runtime's sources answer.
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="cognition-bridge") if settings.bridged else None
        # No proxy from the environment: the service is on this machine and the queries stay on it.
        self._http = (
            httpx.Client(base_url=settings.url, headers=headers, trust_env=False, follow_redirects=False)
            if settings.bridged else None
        )

    # -- state ------------------------------------------------------------------------------------

    @property
    def on(self) -> bool:
        return self._http is not None

    def report(self) -> BridgeReport:
        """How the bridge stands now (its statistics since the runtime opened)."""
        if self._http is None:
            return BridgeReport(provider="none", state="off")
        with self._lock:
            breaker = self._breaker.state(self._clock.monotonic())
            offer, reason, counts = self._offer, self._reason, dict(self._counts)
        degraded = breaker != "closed" or bool(reason)
        notes = [reason] if reason else []
        if offer is not None and not offer.known:
            notes.append(offer.describe())
        return BridgeReport(
            provider=self.settings.provider, state="degraded" if degraded else "ok", reason="; ".join(notes),
            url=self.settings.url, version=offer.version if offer else "", version_known=offer.known if offer else True,
            breaker=breaker, **counts,
        )

    # -- asking the service -------------------------------------------------------------------------

    def probe(self, ends: float) -> Offer:
        """Ask the service what it offers (its version, then its endpoints) by `ends` (monotonic); keep the answer."""
        version = msgspec.json.decode(self._get("/v1/version", ends), type=_Version).api_version
        paths = msgspec.json.decode(self._get("/openapi.json", ends), type=_OpenApi).paths
        offer = read_offer(version, paths)
        with self._lock:
            self._offer, self._stale = offer, False
        return offer

    def recall(self, banks: Sequence[BankBinding], query: str, k: int) -> BridgeAnswer:
        """The service's best `k` hits for `query` in each of `banks`, within the deadline (or none, degraded)."""
        if not banks or self._http is None:
            return BridgeAnswer(hits=(), report=self.report())
        hits: list[BridgedHit] = []
        # One deadline for the whole answer: a re-probe of the offer and every bank it asks.
        ends = time.monotonic() + self.settings.deadline
        try:
            self._require_recall(ends)
            for binding in banks:
                path = RECALL.format(bank_id=quote(binding.bank, safe=""))
                body = msgspec.json.encode({"query": query, "max_tokens": 4096, "budget": "low"})
                found = self._decoded(self._call("POST", path, body, ends - time.monotonic()))
                hits += [_hit(self.settings.provider, binding.bank, result) for result in found.results[:k]]
        except CognitionUnavailable:
            return BridgeAnswer(hits=(), report=self.report())
        # Several banks: the service's own final score orders them (the same scale within one service).
        hits.sort(key=lambda hit: -hit.scores.get("final", 0.0))
        return BridgeAnswer(hits=tuple(hits[:k]), report=self.report())

    def retain(self, binding: BankBinding, texts: Sequence[tuple[str, str]], seconds: float | None = None) -> int:
        """Write `(document id, text)` pairs to `binding`'s bank through the service's own retain (only for a bank
        with `retain = true`) within `seconds` (the deadline by default: the service embeds what it retains, so a
        large write may need longer); how many it took. `CognitionUnavailable` when it did not answer."""
        if not binding.retain:
            raise InvalidInput(f"bank {binding.bank} does not retain: set retain = true for it in [[cognition.banks]]")
        offer = self._offer_now()
        if not offer.retain:
            known = "" if offer.known else f" ({offer.describe()})"
            raise CognitionUnavailable(f"the service does not offer a retain the bridge knows{known}")
        items = [{"content": text, "document_id": document} for document, text in texts]
        path = RETAIN.format(bank_id=quote(binding.bank, safe=""))
        self._call("POST", path, msgspec.json.encode({"items": items, "async": False}), seconds)
        return len(items)

    def optional(self, name: str, binding: BankBinding, query: str | None) -> Any:
        """The service's answer to optional operation `name` for `binding`'s bank, as it gave it."""
        offer = self._offer_now()
        if name not in offer.optional:
            offered = ", ".join(offer.optional) or "none"
            raise CognitionUnavailable(f"the service does not offer {name!r} now (it offers: {offered})")
        method, template = OPTIONAL[name]
        path = template.format(bank_id=quote(binding.bank, safe=""))
        if method == "POST":
            if not query:
                raise InvalidInput(f"{name} takes a question: pass query")
            return msgspec.json.decode(self._call("POST", path, msgspec.json.encode({"query": query})))
        return msgspec.json.decode(self._call("GET", path, None))

    def in_background(self, work: Callable[[], T]) -> Future[T]:
        """Run `work` (an ask of the service) on the bridge's own threads, so the caller's can do the runtime's."""
        if self._pool is None:
            raise CognitionDisabled("no Cognition service is bridged: set [cognition] provider in resident.toml")
        return self._pool.submit(work)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        if self._http is not None:
            self._http.close()

    # -- the wire ---------------------------------------------------------------------------------

    def refresh(self, ends: float | None = None) -> Offer:
        """Ask the service again what it offers (by `ends`, else within the deadline; if the breaker lets it)."""
        self._admit()
        try:
            offer = self.probe(time.monotonic() + self.settings.deadline if ends is None else ends)
        except httpx.TimeoutException as error:
            self._failed("timed_out", f"no answer within the deadline of {self.settings.deadline} s ({error})")
            raise CognitionUnavailable(self._reason) from None
        except (httpx.HTTPError, msgspec.DecodeError) as error:
            self._failed("failed", f"its offer could not be read ({error})")
            raise CognitionUnavailable(self._reason) from None
        self._succeeded()
        return offer

    def connect(self) -> None:
        """The first probe, when the runtime opens: a service that is not up yet is asked again at first use."""
        if self._http is None:
            return
        try:
            self.refresh()
        except CognitionUnavailable:
            logger.info("cognition bridge: the service did not answer at connect; it is asked again at first use")

    def _require_recall(self, ends: float) -> None:
        if not self._offer_now(ends).recall:
            raise CognitionUnavailable("the service does not list recall")

    def _offer_now(self, ends: float | None = None) -> Offer:
        """The offer, asked for again after any failure (the service may have restarted as another version)."""
        with self._lock:
            offer = None if self._stale else self._offer
        return offer if offer is not None else self.refresh(ends)

    def _decoded(self, answer: bytes) -> _Recalled:
        try:
            return msgspec.json.decode(answer, type=_Recalled)
        except msgspec.DecodeError as error:
            self._failed("failed", f"its recall answer could not be read ({error})")
            raise CognitionUnavailable(self._reason) from None

    def _get(self, path: str, ends: float) -> bytes:
        assert self._http is not None
        response = self._http.get(path, timeout=max(0.001, ends - time.monotonic()))
        response.raise_for_status()
        return response.content

    def _call(self, method: str, path: str, body: bytes | None, seconds: float | None = None) -> bytes:
        """One request within the deadline, counted, its failure fed to the breaker."""
        assert self._http is not None
        self._admit()
        try:
            response = self._http.request(
                method, path, content=body, timeout=max(0.001, self.settings.deadline if seconds is None else seconds),
                headers={"Content-Type": "application/json"} if body is not None else None,
            )
            response.raise_for_status()
        except httpx.TimeoutException as error:
            self._failed("timed_out", f"no answer within the deadline of {self.settings.deadline} s ({error})")
            raise CognitionUnavailable(self._reason) from None
        except httpx.HTTPError as error:
            self._failed("failed", str(error) or type(error).__name__)
            raise CognitionUnavailable(self._reason) from None
        self._succeeded()
        return response.content

    def _admit(self) -> None:
        with self._lock:
            allowed = self._breaker.allow(self._clock.monotonic())
            if not allowed:
                self._counts["refused"] += 1
        if not allowed:
            raise CognitionUnavailable(self._reason or "the circuit breaker is open")

    def _succeeded(self) -> None:
        with self._lock:
            self._breaker.succeeded()
            self._counts["answered"] += 1
            self._reason = ""

    def _failed(self, kind: str, reason: object) -> None:
        with self._lock:
            self._breaker.failed(self._clock.monotonic())
            self._stale = True
            self._counts[kind] += 1
            self._reason = f"the service failed: {reason}"
        logger.warning("cognition bridge: %s", reason)


def _hit(service: str, bank: str, result: _Result) -> BridgedHit:
    scores = result.scores
    own = {} if scores is None else {
        name: value for name, value in (("final", scores.final), ("semantic", scores.semantic),
                                        ("keyword", scores.keyword)) if value is not None
    }
    return BridgedHit(
        service=service, bank=bank, id=result.id, text=result.text, kind=result.type, mentioned_at=result.mentioned_at,
        occurred_start=result.occurred_start, tags=tuple(result.tags or ()), scores=own,
    )


def open_bridge(home: Path, settings: CognitionSettings, clock: Clock) -> Bridge:
    """The bridge `settings` describe, presenting the token of `token_file`."""
    return Bridge(settings, read_token(home, settings), clock)


def read_token(home: Path, settings: CognitionSettings) -> str | None:
    """The service's token from `[cognition] token_file` (relative to the home), None when none is named."""
    if not settings.bridged or not settings.token_file:
        return None
    path = Path(settings.token_file)
    path = path if path.is_absolute() else home / path
    try:
        raw = path.read_bytes()[: _MAX_TOKEN_BYTES + 1]
    except OSError as error:
        raise ConfigError(
            f"[cognition] token_file {path} cannot be read ({error.strerror}); write the service's token there"
        ) from None
    if len(raw) > _MAX_TOKEN_BYTES or not raw.strip():
        raise ConfigError(f"[cognition] token_file {path} must hold the service's token (1 to 4096 bytes)")
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"[cognition] token_file {path} is not UTF-8 text") from None
