"""Empty and over-long ids at every surface: a typed `InvalidInput`, never an LMDB error.

Before, `memory show ""` was an internal error from LMDB (exit 70), and an id LMDB cannot key could
leave the store refusing writes. Each case ends by writing again, which must still work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.errors import InvalidInput
from tests.cli_helpers import expect_error, expect_ok, invoke

BAD_IDS = {"empty": "", "600 characters": "m" * 600}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad-ids") / "home"
    expect_ok(invoke(path, "memory", "enable"))
    return path


def _still_writes(home: Path) -> None:
    expect_ok(invoke(home, "remember", "deven", "the store still takes writes"))


CLI_SURFACES: dict[str, Callable[[str], tuple[str, ...]]] = {
    "memory show": lambda bad: ("memory", "show", bad, "--as", "deven"),
    "memory forget": lambda bad: ("memory", "forget", bad, "--as", "deven"),
    "reconcile": lambda bad: ("reconcile", bad, "--rollback"),
    "correct": lambda bad: ("correct", bad, "--note", "wrong"),
    "remember --supersedes": lambda bad: ("remember", "deven", "new text", "--supersedes", bad),
    "replication status": lambda bad: ("replication", "status", bad),
}


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
@pytest.mark.parametrize("surface", CLI_SURFACES, ids=str)
def test_the_cli_refuses_a_bad_id_with_invalid_input(home, surface, bad):
    message = expect_error(invoke(home, *CLI_SURFACES[surface](bad), "--json"), "InvalidInput")
    assert len(message) < 300, "the echoed id was not cut short"
    _still_writes(home)


@pytest.fixture
def runtime(home: Path) -> Iterator[Runtime]:
    with Runtime.open(home) as rt:
        yield rt


API_SURFACES: dict[str, Callable[[Runtime, str], object]] = {
    "get": lambda rt, bad: rt.member("deven").get(bad),
    "forget": lambda rt, bad: rt.member("deven").forget(bad),
    "member reconcile": lambda rt, bad: rt.member("deven").reconcile(bad, rollback=True),
    "runtime reconcile": lambda rt, bad: rt.reconcile(bad, rollback=True),
    "remember supersedes": lambda rt, bad: rt.member("deven").remember("text", supersedes=bad),
    "remember cites": lambda rt, bad: rt.member("deven").remember("text", kind="observation", cites=(bad,)),
    "correct": lambda rt, bad: rt.coordinator.correct(bad, "wrong"),
    "replication status": lambda rt, bad: rt.replication.status(bad),
}


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
@pytest.mark.parametrize("surface", API_SURFACES, ids=str)
def test_the_python_api_refuses_a_bad_id_with_invalid_input(runtime, surface, bad):
    with pytest.raises(InvalidInput):
        API_SURFACES[surface](runtime, bad)
    assert runtime.member("deven").remember("the store still takes writes").replication == "pending"


def test_the_awaitable_twins_refuse_a_bad_id_too(runtime):
    deven = runtime.member("deven")

    async def each() -> None:
        for call in (deven.aget, deven.aforget):
            with pytest.raises(InvalidInput):
                await call("")
        with pytest.raises(InvalidInput):
            await deven.areconcile("", rollback=True)

    asyncio.run(each())
