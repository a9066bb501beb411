"""The bridge against a real Hindsight server (`hindsight-api-slim` on PostgreSQL with pgvector, its LLM provider off,
embeddings from a loopback embedder in this process): recall merging and provenance, nothing absorbed (store bytes,
export, backup, Realm), capabilities and the optional operations it answers under its own authority, a version
the bridge does not know, and a supervised server killed and restarted.

Skipped, saying why, where the server is not installed (`.ci/run` installs it outside the repository).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from resident import Runtime
from resident.errors import CognitionUnavailable, InvalidInput, RecordWithheld
from tests.fake_llama import FakeLlama
from tests.hindsight_proxy import HindsightProxy
from tests.hindsight_stack import Hindsight, missing, start_hindsight, wait_healthy
from tests.realm_process import start_realm
from tests.replication_support import accepted_by_realm, delegated_promotion, use_home_token, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]

SECRET = "zebra"  # a word only the bridged service's memories hold


@pytest.fixture(scope="module")
def embedder() -> Iterator[FakeLlama]:
    with FakeLlama(dim=64) as fake:
        yield fake


@pytest.fixture(scope="module")
def hindsight(tmp_path_factory: pytest.TempPathFactory, embedder: FakeLlama) -> Iterator[Hindsight]:
    service = start_hindsight(tmp_path_factory.mktemp("hindsight"), embedder.url, embedder.dim)
    try:
        service.retain("deven-notes", f"the canary rollout flips the {SECRET} switch")
        service.retain("team-notes", f"the canary calendar lives beside the {SECRET} board")
        yield service
    finally:
        service.stop()


def _home(tmp_path: Path, url: str, *, extra: str = "", token: str = "") -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "hindsight.token").write_text(token, encoding="utf-8")
    (home / "resident.toml").write_text(
        f'[cognition]\nprovider = "hindsight"\nurl = "{url}"\ntoken_file = "hindsight.token"\n'
        f"deadline = 10.0\n{extra}\n"
        '[[cognition.banks]]\nbank = "deven-notes"\nmember = "deven"\n\n'
        '[[cognition.banks]]\nbank = "team-notes"\nworld = "team"\n',
        encoding="utf-8",
    )
    return home


def _every_byte(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def test_recall_merges_the_runtime_and_the_bridged_service_each_hit_marked_with_its_source(
    tmp_path: Path, hindsight: Hindsight
) -> None:
    with Runtime.open(_home(tmp_path, hindsight.url, token=hindsight.token)) as rt:
        rt.memory.enable()
        mine = rt.member("deven").remember("the canary rollout needs the migration first")
        rt.memory.wait_indexed()
        found = rt.cognition.recall("deven", "canary rollout", k=10)
        assert found.bridge.state == "ok"
        memory = [hit for hit in found.hits if hit.source == "memory"]
        bridged = [hit for hit in found.hits if hit.source == "bridge"]
        assert [hit.memory.id for hit in memory if hit.memory] == [mine.id]
        assert {hit.bridged.bank for hit in bridged if hit.bridged} == {"deven-notes", "team-notes"}
        for hit in bridged:
            assert hit.bridged is not None
            assert hit.memory is None
            assert hit.page is None
            assert hit.entry is None
            assert hit.bridged.service == "hindsight"
            assert SECRET in hit.bridged.text
            assert "final" in hit.bridged.scores  # Hindsight's own score, on its own scale, kept as it gave it
        assert memory[0].score == 1.0
        assert max(hit.score for hit in bridged) == 1.0
        # Alice's world is the team's: she reaches its bank, not deven's.
        alice = rt.cognition.recall("alice", "canary", sources=("bridge",))
        assert {hit.bridged.bank for hit in alice.hits if hit.bridged} == {"team-notes"}


def test_nothing_of_the_bridged_service_is_absorbed_by_store_export_backup_or_realm(
    tmp_path: Path, hindsight: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    realm = start_realm(tmp_path / "realm")
    try:
        use_home_token(monkeypatch, realm)
        home = _home(tmp_path, hindsight.url, token=hindsight.token)
        with Runtime.open(home, realm=realm.url) as rt:
            rt.memory.enable()
            receipt = rt.member("deven").remember("the canary rollout needs the migration first")
            rt.memory.wait_indexed()
            for _ in range(3):
                found = rt.cognition.recall("deven", f"canary rollout {SECRET}")
                assert any(SECRET in hit.bridged.text for hit in found.hits if hit.bridged)
            rt.cognition.context("deven", "resident", "resident", f"the {SECRET} switch")
            wait_until(lambda: receipt.id in accepted_by_realm(realm.data_dir), 30, "realm accepting the memory")
            rt.export_member("deven", tmp_path / "deven.json")
            rt.backup(tmp_path / "backup")
        assert SECRET.encode() not in _every_byte(home)
        assert SECRET.encode() not in (tmp_path / "deven.json").read_bytes()
        assert SECRET.encode() not in _every_byte(tmp_path / "backup")
    finally:
        realm.stop()
    assert SECRET.encode() not in _every_byte(tmp_path / "realm")


def test_capabilities_list_what_the_service_offers_and_its_operations_go_away_with_it(
    tmp_path: Path, hindsight: Hindsight
) -> None:
    proxy = HindsightProxy(upstream=hindsight.url).start()
    try:
        with Runtime.open(_home(tmp_path, proxy.url, token=hindsight.token)) as rt:
            offered = rt.cognition.capabilities()
            version = httpx.get(f"{hindsight.url}/version", headers={"Authorization": f"Bearer {hindsight.token}"})
            assert offered.bridge.version == version.json()["api_version"]
            assert offered.bridge.version_known
            assert set(offered.optional) == {"reflect", "mental_models"}
            assert "/v1/default/banks/{bank_id}/memories/recall" in offered.endpoints
            answer = rt.cognition.call("deven", "mental_models")
            assert answer.authority == "hindsight"
            assert answer.bank == "deven-notes"
            assert answer.answer["items"] == []
            proxy.stop()
            gone = rt.cognition.capabilities()
            assert gone.optional == ()
            assert gone.bridge.state == "degraded"
            with pytest.raises(CognitionUnavailable):
                rt.cognition.call("deven", "mental_models")
            # The runtime goes on without it.
            assert rt.cognition.recall("deven", "canary", sources=("memory", "bridge")).bridge.state == "degraded"
    finally:
        proxy.stop()


def test_a_version_the_bridge_does_not_know_is_used_through_recall_only_and_status_says_so(
    tmp_path: Path, hindsight: Hindsight
) -> None:
    proxy = HindsightProxy(upstream=hindsight.url)
    proxy.version = "9.0.0"
    with proxy, Runtime.open(_home(tmp_path, proxy.url, token=hindsight.token)) as rt:
        offered = rt.cognition.capabilities()
        assert not offered.bridge.version_known
        assert offered.bridge.version == "9.0.0"
        assert offered.optional == ()
        assert "9.0.0" in rt.status().cognition.reason
        assert "recall only" in rt.status().cognition.reason
        found = rt.cognition.recall("deven", "canary rollout", sources=("bridge",))
        assert any(SECRET in hit.bridged.text for hit in found.hits if hit.bridged)
        with pytest.raises(CognitionUnavailable, match="does not offer 'reflect'"):
            rt.cognition.call("deven", "reflect", query="why")


def test_a_wrong_token_is_refused_by_the_service_and_recall_answers_alone(tmp_path: Path, hindsight: Hindsight) -> None:
    with Runtime.open(_home(tmp_path, hindsight.url, token="not-the-token")) as rt:
        rt.memory.enable()
        rt.member("deven").remember("the canary rollout needs the migration first")
        rt.memory.wait_indexed()
        found = rt.cognition.recall("deven", "canary rollout")
        assert [hit.source for hit in found.hits] == ["memory"]
        assert found.bridge.state == "degraded"
        assert "401" in found.bridge.reason


def test_a_supervised_hindsight_killed_is_restarted(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path, embedder: FakeLlama
) -> None:
    service = start_hindsight(tmp_path_factory.mktemp("supervised"), embedder.url, embedder.dim, run=False)
    try:
        environment = "".join(f'{name} = "{value}"\n' for name, value in service.environment.items())
        command = ", ".join(f'"{part}"' for part in service.command)
        home = _home(tmp_path, service.url, token=service.token,
                     extra=f"supervise = true\ncommand = [{command}]\n\n[cognition.environment]\n{environment}")
        with Runtime.open(home) as rt:
            wait_healthy(service.url, service.token)
            first = wait_until(lambda: rt.cognition.capabilities().bridge.state == "ok" and _pid(home), 120,
                               "the supervised service answering")
            os.killpg(first, signal.SIGKILL)  # the service and its guard, as kill -9 of the whole child
            second = wait_until(lambda: (pid := _pid(home)) and pid != first and pid, 120, "a restarted service")
            wait_healthy(service.url, service.token)
            assert wait_until(lambda: rt.cognition.capabilities().bridge.state == "ok", 120, "the bridge answering")
            assert second != first
            assert (home / "cognition.log").stat().st_size > 0
        with pytest.raises(httpx.HTTPError):  # stopped with the runtime
            httpx.get(f"{service.url}/health", timeout=2)
    finally:
        service.stop()


def _pid(home: Path) -> int:
    """The supervised service's pid, as the runtime's child record has it (0 while none runs)."""
    path = home / "cognition.pid"
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def test_retain_writes_served_memories_through_the_services_own_api_and_never_a_withheld_one(
    tmp_path: Path, hindsight: Hindsight, monkeypatch: pytest.MonkeyPatch
) -> None:
    realm = start_realm(tmp_path / "realm")
    proxy = HindsightProxy(upstream=hindsight.url).start()
    try:
        use_home_token(monkeypatch, realm)
        home = _home(tmp_path, proxy.url, token=hindsight.token)
        toml = (home / "resident.toml").read_text()
        (home / "resident.toml").write_text(toml.replace('member = "deven"\n', 'member = "deven"\nretain = true\n'))
        with Runtime.open(home, realm=realm.url) as rt:
            rt.memory.enable()
            served = rt.member("deven").remember("the otters guard the release branch").id
            withheld_text = "the walrus holds the canonical deploy key"
            withheld = delegated_promotion(rt, withheld_text)
            wait_until(lambda: _withheld(rt, withheld), 30, "Realm withholding the delegated promotion")
            with pytest.raises(RecordWithheld):
                rt.cognition.retain("deven", [served, withheld])  # all or none: nothing is sent
            assert b"otters" not in proxy.sent()
            with pytest.raises(InvalidInput, match="retain = true"):
                rt.cognition.retain("alice", [served])
            assert rt.cognition.retain("deven", [served]).retained == (served,)
        found = httpx.post(
            f"{hindsight.url}/v1/default/banks/deven-notes/memories/recall", json={"query": "otters release branch"},
            headers={"Authorization": f"Bearer {hindsight.token}"}, timeout=30,
        ).json()["results"]
        assert any("otters" in result["text"] for result in found)
        assert withheld_text.encode() not in proxy.sent()
    finally:
        proxy.stop()
        realm.stop()


def _withheld(rt: Runtime, record_id: str) -> bool:
    try:
        rt.member("deven").get(record_id)
    except RecordWithheld:
        return True
    return False
