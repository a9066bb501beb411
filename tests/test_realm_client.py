"""The Realm client against a real Realm behind a fault proxy: every fault has the right error class,
one attempt per call, and no call outlives its timeout."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

import resident.realm as realm_package
from resident.errors import InvalidInput, RealmRejected, RealmUnavailable
from resident.messages.digest import content_digest
from resident.messages.realm import RealmRecord
from resident.realm.client import RealmClient
from tests.faultproxy import FaultProxy, Mode
from tests.realm_process import RealmProcess, start_realm

pytestmark = pytest.mark.timeout(30)

TIMEOUT = 1.0
DELEGATED_PROMOTION = "non-canonical memory cannot be promoted through a delegated path"
_ids = itertools.count()


def new_id() -> str:
    return f"client-{next(_ids)}"


def record(
    record_id: str, content: str | None = None, *, canonical: bool = False, delegated: bool = False
) -> RealmRecord:
    content = f"what {record_id} says" if content is None else content
    return RealmRecord(
        id=record_id,
        digest=content_digest(
            record_id=record_id, summary="the build uses uv", body=content, kind="world", bank="agent_core/alice",
            canonical=canonical, delegated=delegated, supersedes=None,
        ),
        owner="alice",
        bank="agent_core/alice",
        scope="AGENT_CORE",
        kind="world",
        summary="the build uses uv",
        body=content,
        canonical=canonical,
        delegated=delegated,
        recorded_at=1_780_000_000.0,
    )


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    with start_realm(tmp_path_factory.mktemp("realm") / "data") as process:
        yield process


@pytest.fixture
def proxy(realm: RealmProcess) -> Iterator[FaultProxy]:
    with FaultProxy(realm.url) as running:
        yield running


@pytest.fixture(scope="module")
def home_token(realm: RealmProcess) -> str:
    return realm.enroll("alice-home")


@pytest.fixture
def client(proxy: FaultProxy, home_token: str) -> Iterator[RealmClient]:
    with RealmClient(proxy.url, timeout=TIMEOUT, token=home_token) as realm_client:
        yield realm_client


@pytest.fixture
def admin(proxy: FaultProxy, realm: RealmProcess) -> Iterator[RealmClient]:
    with RealmClient(proxy.url, timeout=TIMEOUT, token=realm.admin_token()) as realm_client:
        yield realm_client


def assert_one_line(exc: BaseException, *fragments: str) -> None:
    message = str(exc)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message


# -- the protocol, through the proxy in `pass` mode ----------------------------------------------


def test_health_reports_an_ok_realm(client: RealmClient) -> None:
    health = client.health()
    assert health.status == "ok"
    assert health.version == 2


def test_replicate_returns_one_result_per_record_in_order(client: RealmClient) -> None:
    a, b = new_id(), new_id()
    results = client.replicate([record(a), record(b, canonical=True, delegated=True)])
    assert [(r.id, r.status, r.reason) for r in results] == [
        (a, "accepted", ""),
        (b, "conflict", DELEGATED_PROMOTION),
    ]


def test_replicating_again_gives_the_same_answers(client: RealmClient) -> None:
    batch = [record(new_id()), record(new_id(), canonical=True, delegated=True)]
    assert client.replicate(batch) == client.replicate(batch)


def test_invalidate_then_page_through_invalidations_with_the_cursor(client: RealmClient, admin: RealmClient) -> None:
    start = client.invalidations(0, limit=1000).cursor
    ids = [new_id() for _ in range(3)]
    client.replicate([record(i) for i in ids])
    made = [admin.invalidate(i, "superseded by the source") for i in ids]
    first = client.invalidations(start, limit=2)
    second = client.invalidations(first.cursor, limit=2)
    assert list(first.items) + list(second.items) == made
    assert second.cursor == made[-1].seq
    assert client.invalidations(second.cursor).items == ()


def test_a_url_path_prefix_is_kept(proxy: FaultProxy) -> None:
    with RealmClient(proxy.url + "/realm/", timeout=TIMEOUT) as prefixed, pytest.raises(RealmRejected):
        prefixed.health()
    assert proxy.count("/realm/v1/health") == 1


def test_a_proxy_named_in_the_environment_is_ignored(client: RealmClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    with RealmClient(client.url, timeout=TIMEOUT) as fresh:  # health needs no token
        assert fresh.health().status == "ok"


# -- refusals: RealmRejected, not retried --------------------------------------------------------


def test_invalidating_an_unknown_record_is_rejected_with_realms_message(admin: RealmClient, proxy: FaultProxy) -> None:
    with pytest.raises(RealmRejected) as caught:
        admin.invalidate("no-such-record", "reason")
    assert_one_line(caught.value, "404", "no-such-record", "nothing to invalidate")
    assert isinstance(caught.value, ValueError)
    assert proxy.count("/v1/invalidate") == 1


def test_a_malformed_record_is_rejected_once(client: RealmClient, proxy: FaultProxy) -> None:
    # structs.replace does not validate, so the client sends what Realm must refuse.
    bad = msgspec.structs.replace(record(new_id()), digest="not-a-sha256")
    with pytest.raises(RealmRejected) as caught:
        client.replicate([bad])
    assert_one_line(caught.value, "400", "digest")
    assert proxy.count("/v1/replicate") == 1


def test_an_empty_invalidation_reason_is_rejected(client: RealmClient, admin: RealmClient) -> None:
    rid = new_id()
    client.replicate([record(rid)])
    with pytest.raises(RealmRejected, match="reason"):
        admin.invalidate(rid, " ")


# -- faults: RealmUnavailable, one attempt, bounded time -----------------------------------------


def test_refused_connection_is_unavailable(client: RealmClient, proxy: FaultProxy) -> None:
    proxy.set_mode("down")
    with pytest.raises(RealmUnavailable) as caught:
        client.health()
    assert_one_line(caught.value, proxy.url, "GET /v1/health", "ConnectError")
    assert isinstance(caught.value, ConnectionError)


def test_reset_connection_is_unavailable_after_one_attempt(client: RealmClient, proxy: FaultProxy) -> None:
    proxy.set_mode("reset")
    with pytest.raises(RealmUnavailable) as caught:
        client.replicate([record(new_id())])
    assert_one_line(caught.value, proxy.url, "POST /v1/replicate")
    assert proxy.count("/v1/replicate") == 1


def test_slow_realm_is_unavailable_within_the_timeout(client: RealmClient, proxy: FaultProxy) -> None:
    proxy.set_mode("slow", delay=10.0)
    started = time.monotonic()
    with pytest.raises(RealmUnavailable) as caught:
        client.replicate([record(new_id())])
    assert time.monotonic() - started < TIMEOUT + 1.0
    assert_one_line(caught.value, "did not answer POST /v1/replicate within 1.0s")
    assert proxy.count("/v1/replicate") == 1


def test_an_answer_trickling_in_is_cut_off_near_the_timeout(client: RealmClient, proxy: FaultProxy) -> None:
    # Each byte arrives well within the socket timeout; only the whole-call deadline can stop this.
    proxy.set_mode("trickle", delay=0.1)
    started = time.monotonic()
    with pytest.raises(RealmUnavailable, match="did not answer"):
        client.health()
    assert time.monotonic() - started < TIMEOUT + 1.0


def test_503_is_unavailable(client: RealmClient, proxy: FaultProxy) -> None:
    proxy.set_mode("error503")
    with pytest.raises(RealmUnavailable) as caught:
        client.invalidations(0)
    assert_one_line(caught.value, proxy.url, "503", "GET /v1/invalidations")
    assert proxy.count("/v1/invalidations") == 1


GARBAGE: dict[str, tuple[str, int, bytes]] = {
    "health not json": ("health", 200, b"<html>hello</html>"),
    "health wrong shape": ("health", 200, b'{"status": "fine"}'),
    "health empty body": ("health", 200, b""),
    "replicate too few results": ("replicate", 200, b'{"results": []}'),
    "replicate other ids": ("replicate", 200, b'{"results": [{"id": "other", "status": "accepted"}]}'),
    "replicate unknown status": ("replicate", 200, b'{"results": [{"id": "g-1", "status": "maybe"}]}'),
    "replicate results not a list": ("replicate", 200, b'{"results": "accepted"}'),
    "page goes backwards": (
        "invalidations",
        200,
        b'{"items": [{"seq": 1, "id": "x", "reason": "r", "at": 1}], "cursor": 1}',
    ),
    "page cursor behind items": (
        "invalidations",
        200,
        b'{"items": [{"seq": 9, "id": "x", "reason": "r", "at": 1}], "cursor": 8}',
    ),
    "invalidation of another id": ("invalidate", 200, b'{"seq": 1, "id": "other", "reason": "r", "at": 1.0}'),
    "404 page from something else": ("health", 404, b"<html>Not Found</html>"),
    "429 even with realms error body": ("health", 429, b'{"error": {"type": "Busy", "message": "slow down"}}'),
    "302 redirect": ("health", 302, b""),
    "500 with realms error body": ("health", 500, b'{"error": {"type": "InternalError", "message": "boom"}}'),
}


def call(client: RealmClient, operation: str) -> object:
    if operation == "health":
        return client.health()
    if operation == "replicate":
        return client.replicate([record("g-1")])
    if operation == "invalidations":
        return client.invalidations(5)
    return client.invalidate("g-1", "reason")


@pytest.mark.parametrize(("operation", "status", "body"), GARBAGE.values(), ids=GARBAGE.keys())
def test_an_answer_that_is_not_realms_protocol_is_unavailable(
    client: RealmClient, proxy: FaultProxy, operation: str, status: int, body: bytes
) -> None:
    proxy.set_mode("garbage", status=status, body=body)
    with pytest.raises(RealmUnavailable) as caught:
        call(client, operation)
    assert_one_line(caught.value, proxy.url)
    assert sum(proxy.counts().values()) == 1


def test_a_4xx_with_realms_error_body_is_rejected(client: RealmClient, proxy: FaultProxy) -> None:
    proxy.set_mode("garbage", status=400, body=b'{"error": {"type": "InvalidInput", "message": "bad limit"}}')
    with pytest.raises(RealmRejected, match="bad limit"):
        client.invalidations(0)


def test_the_client_works_again_once_realm_is_back(client: RealmClient, proxy: FaultProxy) -> None:
    assert client.health().status == "ok"
    faults: tuple[Mode, ...] = ("down", "reset", "error503", "garbage")
    for mode in faults:
        proxy.set_mode(mode)
        with pytest.raises(RealmUnavailable):
            client.health()
        proxy.set_mode("pass")
        assert client.health().status == "ok"


def test_a_push_whose_answer_was_lost_is_accepted_when_sent_again(client: RealmClient, proxy: FaultProxy) -> None:
    batch = [record(new_id())]
    proxy.set_mode("slow", delay=10.0)
    with pytest.raises(RealmUnavailable):
        client.replicate(batch)
    proxy.set_mode("pass")
    assert [r.status for r in client.replicate(batch)] == ["accepted"]


def test_a_stopped_realm_is_unavailable_and_a_restarted_one_answers(tmp_path_factory: pytest.TempPathFactory) -> None:
    with start_realm(tmp_path_factory.mktemp("realm") / "data") as realm, RealmClient(
        realm.url, timeout=TIMEOUT, token=realm.enroll("home")
    ) as client:
        rid = new_id()
        client.replicate([record(rid)])
        realm.kill()
        with pytest.raises(RealmUnavailable):
            client.replicate([record(rid)])
        realm.start()
        assert [r.status for r in client.replicate([record(rid)])] == ["accepted"]


# -- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "",
        "127.0.0.1:8765",
        "ftp://127.0.0.1:8765",
        "http://127.0.0.1",
        "http://:8765",
        "http://127.0.0.1:99999",
        "http://127.0.0.1:port",
        "http://127.0.0.1:8765/?x=1",
        "http://127.0.0.1:8765/#top",
        "http://user:secret@127.0.0.1:8765",
    ],
)
def test_a_malformed_url_is_invalid_input(url: str) -> None:
    with pytest.raises(InvalidInput, match="Realm URL"):
        RealmClient(url)


@pytest.mark.parametrize("timeout", [0.0, -1.0, float("nan"), float("inf")])
def test_a_timeout_that_is_not_a_positive_number_is_invalid_input(timeout: float) -> None:
    with pytest.raises(InvalidInput, match="timeout"):
        RealmClient("http://127.0.0.1:8765", timeout=timeout)


def test_every_public_name_of_the_realm_package_resolves() -> None:
    for name in realm_package.__all__:
        assert getattr(realm_package, name) is not None, name


def test_importing_the_client_does_not_load_the_server_stack() -> None:
    # The runtime imports the client; starlette and uvicorn belong to the Realm process only.
    probe = "import sys, resident.realm; print(sorted({'starlette', 'uvicorn'} & set(sys.modules)))"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
