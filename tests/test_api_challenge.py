"""A client sends nothing secret to the address in api.json until the server there proves it holds the
home's token: a fake server on that address (a real loopback socket that records every byte) gets
only a nonce, from the `resident` command and from `Runtime.connect` alike."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from resident import Runtime
from resident.api.challenge import CHALLENGE_PATH, NONCE_BYTES, answer_challenge, prove_server
from resident.api.discovery import DISCOVERY_FILE, Discovery
from resident.coordination.tokens import GRANT_TOKEN_ENV
from resident.errors import RuntimeNotUp
from resident.messages.home_calls import API_VERSION
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from resident.store.home import HomeLock
from tests.api_helpers import UpProcess
from tests.cli_helpers import expect_error, expect_ok, invoke, run_process

HOME_TOKEN = "the-home-token-the-fake-must-never-see"
SECRET = "the launch code is 0000"


class FakeServer:
    """A loopback listener that records what each connection sends and answers `answer` to it."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.received: list[bytes] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2.0)
                data = b""
                try:
                    while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
                        data += chunk
                except TimeoutError:
                    pass
                self.received.append(data)
                conn.sendall(self.answer)

    def close(self) -> None:
        # shutdown wakes the thread blocked in accept(); close alone does not on Linux.
        self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(timeout=5)


def http_answer(status: int, body: bytes) -> bytes:
    return b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        status, len(body), body,
    )


ANSWERS = {
    "a 404 to everything": http_answer(404, b'{"error": {"type": "NotFound", "message": "no"}}'),
    "a proof that is not one": http_answer(200, b'{"proof": "' + b"0" * 64 + b'"}'),
    "an empty proof": http_answer(200, b'{"proof": ""}'),
    "garbage": b"\x00\xff not http at all",
}


@pytest.fixture(params=sorted(ANSWERS))
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server = FakeServer(ANSWERS[request.param])
    yield server
    server.close()


@pytest.fixture
def squatted_home(tmp_path: Path, fake: FakeServer) -> Iterator[tuple[Path, str]]:
    """A home whose lock this process holds and whose api.json names the fake server; and a grant token."""
    home = tmp_path / "home"
    expect_ok(invoke(home, "memory", "enable"))
    with Runtime.open(home, realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"remember", "recall"}, scopes={"AGENT_CORE"})
        token = dispatch_session(host_context(rt), "notes", "deven", role="implement", parent_grant=grant,
                                        actions={"remember"}, scopes={"AGENT_CORE"}).token
    with HomeLock(home):
        found = Discovery(address=fake.address, pid=os.getpid(), token=HOME_TOKEN,
                          api_version=API_VERSION, home=str(home))
        (home / DISCOVERY_FILE).write_bytes(msgspec.json.encode(found))
        yield home, token


def check_only_a_nonce_was_sent(fake: FakeServer, grant: str) -> None:
    assert fake.received, "the client never reached the fake server"
    for request in fake.received:
        assert request.startswith(f"GET {CHALLENGE_PATH}?nonce=".encode()), request
        assert b"Authorization" not in request
        for secret in (HOME_TOKEN, grant, SECRET):
            assert secret.encode() not in request


def test_the_command_sends_no_token_grant_or_memory_to_a_server_that_cannot_prove_itself(
    squatted_home: tuple[Path, str], fake: FakeServer,
) -> None:
    home, grant = squatted_home
    outcome = run_process(home, "remember", "deven", SECRET, env={GRANT_TOKEN_ENV: grant})
    message = expect_error(outcome, "RuntimeNotUp")
    assert "did not prove" in message or "does not answer" in message
    check_only_a_nonce_was_sent(fake, grant)


def test_runtime_connect_sends_nothing_secret_to_a_server_that_cannot_prove_itself(
    squatted_home: tuple[Path, str], fake: FakeServer,
) -> None:
    home, grant = squatted_home
    with pytest.raises(RuntimeNotUp):
        Runtime.connect(home)
    check_only_a_nonce_was_sent(fake, grant)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    with UpProcess(tmp_path_factory.mktemp("challenge") / "home") as process:
        yield process


def test_the_real_server_proves_it_holds_the_token_and_a_wrong_token_fails_the_proof(up: UpProcess) -> None:
    assert up.discovery is not None
    prove_server(up.discovery)
    with pytest.raises(RuntimeNotUp, match="did not prove"):
        prove_server(msgspec.structs.replace(up.discovery, token="not-the-home-token"))


def test_the_challenge_needs_no_token_and_refuses_a_malformed_nonce(up: UpProcess) -> None:
    assert up.discovery is not None
    with httpx.Client(base_url=up.discovery.address, trust_env=False) as bare:
        nonce = "ab" * NONCE_BYTES
        answered = bare.get(CHALLENGE_PATH, params={"nonce": nonce})
        assert answered.status_code == 200
        assert answered.json() == {"proof": answer_challenge(up.discovery.token, nonce)}
        for bad in ({"nonce": "zz" * NONCE_BYTES}, {"nonce": "ab"}, {}):
            refused = bare.get(CHALLENGE_PATH, params=bad)
            assert (refused.status_code, refused.json()["error"]["type"]) == (400, "InvalidInput")
        assert bare.get("/v1/status").status_code == 401  # the rest still needs the token
