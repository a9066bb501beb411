"""`remember_many` over the loopback API: `Runtime.connect` has it as `Runtime.open` does, each item
refused in its place with its typed error, and a member session's items checked against its grant.

Against a real `resident up` with a real HTTP client.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from resident import Runtime
from resident.api.wire import GRANT_HEADER
from resident.errors import GrantExceeded, InvalidInput, NotVisible, TextInvalid
from resident.messages.memory import Receipt
from resident.messages.memory_calls import MAX_REMEMBER_ITEMS
from resident.operations import memory as memory_ops
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess
from tests.evolution_helpers import SESSION_ACTIONS
from tests.memory_helpers import WORLDS, write_roster


@dataclass(frozen=True)
class Prepared:
    up: UpProcess
    deven: str  # the grant token of a running session of deven, AGENT_CORE only


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prepared]:
    home = tmp_path_factory.mktemp("many") / "home"
    write_roster(home, WORLDS)
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        grant = rt.coordinator.issue_grant(actions=set(SESSION_ACTIONS), scopes={"AGENT_CORE"})
        deven = dispatch_session(host_context(rt),
            "notes", "deven", role="implement", parent_grant=grant, actions={"remember", "recall"},
            scopes={"AGENT_CORE"},
        ).token
    with UpProcess(home) as up:
        yield Prepared(up, deven)


@pytest.fixture
def http(prepared: Prepared) -> Iterator[httpx.Client]:
    with prepared.up.client() as client:
        yield client


def post(client: httpx.Client, body: Any, grant: str | None = None, member: str = "deven") -> httpx.Response:
    headers = {} if grant is None else {GRANT_HEADER: grant}
    return client.post(memory_ops.REMEMBER_MANY.url(member=member), json=body, headers=headers)


def records(client: httpx.Client) -> int:
    return int(client.get("/v1/memory").json()["records"])


def test_runtime_connect_writes_valid_items_and_raises_each_refusal_again_by_its_type(prepared: Prepared) -> None:
    items: list[Any] = [
        {"text": "the deploy needs the migration first"},
        {"text": "   "},
        {"text": "an ops note", "scope": "WORLD_SHARED", "world": "ops"},
        {"text": ["not", "text"]},
        "a bare string",
        {"text": "\x1b]0;title\x07 escapes are stored as text"},
    ]
    with Runtime.connect(prepared.up.home) as rt:
        outcomes = rt.member("deven").remember_many(items)
        assert [type(outcome) for outcome in outcomes] == [
            Receipt, TextInvalid, NotVisible, InvalidInput, InvalidInput, Receipt
        ]
        receipts = [outcome for outcome in outcomes if isinstance(outcome, Receipt)]
        assert rt.member("deven").get(receipts[1].id).body == items[5]["text"]


def test_a_session_s_items_outside_its_grant_are_refused_in_place_and_the_rest_written_as_delegated(
    prepared: Prepared, http: httpx.Client
) -> None:
    body = {"items": [
        {"text": "inside the grant"},
        {"text": "shared", "scope": "WORLD_SHARED", "world": "dev"},
        {"text": "naming a source", "source": "manual"},
    ]}
    answer = post(http, body, prepared.deven)
    assert answer.status_code == 200, answer.text
    outcomes = answer.json()["outcomes"]
    assert [outcome["index"] for outcome in outcomes] == [0, 1, 2]
    assert outcomes[1]["error"]["type"] == GrantExceeded.__name__
    assert outcomes[2]["error"]["type"] == InvalidInput.__name__
    written = http.get(memory_ops.GET.url(member="deven", record_id=outcomes[0]["receipt"]["id"])).json()
    assert written["delegated"] is True
    assert written["source"].startswith("execution:")


def test_a_session_cannot_write_many_as_another_member(prepared: Prepared, http: httpx.Client) -> None:
    before = records(http)
    answer = post(http, {"items": [{"text": "as alice"}]}, prepared.deven, member="alice")
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["type"] == GrantExceeded.__name__
    assert records(http) == before


def test_more_items_than_one_call_takes_are_refused_whole(http: httpx.Client) -> None:
    before = records(http)
    answer = post(http, {"items": [{"text": "n"}] * (MAX_REMEMBER_ITEMS + 1)})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == InvalidInput.__name__
    assert records(http) == before


def test_a_body_that_is_not_a_list_of_items_is_refused_whole(http: httpx.Client) -> None:
    before = records(http)
    for body in ({"items": "text"}, {"items": [{"text": "x"}], "extra": 1}, [{"text": "x"}]):
        answer = post(http, body)
        assert answer.status_code == 400, answer.text
    assert records(http) == before
