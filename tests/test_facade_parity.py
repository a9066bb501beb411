"""`Runtime.connect(home)` is the same API as `Runtime.open(home)`: the same surfaces, the same method names,
the same signatures. Walked on a real open runtime and a real connection to a `resident up` of another home.

The operations redesign moves the facade onto declared operations one capability at a time: what is
not yet derived on both sides is named in `NOT_YET_ON_CONNECT`, and that list only shrinks (a name
missing on one side that is not listed fails, and so does a listed name that both sides now have).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from resident import Runtime
from resident.errors import GrantExceeded, GrantInvalid, InvalidInput, OwnerOnlyAction
from resident.operations.facade import Surface
from resident.runtime.coordination import dispatch_session
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess
from tests.session_helpers import fake

pytestmark = pytest.mark.timeout(120)

# Public names of `Runtime.open`'s facade (a surface's method as `surface.method`) that `Runtime.connect` does not
# offer yet (see the module docstring).
NOT_YET_ON_CONNECT: set[str] = set()
# Public names of `Runtime.connect`'s facade that `Runtime.open` does not have: `address` is where a connection
# reaches the runtime, which an in-process runtime has no need of.
NOT_YET_ON_OPEN = {"address"}
# In process, `close(timeout)` waits that long for the actors to stop; a connection has nothing to wait for.
OWN_SIGNATURE = {"close"}
# How each side is made: `Runtime.open` and `Runtime.connect` are class methods of `resident.Runtime`.
CONSTRUCTORS = {"open", "connect"}
# The surfaces of the facade, each walked one level down.
SURFACES = ("memory", "replication", "coordinator", "apps", "knowledge", "skills", "sessions", "engagement",
            "evolution", "principles")


def _public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_") and name not in CONSTRUCTORS}


def _names(runtime: object) -> set[str]:
    names = _public(runtime)
    for surface in SURFACES:
        if surface in names:
            names |= {f"{surface}.{name}" for name in _public(getattr(runtime, surface))}
    return names


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpProcess]:
    home = tmp_path_factory.mktemp("parity") / "served"
    with Runtime.open(home, realm="none") as rt:
        grant = rt.coordinator.issue_grant(actions={"recall", "propose_principle"}, scopes={"AGENT_CORE"})
        work = dispatch_session(host_context(rt), "work", "deven", role="implement", parent_grant=grant,
                                       actions={"recall", "propose_principle"}, scopes={"AGENT_CORE"})
    (home.parent / "deven.grant").write_text(work.token)
    with UpProcess(home) as up:
        yield up


def test_a_facade_with_a_grant_acts_as_that_session_in_process_and_over_the_api(
    served: UpProcess, tmp_path: Path
) -> None:
    token = (served.home.parent / "deven.grant").read_text()
    with Runtime.connect(served.home) as remote:
        as_deven = remote.with_grant(token)
        proposed = as_deven.principles.propose(None, "pair on deploys", basis="two failed deploys")
        assert (proposed.member, proposed.proposed_by) == ("deven", "deven")
        with pytest.raises(OwnerOnlyAction):
            as_deven.principles.approve(proposed.id)
        with pytest.raises(InvalidInput, match="for itself only"):
            as_deven.principles.propose("alice", "pair on deploys", basis="for alice")
        with pytest.raises(GrantInvalid):
            remote.with_grant("rgt_" + "x" * 43).principles.list()
    with Runtime.open(tmp_path / "local", realm="none") as local:
        grant = local.coordinator.issue_grant(actions={"recall"}, scopes={"AGENT_CORE"})
        work = dispatch_session(host_context(local), "work", "deven", role="implement", parent_grant=grant,
                                          actions={"recall"}, scopes={"AGENT_CORE"})
        with pytest.raises(GrantExceeded, match="propose_principle"):
            local.with_grant(work.token).principles.propose(None, "pair on deploys", basis="the grant lacks it")


def test_connect_and_open_offer_the_same_surfaces_names_and_signatures(served: UpProcess, tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "local", realm="none") as local, Runtime.connect(served.home) as remote:
        opened, connected = _names(local), _names(remote)
        only_open = [name for name in sorted(opened - connected) if not _listed(name, NOT_YET_ON_CONNECT)]
        only_connect = [name for name in sorted(connected - opened) if not _listed(name, NOT_YET_ON_OPEN)]
        assert only_open == [], "only Runtime.open has these"
        assert only_connect == [], "only Runtime.connect has these"
        assert sorted(NOT_YET_ON_CONNECT & connected) == [], "now on both sides: take them off the list"
        assert sorted(NOT_YET_ON_OPEN & opened) == [], "now on both sides: take them off the list"
        for name in sorted(_public(local) & _public(remote) - OWN_SIGNATURE):
            mine, theirs = getattr(local, name), getattr(remote, name)
            if callable(mine) and not isinstance(mine, Surface):
                assert _signature(mine) == _signature(theirs), name
        for surface in SURFACES:
            mine, theirs = getattr(local, surface, None), getattr(remote, surface, None)
            if isinstance(mine, Surface) or isinstance(theirs, Surface):
                # The same surface; in process it may add only what NOT_YET_ON_CONNECT names.
                assert isinstance(mine, type(theirs)), f"{surface} is a different surface on each side"
                for name in _public(theirs):
                    assert _signature(getattr(mine, name)) == _signature(getattr(theirs, name)), f"{surface}.{name}"


def _listed(name: str, listed: set[str]) -> bool:
    return name in listed or name.split(".", 1)[0] in listed


def _signature(value: Any) -> str:
    return str(inspect.signature(value))


def test_a_derived_surface_shows_its_request_s_signature(tmp_path: Path) -> None:
    with Runtime.open(tmp_path / "home", realm="none") as rt:
        signature = inspect.signature(rt.apps.remember)
    assert list(signature.parameters)[:3] == ["app_or_workspace", "bank", "text"]
    assert signature.parameters["kind"].kind is inspect.Parameter.KEYWORD_ONLY
    assert signature.parameters["kind"].default == "world"


def test_a_connected_host_starts_a_session_runs_its_harness_itself_and_ends_it(
    served: UpProcess, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    with Runtime.connect(served.home) as remote:
        with pytest.raises(InvalidInput, match="process"):
            remote.sessions.start("deven", harness="command", command=fake(), directory=str(repo))
        with pytest.raises(InvalidInput, match="absolute"):
            remote.sessions.start("deven", harness="command", command=fake(), directory="repo", process=os.getpid())
        launch = remote.sessions.start("deven", harness="command", command=fake("--say", "done"),
                                       directory=str(repo), process=os.getpid())
        assert (repo / "AGENTS.md").exists(), "the runtime projected the member into the directory"
        session = remote.sessions.run(launch, log=tmp_path / "harness.log")
        assert session is not None
        assert (session.member, session.outcome) == ("deven", "succeeded")
        assert not (repo / "AGENTS.md").exists(), "and restored it when the session ended"
        assert [found.id for found in remote.sessions.list(member="deven")] == [session.id]
        assert remote.sessions.show(session.id).session.id == session.id
