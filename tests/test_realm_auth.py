"""Realm's trust boundary, tried from outside by a real process: tokens, roles, id ownership, what it
stores, TLS, and a `realm serve` that cannot be taken over, stalled or left running.

The reproductions on main (30afd90): any local process could invalidate any record with a bare
`curl -X POST …/v1/invalidate`, squat a record id so the home's real record went to `conflict`,
and store a 3.9 MB body with digest `000…0`. Each is refused here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lmdb
import pytest
import trustme

from resident import Runtime
from resident.errors import InvalidInput, RealmIdTaken, RealmUnauthorized
from resident.realm.client import RealmClient
from resident.realm.process import STOP_TIMEOUT, RealmProcess, start_realm
from resident.realm.server import serve
from resident.realm.state import RealmState
from resident.realm.tokens import ADMIN_TOKEN_FILE
from tests.cli_helpers import expect_error, expect_json, invoke
from tests.postgres_support import BACKENDS, database_for
from tests.replication_support import FAST, realm_record

ROOT = Path(__file__).resolve().parents[1]




@pytest.fixture(scope="module", params=BACKENDS)
def realm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    """A Realm process over LMDB, and one over PostgreSQL: the same tests hold on both."""
    data = tmp_path_factory.mktemp("realm") / "data"
    with start_realm(data, database=database_for(request, request.param, data)) as process:
        yield process


def raw(realm: RealmProcess, method: str, path: str, token: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=realm.url, timeout=10.0, trust_env=False, headers=headers) as http:
        return http.request(method, path, **kwargs)


# -- tokens and roles ------------------------------------------------------------------------------


ROUTES = [
    ("POST", "/v1/replicate", {"json": {"records": []}}),
    ("GET", "/v1/invalidations", {}),
    ("POST", "/v1/invalidate", {"json": {"id": "mem_x", "reason": "curl says so"}}),
    ("GET", "/v1/records", {}),
]


@pytest.mark.parametrize(("method", "path", "kwargs"), ROUTES, ids=[p for _, p, _ in ROUTES])
@pytest.mark.parametrize("token", [None, "", "garbage", "admin.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                                   "ghost.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"])
def test_every_route_but_health_refuses_a_missing_or_unknown_token_with_a_typed_401(
    realm: RealmProcess, method: str, path: str, kwargs: dict[str, Any], token: str | None
) -> None:
    response = raw(realm, method, path, token, **kwargs)
    assert response.status_code == 401, response.text
    assert response.json()["error"]["type"] == "Unauthorized"
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert raw(realm, "GET", "/v1/health").status_code == 200


def test_a_bare_local_process_can_no_longer_invalidate_a_homes_record(realm: RealmProcess) -> None:
    token = realm.enroll("victim")
    with RealmClient(realm.url, token=token) as home:
        home.replicate([realm_record("victim-1")])
    # What `curl -X POST …/v1/invalidate` did on main, with and without the home's own token.
    for attempt in (None, token):
        response = raw(realm, "POST", "/v1/invalidate", attempt, json={"id": "victim-1", "reason": "x"})
        assert response.status_code in (401, 403)
    with RealmClient(realm.url, token=token) as home:
        assert home.invalidations(0).items == ()


def test_governance_needs_the_admin_token_and_replication_a_homes(realm: RealmProcess) -> None:
    token = realm.enroll("roles")
    admin = realm.admin_token()
    assert raw(realm, "POST", "/v1/replicate", admin, json={"records": []}).status_code == 403
    assert raw(realm, "GET", "/v1/records", token).status_code == 403
    with RealmClient(realm.url, token=token) as home, pytest.raises(RealmUnauthorized, match="403"):
        home.invalidate("whatever", "no")
    assert raw(realm, "GET", "/v1/records", admin).status_code == 200


def test_a_record_id_belongs_to_the_home_that_pushed_it_first(realm: RealmProcess) -> None:
    first, squatter = realm.enroll("first"), realm.enroll("squatter")
    with RealmClient(realm.url, token=first) as home:
        assert [r.status for r in home.replicate([realm_record("owned-1")])] == ["accepted"]
    with RealmClient(realm.url, token=squatter) as other, pytest.raises(RealmIdTaken) as caught:
        other.replicate([realm_record("fresh-1"), realm_record("owned-1", "the squatter's version")])
    assert caught.value.ids == ("owned-1",)
    assert "409" in caught.value.message
    # Nothing of the refused push was stored, and the first home's record is untouched.
    with RealmClient(realm.url, token=realm.admin_token()) as governance:
        listed = {item.id: item for item in governance.records().items}
    assert "fresh-1" not in listed
    assert listed["owned-1"].home == "first"
    with RealmClient(realm.url, token=first) as home:
        assert [r.status for r in home.replicate([realm_record("owned-1")])] == ["accepted"]


def test_a_home_sees_only_invalidations_of_its_own_records(realm: RealmProcess) -> None:
    mine, theirs = realm.enroll("mine"), realm.enroll("theirs")
    with RealmClient(realm.url, token=mine) as home:
        home.replicate([realm_record("mine-1")])
        since = home.invalidations(0, limit=1000).cursor
    with RealmClient(realm.url, token=theirs) as other:
        other.replicate([realm_record("theirs-1")])
    with RealmClient(realm.url, token=realm.admin_token()) as governance:
        governance.invalidate("mine-1", "withdrawn")
        governance.invalidate("theirs-1", "withdrawn")
    with RealmClient(realm.url, token=mine) as home:
        assert [item.id for item in home.invalidations(since).items] == ["mine-1"]


def test_realm_refuses_a_huge_body_with_a_made_up_digest(realm: RealmProcess) -> None:
    token = realm.enroll("bulk")
    body = {"records": [{
        "id": "huge", "digest": "0" * 64, "owner": "deven", "bank": "agent_core/deven", "scope": "AGENT_CORE",
        "kind": "world", "summary": "a note", "body": "x" * 3_900_000, "canonical": False, "delegated": False,
        "recorded_at": 1.0,
    }]}
    response = raw(realm, "POST", "/v1/replicate", token, json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "InvalidInput"
    small_but_forged = {**body["records"][0], "body": "short", "id": "forged"}
    response = raw(realm, "POST", "/v1/replicate", token, json={"records": [small_but_forged]})
    assert response.status_code == 400
    assert "digest does not match" in response.json()["error"]["message"]


def test_tokens_are_stored_hashed_and_a_second_enroll_needs_rotate(tmp_path: Path) -> None:
    data = tmp_path / "data"
    enrolled = expect_json(invoke(tmp_path / "home", "realm", "enroll", "deven-laptop", "--data", str(data), "--json"))
    token = enrolled["token"]
    assert token.startswith("deven-laptop.")
    secret = token.split(".", 1)[1].encode()
    stored = b"".join(path.read_bytes() for path in data.iterdir() if path.is_file())
    assert secret not in stored
    expect_error(invoke(tmp_path / "home", "realm", "enroll", "deven-laptop", "--data", str(data)), "InvalidInput",
                 naming=("--rotate",))
    rotated = expect_json(invoke(tmp_path / "home", "realm", "enroll", "deven-laptop", "--data", str(data),
                                 "--rotate", "--json"))["token"]
    with RealmState.open(data) as state:
        from resident.realm.tokens import tokens_match  # noqa: PLC0415 - loaded only when this runs

        digest = state.home_token_digest("deven-laptop")
        assert digest is not None
        assert tokens_match(rotated, digest)
        assert not tokens_match(token, digest)
    expect_error(invoke(tmp_path / "home", "realm", "enroll", "Admin", "--data", str(data)), "InvalidInput")
    expect_error(invoke(tmp_path / "home", "realm", "enroll", "admin", "--data", str(data)), "InvalidInput")


def test_the_admin_token_file_is_private_and_survives_restarts(realm: RealmProcess) -> None:
    path = realm.data_dir / ADMIN_TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert realm.admin_token() == path.read_text().strip()


# -- the client's side -----------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://10.0.0.5:8765", "http://realm.example.com:8765", "http://[2001:db8::1]:1"])
def test_the_client_refuses_plain_http_to_another_machine(url: str) -> None:
    with pytest.raises(InvalidInput, match="https"):
        RealmClient(url, token="home.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    RealmClient(url.replace("http://", "https://")).close()


def test_ipv6_urls_are_bracketed() -> None:
    from resident.realm.urls import realm_url  # noqa: PLC0415 - loaded only when this runs

    assert realm_url("::1", 8765) == "http://[::1]:8765"
    assert realm_url("127.0.0.1", 8765, tls=True) == "https://127.0.0.1:8765"


# -- serving -----------------------------------------------------------------------------------------


def serve_command(data: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "resident.cli", "realm", "serve", "--data", str(data), *extra]


def start_serving(data: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """`resident realm serve --port 0`, and the URL it printed once it served."""
    process = subprocess.Popen(
        serve_command(data, "--port", "0", *extra), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    failure = process.stderr.read() if process.stderr is not None and process.poll() is not None else ""
    assert line.startswith("Realm serving"), (line, failure)
    return process, line.split(" on ", 1)[1].split(" ", 1)[0]


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=STOP_TIMEOUT)
    return process.returncode, err


@pytest.mark.slow
def test_port_0_prints_the_port_it_got_and_a_second_serve_on_the_same_data_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "a" / "b" / "data"
    process, url = start_serving(data)
    try:
        port = int(url.rsplit(":", 1)[1])
        assert port > 0
        assert httpx.get(f"{url}/v1/health", trust_env=False).status_code == 200
        second = subprocess.run(serve_command(data, "--port", "0"), cwd=ROOT, capture_output=True, text=True,
                                timeout=60, check=False)
        assert second.returncode == 1
        assert "RealmInUse" in second.stderr
        assert second.stderr.count("\n") == 1
        assert "serving" not in second.stdout
    finally:
        assert stop(process)[0] == 0
    # Every folder serve created is private, parents included.
    for folder in (tmp_path / "a", tmp_path / "a" / "b", data):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_nothing_says_serving_when_the_bind_fails(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = invoke(tmp_path / "home", "realm", "serve", "--data", str(tmp_path / "data"), "--port", str(port))
    assert done.code == 1
    assert "serving" not in done.stdout
    assert "choose another --port" in done.stderr


@pytest.mark.slow
def test_serving_on_ipv6_loopback_prints_a_bracketed_url(tmp_path: Path) -> None:
    if not socket.has_ipv6:
        pytest.skip("this machine has no IPv6")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("::1 is not configured here")
    process, url = start_serving(tmp_path / "data", "--host", "::1")
    try:
        assert url.startswith("http://[::1]:")
        assert httpx.get(f"{url}/v1/health", trust_env=False).status_code == 200
    finally:
        assert stop(process)[0] == 0


@pytest.mark.slow
def test_sigterm_with_half_sent_requests_stops_at_once_without_a_traceback(tmp_path: Path) -> None:
    process, url = start_serving(tmp_path / "data")
    host, port = url.removeprefix("http://").rsplit(":", 1)
    half_sent = []
    try:
        for _ in range(5):
            sock = socket.create_connection((host, int(port)), timeout=5)
            # Headers promise a body that never comes.
            sock.sendall(b"POST /v1/replicate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Authorization: Bearer x.y\r\nContent-Length: 1000\r\n\r\n{\"records\"")
            half_sent.append(sock)
        half_headers = socket.create_connection((host, int(port)), timeout=5)
        half_headers.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 12")
        half_sent.append(half_headers)
        time.sleep(0.2)  # let the server take the connections in; the stop below is what is measured
        started = time.monotonic()
        code, err = stop(process)
        stopped_after = time.monotonic() - started
    finally:
        for sock in half_sent:
            sock.close()
    assert code == 0
    assert "Traceback" not in err
    assert "CancelledError" not in err
    assert stopped_after < 1.5, f"stopped after {stopped_after:.2f} s"


@pytest.mark.slow
def test_a_client_that_trickles_is_cut_off_by_the_read_timeout(tmp_path: Path) -> None:
    process, url = start_serving(tmp_path / "data", "--read-timeout", "0.5")
    host, port = url.removeprefix("http://").rsplit(":", 1)
    try:
        token = realm_token(tmp_path / "data")
        body = json.dumps({"records": []}).encode()
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /v1/replicate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         + f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                         + body[:3])
            answer = read_answer(sock)  # the rest of the body never comes
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"RequestTimeout" in answer
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHo")  # headers that never finish
            assert sock.recv(4096) == b""  # closed by the server, not by this test's timeout
    finally:
        assert stop(process)[0] == 0


def read_answer(sock: socket.socket) -> bytes:
    """Everything the server sends until its answer's body is complete (or it closes)."""
    answer = b""
    while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < _content_length(answer):
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    return answer


