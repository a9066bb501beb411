"""`rt.cognition` without a real Hindsight: the one scale, provenance over memory and knowledge pages, the rules
that apply before anything leaves the runtime, `[cognition]`'s bad input, and the bridge cut off by its deadline
and circuit breaker (on the runtime's clock) against a real loopback server that stalls.

The bridge is tested against a real Hindsight in `tests/test_cognition_hindsight.py`; here a loopback server
speaks the part of Hindsight's HTTP API the bridge uses (`tests.hindsight_proxy`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from resident import Runtime
from resident.api.wire import CognitionBridgeEvent, StreamStartedEvent
from resident.clock import ManualClock
from resident.cognition.breaker import CircuitBreaker
from resident.cognition.fusion import place, scale
from resident.cognition.offer import read_offer
from resident.errors import CognitionDisabled, ConfigError, GrantExceeded, NotVisible, OwnerOnlyAction, TextInvalid
from resident.runtime.coordination.session import dispatch_session
from resident.runtime.runtime import host_context
from tests.api_helpers import UpProcess
from tests.hindsight_proxy import HindsightProxy
from tests.knowledge_helpers import candidate, evidence_chain, write_docs

pytestmark = pytest.mark.timeout(120)


def _home(tmp_path: Path, cognition: str = "", knowledge: bool = False) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    text = ("[knowledge]\nenabled = true\n" if knowledge else "") + cognition
    if text:
        (home / "resident.toml").write_text(text, encoding="utf-8")
    return home


def _bridged(url: str, *, deadline: float = 2.0, failures: int = 3, cooldown: float = 30.0) -> str:
    return (
        f'[cognition]\nprovider = "hindsight"\nurl = "{url}"\ndeadline = {deadline}\nfailures = {failures}\n'
        f'cooldown = {cooldown}\n\n[[cognition.banks]]\nbank = "deven-notes"\nmember = "deven"\n\n'
        '[[cognition.banks]]\nbank = "team-notes"\nworld = "team"\n'
    )


@pytest.fixture
def service() -> Iterator[HindsightProxy]:
    with HindsightProxy() as proxy:
        proxy.memories = {"deven-notes": ["the canary rollout flips the zebra switch"],
                          "team-notes": ["the canary calendar is on the wiki"]}
        yield proxy


# -- the rules --------------------------------------------------------------------------------------


def test_the_common_scale_places_each_source_by_rank_and_ties_go_to_the_runtime_first() -> None:
    assert scale(1) == 1.0
    assert scale(2) < scale(1)
    assert scale(10) == pytest.approx(61 / 70)
    placed = place({"bridge": ["b1", "b2"], "memory": ["m1"], "knowledge_page": ["p1", "p2", "p3"]}, k=5)
    assert [(hit.source, hit.item) for hit in placed] == [
        ("memory", "m1"), ("knowledge_page", "p1"), ("bridge", "b1"), ("knowledge_page", "p2"), ("bridge", "b2"),
    ]
    with pytest.raises(ValueError, match="rank starts at 1"):
        scale(0)


def test_the_breaker_opens_after_failures_in_a_row_and_lets_one_trial_through_after_its_cooldown() -> None:
    breaker = CircuitBreaker(threshold=2, cooldown=10.0)
    breaker.failed(0.0)
    assert breaker.allow(1.0)
    breaker.failed(1.0)
    assert breaker.state(5.0) == "open"
    assert not breaker.allow(5.0)
    assert breaker.allow(11.0)
    assert not breaker.allow(11.0)
    breaker.failed(11.5)
    assert breaker.state(12.0) == "open"
    assert breaker.allow(21.5)
    breaker.succeeded()
    assert breaker.state(21.5) == "closed"


def test_an_unknown_version_is_used_through_recall_only() -> None:
    paths = ["/v1/default/banks/{bank_id}/memories/recall", "/v1/default/banks/{bank_id}/reflect",
             "/v1/default/banks/{bank_id}/memories"]
    known, unknown = read_offer("1.4.2", paths), read_offer("2.0.0", paths)
    assert known.known
    assert known.recall
    assert known.retain
    assert known.optional == ("reflect",)
    assert not unknown.known
    assert unknown.recall
    assert not unknown.retain
    assert unknown.optional == ()
    assert "2.0.0" in unknown.describe()


@pytest.mark.parametrize(("table", "naming"), [
    ('[cognition]\nprovider = "mem0"\n', "provider must be one of"),
    ('[cognition]\nprovider = "hindsight"\nurl = "http://example.com:8888"\n', "url must be an http URL on this"),
    ('[cognition]\nprovider = "hindsight"\nurl = "http://127.0.0.1@evil.example:80"\n', "url must be"),
    ('[cognition]\nprovider = "hindsight"\nurl = "http://127.0.0.1:1"\ndeadline = 0\n', "deadline must be"),
    ('[cognition]\nsupervise = true\n', "needs the command"),
    ('[[cognition.banks]]\nbank = "x"\nmember = "deven"\nworld = "team"\n', "a member or a world, not both"),
    ('[[cognition.banks]]\nbank = "x"\nmember = "Not A Name"\n', "member name"),
    ('[cognition]\nretain = true\n', r"unknown key `retain` in \[cognition\]"),
])
def test_a_bad_cognition_table_is_a_config_error_that_names_it(tmp_path: Path, table: str, naming: str) -> None:
    home = _home(tmp_path, table)
    with pytest.raises(ConfigError, match=naming):
        Runtime.open(home)


def test_a_missing_token_file_is_a_config_error(tmp_path: Path) -> None:
    home = _home(tmp_path, '[cognition]\nprovider = "hindsight"\nurl = "http://127.0.0.1:9"\ntoken_file = "nope"\n')
    with pytest.raises(ConfigError, match=r"token_file .* cannot be read"):
        Runtime.open(home)


# -- no bridge: the default -------------------------------------------------------------------------


def test_with_no_bridge_recall_merges_memory_and_knowledge_pages_each_with_its_own_fields(tmp_path: Path) -> None:
    home = _home(tmp_path, knowledge=True)
    with Runtime.open(home) as rt:
        rt.memory.enable()
        memory = rt.member("deven").remember("the canary rollout needs the migration first")
        rt.knowledge.create_bank("deven-handbook", owner="member:deven")
        docs = write_docs(tmp_path / "docs", {"canary.md": "# Canary\n\nThe canary rollout goes to one host first.\n"})
        rt.knowledge.ingest("deven-handbook", [docs])
        rt.knowledge.create_bank("alice-handbook", owner="member:alice")
        rt.knowledge.ingest("alice-handbook", [write_docs(tmp_path / "alice", {"a.md": "# Canary\n\nalice's\n"})])
        rt.memory.wait_indexed()
        found = rt.cognition.recall("deven", "canary rollout", k=5)
        assert {hit.source for hit in found.hits} == {"memory", "knowledge_page"}
        by_source = {hit.source: hit for hit in found.hits}
        assert by_source["memory"].memory is not None
        assert by_source["memory"].memory.id == memory.id
        page = by_source["knowledge_page"].page
        assert page is not None
        assert page.bank == "deven-handbook"
        assert all(hit.score == 1.0 and hit.rank == 1 for hit in found.hits)
        assert found.bridge.state == "off"
        assert {skip.source for skip in found.skipped} == {"verified_entry", "bridge"}
        only = rt.cognition.recall("deven", "canary rollout", sources=("knowledge_page",))
        assert [hit.source for hit in only.hits] == ["knowledge_page"]
        assert only.skipped == ()
        assert rt.cognition.capabilities().bridge.provider == "none"
        with pytest.raises(CognitionDisabled):
            rt.cognition.call("deven", "reflect", query="why")
        with pytest.raises(TextInvalid):
            rt.cognition.recall("deven", "   ")


def test_a_member_session_recalls_as_its_own_member_only(tmp_path: Path) -> None:
    home = _home(tmp_path)
    with Runtime.open(home, realm="none") as rt:
        rt.memory.enable()
        kept = rt.member("deven").remember("the canary rollout is on tuesday").id
        rt.memory.wait_indexed()
        grant = rt.coordinator.issue_grant(actions={"recall"})
        session = dispatch_session(
            host_context(rt), "look", "deven", role="implement", parent_grant=grant, actions={"recall"}
        )
        as_session = rt.with_grant(session.token)
        assert [hit.memory.id for hit in as_session.cognition.recall("deven", "canary").hits if hit.memory] == [kept]
        with pytest.raises(GrantExceeded):
            as_session.cognition.recall("alice", "canary")


# -- the bridge, against a loopback server that speaks Hindsight's recall -----------------------------


def test_bridged_hits_are_merged_marked_and_no_record_of_the_runtime_is_sent(
    tmp_path: Path, service: HindsightProxy
) -> None:
    home = _home(tmp_path, _bridged(service.url))
    with Runtime.open(home) as rt:
        rt.memory.enable()
        rt.member("deven").remember("the canary rollout needs the migration first")
        private = "the canary vault combination is 4-8-15-16"
        rt.member("deven").remember(private)
        rt.memory.wait_indexed()
        found = rt.cognition.recall("deven", "canary rollout", k=10)
        sources = [hit.source for hit in found.hits]
        assert sources.count("memory") == 2
        assert sources.count("bridge") == 2
        banks = {hit.bridged.bank for hit in found.hits if hit.bridged is not None}
        assert banks == {"deven-notes", "team-notes"}
        assert all(hit.bridged.service == "hindsight" for hit in found.hits if hit.bridged is not None)
        assert found.bridge.state == "ok"
        assert found.bridge.version == "1.1.0"
        # Oliver has no bank of his own, but the team's stands for him.
        oliver = rt.cognition.recall("oliver", "canary", sources=("bridge",))
        assert {hit.bridged.bank for hit in oliver.hits if hit.bridged} == {"team-notes"}
    sent = service.sent()
    # What the bridge sent is queries: no record's text, whatever its state.
    assert private.encode() not in sent
    assert b"migration first" not in sent
    assert b'"query":"canary rollout"' in sent


def test_a_stalled_service_is_cut_off_by_the_deadline_then_the_breaker_and_recall_answers_alone(
    tmp_path: Path, service: HindsightProxy
) -> None:
    clock = ManualClock()
    home = _home(tmp_path, _bridged(service.url, deadline=0.5, failures=2, cooldown=30.0))
    with Runtime.open(home, clock=clock) as rt:
        rt.memory.enable()
        memory = rt.member("deven").remember("the canary rollout needs the migration first")
        rt.memory.wait_indexed()
        service.mode = "stall"
        for expected in (1, 2):
            found = rt.cognition.recall("deven", "canary rollout")
            assert [hit.memory.id for hit in found.hits if hit.memory] == [memory.id]
            assert found.bridge.state == "degraded"
            assert found.bridge.timed_out == expected
            assert [skip.source for skip in found.skipped if "degraded" in skip.reason] == ["bridge"]
        asked = len(service.requests)
        found = rt.cognition.recall("deven", "canary rollout")
        assert found.bridge.breaker == "open"
        assert found.bridge.refused >= 1
        assert len(service.requests) == asked  # the breaker kept the stalled service from being asked
        assert rt.status().cognition.state == "degraded"
        service.mode = "forward"
        clock.advance(30.0)
        healed = rt.cognition.recall("deven", "canary rollout")
        assert healed.bridge.state == "ok"
        assert healed.bridge.breaker == "closed"
        assert any(hit.source == "bridge" for hit in healed.hits)


def test_the_event_stream_says_when_the_bridge_turns_degraded(tmp_path: Path, service: HindsightProxy) -> None:
    home = _home(tmp_path, _bridged(service.url, deadline=0.5))
    with Runtime.open(home) as rt:
        stream = rt.events(from_now=True)
        assert isinstance(next(stream).event, StreamStartedEvent)
        service.mode = "stall"
        rt.cognition.recall("deven", "canary", sources=("bridge",))
        told = next(stream).event
        assert isinstance(told, CognitionBridgeEvent)
        assert told.state == "degraded"
        assert "deadline" in told.reason


def test_verified_entries_join_recall_and_context_only_for_an_authorized_member(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "writer.py").write_text("WRITERS = 1\n", encoding="utf-8")
    with Runtime.open(_home(tmp_path, knowledge=True)) as rt:
        rt.memory.enable()
        rt.knowledge.register_repository("resident", repo, members=["deven", "alice", "oliver"])
        verified = evidence_chain(rt, proposal=candidate("One writer per worktree")).entry
        assert verified is not None
        assert verified.state == "verified"
        note = rt.member("deven").remember("the writer batches its commits").id
        rt.memory.wait_indexed()
        found = rt.cognition.recall("deven", "writer", project="resident", repository="resident")
        entries = [hit.entry.id for hit in found.hits if hit.entry is not None]
        assert entries == [verified.id]
        assert {hit.source for hit in found.hits} == {"memory", "verified_entry"}
        context = rt.cognition.context("deven", "resident", "resident", "the writer")
        assert [entry.id for entry in context.entries] == [verified.id]
        assert [hit.memory.id for hit in context.memories if hit.memory] == [note]
        with pytest.raises(NotVisible):
            rt.cognition.recall("victor", "writer", project="resident", repository="resident")


def test_a_grant_reaches_only_its_scopes_banks_and_engagement_narrows_banks_as_it_narrows_records(
    tmp_path: Path, service: HindsightProxy
) -> None:
    work_only = _bridged(service.url).replace('world = "team"\n', 'world = "team"\ndomain = "work"\n')
    with Runtime.open(_home(tmp_path, work_only)) as rt:
        rt.memory.enable()
        grant = rt.coordinator.issue_grant(actions={"recall"})
        session = dispatch_session(
            host_context(rt), "look", "deven", role="implement", parent_grant=grant, actions={"recall"},
            scopes=["WORLD_SHARED"],
        )
        as_session = rt.with_grant(session.token)
        rt.engagement.engage("deven", domain="work")
        banks = {hit.bridged.bank for hit in as_session.cognition.recall("deven", "canary").hits if hit.bridged}
        assert banks == {"team-notes"}  # deven's own bank is AGENT_CORE: outside this grant
        rt.engagement.engage("deven", domain="personal")
        asked = len(service.requests)
        narrowed = rt.cognition.recall("deven", "canary", sources=("memory", "bridge"))
        assert {hit.bridged.bank for hit in narrowed.hits if hit.bridged} == {"deven-notes"}
        assert not any(b"team-notes" in path.encode() for _, path, _ in service.requests[asked:])
        denied = as_session.cognition.recall("deven", "canary", sources=("bridge",))
        assert denied.hits == ()
        assert "narrows recall to none" in denied.skipped[0].reason
        assert not any(b"team-notes" in path.encode() for _, path, _ in service.requests[asked:])


@pytest.mark.parametrize("mode", ["error", "redirect"])
def test_a_failing_or_redirecting_service_degrades_the_bridge_and_is_never_followed(
    tmp_path: Path, service: HindsightProxy, mode: str
) -> None:
    with Runtime.open(_home(tmp_path, _bridged(service.url))) as rt:
        rt.memory.enable()
        service.mode = mode  # type: ignore[assignment]  # one of the proxy's modes
        asked = len(service.requests)
        found = rt.cognition.recall("deven", "canary", sources=("memory", "bridge"))
        assert found.bridge.state == "degraded"
        assert found.bridge.failed == 1
        assert [hit for hit in found.hits if hit.source == "bridge"] == []
        assert len(service.requests) == asked + 1  # one request, no second one to wherever it pointed


def test_a_member_session_may_not_write_to_the_service(tmp_path: Path, service: HindsightProxy) -> None:
    retaining = _bridged(service.url).replace('member = "deven"\n', 'member = "deven"\nretain = true\n')
    with Runtime.open(_home(tmp_path, retaining)) as rt:
        rt.memory.enable()
        mine = rt.member("deven").remember("the canary rollout needs the migration first").id
        grant = rt.coordinator.issue_grant(actions={"recall", "remember"})
        session = dispatch_session(host_context(rt), "look", "deven", role="implement", parent_grant=grant,
                                          actions={"recall", "remember"})
        with pytest.raises(OwnerOnlyAction):
            rt.with_grant(session.token).cognition.retain("deven", [mine])
        assert not any(path.endswith("/memories") for _, path, _ in service.requests)


@pytest.mark.slow
def test_runtime_connect_answers_the_same_merged_hits_over_the_loopback_api(
    tmp_path: Path, service: HindsightProxy
) -> None:
    home = _home(tmp_path, _bridged(service.url))
    with Runtime.open(home) as rt:
        rt.memory.enable()
        rt.member("deven").remember("the canary rollout needs the migration first")
        rt.memory.wait_indexed()
        here = rt.cognition.recall("deven", "canary rollout")
    with UpProcess(home), Runtime.connect(home) as remote:
        there = remote.cognition.recall("deven", "canary rollout")
        assert [(hit.source, hit.score, hit.rank) for hit in there.hits] == [
            (hit.source, hit.score, hit.rank) for hit in here.hits
        ]
        assert {hit.bridged.bank for hit in there.hits if hit.bridged} == {"deven-notes", "team-notes"}
        assert remote.cognition.capabilities().bridge.state == "ok"
        assert remote.status().cognition.provider == "hindsight"
