"""The client's side of the wire: declared operations' requests sent, answers decoded into structs,
error answers raised as the same `ResidentError` the runtime raised, and the event stream.

One `httpx.Client` serves blocking calls from any thread; awaitable calls use one
`httpx.AsyncClient` per event loop (an async client belongs to the loop it first ran on). A server
that does not answer, or does not prove it holds the home's token (`challenge`), is `RuntimeNotUp`;
a token it refuses is `Unauthorized`.

Light on purpose: httpx, msgspec and the message structs, nothing of the runtime.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Union

import httpx
import msgspec
from httpx_sse import EventSource, aconnect_sse, connect_sse

from resident.api.challenge import prove_server
from resident.api.discovery import Discovery
from resident.api.exchange import auth_headers, decode_error, decode_reply, unreachable
from resident.api.wire import API_EVENTS, EVENTS_PATH, ApiEvent
from resident.errors import RuntimeNotUp
from resident.operations.wire import Encoded

__all__ = ["DEFAULT_TIMEOUT", "StreamItem", "Transport"]

# The runtime's own asks wait up to 30 s; the answer gets a little longer to come back.
DEFAULT_TIMEOUT = 45.0
_CONNECT_TIMEOUT = 5.0
# The server pings an idle stream every 15 s; three missed pings mean it is gone.
_STREAM_READ_TIMEOUT = 45.0
_JSON_BODY = {"Content-Type": "application/json"}
_EVENT_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(Union[API_EVENTS])  # noqa: UP007 - a Union of a runtime tuple


@dataclass(frozen=True, slots=True)
class StreamItem:
    """One event of the stream and its id (send the id back to resume after it)."""

    id: str
    event: ApiEvent


class Transport:
    """Requests to one `resident up` server, described by its discovery file."""

    def __init__(self, discovery: Discovery) -> None:
        # Nothing secret goes to the address until the process there proves it holds the home's token.
        prove_server(discovery, session=discovery.session)
        self.discovery = discovery
        self._headers = auth_headers(discovery)
        self._client = httpx.Client(
            base_url=discovery.base_url,
            headers=self._headers,
            transport=self._transport(),
            timeout=httpx.Timeout(DEFAULT_TIMEOUT, connect=_CONNECT_TIMEOUT),
            # A proxy from the environment must never see the token: the server is on this machine.
            trust_env=False,
        )
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._async_lock = threading.Lock()

    def _transport(self) -> httpx.HTTPTransport | None:
        path = self.discovery.unix_path
        return None if path is None else httpx.HTTPTransport(uds=path)

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        with self._async_lock:
            client = self._async.get(loop)
            if client is None:
                path = self.discovery.unix_path
                client = httpx.AsyncClient(
                    base_url=self.discovery.base_url,
                    headers=self._headers,
                    transport=None if path is None else httpx.AsyncHTTPTransport(uds=path),
                    timeout=httpx.Timeout(DEFAULT_TIMEOUT, connect=_CONNECT_TIMEOUT),
                    limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
                    trust_env=False,
                )
                self._async[loop] = client
        return client

    # -- calls ------------------------------------------------------------------------------------

    def send(
        self, encoded: Encoded, reply: type[Any], *, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        """Send one declared operation's request; its reply struct, or the typed error it answered."""
        try:
            response = self._client.request(
                encoded.method, encoded.path, params=encoded.query or None, content=encoded.body,
                headers={**(headers or {}), **(_JSON_BODY if encoded.body is not None else {})},
                timeout=_timeout(timeout),
            )
        except httpx.TransportError as error:
            raise self._unreachable(error) from None
        return decode_reply(reply, response.status_code, response.content)

    async def asend(
        self, encoded: Encoded, reply: type[Any], *, timeout: float | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        """`send` for asyncio hosts."""
        try:
            response = await self._async_client().request(
                encoded.method, encoded.path, params=encoded.query or None, content=encoded.body,
                headers={**(headers or {}), **(_JSON_BODY if encoded.body is not None else {})},
                timeout=_timeout(timeout),
            )
        except httpx.TransportError as error:
            raise self._unreachable(error) from None
        return decode_reply(reply, response.status_code, response.content)

    def _unreachable(self, error: httpx.TransportError) -> RuntimeNotUp:
        return unreachable(self.discovery, error)

    # -- the event stream -------------------------------------------------------------------------

    def events(self, last_event_id: str | None = None, *, from_now: bool = False) -> Iterator[StreamItem]:
        """The event stream from the beginning (or only what comes next, `from_now`), or after
        `last_event_id`; ends when the server stops.

        A keep-alive ping (a comment line) makes the SSE parser dispatch an event with no data once
        an id was seen; such empty events are skipped.
        """
        try:
            with connect_sse(
                self._client, "GET", _events_path(from_now), headers=_resume(last_event_id), timeout=_stream_timeout()
            ) as source:
                _check_stream(source)
                for sse in source.iter_sse():
                    if sse.data:
                        yield StreamItem(id=sse.id, event=_EVENT_DECODER.decode(sse.data))
        except httpx.TransportError as error:
            raise self._unreachable(error) from None

    async def aevents(self, last_event_id: str | None = None, *, from_now: bool = False) -> AsyncIterator[StreamItem]:
        """`events` for asyncio hosts."""
        try:
            async with aconnect_sse(
                self._async_client(), "GET", _events_path(from_now), headers=_resume(last_event_id),
                timeout=_stream_timeout(),
            ) as source:
                if source.response.status_code != 200:
                    await source.response.aread()
                _check_stream(source)
                async for sse in source.aiter_sse():
                    if sse.data:
                        yield StreamItem(id=sse.id, event=_EVENT_DECODER.decode(sse.data))
        except httpx.TransportError as error:
            raise self._unreachable(error) from None

    # -- closing ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the blocking client (async clients are closed by `aclose` in their own loop)."""
        self._client.close()

    async def aclose(self) -> None:
        """Close this event loop's async client."""
        loop = asyncio.get_running_loop()
        with self._async_lock:
            client = self._async.pop(loop, None)
        if client is not None:
            await client.aclose()


def _timeout(seconds: float | None) -> httpx.Timeout:
    return httpx.Timeout(DEFAULT_TIMEOUT if seconds is None else seconds, connect=_CONNECT_TIMEOUT)


def _stream_timeout() -> httpx.Timeout:
    return httpx.Timeout(_STREAM_READ_TIMEOUT, connect=_CONNECT_TIMEOUT)


def _resume(last_event_id: str | None) -> dict[str, str]:
    return {} if last_event_id is None else {"Last-Event-ID": last_event_id}


def _events_path(from_now: bool) -> str:
    return f"{EVENTS_PATH}?from=now" if from_now else EVENTS_PATH


def _check_stream(source: EventSource) -> None:
    response = source.response
    if response.status_code != 200:
        if not response.is_stream_consumed:
            response.read()
        raise decode_error(response.status_code, response.content)