def _content_length(answer: bytes) -> int:
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def realm_token(data: Path) -> str:
    with RealmState.open(data) as state:
        return state.enroll("trickle", rotate=True)


# -- TLS -------------------------------------------------------------------------------------------------


def test_allow_remote_requires_tls(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="--tls-cert"):
        serve(tmp_path / "data", host="0.0.0.0", port=0, allow_remote=True)
    done = invoke(tmp_path / "home", "realm", "serve", "--data", str(tmp_path / "data"), "--host", "0.0.0.0",
                  "--allow-remote")
    assert done.code == 1
    assert "--tls-cert" in done.stderr
    assert "serving" not in done.stdout


@pytest.mark.slow
def test_with_tls_realm_serves_https_and_the_client_verifies_it(tmp_path: Path) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    cert, key, ca = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    certificate.private_key_and_cert_chain_pem.write_to_path(str(cert))
    certificate.private_key_pem.write_to_path(str(key))
    authority.cert_pem.write_to_path(str(ca))
    env = {**os.environ, "SSL_CERT_FILE": str(ca)}
    process, url = start_serving(tmp_path / "data", "--host", "127.0.0.1", "--allow-remote", "--tls-cert",
                                 str(cert), "--tls-key", str(key), env=env)
    try:
        assert url.startswith("https://127.0.0.1:")
        token = realm_token(tmp_path / "data")
        os.environ["SSL_CERT_FILE"] = str(ca)
        try:
            with RealmClient(url, token=token) as client:
                assert client.health().status == "ok"
                assert client.replicate([realm_record("tls-1")])[0].status == "accepted"
        finally:
            del os.environ["SSL_CERT_FILE"]
        # A client that does not trust the certificate gets no answer.
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{url}/v1/health", trust_env=False, verify=ssl.create_default_context())
        # Plain http on the TLS port is not served.
        with pytest.raises(httpx.HTTPError):
            httpx.get(url.replace("https://", "http://") + "/v1/health", trust_env=False, timeout=5)
    finally:
        assert stop(process)[0] == 0


