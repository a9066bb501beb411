"""The Realm server as a real process: every endpoint, its governance, bad input, and durability."""

from __future__ import annotations

import itertools
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import lmdb
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resident.errors import InvalidInput, SchemaMismatch
from resident.messages.digest import content_digest
from resident.messages.realm import MAX_BODY_BYTES, MAX_REPLICATE_RECORDS, RealmRecord
from resident.realm.app import create_app
from resident.realm.server import serve
from resident.realm.state import RealmState
from resident.realm.tokens import new_token
from tests.postgres_support import BACKENDS, database_for
from tests.realm_process import RealmProcess, start_realm

DELEGATED_PROMOTION = "non-canonical memory cannot be promoted through a delegated path"
_ids = itertools.count()


def new_id() -> str:
    return f"mem-{next(_ids)}"


def record(
    record_id: str, content: str | None = None, *, canonical: bool = False, delegated: bool = False
) -> dict[str, Any]:
    # Content is per record by default: Realm refuses content equal to an invalidated record's.
    content = f"what {record_id} says" if content is None else content
    return {
        "id": record_id,
        "digest": content_digest(
            record_id=record_id, summary="shipped the release", body=content, kind="experience",
            bank="agent_core/deven", canonical=canonical, delegated=delegated, supersedes=None,
        ),
        "owner": "deven",
        "bank": "agent_core/deven",
        "scope": "AGENT_CORE",
        "kind": "experience",
        "summary": "shipped the release",
        "body": content,
        "canonical": canonical,
        "delegated": delegated,
        "recorded_at": 1_780_000_000.0,
        "supersedes": None,
    }


@pytest.fixture(scope="module", params=BACKENDS)
def realm(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmProcess]:
    """A Realm process over LMDB, and one over PostgreSQL: the same tests hold on both."""
    data = tmp_path_factory.mktemp("realm") / "data"
    with start_realm(data, database=database_for(request, request.param, data)) as process:
        yield process


def client_for(url: str, token: str | None) -> httpx.Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, timeout=10.0, trust_env=False, headers=headers)


@pytest.fixture(scope="module")
def http(realm: RealmProcess) -> Iterator[httpx.Client]:
    """A client of the test home (replication routes)."""
    with client_for(realm.url, realm.enroll("deven-home")) as client:
        yield client


@pytest.fixture(scope="module")
def admin(realm: RealmProcess) -> Iterator[httpx.Client]:
    """A client of the governance side (the admin token)."""
    with client_for(realm.url, realm.admin_token()) as client:
        yield client


def replicate(http: httpx.Client, *records: dict[str, Any]) -> list[dict[str, Any]]:
    response = http.post("/v1/replicate", json={"records": list(records)})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def invalidate(admin: httpx.Client, record_id: str, reason: str = "retracted by governance") -> httpx.Response:
    return admin.post("/v1/invalidate", json={"id": record_id, "reason": reason})


def health(http: httpx.Client) -> dict[str, Any]:
    response = http.get("/v1/health")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def assert_typed_error(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["type"] == kind
    assert isinstance(error["message"], str)
    assert error["message"]
    message: str = error["message"]
    return message


# -- endpoints and governance --------------------------------------------------------------------


def test_health_reports_status_counts_and_protocol_version(http: httpx.Client) -> None:
    body = health(http)
    assert body["status"] == "ok"
    assert body["version"] == 2
    assert isinstance(body["records"], int)
    assert isinstance(body["invalidations"], int)


def test_replicate_accepts_new_records_and_answers_in_request_order(http: httpx.Client) -> None:
    ids = [new_id() for _ in range(5)]
    before = health(http)["records"]
    results = replicate(http, *(record(i) for i in ids))
    assert results == [{"id": i, "status": "accepted", "reason": "", "rule": ""} for i in ids]
    assert health(http)["records"] == before + 5


def test_same_id_and_digest_again_is_accepted_again_without_new_state(http: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid))
    before = health(http)["records"]
    assert replicate(http, record(rid)) == [{"id": rid, "status": "accepted", "reason": "", "rule": ""}]
    assert health(http)["records"] == before


def test_same_id_with_different_digest_is_a_conflict(http: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid, "first"))
    (result,) = replicate(http, record(rid, "second"))
    assert result == {
        "id": rid,
        "status": "conflict",
        "reason": f"record {rid} already replicated with different content",
        "rule": "different_content",
    }


def test_canonical_record_through_a_delegated_path_is_a_conflict_with_the_exact_reason(http: httpx.Client) -> None:
    rid = new_id()
    before = health(http)["records"]
    (result,) = replicate(http, record(rid, canonical=True, delegated=True))
    assert result == {"id": rid, "status": "conflict", "reason": DELEGATED_PROMOTION, "rule": "delegated_promotion"}
    assert health(http)["records"] == before


