"""Grant tokens: a dispatched session can be resumed from its token, and only while it runs."""

from __future__ import annotations

import asyncio

import pytest

from resident import Runtime
from resident.clock import ManualClock
from resident.coordination.tokens import new_token, token_digest
from resident.errors import GrantExceeded, GrantInvalid
from resident.messages.coordination import GrantTokenIssued
from resident.runtime.coordination import dispatch_session, resume_session
from resident.runtime.runtime import host_context
from resident.store.tables import GRANT_TOKENS, TABLES


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def rt(tmp_path, clock):
    with Runtime.open(tmp_path / "home", realm="none", clock=clock) as runtime:
        runtime.memory.enable()
        yield runtime


def dispatch(rt, actions=("remember", "recall"), ttl=600.0):
    grant = rt.coordinator.issue_grant(actions=set(actions), ttl=ttl)
    return dispatch_session(host_context(rt), "write-notes", "deven", role="implement", parent_grant=grant,
                                   actions=set(actions))


def test_a_token_resumes_the_session_of_its_execution_under_the_same_grant(rt):
    session = dispatch(rt, actions=("recall",))
    resumed = resume_session(host_context(rt), session.token)
    assert (resumed.execution.id, resumed.grant.id, resumed.member.name) == (
        session.execution.id, session.grant.id, "deven"
    )
    with pytest.raises(GrantExceeded, match="does not allow"):
        asyncio.run(resumed.remember("not granted"))


def test_the_store_keeps_the_tokens_digest_and_never_the_token(rt, tmp_path):
    session = dispatch(rt)
    with rt._internal.store.reader() as reader:
        stored = reader.get(GRANT_TOKENS, token_digest(session.token))
        assert stored is not None
        assert stored.execution == session.execution.id
        assert [e.token.digest for _, e in reader.events() if isinstance(e, GrantTokenIssued)] == [stored.digest]
        everything = b"".join(key + value for table in TABLES for key, value in reader.raw_items(table))
    assert session.token.encode() not in everything


def test_an_unknown_or_malformed_token_is_refused_without_echoing_it(rt):
    dispatch(rt)
    with pytest.raises(GrantInvalid, match="not known"):
        resume_session(host_context(rt), new_token())
    hostile = "rgt_\x1b]0;pwned\x07" + "x" * 5000
    with pytest.raises(GrantInvalid, match="not a grant token") as raised:
        resume_session(host_context(rt), hostile)
    assert "pwned" not in str(raised.value)


def test_a_token_is_spent_once_its_execution_finishes(rt):
    session = dispatch(rt)
    session.finish("succeeded")
    with pytest.raises(GrantInvalid, match="has ended"):
        resume_session(host_context(rt), session.token)


def test_a_token_stops_working_when_its_grant_expires(rt, clock):
    session = dispatch(rt, ttl=60.0)
    resume_session(host_context(rt), session.token)
    clock.advance(61.0)
    with pytest.raises(GrantInvalid, match="expired"):
        resume_session(host_context(rt), session.token)


def test_a_token_of_another_home_is_not_known_here(tmp_path, rt):
    with Runtime.open(tmp_path / "other", realm="none") as other:
        other.memory.enable()
        foreign = dispatch(other)
    with pytest.raises(GrantInvalid, match="not known"):
        resume_session(host_context(rt), foreign.token)