def test_an_lmdb_reader_sees_no_token_in_the_homes_table(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with RealmState.open(data) as state:
        token = state.enroll("home")
    env = lmdb.open(str(data), readonly=True, max_dbs=16, lock=True)
    try:
        with env.begin() as txn:
            values = [bytes(v) for _, v in txn.cursor(db=env.open_db(b"homes", txn=txn, create=False))]
    finally:
        env.close()
    assert values
    assert all(token.encode() not in value for value in values)


def test_a_home_presents_its_token_file_and_the_environment_overrides_it(
    realm: RealmProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    stale = realm.enroll("laptop")
    token_file = tmp_path / "laptop.token"
    token_file.write_text(stale)
    assert invoke(home, "init", "--realm", realm.url, "--realm-token-file", str(token_file)).code == 0
    assert stat.S_IMODE((home / "realm.token").stat().st_mode) == 0o600
    fresh = realm.enroll("laptop", rotate=True)  # the copied token stops working
    monkeypatch.delenv("RESIDENT_REALM_TOKEN", raising=False)
    with Runtime.open(home, replication=FAST) as runtime:
        runtime.memory.enable()
        runtime.member("deven").remember("a note that needs the right token")
        refused = runtime.replication.sync(timeout=2.0)
        assert refused.pending == 1
        assert "401" in refused.last_error
    monkeypatch.setenv("RESIDENT_REALM_TOKEN", fresh)
    with Runtime.open(home, replication=FAST) as runtime:
        assert runtime.replication.sync(timeout=15.0).pending == 0
    monkeypatch.setenv("RESIDENT_REALM_TOKEN", "not a token")
    with pytest.raises(InvalidInput, match="RESIDENT_REALM_TOKEN"):
        Runtime.open(home)
