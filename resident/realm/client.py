"""The HTTP client of Realm's `/v1` protocol, with every failure sorted into one of two errors.

* `RealmUnavailable` — transient, worth retrying later: the connection was refused or dropped, Realm
  was slower than the timeout, it answered 5xx (or 408/429), or it answered something that is not
  its protocol (a body that does not decode, results that do not match the request, a redirect, a
  4xx without Realm's error body).
* `RealmRejected` — Realm understood the request and refused it (a 4xx with its typed error body);
  sending the same request again will not help. Two kinds are told apart: `RealmUnauthorized`
  (401/403: the token is missing, unknown or of the wrong kind) and `RealmIdTaken` (409: record ids
  in a push belong to another home; it names them).

Every call but `health` carries the client's bearer token. Plain `http` is refused for any host but
this machine's loopback: a token must not cross a network in the clear, so a Realm elsewhere is
reached over `https`, verified against the CA bundle the home pins (`ca_file`: only those CAs are
trusted, a certificate from any other is refused as `RealmCertificateRefused`), else against the
system's trust store (or `$SSL_CERT_FILE`).

Each call makes exactly one attempt: retry policy belongs to the caller (the replication actor
schedules retries as messages). No call hangs: each socket operation is bounded by the timeout, and
an answer still arriving once the timeout has passed since the call began is cut off.
"""

from __future__ import annotations

import math
import ssl
import time
from collections.abc import Sequence
from types import TracebackType
from typing import TypeVar

import httpx
import msgspec

from resident.errors import (
    InvalidInput,
    RealmCertificateRefused,
    RealmIdTaken,
    RealmRejected,
    RealmUnauthorized,
    RealmUnavailable,
)
from resident.messages.realm import (
    DEFAULT_PAGE_LIMIT,
    ErrorBody,
    ErrorDetail,
    Health,
    InvalidateRequest,
    Invalidation,
    InvalidationPage,
    RealmRecord,
    RecordPage,
    ReplicateRequest,
    ReplicateResponse,
    ReplicateResult,
)
from resident.realm.urls import realm_base_url, realm_url

__all__ = ["RealmClient", "realm_base_url", "realm_url"]

_T = TypeVar("_T")

# Far above any honest answer (a page of invalidations is a few hundred KiB); a longer body is garbage.
_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
_TRANSIENT_4XX = frozenset({408, 429})