def test_a_conflict_is_durable_for_the_same_id_and_digest(http: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid, canonical=True, delegated=True))
    # The same version sent again keeps its first answer. (Dropping the delegated flag would make
    # another version: the flags are part of the digest, which Realm recomputes.)
    (result,) = replicate(http, record(rid, canonical=True, delegated=True))
    assert result["status"] == "conflict"
    assert result["reason"] == DELEGATED_PROMOTION


def test_mixed_batch_gets_one_answer_per_record_in_order(http: httpx.Client) -> None:
    a, b = new_id(), new_id()
    results = replicate(http, record(a), record(b, canonical=True, delegated=True), record(a, "other"), record(a))
    assert [(r["id"], r["status"]) for r in results] == [
        (a, "accepted"),
        (b, "conflict"),
        (a, "conflict"),
        (a, "accepted"),
    ]


def test_empty_replicate_is_answered_with_no_results(http: httpx.Client) -> None:
    assert replicate(http) == []


def test_invalidate_appends_to_the_feed_and_pages_by_cursor(http: httpx.Client, admin: httpx.Client) -> None:
    start = http.get("/v1/invalidations", params={"since": 0, "limit": 1000}).json()["cursor"]
    ids = [new_id() for _ in range(3)]
    replicate(http, *(record(i) for i in ids))
    created = [invalidate(admin, i, f"reason {n}").json() for n, i in enumerate(ids)]
    assert [item["seq"] for item in created] == [start + 1, start + 2, start + 3]

    first = http.get("/v1/invalidations", params={"since": start, "limit": 2}).json()
    assert [item["id"] for item in first["items"]] == ids[:2]
    assert first["cursor"] == start + 2
    second = http.get("/v1/invalidations", params={"since": first["cursor"], "limit": 2}).json()
    assert second["items"] == [created[2]]
    assert second["cursor"] == start + 3
    empty = http.get("/v1/invalidations", params={"since": second["cursor"]}).json()
    assert empty == {"items": [], "cursor": start + 3, "more": False}


def test_invalidation_item_carries_seq_id_reason_and_time(http: httpx.Client, admin: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid))
    response = invalidate(admin, rid, "contradicted by the source")
    assert response.status_code == 200
    item = response.json()
    assert set(item) == {"seq", "id", "reason", "at"}
    assert item["id"] == rid
    assert item["reason"] == "contradicted by the source"
    assert item["at"] > 0


def test_invalidating_twice_returns_the_first_entry(http: httpx.Client, admin: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid))
    first = invalidate(admin, rid, "first reason").json()
    count = health(http)["invalidations"]
    assert invalidate(admin, rid, "second reason").json() == first
    assert health(http)["invalidations"] == count


def test_invalidating_an_unknown_id_is_404(http: httpx.Client, admin: httpx.Client) -> None:
    message = assert_typed_error(invalidate(admin, "never-replicated"), 404, "RecordNotFound")
    assert "never-replicated" in message


def test_invalidating_a_record_that_was_only_a_conflict_is_404(http: httpx.Client, admin: httpx.Client) -> None:
    rid = new_id()
    replicate(http, record(rid, canonical=True, delegated=True))
    assert_typed_error(invalidate(admin, rid), 404, "RecordNotFound")


@pytest.mark.parametrize("reason", ["", "   "])
def test_invalidating_without_a_reason_is_400(http: httpx.Client, admin: httpx.Client, reason: str) -> None:
    rid = new_id()
    replicate(http, record(rid))
    message = assert_typed_error(invalidate(admin, rid, reason), 400, "InvalidInput")
    assert "reason" in message


# -- bad requests --------------------------------------------------------------------------------


def _json_post(path: str, content: bytes) -> tuple[str, str, dict[str, Any]]:
    return ("POST", path, {"content": content, "headers": {"content-type": "application/json"}})


def _bad_record(**changes: Any) -> bytes:
    return msgspec.json.encode({"records": [{**record("bad-1"), **changes}]})


