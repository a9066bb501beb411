"""Realm on PostgreSQL: its rules under two real Realm processes on one database, crashes, schema and copy.

The rules themselves are tested on both backends by the parametrized Realm tests; these are what only a
shared database has: two processes racing for one id, an invalidation racing a push of its content,
idempotent pushes racing, the poll cursor while invalidations land from both, a `kill -9` mid-request,
the schema check, and the copy of an LMDB Realm.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest

from resident.errors import RealmIdTaken, RealmUnavailable, SchemaMismatch
from resident.realm.client import RealmClient
from resident.realm.process import RealmProcess, start_realm
from resident.realm.state import RealmState
from resident.realm.tokens import ADMIN_TOKEN_FILE, read_token_file
from tests.cli_helpers import expect_error, expect_json, invoke
from tests.postgres_support import BACKENDS, PostgresServer, database_for, migrated_database
from tests.replication_support import realm_record

pytestmark = pytest.mark.timeout(120)
T = TypeVar("T")




@pytest.fixture
def two_realms(postgres: PostgresServer, tmp_path: Path) -> Iterator[tuple[RealmProcess, RealmProcess]]:
    """Two Realm processes serving one migrated database."""
    url = migrated_database(postgres, tmp_path / "one")
    # Each governance side holds the admin token; the database keeps only its digest.
    (tmp_path / "two").mkdir(mode=0o700)
    shutil.copy2(tmp_path / "one" / ADMIN_TOKEN_FILE, tmp_path / "two" / ADMIN_TOKEN_FILE)
    with start_realm(tmp_path / "one", database=url) as one, start_realm(tmp_path / "two", database=url) as two:
        yield one, two


def together(first: Callable[[], T], second: Callable[[], T]) -> tuple[T | BaseException, T | BaseException]:
    """Run both at once (released by one barrier); each result, or the exception it raised."""
    barrier = threading.Barrier(2)

    def released(call: Callable[[], T]) -> T | BaseException:
        barrier.wait(timeout=10)
        try:
            return call()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(released, first), pool.submit(released, second)
        return a.result(timeout=60), b.result(timeout=60)


def test_two_processes_racing_for_one_id_let_exactly_one_home_win(
    two_realms: tuple[RealmProcess, RealmProcess],
) -> None:
    one, two = two_realms
    laptop_token, desktop_token = one.enroll("laptop"), one.enroll("desktop")
    with RealmClient(one.url, token=laptop_token) as laptop, RealmClient(two.url, token=desktop_token) as desktop:
        for round_ in range(40):
            record_id = f"race-{round_}"
            mine, theirs = realm_record(record_id, "the laptop's"), realm_record(record_id, "the desktop's")
            results = together(partial(laptop.replicate, [mine]), partial(desktop.replicate, [theirs]))
            won = [r for r in results if isinstance(r, list)]
            lost = [r for r in results if isinstance(r, RealmIdTaken)]
            assert (len(won), len(lost)) == (1, 1), results
            assert won[0][0].status == "accepted"
            assert lost[0].ids == (record_id,)
        with RealmClient(two.url, token=two.admin_token()) as admin:
            assert admin.health().records == 40


def test_an_invalidation_racing_a_push_of_its_content_never_leaves_that_content_accepted(
    two_realms: tuple[RealmProcess, RealmProcess],
) -> None:
    one, two = two_realms
    first, second = one.enroll("first"), one.enroll("second")
    with (
        RealmClient(one.url, token=first) as pusher, RealmClient(two.url, token=second) as copier,
        RealmClient(one.url, token=one.admin_token()) as admin,
    ):
        outcomes = set()
        for round_ in range(30):
            body = f"the deploy key for service {round_} is kept in the vault"
            assert pusher.replicate([realm_record(f"orig-{round_}", body)])[0].status == "accepted"
            # The same content, spaced and cased differently, under another id from another home.
            copy = realm_record(f"copy-{round_}", body.upper().replace(" ", "  "))
            gone, verdicts = together(
                partial(admin.invalidate, f"orig-{round_}", "leaked"), partial(copier.replicate, [copy])
            )
            assert not isinstance(gone, BaseException), gone
            assert isinstance(verdicts, list), verdicts
            (pushed,) = verdicts
            listed = {item.id: item for item in admin.records("", 1000).items}
            if pushed.status == "accepted":
                # Pushed first: the invalidation found it by its content and withdrew it too.
                assert listed[copy.id].invalidated
                outcomes.add("accepted, then invalidated")
            else:
                assert (pushed.status, pushed.rule) == ("conflict", "invalidated_content")
                assert copy.id not in listed
                outcomes.add("refused")
        feed = copier.invalidations(0, 1000)
        assert {item.id for item in feed.items} <= {f"copy-{n}" for n in range(30)}
    assert outcomes  # which orders occurred is up to the scheduler; every one was checked above


def test_the_same_push_racing_through_both_processes_gets_one_verdict(
    two_realms: tuple[RealmProcess, RealmProcess],
) -> None:
    one, two = two_realms
    token = one.enroll("laptop")
    with RealmClient(one.url, token=token) as a, RealmClient(two.url, token=token) as b:
        for round_ in range(30):
            batch = [realm_record(f"same-{round_}-{n}") for n in range(5)]
            left, right = together(partial(a.replicate, batch), partial(b.replicate, batch))
            assert not isinstance(left, BaseException), left
            assert left == right
            assert {r.status for r in left} == {"accepted"}
        with RealmClient(one.url, token=one.admin_token()) as admin:
            assert admin.health().records == 150


def test_the_poll_cursor_misses_nothing_while_both_processes_invalidate(
    two_realms: tuple[RealmProcess, RealmProcess],
) -> None:
    one, two = two_realms
    token = one.enroll("laptop")
    ids = [f"feed-{n}" for n in range(60)]
    with RealmClient(one.url, token=token) as home:
        assert {r.status for r in home.replicate([realm_record(i) for i in ids])} == {"accepted"}
    seen: list[int] = []
    done = threading.Event()

    def poll() -> None:
        cursor = 0
        with RealmClient(two.url, token=token) as poller:
            while True:
                finished = done.is_set()
                page = poller.invalidations(cursor, 7)
                seen.extend(item.seq for item in page.items)
                cursor = page.cursor
                if finished and not page.items:
                    return

    def invalidate(realm: RealmProcess, chosen: list[str]) -> None:
        with RealmClient(realm.url, token=realm.admin_token()) as admin:
            for record_id in chosen:
                admin.invalidate(record_id, "withdrawn")

    with ThreadPoolExecutor(3) as pool:
        poller = pool.submit(poll)
        writers = [pool.submit(invalidate, one, ids[0::2]), pool.submit(invalidate, two, ids[1::2])]
        for writer in writers:
            writer.result(timeout=60)
        done.set()
        poller.result(timeout=60)
    assert seen == list(range(1, 61))


def test_a_realm_process_killed_mid_request_loses_nothing_it_acknowledged(
    two_realms: tuple[RealmProcess, RealmProcess],
) -> None:
    one, two = two_realms
    token = one.enroll("laptop")
    acknowledged: list[str] = []
    enough = threading.Event()

    def push() -> None:
        with RealmClient(one.url, token=token, timeout=5.0) as home:
            for batch in range(10_000):
                ids = [f"k{batch}-{n}" for n in range(20)]
                try:
                    results = home.replicate([realm_record(i) for i in ids])
                except RealmUnavailable:
                    return  # the process is gone: what was not answered was not acknowledged
                acknowledged.extend(r.id for r in results if r.status == "accepted")
                if batch == 20:
                    enough.set()

    with ThreadPoolExecutor(1) as pool:
        pusher = pool.submit(push)
        assert enough.wait(timeout=60)
        one.kill()  # SIGKILL while the pusher keeps sending: a request is in flight or about to be
        pusher.result(timeout=60)
    assert len(acknowledged) >= 20 * 21
    with RealmClient(two.url, token=two.admin_token()) as admin:
        stored: set[str] = set()
        after = ""
        while True:
            page = admin.records(after, 1000)
            stored.update(item.id for item in page.items)
            if page.next is None:
                break
            after = page.next
    assert set(acknowledged) <= stored


@pytest.mark.parametrize("backend", BACKENDS)
def test_invalidating_a_record_withdraws_the_same_content_accepted_under_other_ids(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    database = database_for(request, backend, tmp_path / "realm")
    opened = RealmState.open(tmp_path / "realm") if database is None else RealmState.connect(database)
    with opened as state:
        state.replicate("laptop", [realm_record("a", "Rotate the key every 90 days")])
        state.replicate("desktop", [realm_record("b", "rotate  the KEY every 90 days")])
        state.replicate("desktop", [realm_record("c", "something else entirely")])
        first = state.invalidate("a", "policy changed")
        assert (first.id, first.seq) == ("a", 1)
        desktop_feed = state.invalidations(0, 100, home="desktop")
        assert [item.id for item in desktop_feed.items] == ["b"]
        assert "policy changed" in desktop_feed.items[0].reason
        assert "record a" in desktop_feed.items[0].reason
        listed = {item.id: item.invalidated for item in state.records("", 100).items}
        assert listed == {"a": True, "b": True, "c": False}
        # Invalidating again returns the first entry and cascades nothing new.
        assert state.invalidate("a", "again") == first
        assert state.health().invalidations == 2
        (again,) = state.replicate("desktop", [realm_record("b", "rotate  the KEY every 90 days")])
        assert (again.status, again.rule) == ("conflict", "invalidated")


# -- schema, URLs and unreachable databases ------------------------------------------------------


def test_serve_refuses_a_database_never_migrated_and_one_migrated_further(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    bare = postgres.fresh_database()
    with pytest.raises(SchemaMismatch, match="run `resident realm migrate"):
        RealmState.connect(bare)
    newer = migrated_database(postgres, tmp_path)
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("UPDATE realm_schema SET version = 99")
    with pytest.raises(SchemaMismatch, match="newer than this Realm's"):
        RealmState.connect(newer)
    outcome = invoke(tmp_path, "realm", "serve", "--database", newer, "--port", "0")
    message = expect_error(outcome, "SchemaMismatch", code=outcome.code)
    assert outcome.code != 0
    assert "schema 99" in message


def test_migrate_is_idempotent_and_says_where_the_admin_token_is(postgres: PostgresServer, tmp_path: Path) -> None:
    url = postgres.fresh_database()

    def migrate(token_dir: str) -> dict[str, object]:
        migrated: dict[str, object] = expect_json(
            invoke(tmp_path, "realm", "migrate", "--database", url, "--token-dir", str(tmp_path / token_dir), "--json")
        )
        return migrated

    first = migrate("t")
    assert (first["before"], first["after"], first["token_matches"]) == (0, 1, True)
    again = migrate("t")
    assert (again["before"], again["after"], again["token_matches"]) == (1, 1, True)
    other = migrate("u")
    assert other["token_matches"] is False
    assert "password" not in str(first["database"])


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("mysql://root@localhost/realm", "InvalidInput"),
        ("postgresql://[::1/realm", "InvalidInput"),
        ("postgresql://nobody@127.0.0.1:1/realm", "RealmUnavailable"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "migrate", "enroll"])
def test_bad_or_unreachable_database_urls_get_one_typed_line(tmp_path: Path, url: str, kind: str, command: str) -> None:
    args = {"serve": ["serve", "--port", "0"], "migrate": ["migrate"], "enroll": ["enroll", "laptop"]}[command]
    outcome = invoke(tmp_path, "realm", *args, "--database", url)
    assert outcome.code != 0
    message = expect_error(outcome, kind, code=outcome.code)
    assert "Traceback" not in message
    assert not (tmp_path / "realm").exists() or command == "migrate"


# -- copy ---------------------------------------------------------------------------------------


def test_copy_moves_an_lmdb_realm_into_postgresql_with_every_answer_the_same(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    source = tmp_path / "lmdb"
    with RealmState.open(source) as lmdb_realm:
        token = lmdb_realm.enroll("laptop")
        lmdb_realm.enroll("desktop")
        lmdb_realm.replicate("laptop", [realm_record(f"r{n}") for n in range(50)])
        lmdb_realm.replicate("laptop", [realm_record("r1", "changed under an accepted id")])
        lmdb_realm.replicate("desktop", [realm_record("dup", "note r3")])
        lmdb_realm.invalidate("r3", "retracted")
        lmdb_realm.invalidate("r7", "retracted too")
        before = (
            lmdb_realm.records("", 1000), lmdb_realm.invalidations(0, 1000), lmdb_realm.health(),
            lmdb_realm.home_token_digest("laptop"),
        )
    (source / ADMIN_TOKEN_FILE).write_text(read_token_file(_admin_file(source)) + "\n")
    url = postgres.fresh_database()
    expect_json(invoke(tmp_path, "realm", "migrate", "--database", url, "--token-dir", str(tmp_path / "pg"), "--json"))
    with psycopg.connect(url, autocommit=True) as conn:
        # Copying keeps the LMDB Realm's admin token: the migrated database has not been given one yet.
        conn.execute("DELETE FROM realm_meta")
    report = expect_json(invoke(tmp_path, "realm", "copy", "--from", str(source), "--to", url, "--json"))
    assert {item["table"]: item["rows"] for item in report} == {
        "owners": 51, "verdicts": 52, "records": 51, "invalidations": 3, "homes": 2,
    }
    assert all(item["matches"] for item in report)
    with RealmState.connect(url) as pg_realm:
        after = (
            pg_realm.records("", 1000), pg_realm.invalidations(0, 1000), pg_realm.health(),
            pg_realm.home_token_digest("laptop"),
        )
        assert after == before
        # The rules go on where LMDB left them: an idempotent push, a conflict, refused content.
        (same,) = pg_realm.replicate("laptop", [realm_record("r2")])
        assert same.status == "accepted"
        (changed,) = pg_realm.replicate("laptop", [realm_record("r1", "changed under an accepted id")])
        assert changed.rule == "different_content"
        (refused,) = pg_realm.replicate("desktop", [realm_record("r3-again", "note r3")])
        assert refused.rule == "invalidated_content"
        assert pg_realm.invalidate("r9", "later").seq == 4
    with start_realm(tmp_path / "served", database=url) as served:
        with RealmClient(served.url, token=read_token_file(source / ADMIN_TOKEN_FILE)) as admin:
            assert admin.health().records == 51
        with RealmClient(served.url, token=token) as laptop:
            assert laptop.replicate([realm_record("r50")])[0].status == "accepted"
    # A second copy into the same database is refused whole.
    outcome = invoke(tmp_path, "realm", "copy", "--from", str(source), "--to", url)
    assert "already holds Realm data" in expect_error(outcome, "InvalidInput", code=outcome.code)


def _admin_file(data: Path) -> Path:
    from resident.realm.tokens import ensure_admin_token  # noqa: PLC0415 - beside its one use

    ensure_admin_token(data)
    return data / ADMIN_TOKEN_FILE
