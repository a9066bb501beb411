"""Member sessions over the loopback API: a grant token in `Resident-Grant-Token` acts as that member, within
that grant, exactly as `$RESIDENT_GRANT_TOKEN` does in-process; it never reaches an owner's route, never
acts as another member, and never falls back to the owner when it stands for no session.

Against a real `resident up` with a real HTTP client; the sessions are dispatched on the home before the
server opens it, as a runtime that started them would have recorded them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from resident import Runtime
from resident.api.challenge import PROOF_KEY_ENV, session_proof_key
from resident.api.discovery import API_ADDRESS_ENV, SESSION_ENV
from resident.api.wire import EVENTS_PATH, GRANT_HEADER, OPENAPI_PATH
from resident.clock import ManualClock
from resident.coordination.tokens import GRANT_TOKEN_ENV, new_token
from resident.operations import DECLARED, Access, Operation
from resident.operations import engagement as engagement_ops
from resident.operations import evolution as evolution_ops
from resident.operations import home as home_ops
from resident.operations import knowledge as knowledge_ops
from resident.operations import memory as memory_ops
from resident.operations import portability as portability_ops
from resident.operations import sessions as sessions_ops
from resident.operations import skills as skills_ops
from resident.runtime.coordination import Session, dispatch_session
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess, raw_client
from tests.cli_helpers import expect_error, run_process
from tests.evolution_helpers import SESSION_ACTIONS, session, skill_folder

# A declared operation of any request and reply.
AnyOperation = Operation[Any, Any, Any]
PARAMS = {
    "member": "deven", "record": "mem_missing", "record_id": "mem_missing", "skill": "triage", "name": "triage",
    "principle": "prn_missing", "principle_id": "prn_missing", "question": "q_missing", "question_id": "q_missing",
    "change": "deven@1", "change_id": "deven@1", "bank": "handbook", "entry": "ke_missing", "entry_id": "ke_missing",
    "session": "ses_missing", "execution_id": "exe_missing", "excerpt": "ses_missing#1", "app_or_workspace": "notes",
}


@dataclass(frozen=True)
class Prepared:
    up: UpProcess
    deven: str  # a running session of deven, AGENT_CORE only
    expired: str
    spent: str
    alice_record: str
    deven_record: str
    alice_session: str  # a session of alice's, recovered


def core_only(rt: Runtime, member: str) -> Session:
    actions = {*SESSION_ACTIONS, "forget", "reconcile"}
    grant = rt.coordinator.issue_grant(actions=actions, scopes={"AGENT_CORE"})
    return dispatch_session(host_context(rt),
        "work", member, role="implement", parent_grant=grant, actions=actions, scopes={"AGENT_CORE"}
    )


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prepared]:
    root = tmp_path_factory.mktemp("grants")
    home = root / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        rt.skills.add(skill_folder(root / "skills", "triage", "Triage incoming bug reports"))
        alice_record = rt.member("alice").remember("alice keeps the release calendar").id
        deven_record = rt.member("deven").remember("deven's own note about the build cache").id
        deven = core_only(rt, "deven").token
        ended = session(rt, "deven")
        ended.finish("succeeded")
        (root / "work").mkdir()
        started = rt.sessions.start("alice", harness="command", command=(sys.executable, "-c", "print('done')"),
                                    directory=str(root / "work"), task="release notes")
        alice_session = rt.sessions.run(started, log=root / "alice.log")
        assert alice_session is not None
    # Dispatched two hours ago, for one hour: expired by the time the server sees it.
    with Runtime.open(home, realm="none", clock=ManualClock(wall_start=time.time() - 7_200)) as rt:
        expired = session(rt, "deven", ttl=3_600).token
    with UpProcess(home) as up:
        yield Prepared(up, deven, expired, ended.token, alice_record, deven_record, alice_session.id)


@pytest.fixture
def http(prepared: Prepared) -> Iterator[httpx.Client]:
    with prepared.up.client() as client:
        yield client


def send(client: httpx.Client, op: AnyOperation, body: Any = None, grant: str | None = None,
         **params: str) -> httpx.Response:
    headers = {} if grant is None else {GRANT_HEADER: grant}
    path = op.url(**{**PARAMS, **params})
    if op.route.method == "GET":
        return client.get(path, headers=headers)
    return client.post(path, json={} if body is None else body, headers=headers)


def refused(response: httpx.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == kind, response.text
    return str(error["message"])


def records(client: httpx.Client) -> int:
    return int(client.get("/v1/memory").json()["records"])


def test_a_session_s_calls_act_as_its_member_and_are_marked_as_its_execution_s(
    prepared: Prepared, http: httpx.Client
) -> None:
    written = send(http, memory_ops.REMEMBER, {"text": "the cache key includes the lockfile"}, prepared.deven)
    assert written.status_code == 200, written.text
    record_id = written.json()["id"]
    record = send(http, memory_ops.GET, record_id=record_id).json()  # read back by the owner
    assert record["owner"] == "deven"
    assert record["delegated"] is True
    assert record["source"].startswith("execution:exec_")
    hits = send(http, memory_ops.RECALL, {"query": "cache key lockfile"}, prepared.deven).json()["hits"]
    assert record_id in [hit["id"] for hit in hits]
    shown = send(http, engagement_ops.STATE, {}, prepared.deven)
    assert shown.json()["member"] == "deven"  # without a member named, its own


OWNER_OPERATIONS = [op for op in DECLARED if op.access is not Access.MEMBER and op is not home_ops.HEALTH]


@pytest.mark.parametrize("op", OWNER_OPERATIONS, ids=[op.name for op in OWNER_OPERATIONS])
def test_a_grant_token_on_an_owner_s_route_is_refused_before_anything_is_read(
    prepared: Prepared, http: httpx.Client, op: AnyOperation
) -> None:
    before = records(http)
    # Even a body the route would take is never read: the refusal comes first.
    body = {"provider": "hindsight", "dest": "/nowhere", "text": "x", "execution": "exe_x", "note": "x"}
    message = refused(send(http, op, body, prepared.deven), 403, "OwnerOnlyAction")
    assert "belongs to the owner" in message
    assert records(http) == before


@pytest.mark.parametrize("path", [EVENTS_PATH, OPENAPI_PATH])
def test_the_event_stream_and_the_api_document_refuse_a_grant_token(http: httpx.Client, prepared: Prepared,
                                                                     path: str) -> None:
    refused(http.get(path, headers={GRANT_HEADER: prepared.deven}), 403, "OwnerOnlyAction")


def test_a_session_cannot_act_as_another_member_with_the_home_s_token(prepared: Prepared, http: httpx.Client) -> None:
    before = records(http)
    alice = {"member": "alice"}
    written = send(http, memory_ops.REMEMBER, {"text": "written as alice"}, prepared.deven, **alice)
    refused(written, 403, "GrantExceeded")
    refused(send(http, memory_ops.RECALL, {"query": "release calendar"}, prepared.deven, **alice), 403, "GrantExceeded")
    refused(send(http, memory_ops.GET, grant=prepared.deven, record_id=prepared.alice_record, **alice), 403,
            "GrantExceeded")
    forgotten = send(http, memory_ops.FORGET, {}, prepared.deven, record_id=prepared.alice_record, **alice)
    refused(forgotten, 403, "GrantExceeded")
    for op, body in ((skills_ops.SET, alice), (engagement_ops.ENGAGE, {**alice, "domain": "work"}),
                     (engagement_ops.STATE, alice), (evolution_ops.LOG, alice), (skills_ops.RECLAIM, alice)):
        refused(send(http, op, body, prepared.deven), 403, "GrantExceeded")
    # Settling by record id goes through the session too: alice's record is not deven's even to see.
    settled = send(http, memory_ops.RECONCILE_RECORD, {"rollback": True}, prepared.deven,
                   record_id=prepared.alice_record)
    refused(settled, 404, "RecordNotFound")
    assert records(http) == before
    assert send(http, memory_ops.GET, record_id=prepared.alice_record, **alice).json()["lifecycle"] == "active"


def test_a_session_sees_only_its_own_sessions_and_knows_itself_by_its_token(
    prepared: Prepared, http: httpx.Client
) -> None:
    everyone = send(http, sessions_ops.LIST, {}).json()["sessions"]
    assert prepared.alice_session in [found["id"] for found in everyone]
    assert send(http, sessions_ops.LIST, {}, prepared.deven).json()["sessions"] == []
    assert send(http, sessions_ops.LIST, {"member": "alice"}, prepared.deven).json()["sessions"] == []
    for op in (sessions_ops.SHOW, sessions_ops.RAW):
        refused(send(http, op, {}, prepared.deven, session=prepared.alice_session), 404, "UnknownSession")
    # The owner sees it (its `command` harness wrote no transcript, so there is no part 0 to show raw).
    assert send(http, sessions_ops.SHOW, {}, session=prepared.alice_session).json()["session"]["member"] == "alice"
    assert "0 transcript parts" in refused(send(http, sessions_ops.RAW, {}, session=prepared.alice_session), 400,
                                           "InvalidInput")
    mine = send(http, knowledge_ops.SESSION_GRANT, grant=prepared.deven).json()
    assert (mine["member"], mine["knowledge"]) == ("deven", False)
    # Without a grant token there is no session to speak of: the owner is not one.
    refused(send(http, knowledge_ops.SESSION_GRANT), 403, "GrantInvalid")
    refused(send(http, knowledge_ops.SESSION_GRANT, grant=prepared.spent), 403, "GrantInvalid")


def test_a_session_stays_within_its_grant_s_scopes(prepared: Prepared, http: httpx.Client) -> None:
    shared = {"text": "a team-wide note", "scope": "WORLD_SHARED", "world": "team"}
    message = refused(send(http, memory_ops.REMEMBER, shared, prepared.deven), 403, "GrantExceeded")
    assert "WORLD_SHARED" in message


def test_a_session_cannot_choose_where_its_memories_come_from(prepared: Prepared, http: httpx.Client) -> None:
    body = {"text": "claims to be manual", "source": "manual"}
    refused(send(http, memory_ops.REMEMBER, body, prepared.deven), 400, "InvalidInput")


@pytest.mark.parametrize("which", ["forged", "malformed", "empty", "expired", "spent"])
def test_a_token_that_stands_for_no_running_session_is_refused_and_never_acts_as_the_owner(
    prepared: Prepared, http: httpx.Client, which: str
) -> None:
    grant = {"forged": new_token(), "malformed": "rgt_short", "empty": "", "expired": prepared.expired,
             "spent": prepared.spent}[which]
    # The owner could read this record; a refused token must not read it as the owner either.
    refused(send(http, memory_ops.GET, grant=grant, record_id=prepared.deven_record), 403, "GrantInvalid")
    refused(send(http, memory_ops.REMEMBER, {"text": "must not be stored"}, grant), 403, "GrantInvalid")
    refused(send(http, skills_ops.LIBRARY, grant=grant), 403, "OwnerOnlyAction")


def test_a_grant_token_alone_acts_as_its_member_and_never_as_the_owner(prepared: Prepared) -> None:
    # A sandboxed session cannot read api.json: its grant token is its only credential.
    with raw_client(prepared.up) as client:
        hits = send(client, memory_ops.RECALL, {"query": "build cache"}, prepared.deven)
        assert hits.status_code == 200, hits.text
        for op in OWNER_OPERATIONS:
            refused(send(client, op, {}, prepared.deven), 403, "OwnerOnlyAction")
        refused(send(client, memory_ops.RECALL, {"query": "x"}, prepared.deven, member="alice"), 403, "GrantExceeded")
        refused(send(client, memory_ops.RECALL, {"query": "x"}, prepared.expired), 403, "GrantInvalid")
        for forged in ("", "rgt_not-a-token"):
            # Without the home's token, an empty or malformed grant header is no credential at all.
            refused(send(client, portability_ops.EXPORT, grant=forged, member="alice"), 401,
                    "Unauthorized")
            refused(send(client, memory_ops.RECALL, {"query": "x"}, forged), 401, "Unauthorized")
        refused(send(client, memory_ops.RECALL, {"query": "x"}), 401, "Unauthorized")


def test_an_empty_grant_header_with_the_home_s_token_is_not_the_owner(prepared: Prepared, http: httpx.Client) -> None:
    refused(send(http, memory_ops.RECALL, {"query": "x"}, "", member="alice"), 403, "GrantInvalid")
    refused(send(http, skills_ops.LIBRARY, grant=""), 403, "OwnerOnlyAction")


def test_a_session_given_only_the_address_and_its_token_calls_back_without_api_json(
    prepared: Prepared, tmp_path: Path
) -> None:
    # As inside the sandbox: $RESIDENT_HOME names a folder without api.json, $RESIDENT_API the runtime.
    hidden = tmp_path / "hidden-home"
    hidden.mkdir()
    # The session launch hands it the proof key of its session, made from the home's token it never sees.
    assert prepared.up.discovery is not None
    session = "ses_" + "0" * 28
    proof = session_proof_key(prepared.up.discovery.token, session)
    as_deven = {GRANT_TOKEN_ENV: prepared.deven, API_ADDRESS_ENV: prepared.up.url, SESSION_ENV: session,
                PROOF_KEY_ENV: proof}
    written = run_process(hidden, "remember", "deven", "noted inside the sandbox", env=as_deven)
    assert written.code == 0, written.describe()
    # A process that cannot answer for the session's key gets nothing: not the grant, not the text.
    wrong = {**as_deven, PROOF_KEY_ENV: session_proof_key("another home's token", session)}
    expect_error(run_process(hidden, "remember", "deven", "must not be sent", env=wrong), "RuntimeNotUp")
    expect_error(run_process(hidden, "member", "export", "alice", str(tmp_path / "a.json"), env=as_deven),
                 "OwnerOnlyAction")
    elsewhere = {GRANT_TOKEN_ENV: prepared.deven, API_ADDRESS_ENV: "http://192.0.2.1:80"}
    expect_error(run_process(hidden, "recall", "deven", "x", env=elsewhere), "RuntimeNotUp")
    assert not (tmp_path / "a.json").exists()
    assert sorted(p.name for p in hidden.iterdir()) == [], "nothing was opened or created in the hidden home"


def test_a_member_session_s_cli_acts_as_its_member_through_the_running_api(prepared: Prepared) -> None:
    as_deven = {GRANT_TOKEN_ENV: prepared.deven}
    home: Path = prepared.up.home
    written = run_process(home, "remember", "deven", "noted from the harness", env=as_deven)
    assert written.code == 0, written.describe()
    record_id, state = written.stdout.split()
    assert state == "pending"
    shown = run_process(home, "memory", "show", record_id, "--as", "deven", "--json", env=as_deven)
    assert '"delegated": true' in shown.stdout
    expect_error(run_process(home, "remember", "alice", "as alice", env=as_deven), "GrantExceeded")
    expect_error(run_process(home, "memory", "enable", env=as_deven), "OwnerOnlyAction")
    expect_error(run_process(home, "recall", "deven", "x", env={GRANT_TOKEN_ENV: "rgt_not-a-token"}), "GrantInvalid")
