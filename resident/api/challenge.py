"""The challenge a client puts to a server before it sends it anything secret.

A discovery file names an address; it does not prove that the process listening there is the
runtime that wrote it. A stale `api.json` (its server was killed) names a port any local process
may take next, and a client that simply connected would hand that process the home's token, a
member session's grant token and the memory text of the request. So before a client sends any of
that, it sends only a random nonce to `CHALLENGE_PATH`, which needs no secret, and the server
answers HMAC-SHA256(home token, nonce). Only a process that holds the token the discovery file
names can answer; a client that gets anything else sends nothing more and reports the runtime
not up.

A member session's harness (sandboxed, it cannot read `api.json` nor the home's token) is given,
beside the address, a proof key for its session alone: HMAC(home token, session id). It puts the
challenge with its session id, and the server answers with that key in place of the home token.
A process without the home's token can compute neither, and the key acts as no one: it proves the
server, it is never a credential.

It costs one round trip per client (a `resident` command, a `Runtime.connect`), and nothing is
remembered on disk (a cached "this server was proven" would be one more file to forge).

Light on purpose: the standard library's sockets and hmac, msgspec; `resident.api.client`'s and
the `resident` command's remote path both use it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
from urllib.parse import urlsplit

import msgspec

from resident.api.discovery import Discovery
from resident.coordination.callback_env import PROOF_KEY_ENV
from resident.errors import RuntimeNotUp

__all__ = ["CHALLENGE_PATH", "NONCE_BYTES", "PROOF_KEY_ENV", "answer_challenge", "prove_server", "session_proof_key"]

CHALLENGE_PATH = "/v1/challenge"
NONCE_BYTES = 16
# Keys the proof to this use: an answer is never a MAC of anything the API signs elsewhere.
_CONTEXT = b"resident api challenge v1\0"
_SESSION_CONTEXT = b"resident session proof key v1\0"
_TIMEOUT = 5.0
_MAX_ANSWER = 4096


class _Proof(msgspec.Struct, frozen=True):
    proof: str


def answer_challenge(token: str, nonce: str) -> str | None:
    """The server's answer to `nonce` (hex, `NONCE_BYTES` bytes), or None when it is not a nonce."""
    if len(nonce) != 2 * NONCE_BYTES:
        return None
    try:
        raw = bytes.fromhex(nonce)
    except ValueError:
        return None
    return hmac.new(token.encode("utf-8", "surrogateescape"), _CONTEXT + raw, hashlib.sha256).hexdigest()


def session_proof_key(home_token: str, session_id: str) -> str:
    """The key a member session's harness checks the server's answer with (see the module docstring)."""
    key = home_token.encode("utf-8", "surrogateescape")
    return hmac.new(key, _SESSION_CONTEXT + session_id.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()


def prove_server(discovery: Discovery, timeout: float = _TIMEOUT, *, session: str = "") -> None:
    """Return once the server at `discovery.address` proved it holds `discovery.token`; `RuntimeNotUp` if not.

    With `session`, `discovery.token` is that session's proof key, and the server proves it can make it.
    The request carries the nonce (and the session id) and nothing else: no token, no grant, no body.
    """
    nonce = os.urandom(NONCE_BYTES).hex()
    query = f"nonce={nonce}&session={session}" if session else f"nonce={nonce}"
    try:
        status, content = _get(discovery, f"{CHALLENGE_PATH}?{query}", timeout)
    except (OSError, ValueError) as error:
        raise RuntimeNotUp(
            f"the runtime of {discovery.home} at {discovery.address} does not answer "
            f"({type(error).__name__}: {error}); is `resident up` still running?"
        ) from None
    expected = answer_challenge(discovery.token, nonce)
    try:
        given = msgspec.json.decode(content, type=_Proof).proof if status == 200 else ""
    except msgspec.DecodeError:
        given = ""
    if expected is None or not hmac.compare_digest(given.encode("ascii", "replace"), expected.encode("ascii")):
        raise RuntimeNotUp(
            f"the process at {discovery.address} did not prove it is the runtime of {discovery.home} "
            "(its api.json is stale or forged); nothing was sent to it — start the runtime again with `resident up`"
        )


def _get(discovery: Discovery, path: str, timeout: float) -> tuple[int, bytes]:
    """Status and body of one `GET path` with no credentials, read to at most `_MAX_ANSWER` bytes."""
    address = urlsplit(discovery.base_url)
    head = (
        f"GET {path} HTTP/1.1\r\nHost: {address.netloc or 'localhost'}\r\nConnection: close\r\n\r\n"
    ).encode("ascii")
    with _connect(discovery, timeout) as sock:
        sock.sendall(head)
        received = bytearray()
        while len(received) <= _MAX_ANSWER and (chunk := sock.recv(_MAX_ANSWER)):
            received += chunk
    head_end = received.find(b"\r\n\r\n")
    status_line = bytes(received[: received.find(b"\r\n")]).split()
    http = len(status_line) >= 2 and status_line[0].startswith(b"HTTP/1.") and status_line[1].isdigit()
    if head_end < 0 or not http:
        raise ValueError("the answer is not HTTP")
    return int(status_line[1]), bytes(received[head_end + 4 : head_end + 4 + _MAX_ANSWER])


def _connect(discovery: Discovery, timeout: float) -> socket.socket:
    if discovery.unix_path is not None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(discovery.unix_path)
        except OSError:
            sock.close()
            raise
        return sock
    address = urlsplit(discovery.address)
    # As bytes: a host given as text goes through the idna codec first, which costs a few ms to load.
    host = (address.hostname or "").encode("ascii")
    return socket.create_connection((host, address.port or 80), timeout=timeout)  # type: ignore[arg-type]