BAD_REQUESTS: dict[str, tuple[tuple[str, str, dict[str, Any]], int, str]] = {
    "malformed json": (_json_post("/v1/replicate", b'{"records": [}'), 400, "MalformedJSON"),
    "not utf-8": (_json_post("/v1/invalidate", b'{"id": "\xff", "reason": "r"}'), 400, "MalformedJSON"),
    "json but not an object": (_json_post("/v1/replicate", b"[]"), 400, "InvalidInput"),
    "unknown top-level field": (_json_post("/v1/replicate", b'{"records": [], "force": true}'), 400, "InvalidInput"),
    "unknown record field": (_json_post("/v1/replicate", _bad_record(promote=True)), 400, "InvalidInput"),
    "missing record field": (
        _json_post("/v1/replicate", msgspec.json.encode({"records": [{"id": "x"}]})),
        400,
        "InvalidInput",
    ),
    "bool as string": (_json_post("/v1/replicate", _bad_record(canonical="true")), 400, "InvalidInput"),
    "unknown scope": (_json_post("/v1/replicate", _bad_record(scope="EVERYONE")), 400, "InvalidInput"),
    "digest not sha256 hex": (_json_post("/v1/replicate", _bad_record(digest="abc")), 400, "InvalidInput"),
    "digest of other content": (_json_post("/v1/replicate", _bad_record(digest="0" * 64)), 400, "InvalidInput"),
    "body changed under its digest": (_json_post("/v1/replicate", _bad_record(body="forged")), 400, "InvalidInput"),
    "empty body": (_json_post("/v1/replicate", _bad_record(body="")), 400, "InvalidInput"),
    "body over the record limit": (_json_post("/v1/replicate", _bad_record(body="x" * 16_001)), 400, "InvalidInput"),
    "summary over the record limit": (
        _json_post("/v1/replicate", _bad_record(summary="x" * 501)), 400, "InvalidInput"
    ),
    "id over 200 characters": (_json_post("/v1/replicate", _bad_record(id="a" * 201)), 400, "InvalidInput"),
    "id with spaces": (_json_post("/v1/replicate", _bad_record(id="a b")), 400, "InvalidInput"),
    "too many records": (
        _json_post("/v1/replicate", msgspec.json.encode({"records": [record(f"x{i}") for i in range(501)]})),
        400,
        "InvalidInput",
    ),
    "invalidate unknown field": (
        _json_post("/v1/invalidate", b'{"id": "x", "reason": "r", "seq": 1}'),
        400,
        "InvalidInput",
    ),
    "invalidate id not a string": (_json_post("/v1/invalidate", b'{"id": 1, "reason": "r"}'), 400, "InvalidInput"),
    "oversized body": (_json_post("/v1/replicate", b" " * (MAX_BODY_BYTES + 1)), 413, "BodyTooLarge"),
    "form content type": (
        ("POST", "/v1/replicate", {"content": b"{}", "headers": {"content-type": "text/plain"}}),
        415,
        "UnsupportedMediaType",
    ),
    "since not an integer": (("GET", "/v1/invalidations?since=abc", {}), 400, "InvalidInput"),
    "negative since": (("GET", "/v1/invalidations?since=-1", {}), 400, "InvalidInput"),
    "limit zero": (("GET", "/v1/invalidations?limit=0", {}), 400, "InvalidInput"),
    "limit too large": (("GET", "/v1/invalidations?limit=1000000", {}), 400, "InvalidInput"),
    "unknown query parameter": (("GET", "/v1/invalidations?after=3", {}), 400, "InvalidInput"),
    "unknown path": (("GET", "/v1/everything", {}), 404, "NotFound"),
    "unversioned path": (("GET", "/health", {}), 404, "NotFound"),
    "trailing slash": (("GET", "/v1/health/", {}), 404, "NotFound"),
    "wrong method": (("GET", "/v1/replicate", {}), 405, "MethodNotAllowed"),
    "foreign host header": (("GET", "/v1/health", {"headers": {"host": "realm.example.com"}}), 421, "HostNotAllowed"),
}