class RealmClient:
    """A synchronous, pooled connection to one Realm; one attempt per call, errors classified."""

    def __init__(
        self, url: str, timeout: float = 2.0, *, token: str | None = None, ca_file: str | None = None
    ) -> None:
        self.url = realm_base_url(url)
        if not (math.isfinite(timeout) and timeout > 0):
            raise InvalidInput(f"Realm timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = timeout
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.ca_file = ca_file
        # trust_env=False: a proxy named in the environment must not intercept a loopback service;
        # the default SSL context still honours $SSL_CERT_FILE for a private CA.
        self._http = httpx.Client(
            timeout=timeout, trust_env=False, follow_redirects=False, headers=headers,
            verify=pinned_context(ca_file) if ca_file is not None else ssl.create_default_context(),
        )

    def health(self) -> Health:
        """Realm's liveness and counts."""
        return self._call("GET", "/v1/health", Health)

    def replicate(self, records: Sequence[RealmRecord]) -> list[ReplicateResult]:
        """Realm's verdict on each record, in the order given (at most 500 records, 4 MiB a call)."""
        body = msgspec.json.encode(ReplicateRequest(records=tuple(records)))
        answer = self._call("POST", "/v1/replicate", ReplicateResponse, body=body)
        if [result.id for result in answer.results] != [record.id for record in records]:
            raise self._garbage(
                "POST /v1/replicate",
                f"{len(answer.results)} results that do not match the {len(records)} records sent",
            )
        return list(answer.results)

    def invalidations(self, since: int, limit: int = DEFAULT_PAGE_LIMIT) -> InvalidationPage:
        """Invalidations after sequence number `since`, oldest first; pass `cursor` back next time."""
        page = self._call(
            "GET", "/v1/invalidations", InvalidationPage, params={"since": str(since), "limit": str(limit)}
        )
        seqs = [item.seq for item in page.items]
        ordered = all(a < b for a, b in zip([since, *seqs], seqs, strict=False))
        if len(seqs) > limit or not ordered or page.cursor < max([since, *seqs]):
            raise self._garbage("GET /v1/invalidations", f"a page out of order for since={since}")
        return page

    def records(self, after: str = "", limit: int = DEFAULT_PAGE_LIMIT) -> RecordPage:
        """Accepted records with ids after `after` (governance; needs the admin token)."""
        params = {"limit": str(limit), **({"after": after} if after else {})}
        return self._call("GET", "/v1/records", RecordPage, params=params)

    def invalidate(self, id: str, reason: str) -> Invalidation:  # noqa: A002 - the protocol's field name
        """Withdraw an accepted record (a governance action); invalidating twice returns the first entry."""
        body = msgspec.json.encode(InvalidateRequest(id=id, reason=reason))
        item = self._call("POST", "/v1/invalidate", Invalidation, body=body)
        if item.id != id:
            raise self._garbage("POST /v1/invalidate", f"an invalidation of {item.id!r} instead of {id!r}")
        return item

    def close(self) -> None:
        """Close pooled connections; a call afterwards raises `RuntimeError` (a programming error)."""
        self._http.close()

    def __enter__(self) -> RealmClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- one attempt -----------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        answer: type[_T],
        *,
        body: bytes | None = None,
        params: dict[str, str] | None = None,
    ) -> _T:
        what = f"{method} {path}"
        try:
            status, content = self._exchange(method, path, body, params)
        except _TooLong as exc:
            raise self._garbage(what, str(exc)) from exc
        except (httpx.TimeoutException, _TooSlow) as exc:
            how = "the answer was still arriving" if isinstance(exc, _TooSlow) else type(exc).__name__
            raise RealmUnavailable(f"Realm at {self.url} did not answer {what} within {self.timeout}s ({how})") from exc
        except httpx.HTTPError as exc:
            refusal = _certificate_refusal(exc)
            if refusal is not None:
                trusted = f"the pinned CA {self.ca_file}" if self.ca_file is not None else "the system's CAs"
                raise RealmCertificateRefused(
                    f"Realm at {self.url} presented a certificate not issued by {trusted}: {refusal}"
                ) from exc
            raise RealmUnavailable(
                f"Realm at {self.url} is unreachable for {what}: {type(exc).__name__}: {_one_line(exc)}"
            ) from exc
        if 200 <= status < 300:
            try:
                return msgspec.json.decode(content, type=answer)
            except msgspec.DecodeError as exc:
                raise self._garbage(what, f"a body that is not a {answer.__name__} ({_one_line(exc)})") from exc
        detail_body = _error_detail(content)
        error = None if detail_body is None else detail_body.message
        if 400 <= status < 500 and status not in _TRANSIENT_4XX and detail_body is not None:
            message = f"Realm at {self.url} rejected {what} ({status}): {error}"
            if status == 401:
                raise RealmUnauthorized(f"{message}; check the home's Realm token (`resident realm enroll`)")
            if status == 403:
                raise RealmUnauthorized(message)
            if status == 409:
                raise RealmIdTaken(message, ids=detail_body.ids)
            raise RealmRejected(message)
        detail = f": {error}" if error is not None else " without Realm's error body; is this URL a Realm?"
        raise RealmUnavailable(f"Realm at {self.url} answered {status} to {what}{detail}")

    def _exchange(self, method: str, path: str, body: bytes | None, params: dict[str, str] | None) -> tuple[int, bytes]:
        # httpx's timeout bounds each socket operation; the deadline bounds an answer that trickles.
        deadline = time.monotonic() + self.timeout
        headers = {"content-type": "application/json"} if body is not None else None
        request = self._http.build_request(method, self.url + path, content=body, params=params, headers=headers)
        chunks: list[bytes] = []
        size = 0
        response = self._http.send(request, stream=True)
        try:
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > _MAX_RESPONSE_BYTES:
                    raise _TooLong(f"an answer longer than {_MAX_RESPONSE_BYTES} bytes")
                if time.monotonic() > deadline:
                    raise _TooSlow
                chunks.append(chunk)
        finally:
            response.close()
        return response.status_code, b"".join(chunks)

    def _garbage(self, what: str, detail: str) -> RealmUnavailable:
        return RealmUnavailable(f"Realm at {self.url} answered {what} with {detail}")


class _TooLong(Exception):
    """The answer grew past `_MAX_RESPONSE_BYTES`."""


class _TooSlow(Exception):
    """The answer was still arriving when the call's deadline passed."""


def pinned_context(ca_file: str) -> ssl.SSLContext:
    """A client TLS context that trusts only the CAs (or self-signed certificates) in the PEM `ca_file`."""
    # Not create_default_context(cafile=...): that would load the system store too, and a pin that
    # any public CA can satisfy pins nothing.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidInput(
            f"the Realm CA bundle {ca_file} cannot be read as PEM certificates: {_one_line(exc)}"
        ) from None
    return context


def _certificate_refusal(exc: BaseException) -> str | None:
    """The verification failure behind `exc` (httpx wraps the ssl error in its own), else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen.verify_message or _one_line(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _error_detail(content: bytes) -> ErrorDetail | None:
    """Realm's own error, or `None` when the body is not Realm's error shape."""
    try:
        return msgspec.json.decode(content, type=ErrorBody).error
    except msgspec.DecodeError:
        return None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
