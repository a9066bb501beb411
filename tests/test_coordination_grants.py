"""Grants never amplify: a derived grant stays within its parent, and owner actions are never granted."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resident.coordination.grants import GRANTABLE_ACTIONS, OWNER_ONLY_ACTIONS, check, derive, issue_root
from resident.errors import GrantExceeded, OwnerOnlyAction
from resident.messages.memory import SCOPES

NOW = 1_000.0
actions = st.sets(st.sampled_from(sorted(GRANTABLE_ACTIONS | OWNER_ONLY_ACTIONS)), max_size=6)
scopes = st.sets(st.sampled_from(SCOPES), max_size=5)
ttls = st.floats(min_value=-10, max_value=1_000, allow_nan=False)


def root(acts=("remember", "recall"), scps=("AGENT_CORE",), ttl=100.0):
    return issue_root("root", holder="owner", actions=acts, scopes=scps, expires_at=NOW + ttl, now=NOW)


@settings(max_examples=300, deadline=None)
@given(parent_actions=actions, parent_scopes=scopes, chain=st.lists(st.tuples(actions, scopes, ttls), max_size=5))
def test_a_chain_of_derived_grants_never_exceeds_the_root(parent_actions, parent_scopes, chain):
    try:
        grant = issue_root(
            "g0", holder="owner", actions=parent_actions, scopes=parent_scopes, expires_at=NOW + 500, now=NOW
        )
    except OwnerOnlyAction:
        assert parent_actions & OWNER_ONLY_ACTIONS
        return
    original = grant
    for index, (wanted_actions, wanted_scopes, ttl) in enumerate(chain):
        try:
            child = derive(
                grant, f"g{index + 1}", holder="deven", actions=wanted_actions, scopes=wanted_scopes,
                expires_at=NOW + ttl, now=NOW,
            )
        except GrantExceeded:
            widened = (
                not wanted_actions <= set(grant.actions)
                or not wanted_scopes <= set(grant.scopes)
                or NOW + ttl > grant.expires_at
                or NOW + ttl <= NOW
            )
            assert widened, "a narrowing request was refused"
            continue
        assert set(child.actions) <= set(grant.actions) <= set(original.actions)
        assert set(child.scopes) <= set(grant.scopes) <= set(original.scopes)
        assert child.expires_at <= grant.expires_at <= original.expires_at
        assert not set(child.actions) & OWNER_ONLY_ACTIONS
        assert child.parent == grant.id
        grant = child


@pytest.mark.parametrize("action", sorted(OWNER_ONLY_ACTIONS))
def test_owner_only_actions_can_never_be_granted_or_used(action):
    with pytest.raises(OwnerOnlyAction):
        root(acts=("remember", action))
    with pytest.raises(OwnerOnlyAction):
        derive(root(), "c", holder="deven", actions=(action,), scopes=(), expires_at=NOW + 1, now=NOW)
    with pytest.raises(OwnerOnlyAction):
        check(root(), action, None, NOW)


def test_a_child_cannot_outlive_its_parent():
    with pytest.raises(GrantExceeded, match="outlive"):
        derive(root(ttl=10), "c", holder="deven", actions=("recall",), scopes=(), expires_at=NOW + 11, now=NOW)


def test_nothing_derives_from_an_expired_grant():
    with pytest.raises(GrantExceeded, match="expired"):
        derive(root(ttl=10), "c", holder="deven", actions=("recall",), scopes=(), expires_at=NOW + 5, now=NOW + 10)


def test_check_refuses_actions_scopes_and_expiry_outside_the_grant():
    grant = root(acts=("recall",), scps=("AGENT_CORE",), ttl=10)
    check(grant, "recall", "AGENT_CORE", NOW)
    with pytest.raises(GrantExceeded, match="does not allow"):
        check(grant, "remember", "AGENT_CORE", NOW)
    with pytest.raises(GrantExceeded, match="does not cover"):
        check(grant, "recall", "WORLD_SHARED", NOW)
    with pytest.raises(GrantExceeded, match="expired"):
        check(grant, "recall", "AGENT_CORE", NOW + 10)


def test_unknown_actions_are_refused_by_name():
    with pytest.raises(GrantExceeded, match="unknown action 'teleport'"):
        root(acts=("teleport",))


def test_grant_errors_are_permission_errors():
    with pytest.raises(PermissionError):
        check(root(acts=("recall",)), "remember", None, NOW)