@pytest.mark.parametrize(("request_args", "status", "kind"), BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_request_gets_a_typed_error_and_realm_stays_healthy(
    http: httpx.Client, admin: httpx.Client, request_args: tuple[str, str, dict[str, Any]], status: int, kind: str
) -> None:
    before = health(http)
    method, path, kwargs = request_args
    client = admin if path == "/v1/invalidate" else http
    assert_typed_error(client.request(method, path, **kwargs), status, kind)
    assert health(http) == before


def test_a_batch_with_one_invalid_record_writes_nothing(http: httpx.Client) -> None:
    good = new_id()
    before = health(http)["records"]
    body = {"records": [record(good), {**record(new_id()), "digest": "not-hex"}]}
    message = assert_typed_error(http.post("/v1/replicate", json=body), 400, "InvalidInput")
    assert "records[1].digest" in message
    assert health(http)["records"] == before


def test_wrong_method_names_the_allowed_one(http: httpx.Client) -> None:
    response = http.get("/v1/invalidate")
    assert "POST" in assert_typed_error(response, 405, "MethodNotAllowed")
    assert response.headers["allow"] == "POST"


def test_replicate_accepts_exactly_the_maximum_batch(http: httpx.Client) -> None:
    results = replicate(http, *(record(new_id()) for _ in range(MAX_REPLICATE_RECORDS)))
    assert {r["status"] for r in results} == {"accepted"}


# -- durability and process behaviour ------------------------------------------------------------


def test_records_and_invalidations_survive_a_restart(tmp_path: Path) -> None:
    with start_realm(tmp_path / "data") as realm:
        token, admin_token = realm.enroll("home"), realm.admin_token()
        with client_for(realm.url, token) as http, client_for(realm.url, admin_token) as admin:
            replicate(http, record("kept-1"), record("kept-2"), record("refused", canonical=True, delegated=True))
            item = invalidate(admin, "kept-2").json()
        assert realm.stop() == 0
        realm.restart()
        # Tokens survive the restart too: the admin token file and the home's hash in the store.
        assert realm.admin_token() == admin_token
        with client_for(realm.url, token) as http:
            assert health(http) == {"status": "ok", "records": 2, "invalidations": 1, "version": 2}
            assert http.get("/v1/invalidations").json() == {"items": [item], "cursor": 1, "more": False}
            answers = replicate(
                http, record("kept-1"), record("kept-1", "changed"), record("refused", canonical=True, delegated=True)
            )
            assert [a["status"] for a in answers] == ["accepted", "conflict", "conflict"]


def test_accepted_records_survive_kill_9(tmp_path: Path) -> None:
    with start_realm(tmp_path / "data") as realm:
        token = realm.enroll("home")
        with client_for(realm.url, token) as http, client_for(realm.url, realm.admin_token()) as admin:
            ids = [f"crash-{n}" for n in range(50)]
            replicate(http, *(record(i) for i in ids))
            invalidate(admin, ids[0])
        realm.kill()
        realm.start()
        with client_for(realm.url, token) as http:
            assert health(http)["records"] == 50
            assert health(http)["invalidations"] == 1
            (changed,) = replicate(http, record(ids[-1], "rewritten"))
            assert changed["status"] == "conflict"


def test_sigterm_stops_realm_cleanly_and_removes_the_ready_file(tmp_path: Path) -> None:
    realm = start_realm(tmp_path / "data")
    assert realm.ready_file.exists()
    assert realm.stop() == 0
    assert not realm.ready_file.exists()


def test_data_dir_is_private_to_its_owner(realm: RealmProcess) -> None:
    assert stat.S_IMODE(realm.data_dir.stat().st_mode) == 0o700
    files = list(realm.data_dir.iterdir())
    assert files
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "realm.example.com"])
def test_serve_refuses_a_non_loopback_host_without_allow_remote(tmp_path: Path, host: str) -> None:
    with pytest.raises(InvalidInput, match="--allow-remote"):
        serve(tmp_path / "data", host=host, port=0)


def test_server_command_exits_with_a_one_line_error_for_a_non_loopback_host(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "resident.realm.server", "--data", str(tmp_path), "--host", "0.0.0.0"]
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "--allow-remote" in done.stderr


def test_serve_refuses_a_port_in_use_with_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(InvalidInput, match="choose another --port"):
            serve(tmp_path / "data", port=taken.getsockname()[1])


def test_a_store_of_another_schema_is_refused(tmp_path: Path) -> None:
    RealmState.open(tmp_path).close()
    with lmdb.open(str(tmp_path), max_dbs=16) as env, env.begin(write=True) as txn:
        txn.put(b"schema", b"2", db=env.open_db(b"meta", txn=txn))
    with pytest.raises(SchemaMismatch, match="schema 2"):
        RealmState.open(tmp_path)


# -- in-process: failures inside Realm -----------------------------------------------------------


def get_in_process(state: RealmState, path: str) -> httpx.Response:
    """One GET against the app in this process, for failures a real process cannot be made to have."""

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(state, admin_token=new_token("admin")))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(path)

    return anyio.run(get)


def test_an_unexpected_failure_is_a_typed_500(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with RealmState.open(tmp_path) as state:

        def broken() -> None:
            raise RuntimeError("boom")

        monkeypatch.setattr(state, "health", broken)
        response = get_in_process(state, "/v1/health")
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "InternalError"


def test_a_closed_store_answers_503(tmp_path: Path) -> None:
    state = RealmState.open(tmp_path)
    state.close()
    response = get_in_process(state, "/v1/health")
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "StoreClosed"


_store_records = st.builds(
    lambda rid, content, canonical, delegated: RealmRecord(**record(rid, content, canonical=canonical,
                                                                   delegated=delegated)),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["v1", "v2"]),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_store_records, max_size=5), max_size=5))
def test_the_store_gives_the_same_answers_when_replayed_and_after_reopening(batches: list[list[RealmRecord]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with RealmState.open(Path(tmp)) as state:
            first = [state.replicate("home", batch) for batch in batches]
            assert [state.replicate("home", batch) for batch in batches] == first
        with RealmState.open(Path(tmp)) as state:
            assert [state.replicate("home", batch) for batch in batches] == first
