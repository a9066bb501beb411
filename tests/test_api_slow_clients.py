"""A client that trickles its request is cut off: the body within the read timeout (408), the headers too
(the connection is closed), as Realm does; the server goes on answering everyone else."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api_helpers import UpProcess
from tests.cli_helpers import expect_error, run_process


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    with UpProcess(tmp_path_factory.mktemp("slow") / "home", "--read-timeout", "0.5") as process:
        yield process


def answer_of(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


def test_a_body_that_trickles_is_answered_408_and_the_server_answers_others(up: UpProcess) -> None:
    assert up.discovery is not None
    host, port = up.discovery.address.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"query": "anything"}).encode()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"POST /v1/members/deven/recall HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {up.discovery.token}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n".encode() + body[:3]
        )
        answer = answer_of(sock)  # the rest of the body never comes
    assert answer.startswith(b"HTTP/1.1 408")
    assert b'"RequestTimeout"' in answer
    with up.client() as http:
        assert http.get("/v1/health").status_code == 200


def test_headers_that_never_finish_get_the_connection_closed(up: UpProcess) -> None:
    assert up.discovery is not None
    host, port = up.discovery.address.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHo")
        assert sock.recv(4096) == b""  # closed by the server, not by this test's timeout


def test_the_read_timeout_must_be_a_positive_number_of_seconds(tmp_path: Path) -> None:
    expect_error(run_process(tmp_path / "home", "up", "--read-timeout", "0"), "UsageError", code=2)
