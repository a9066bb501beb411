"""The loopback API against a real `resident up` process: the token, the Host check, typed 4xx answers
for every route's bad input, and the connected runtime (`Runtime.connect`) answering like `Runtime.open`."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import resident.errors as errors_module
from resident import Runtime
from resident.api.openapi import openapi_document
from resident.api.wire import EVENTS_PATH, OPENAPI_PATH
from resident.errors import (
    InvalidInput,
    RecordNotFound,
    TextInvalid,
    Unauthorized,
    UnknownExecution,
    UnknownMember,
)
from resident.operations import DECLARED, Operation, apps
from resident.operations import cognition as cognition_ops
from resident.operations import coordination as coordination_ops
from resident.operations import engagement as engagement_ops
from resident.operations import evolution as evolution_ops
from resident.operations import home as home_ops
from resident.operations import knowledge as knowledge_ops
from resident.operations import memory as memory_ops
from resident.operations import portability as portability_ops
from resident.operations import principles as principles_ops
from resident.operations import replication as replication_ops
from resident.operations import sessions as sessions_ops
from resident.operations import skills as skills_ops
from resident.operations.declaration import MAX_BODY_BYTES
from tests.api_helpers import UpProcess, raw_client

# Refusals of a request's form rather than its content (the client library never sends these).
FORM_REFUSALS = {
    "MalformedJSON", "UnsupportedMediaType", "BodyTooLarge", "MethodNotAllowed", "NotFound", "HostNotAllowed",
}
# A declared operation of any request and reply.
AnyOperation = Operation[Any, Any, Any]
PARAMS = {
    "member": "deven", "record": "mem_missing", "record_id": "mem_missing", "skill": "no-such-skill",
    "name": "no-such-skill", "principle": "prn_missing", "principle_id": "prn_missing", "question": "q_missing",
    "question_id": "q_missing", "change": "deven@999", "change_id": "deven@999", "bank": "handbook",
    "entry": "ke_missing", "entry_id": "ke_missing", "session": "ses_missing", "execution_id": "exe_missing",
    "excerpt": "ses_missing#1", "app_or_workspace": "notes",
}


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    with UpProcess(tmp_path_factory.mktemp("api") / "home") as process:
        with process.client() as http:
            assert http.post("/v1/memory/enable", json={}).status_code == 200
        yield process


@pytest.fixture(scope="module")
def http(up: UpProcess) -> Iterator[httpx.Client]:
    with up.client() as client:
        yield client


@pytest.fixture(scope="module")
def rt(up: UpProcess) -> Iterator[Any]:
    with Runtime.connect(up.home) as connected:
        yield connected


def send(client: httpx.Client, op: AnyOperation, body: Any = None, **params: str) -> httpx.Response:
    path = op.url(**{**PARAMS, **params})
    if op.route.method == "GET":
        return client.get(path)
    return client.post(path, json={} if body is None else body)


def assert_typed(response: httpx.Response, status: int | None = None, kind: str | None = None) -> str:
    """The answer is a typed JSON error with a 4xx status; returns its type."""
    assert 400 <= response.status_code < 500, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) >= {"type", "message"}
    assert "\n" not in error["message"]
    assert error["message"]
    assert error["type"] in errors_module.__all__ or error["type"] in FORM_REFUSALS, error
    if status is not None:
        assert response.status_code == status, response.text
    if kind is not None:
        assert error["type"] == kind, response.text
    return str(error["type"])


# -- the token and the Host --------------------------------------------------------------------------


def every_guarded_request() -> list[tuple[str, str]]:
    requests = [(op.route.method, op.url(**PARAMS)) for op in DECLARED if op is not home_ops.HEALTH]
    return [*requests, ("GET", EVENTS_PATH), ("GET", OPENAPI_PATH), ("GET", "/v1/nowhere")]


def test_health_answers_without_a_token(up: UpProcess) -> None:
    with raw_client(up) as client:
        response = client.get("/v1/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "api_version": 1}


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wrong", "PREFIX", "SUFFIX", "UPPER", "Basic TOKEN", "TOKEN"],
)
def test_every_request_without_the_right_token_is_refused_and_changes_nothing(
    up: UpProcess, http: httpx.Client, authorization: str | None
) -> None:
    token = up.discovery.token if up.discovery else ""
    header = {
        "PREFIX": f"Bearer {token[:-1]}", "SUFFIX": f"Bearer {token}x", "UPPER": f"Bearer {token.upper()}",
        "Basic TOKEN": f"Basic {token}", "TOKEN": token,
    }.get(authorization or "", authorization)
    before = http.get("/v1/memory").json()["records"]
    with raw_client(up) as client:
        for method, path in every_guarded_request():
            headers = {} if header is None else {"Authorization": header}
            body = {"text": "must not be stored", "query": "x"} if method == "POST" else None
            response = client.request(method, path, headers=headers, json=body)
            assert_typed(response, 401, "Unauthorized")
            assert response.headers["www-authenticate"].startswith("Bearer")
    assert http.get("/v1/memory").json()["records"] == before


def test_the_bearer_scheme_is_case_insensitive(up: UpProcess) -> None:
    token = up.discovery.token if up.discovery else ""
    with raw_client(up) as client:
        assert client.get("/v1/members", headers={"Authorization": f"bearer {token}"}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "10.0.0.1", "[::2]:1"])
def test_a_request_naming_a_foreign_host_is_refused_even_with_the_token(http: httpx.Client, host: str) -> None:
    for path in ("/v1/health", "/v1/members", "/v1/nowhere"):
        assert_typed(http.get(path, headers={"Host": host}), 421, "HostNotAllowed")


# -- bad input, route by route --------------------------------------------------------------------

DEVEN = {"member": "deven"}
BAD_INPUT: list[tuple[AnyOperation, dict[str, str], Any, int, str]] = [
    (memory_ops.ENABLE, {}, {"provider": "mem0"}, 400, "InvalidInput"),
    (memory_ops.WAIT_INDEXED, {}, {"timeout": 0}, 400, "InvalidInput"),
    (memory_ops.WAIT_VECTORS, {}, {"timeout": -1}, 400, "InvalidInput"),
    (apps.CREATE_BANK, {}, {"scope": "AGENT_CORE", "name": "mine"}, 403, "ScopeNotAllowed"),
    (apps.CREATE_BANK, {}, {"scope": "APP_PRIVATE"}, 400, "InvalidInput"),
    (apps.CREATE_BANK, {"app_or_workspace": "no way"}, {"scope": "APP_PRIVATE", "name": "x"}, 400, "InvalidInput"),
    (apps.BANKS, {"app_or_workspace": "no way"}, None, 400, "InvalidInput"),
    (apps.REMEMBER, {}, {"bank": "app_private/notes/missing", "text": "x"}, 404, "UnknownBank"),
    (apps.REMEMBER, {}, {"bank": "agent_core/deven", "text": "x"}, 404, "UnknownBank"),
    (apps.REMEMBER, {}, {"bank": "app_private/notes/x", "text": "x", "importance": 3}, 400, "InvalidInput"),
    (apps.RECALL, {}, {"query": ""}, 400, "TextInvalid"),
    (apps.RECALL, {}, {"query": "x", "scope": "AGENT_CORE"}, 400, "InvalidInput"),
    (memory_ops.ENABLE, {}, {"embedder": "http://example.com:8080"}, 400, "EmbedderNotLoopback"),
    (memory_ops.ENABLE, {}, {"embedder": 7}, 400, "InvalidInput"),
    (memory_ops.DISABLE, {}, {"now": True}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": ""}, 400, "TextInvalid"),
    (memory_ops.REMEMBER, DEVEN, {"text": "   "}, 400, "TextInvalid"),
    (memory_ops.REMEMBER, DEVEN, {"text": "x" * 16_001}, 400, "TextInvalid"),
    (memory_ops.REMEMBER, DEVEN, {}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, {"member": "nobody"}, {"text": "hello"}, 404, "UnknownMember"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "scope": "EVERYONE"}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "importance": 2}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "kind": "rumour"}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "delegated": True}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "occurred_at": 1e300}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "activation": {"domain": "leisure"}}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "activation": {"project": " "}}, 400, "InvalidInput"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "supersedes": "mem_missing"}, 404, "RecordNotFound"),
    (memory_ops.REMEMBER, DEVEN, {"text": "hello", "scope": "WORLD_SHARED", "world": "elsewhere"}, 403, "NotVisible"),
    (memory_ops.REMEMBER_MANY, DEVEN, {"items": "not a list"}, 400, "InvalidInput"),
    (memory_ops.REMEMBER_MANY, DEVEN, {}, 400, "InvalidInput"),
    (memory_ops.REMEMBER_MANY, {"member": "nobody"}, {"items": [{"text": "x"}]}, 404, "UnknownMember"),
    (memory_ops.RECALL, DEVEN, {"query": "x", "k": 0}, 400, "InvalidInput"),
    (memory_ops.RECALL, DEVEN, {"query": "x", "k": 101}, 400, "InvalidInput"),
    (memory_ops.RECALL, DEVEN, {"query": "x", "char_budget": 0}, 400, "InvalidInput"),
    (memory_ops.RECALL, DEVEN, {"query": ""}, 400, "TextInvalid"),
    (memory_ops.RECALL, DEVEN, {"query": "x" * 2_001}, 400, "TextInvalid"),
    (memory_ops.RECALL, {"member": "nobody"}, {"query": "x"}, 404, "UnknownMember"),
    (memory_ops.GET, DEVEN, None, 404, "RecordNotFound"),
    (memory_ops.GET, {"member": "nobody"}, None, 404, "UnknownMember"),
    (memory_ops.FORGET, DEVEN, {"reason": "gone"}, 404, "RecordNotFound"),
    (memory_ops.FORGET, DEVEN, {"reason": 5}, 400, "InvalidInput"),
    (memory_ops.RECONCILE, DEVEN, {"rollback": True}, 404, "RecordNotFound"),
    (memory_ops.RECONCILE, DEVEN, {"rollback": "yes"}, 400, "InvalidInput"),
    (memory_ops.RECONCILE_RECORD, {}, {"readmit": True}, 404, "RecordNotFound"),
    (replication_ops.RECORD, {}, None, 404, "RecordNotFound"),
    (replication_ops.SYNC, {}, {"timeout": 0}, 400, "InvalidInput"),
    (replication_ops.SYNC, {}, {"timeout": 1_000}, 400, "InvalidInput"),
    (coordination_ops.CORRECT, {}, {"execution_id": "exe_missing", "note": "wrong file"}, 404, "UnknownExecution"),
    (coordination_ops.CORRECT, {}, {"execution_id": "exe_missing", "note": ""}, 400, "InvalidInput"),
    (coordination_ops.CORRECT, {}, {"note": "wrong file"}, 400, "InvalidInput"),
    (coordination_ops.GRANT, {}, {"actions": ["merge"]}, 403, "OwnerOnlyAction"),
    (coordination_ops.GRANT, {}, {"actions": ["recall"], "ttl": 0}, 400, "InvalidInput"),
    (coordination_ops.EXECUTION, {}, None, 404, "UnknownExecution"),
    (coordination_ops.ACCEPT, {}, {}, 404, "UnknownExecution"),
    (coordination_ops.FINISH, {}, {"outcome": "succeeded"}, 404, "UnknownExecution"),
    (coordination_ops.FINISH, {}, {"outcome": "exploded"}, 400, "InvalidInput"),
    (coordination_ops.DISPATCH, {}, {"member": "nobody", "task": "t"}, 404, "UnknownMember"),
    (coordination_ops.DISPATCH, {}, {"member": "deven", "task": ""}, 400, "InvalidInput"),
    (coordination_ops.DISPATCH, {}, {"member": "deven", "task": "t", "role": "juggle"}, 400, "InvalidInput"),
    (coordination_ops.DISPATCH, {}, {"member": "deven", "task": "t", "harness": "emacs", "directory": "/"}, 400,
     "InvalidInput"),
    (coordination_ops.DISPATCH, {}, {"member": "deven", "task": "t", "harness": "command", "directory": "relative"},
     400, "InvalidInput"),
    (coordination_ops.DISPATCH, {}, {"member": "deven", "task": "t", "harness": "command", "directory": "/",
                                     "command": ["no-such-program-here"]}, 400, "HarnessNotFound"),
    (coordination_ops.AWAIT, {}, {}, 404, "UnknownExecution"),
    (coordination_ops.AWAIT, {}, {"timeout": -1}, 400, "InvalidInput"),
    (coordination_ops.REJECT, {}, {"reason": "wrong file"}, 404, "UnknownExecution"),
    (coordination_ops.REJECT, {}, {}, 400, "InvalidInput"),
    (home_ops.BACKUP, {}, {"dest": "relative/backup"}, 400, "InvalidInput"),
    (home_ops.BACKUP, {}, {"dest": "/"}, 400, "InvalidInput"),
    (home_ops.BACKUP, {}, {}, 400, "InvalidInput"),
    (portability_ops.EXPORT, {"member": "nobody"}, None, 404, "UnknownMember"),
    (portability_ops.IMPORT, {}, {"data": "not base64!"}, 400, "InvalidInput"),
    (portability_ops.IMPORT, {}, {"data": "bm90IGFuIGV4cG9ydA=="}, 400, "ExportInvalid"),
    (portability_ops.IMPORT, {}, {}, 400, "InvalidInput"),
    (skills_ops.ADD_FOLDER, {}, {"path": "relative/skill"}, 400, "InvalidInput"),
    (skills_ops.ADD_FOLDER, {}, {"path": "/no/such/skill/folder"}, 400, "SkillInvalid"),
    (skills_ops.SKILL, {}, None, 404, "UnknownSkill"),
    (skills_ops.ADD, {}, {"folder": "deploy", "data": "bm8gZnJvbnQgbWF0dGVy"}, 400, "SkillInvalid"),
    (skills_ops.ADD, {}, {"folder": "deploy"}, 400, "InvalidInput"),
    (skills_ops.SET, {}, {}, 400, "InvalidInput"),
    (skills_ops.SET, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (skills_ops.SEARCH, {}, {"query": "deploy", "limit": 0}, 400, "InvalidInput"),
    (skills_ops.SEARCH, {}, {"query": ""}, 400, "TextInvalid"),
    (skills_ops.REBUILD, {}, {"now": True}, 400, "InvalidInput"),
    (skills_ops.READ, {}, {}, 404, "UnknownSkill"),
    (skills_ops.READ, {"skill": "Not A Name"}, {}, 400, "SkillInvalid"),
    (skills_ops.GIVE, {}, {"member": "deven"}, 404, "UnknownSkill"),
    (skills_ops.GIVE, {}, {"member": "deven", "weight": -1}, 400, "InvalidInput"),
    (skills_ops.GIVE, {}, {"member": "deven", "track": "weeks"}, 400, "InvalidInput"),
    (skills_ops.GIVE, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (skills_ops.RECLAIM, {}, {"member": "deven"}, 404, "UnknownSkill"),
    (skills_ops.RECLAIM, {}, {}, 400, "InvalidInput"),
    (skills_ops.CHOOSE, {}, {"task": "deploy", "limit": 11}, 400, "InvalidInput"),
    (skills_ops.CHOOSE, {"member": "nobody"}, {"task": "deploy"}, 404, "UnknownMember"),
    (principles_ops.PROPOSE, {}, {"text": "test first", "basis": "a failure"}, 400, "InvalidInput"),
    (principles_ops.PROPOSE, {}, {"member": "nobody", "text": "test first", "basis": "a failure"}, 404,
     "UnknownMember"),
    (principles_ops.LIST, {}, {"state": "maybe"}, 400, "InvalidInput"),
    (principles_ops.GET, {}, None, 404, "UnknownPrinciple"),
    (principles_ops.LIST, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (principles_ops.APPROVE, {}, {}, 404, "UnknownPrinciple"),
    (principles_ops.APPROVE, {}, {"reason": 7}, 400, "InvalidInput"),
    (principles_ops.REJECT, {}, {"reason": "no"}, 404, "UnknownPrinciple"),
    (principles_ops.REJECT, {}, {}, 400, "InvalidInput"),
    (engagement_ops.EXAMPLES, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (engagement_ops.EXAMPLES, {}, {}, 400, "InvalidInput"),
    (engagement_ops.RESOLVE, {}, {"member": "nobody", "context": {}}, 404, "UnknownMember"),
    (engagement_ops.RESOLVE, {}, {"member": "deven", "context": {"task": 7}}, 400, "InvalidInput"),
    (evolution_ops.CHANGE, {}, None, 404, "UnknownChange"),
    (evolution_ops.ADMIT, {}, {"member": "deven", "text": "x", "basis": ""}, 400, "TextInvalid"),
    (evolution_ops.ADMIT, {}, {"member": "nobody", "text": "x", "basis": "curated"}, 404, "UnknownMember"),
    (engagement_ops.ENGAGE, {}, {"domain": "work"}, 400, "InvalidInput"),
    (engagement_ops.ENGAGE, {}, {"member": "deven", "domain": "leisure"}, 400, "InvalidInput"),
    (engagement_ops.ENGAGE, {}, {"member": "nobody", "domain": "work"}, 404, "UnknownMember"),
    (engagement_ops.RELEASE, {}, {"member": "victor"}, 400, "InvalidInput"),
    (engagement_ops.STATE, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (engagement_ops.QUESTIONS, {}, {"include_answered": "yes"}, 400, "InvalidInput"),
    (engagement_ops.ANSWER, {}, {"domain": "work"}, 404, "UnknownQuestion"),
    (engagement_ops.ANSWER, {}, {"domain": "leisure"}, 400, "InvalidInput"),
    (evolution_ops.LOG, {}, {"member": "deven", "last": 0}, 400, "InvalidInput"),
    (evolution_ops.LOG, {}, {"member": "nobody"}, 404, "UnknownMember"),
    (evolution_ops.ROLLBACK, {}, {}, 404, "UnknownChange"),
    (evolution_ops.ROLLBACK, {}, {"reason": ["x"]}, 400, "InvalidInput"),
    (evolution_ops.REPORT, {}, {"week": "last week"}, 400, "InvalidInput"),
    # knowledge (off for this home: a well-formed call says so) and sessions
    (knowledge_ops.BANK_CREATE, {}, {}, 400, "InvalidInput"),
    (knowledge_ops.BANK_CREATE, {}, {"name": "notes"}, 409, "KnowledgeDisabled"),
    (knowledge_ops.INGEST, {}, {"paths": []}, 400, "InvalidInput"),
    (knowledge_ops.INGEST, {}, {"paths": ["relative/docs"]}, 400, "InvalidInput"),
    (knowledge_ops.SEARCH, {}, {"query": "x", "state": "deleted"}, 400, "InvalidInput"),
    (knowledge_ops.SEARCH, {}, {"query": "x", "k": 0}, 400, "InvalidInput"),
    (knowledge_ops.REINDEX, {}, {"now": True}, 400, "InvalidInput"),
    (knowledge_ops.REPOSITORY_ADD, {}, {"repository_id": "r", "path": "relative/tree"}, 400, "InvalidInput"),
    (knowledge_ops.REPOSITORY_ADD, {}, {"repository_id": "r"}, 400, "InvalidInput"),
    (knowledge_ops.ENTRIES, {}, {"state": 3}, 400, "InvalidInput"),
    (knowledge_ops.PROMOTE, {}, {"now": True}, 400, "InvalidInput"),
    (knowledge_ops.PROMOTE, {}, {}, 409, "KnowledgeDisabled"),
    (knowledge_ops.ENTRY, {}, None, 409, "KnowledgeDisabled"),
    (knowledge_ops.CONTEXT, {}, {"member": "deven", "project": "p"}, 400, "InvalidInput"),
    (knowledge_ops.IMPORT_LEGACY, {}, {"path": "old.jsonl"}, 400, "InvalidInput"),
    (knowledge_ops.SESSION_CONTEXT, {}, {"project_id": "p"}, 400, "InvalidInput"),
    (knowledge_ops.SESSION_CONTEXT, {}, {"project_id": "p", "repository_id": "r"}, 403, "GrantInvalid"),
    (sessions_ops.START, {}, {"member": "deven", "harness": "vim", "directory": "/", "process": 1}, 400,
     "InvalidInput"),
    (sessions_ops.START, {}, {"member": "deven", "harness": "command", "directory": "/", "process": 0}, 400,
     "InvalidInput"),
    (sessions_ops.START, {}, {"member": "deven", "harness": "command", "directory": "relative", "process": 1},
     400, "InvalidInput"),
    (sessions_ops.START, {}, {"member": "nobody", "harness": "command", "directory": "/", "process": 1}, 404,
     "UnknownMember"),
    (sessions_ops.END, {}, {}, 404, "UnknownSession"),
    (sessions_ops.END, {"session": "not-a-session"}, {}, 404, "UnknownSession"),
    (sessions_ops.END, {}, {"exit_code": "x"}, 400, "InvalidInput"),
    (sessions_ops.RECOVER, {}, {"session": 5}, 400, "InvalidInput"),
    (sessions_ops.LIST, {}, {"state": 5}, 400, "InvalidInput"),
    (sessions_ops.SHOW, {}, {}, 404, "UnknownSession"),
    (sessions_ops.SHOW, {}, {"limit": 0}, 400, "InvalidInput"),
    (sessions_ops.RAW, {}, {}, 404, "UnknownSession"),
    (sessions_ops.RAW, {}, {"part": -1}, 400, "InvalidInput"),
    (sessions_ops.CANDIDATES, {}, {"harness": "codex", "path": "relative"}, 400, "InvalidInput"),
    (sessions_ops.CANDIDATES, {}, {"harness": "codex", "path": "/nonexistent/codex"}, 400, "InvalidInput"),
    (sessions_ops.IMPORT, {}, {"ids": [], "member": "deven", "harness": "codex", "path": "/nonexistent"}, 400,
     "InvalidInput"),
    (sessions_ops.IMPORT, {}, {"ids": ["x"], "member": "nobody", "harness": "codex", "path": "/nonexistent"}, 404,
     "UnknownMember"),
    (sessions_ops.EXCERPTS, {"member": "nobody"}, {}, 404, "UnknownMember"),
    (sessions_ops.EXCERPTS, {}, {"limit": 0}, 400, "InvalidInput"),
    (sessions_ops.ADMIT, {}, {}, 404, "UnknownSession"),
    (sessions_ops.ADMIT, {"excerpt": "not-an-excerpt"}, {}, 400, "InvalidInput"),
    (sessions_ops.ADMIT, {}, {"importance": 2}, 400, "InvalidInput"),
    (cognition_ops.RECALL, {}, {"member": "deven", "query": ""}, 400, "TextInvalid"),
    (cognition_ops.RECALL, {}, {"member": "nobody", "query": "deploy"}, 404, "UnknownMember"),
    (cognition_ops.RECALL, {}, {"member": "deven", "query": "x", "sources": ["gossip"]}, 400, "InvalidInput"),
    (cognition_ops.RECALL, {}, {"member": "deven", "query": "x", "k": 0}, 400, "InvalidInput"),
    (cognition_ops.CONTEXT, {}, {"member": "deven", "project": "p", "repository": "r", "item": " "}, 400,
     "TextInvalid"),
    (cognition_ops.CALL, {}, {"member": "deven"}, 400, "InvalidInput"),
    (cognition_ops.CALL, {}, {"member": "deven", "operation": "reflect"}, 409, "CognitionDisabled"),
    (cognition_ops.RETAIN, {}, {"member": "deven", "record_ids": []}, 400, "InvalidInput"),
    (cognition_ops.RETAIN, {}, {"member": "deven", "record_ids": ["mem_x"]}, 409, "CognitionDisabled"),
]


@pytest.mark.parametrize(
    ("op", "params", "body", "status", "kind"), BAD_INPUT, ids=[f"{row[0].name}-{i}" for i, row in enumerate(BAD_INPUT)]
)
def test_bad_input_gets_a_typed_4xx(
    http: httpx.Client, op: AnyOperation, params: dict[str, str], body: Any, status: int, kind: str
) -> None:
    assert_typed(send(http, op, body, **params), status, kind)


def test_a_session_named_dot_dot_is_no_session_and_no_folder_of_the_home(http: httpx.Client, up: UpProcess) -> None:
    # Escaped, the dots reach the route as the segment `..` (a client would otherwise resolve them away).
    before = sorted(path.name for path in up.home.iterdir())
    assert_typed(http.post("/v1/sessions/%2E%2E/end", json={}), 404, "UnknownSession")
    assert sorted(path.name for path in up.home.iterdir()) == before


def test_every_route_with_input_has_bad_input_rows() -> None:
    with_input = {op.name for op in DECLARED if op.route.method == "POST" or op.route.segments}
    assert with_input <= {row[0].name for row in BAD_INPUT}


POSTS = [op for op in DECLARED if op.route.method == "POST"]


@pytest.mark.parametrize("op", POSTS, ids=[op.name for op in POSTS])
def test_every_post_refuses_bodies_of_the_wrong_form(http: httpx.Client, op: AnyOperation) -> None:
    path = op.url(**PARAMS)
    json_type = {"Content-Type": "application/json"}
    assert_typed(http.post(path, content=b"{not json", headers=json_type), 400, "MalformedJSON")
    assert_typed(http.post(path, content=b"[]", headers=json_type), 400, "InvalidInput")
    assert_typed(http.post(path, content=b'{"unknown_field": 1}', headers=json_type), 400, "InvalidInput")
    assert_typed(http.post(path, content=b"\xff\xfe", headers=json_type), 400)
    # A cross-site form post can send only form or text types: refused before the body is read.
    form = {"Content-Type": "text/plain"}
    assert_typed(http.post(path, content=json.dumps({"text": "x"}), headers=form), 415, "UnsupportedMediaType")
    assert_typed(http.post(path, content=b'{"text": "x"}', headers={}), 415, "UnsupportedMediaType")
    if op.route.max_body <= 2 * MAX_BODY_BYTES:
        oversized = b'{"text": "' + b"a" * op.route.max_body + b'"}'
        assert_typed(http.post(path, content=oversized, headers=json_type), 413, "BodyTooLarge")
    else:
        # A body an operation allows far more room (a member export) is refused on its declared size.
        status, error = declared_too_large(http, path, op.route.max_body + 1)
        assert (status, error["type"]) == (413, "BodyTooLarge")


def declared_too_large(http: httpx.Client, path: str, length: int) -> tuple[int, Any]:
    """Send only the headers of a POST declaring `length` bytes of body; the status and error of the answer."""
    url = http.base_url
    token = http.headers["Authorization"]
    with socket.create_connection((url.host, url.port), timeout=30) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\nAuthorization: {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)["error"]


@pytest.mark.parametrize("op", DECLARED, ids=[op.name for op in DECLARED])
def test_every_route_refuses_query_parameters_wrong_methods_and_overlong_segments(
    http: httpx.Client, op: AnyOperation
) -> None:
    path = op.url(**PARAMS)
    if op is not home_ops.HEALTH:
        assert_typed(http.request(op.route.method, path + "?k=5", json={} if op.route.method == "POST" else None), 400)
    assert_typed(http.request("PUT", path, json={}), 405, "MethodNotAllowed")
    if op.route.segments:
        long_params = dict.fromkeys(op.route.segments, "x" * 201)
        response = send(http, op, {"text": "x", "query": "x"} if op.route.method == "POST" else None, **long_params)
        assert_typed(response, 400, "InvalidInput")


def test_an_unknown_path_is_a_typed_404(http: httpx.Client) -> None:
    assert_typed(http.get("/v1/memory/"), 404, "NotFound")
    assert_typed(http.get("/v2/members"), 404, "NotFound")


def test_a_malformed_last_event_id_is_a_typed_400(http: httpx.Client) -> None:
    for value in ("garbage", "1.2", "1.2.3.4", "-1.0.abc", "1.x.abc", "99999999999999999999.0.abc", "1.0.ab/cd"):
        assert_typed(http.get("/v1/events", headers={"Last-Event-ID": value}), 400, "InvalidInput")


def test_the_served_openapi_document_is_the_one_generated_from_the_table(http: httpx.Client) -> None:
    response = http.get("/openapi.json")
    assert response.status_code == 200
    assert response.json() == json.loads(json.dumps(openapi_document()))


# -- Runtime.connect ------------------------------------------------------------------------------


def test_a_connected_runtime_remembers_recalls_reads_and_forgets_like_an_open_one(rt: Any) -> None:
    deven = rt.member("deven")
    receipt = deven.remember("the staging deploy needs the migration first", importance=0.9, kind="world")
    assert receipt.replication == "pending"
    assert receipt.bank == "agent_core/deven"
    hits = deven.recall("staging deploy migration", k=3)
    assert hits[0].id == receipt.id
    assert hits[0].kind == "world"
    record = deven.get(receipt.id)
    assert record.body == "the staging deploy needs the migration first"
    assert record.importance == 0.9
    assert rt.replication.status(receipt.id).state == "pending"
    deven.forget(receipt.id, reason="done")
    assert receipt.id not in [hit.id for hit in deven.recall("staging deploy migration", k=10)]
    assert deven.get(receipt.id).lifecycle == "retracted"


def test_a_connected_runtime_reports_status_progress_and_statistics(rt: Any) -> None:
    status = rt.memory.status()
    assert status.enabled
    assert status.provider == "hindsight"
    assert rt.memory.enable() is False  # already on like this
    counts = rt.replication.status()
    assert counts.realm is None
    assert "pending" in counts.counts
    assert rt.coordinator.progress().executions == 0
    names = {child.name for child in rt.statistics().children}
    assert {"writer", "substrate", "replication", "coordinator", "members/deven"} <= names
    assert [m.name for m in rt.members()][:2] == ["samuel", "deven"]


def test_a_connected_runtime_raises_the_runtime_s_typed_errors(rt: Any) -> None:
    with pytest.raises(UnknownMember, match="roster"):
        rt.member("nobody")
    deven = rt.member("deven")
    with pytest.raises(RecordNotFound):
        deven.get("mem_missing")
    with pytest.raises(InvalidInput, match="k"):
        deven.recall("x", k=0)
    with pytest.raises(TextInvalid):
        deven.remember(b"\xff not utf-8")
    with pytest.raises(TextInvalid):
        deven.remember("")
    with pytest.raises(InvalidInput):
        deven.remember("hello", no_such_option=True)
    with pytest.raises(InvalidInput):
        deven.recall("x", activation={"mood": "good"})
    with pytest.raises(UnknownExecution):
        rt.coordinator.correct("exe_missing", "wrong file")
    with pytest.raises(InvalidInput):
        rt.replication.sync(timeout=0)


def test_a_connected_runtime_refuses_a_far_future_time_and_a_cite_that_is_no_record(rt: Any) -> None:
    deven = rt.member("deven")
    with pytest.raises(InvalidInput, match="days after now"):
        deven.remember("a month ahead", occurred_at=time.time() + 30 * 86_400)
    with pytest.raises(RecordNotFound):
        deven.remember("consolidated", kind="observation", cites=("../../etc/passwd",))


def test_the_awaitable_twins_write_concurrently_over_one_connection_pool(up: UpProcess) -> None:
    rt = Runtime.connect(up.home)
    deven = rt.member("deven")

    async def main() -> list[str]:
        try:
            receipts = await asyncio.gather(*(deven.aremember(f"async note {i} about kiwis") for i in range(40)))
            hits = await deven.arecall("async note kiwis", k=40)
            record = await deven.aget(receipts[0].id)
            assert record.id == receipts[0].id
            await deven.aforget(receipts[1].id)
            with pytest.raises(RecordNotFound):
                await deven.aget("mem_missing")
            return [hit.id for hit in hits]
        finally:
            await rt.aclose()

    recalled = asyncio.run(main())
    assert len(recalled) == 40


def test_a_client_without_the_token_gets_unauthorized(up: UpProcess, rt: Any) -> None:
    transport = rt._transport
    transport._client.headers["Authorization"] = "Bearer wrong"
    try:
        with pytest.raises(Unauthorized):
            rt.members()
    finally:
        transport._client.headers["Authorization"] = f"Bearer {up.discovery.token if up.discovery else ''}"
