"""The app surface over the loopback API: a host that is not written in Python creates its app's bank (the seeds'
CreateBank), writes to it and recalls from it, knowing only the OpenAPI document; `Runtime.connect(home).apps`
answers exactly as `Runtime.open(home).apps` does; a member session and another app are refused.

Against a real `resident up` process, with plain HTTP requests built from `/openapi.json`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from resident import Runtime
from resident.api.wire import GRANT_HEADER
from resident.errors import NotVisible, OwnerOnlyAction, ScopeNotAllowed
from resident.messages.apps import AppBanksQuery
from resident.operations import apps
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    home = tmp_path_factory.mktemp("apps") / "home"
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        grant = rt.coordinator.issue_grant(actions={"recall", "remember"}, scopes={"AGENT_CORE"})
        session = dispatch_session(host_context(rt),
            "work", "deven", role="implement", parent_grant=grant, actions={"recall", "remember"},
            scopes={"AGENT_CORE"},
        )
    (home.parent / "deven.grant").write_text(session.token)
    with UpProcess(home) as process:
        yield process


def _operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (method, path template, operation), as a generic OpenAPI client indexes a document."""
    return {
        spec["operationId"]: (method.upper(), path, spec)
        for path, methods in document["paths"].items()
        for method, spec in methods.items()
    }


def _send(client: httpx.Client, entry: tuple[str, str, dict[str, Any]], values: dict[str, Any],
          headers: dict[str, str] | None = None) -> httpx.Response:
    """One request built only from the document: path parameters into the path, the rest as its query or body."""
    method, template, spec = entry
    path, rest = template, dict(values)
    for parameter in spec.get("parameters", []):
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", quote(str(rest.pop(parameter["name"])), safe=""))
    if method == "GET":
        return client.request(method, path, params=rest, headers=headers)
    body_schema = spec["requestBody"]["content"]["application/json"]["schema"]
    assert set(rest) <= set(body_schema["properties"]), "the test sends only what the document declares"
    return client.request(method, path, json=rest, headers=headers)


def test_a_host_that_is_not_python_creates_an_app_bank_writes_and_recalls_from_the_api_document(
    up: UpProcess,
) -> None:
    with up.client() as client:
        operations = _operations(client.get("/openapi.json").json())
        created = _send(client, operations["apps.create_bank"],
                        {"app_or_workspace": "notes", "scope": "APP_PRIVATE", "name": "cache"})
        assert created.status_code == 200, created.text
        bank = created.json()["name"]
        assert bank == "app_private/notes/cache"
        again = _send(client, operations["apps.create_bank"],
                      {"app_or_workspace": "notes", "scope": "APP_PRIVATE", "name": "cache"})
        assert again.json() == created.json(), "creating the bank again changes nothing"

        listed = _send(client, operations["apps.banks"], {"app_or_workspace": "notes"})
        assert [found["name"] for found in listed.json()["banks"]] == [bank]

        written = _send(client, operations["apps.remember"],
                        {"app_or_workspace": "notes", "bank": bank, "text": "the cache lives in redis on port 6380"})
        assert written.status_code == 200, written.text
        receipt = written.json()
        assert receipt["bank"] == bank
        assert receipt["replication"] == "pending"

        recalled = _send(client, operations["apps.recall"],
                         {"app_or_workspace": "notes", "query": "where does the cache live", "k": 3})
        assert recalled.status_code == 200, recalled.text
        assert [hit["id"] for hit in recalled.json()["hits"]] == [receipt["id"]]


def test_every_status_an_app_route_may_answer_is_in_the_document(up: UpProcess) -> None:
    with up.client() as client:
        operations = _operations(client.get("/openapi.json").json())
    for name in ("apps.create_bank", "apps.banks", "apps.remember", "apps.recall"):
        assert {"200", "4XX", "500", "503", "507"} <= set(operations[name][2]["responses"]), name


def test_an_app_route_refuses_bad_input_with_a_typed_error(up: UpProcess) -> None:
    with up.client() as client:
        operations = _operations(client.get("/openapi.json").json())
        wrong_scope = _send(client, operations["apps.create_bank"],
                            {"app_or_workspace": "notes", "scope": "AGENT_CORE", "name": "mine"})
        assert wrong_scope.status_code == 403
        assert wrong_scope.json()["error"]["type"] == "ScopeNotAllowed"
        unknown_field = client.post("/v1/apps/notes/banks", json={"scope": "APP_PRIVATE", "name": "x", "owner": "y"})
        assert unknown_field.status_code == 400
        assert unknown_field.json()["error"]["type"] == "InvalidInput"
        path_twice = client.post("/v1/apps/notes/banks",
                                 json={"app_or_workspace": "other", "scope": "APP_PRIVATE", "name": "x"})
        assert path_twice.status_code == 400, "the app comes from the path, never also from the body"
        bad_k = client.post("/v1/apps/notes/recall", json={"query": "x", "k": 0})
        assert bad_k.status_code == 400
        assert "k" in bad_k.json()["error"]["message"]


def test_a_member_session_cannot_use_the_app_surface(up: UpProcess) -> None:
    token = (up.home.parent / "deven.grant").read_text()
    with up.client() as client:
        refused = client.post("/v1/apps/notes/banks", json={"scope": "APP_PRIVATE", "name": "stolen"},
                              headers={GRANT_HEADER: token})
        assert refused.status_code == 403
        assert refused.json()["error"]["type"] == "OwnerOnlyAction"
        empty = client.post("/v1/apps/notes/recall", json={"query": "cache"}, headers={GRANT_HEADER: ""})
        assert empty.status_code == 403, "an empty grant token never stands for the owner"


def test_connect_answers_as_open_does_and_holds_an_app_to_its_own_banks(up: UpProcess) -> None:
    with Runtime.connect(up.home) as rt:
        bank = rt.apps.create_bank("ledger", "APP_PRIVATE", "entries")
        assert rt.apps.banks("ledger") == [bank]
        receipt = rt.apps.remember("ledger", bank.name, "invoice 42 is paid", kind="world")
        assert [hit.id for hit in rt.apps.recall("ledger", "invoice paid")] == [receipt.id]
        with pytest.raises(NotVisible):
            rt.apps.remember("notes", bank.name, "another app writes here")
        with pytest.raises(ScopeNotAllowed):
            rt.apps.create_bank("ledger", "AGENT_CORE", "mine")
        assert rt.apps.recall("notes", "invoice paid") == [], "an app recalls from its own banks only"


def test_the_app_surface_in_process_refuses_what_the_api_refuses(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        rt.memory.enable()
        bank = rt.apps.create_bank("ledger", "APP_PRIVATE", "entries")
        with pytest.raises(NotVisible):
            rt.apps.remember("notes", bank.name, "another app writes here")
        with pytest.raises(ScopeNotAllowed):
            rt.apps.create_bank("ledger", "AGENT_DYADIC", "mine")
        session = dispatch_session(host_context(rt),
            "work", "deven", role="implement",
            parent_grant=rt.coordinator.issue_grant(actions={"recall"}, scopes={"AGENT_CORE"}),
            actions={"recall"}, scopes={"AGENT_CORE"},
        )
        with pytest.raises(OwnerOnlyAction):
            rt._local.with_grant(session.token).run(apps.BANKS, AppBanksQuery("ledger"), None)
