"""`resident up` and `resident down` as real processes: announcing, refusing, stopping gracefully under
load without losing an acknowledged write, surviving `kill -9`, detaching, and unix sockets."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import msgspec
import pytest

from resident import Runtime
from resident.api.discovery import DISCOVERY_FILE, Discovery, lock_holder
from resident.errors import RecordWithheld, RuntimeNotUp
from resident.messages.replication import ReplicationCounts
from resident.store.tables import RECORDS
from tests.api_helpers import STOP_TIMEOUT, UpProcess, post_once
from tests.cli_helpers import expect_error, expect_json, run_process, withhold


def discovery_of(home: Path) -> Discovery:
    return msgspec.json.decode((home / DISCOVERY_FILE).read_bytes(), type=Discovery)


def enable_memory(home: Path) -> None:
    with Runtime.open(home) as runtime:
        runtime.memory.enable()


def test_up_announces_once_it_answers_and_publishes_the_same_facts_privately(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with UpProcess(home) as up:
        assert up.discovery is not None
        assert discovery_of(home) == up.discovery
        assert stat.S_IMODE((home / DISCOVERY_FILE).stat().st_mode) == 0o600
        assert up.discovery.pid == up.pid
        assert up.discovery.address.startswith("http://127.0.0.1:")
        assert len(up.discovery.token) >= 40
        with up.client() as http:  # answers at once: the line came after the server listened
            assert http.get("/v1/health").json()["status"] == "ok"
        assert up.terminate() == 0
    assert not (home / DISCOVERY_FILE).exists()
    assert lock_holder(home) is None


@pytest.mark.parametrize(
    "listen", ["0.0.0.0:0", "[::]:0", "example.com:80", "192.0.2.1:80", "127.0.0.1:65536", "127.0.0.1:x", "nohost"]
)
def test_up_refuses_an_address_that_is_not_loopback_or_malformed(tmp_path: Path, listen: str) -> None:
    home = tmp_path / "home"
    outcome = run_process(home, "up", "--listen", listen)
    expect_error(outcome, "InvalidInput", naming=("--listen",))
    assert not (home / DISCOVERY_FILE).exists()


@pytest.mark.slow
def test_a_second_up_on_the_same_home_is_refused_naming_the_first(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with UpProcess(home) as up:
        assert up.discovery is not None
        outcome = run_process(home, "up")
        expect_error(outcome, "HomeInUse", naming=(up.discovery.address, str(up.pid), "resident down"))
        assert discovery_of(home) == up.discovery  # the first one's file is untouched


@pytest.mark.slow
def test_down_stops_the_runtime_and_waits_until_the_home_is_free(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with UpProcess(home) as up:
        document = expect_json(run_process(home, "down", "--json"))
        assert document == {"stopped": True, "pid": up.pid, "address": up.url, "home": str(home)}
        assert lock_holder(home) is None
        assert up.proc is not None
        assert up.proc.wait(timeout=STOP_TIMEOUT) == 0  # it exits on its own, cleanly
    assert not (home / DISCOVERY_FILE).exists()
    expect_error(run_process(home, "down"), "RuntimeNotUp", naming=("no runtime is up",))


@pytest.mark.slow
def test_kill_9_leaves_a_home_the_next_up_opens(tmp_path: Path) -> None:
    home = tmp_path / "home"
    enable_memory(home)
    with UpProcess(home) as up, Runtime.connect(home) as rt:
        receipt = rt.member("deven").remember("written before the kill")
        up.kill()
    assert (home / DISCOVERY_FILE).exists()  # nobody cleaned up
    with pytest.raises(RuntimeNotUp, match="is gone"):
        Runtime.connect(home)
    expect_error(run_process(home, "down"), "RuntimeNotUp", naming=("stale",))
    assert not (home / DISCOVERY_FILE).exists()
    with UpProcess(home) as again, Runtime.connect(home) as rt:
        assert again.discovery is not None
        assert again.discovery.pid == again.pid
        assert rt.member("deven").get(receipt.id).body == "written before the kill"


@pytest.mark.slow
def test_up_replaces_a_stale_discovery_file_left_by_kill_9(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with UpProcess(home) as up:
        up.kill()
    with UpProcess(home) as again:
        assert discovery_of(home) == again.discovery


def test_down_never_signals_a_live_process_that_does_not_hold_the_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        forged = Discovery(address="http://127.0.0.1:9", pid=bystander.pid, token="t", api_version=1, home=str(home))
        (home / DISCOVERY_FILE).write_bytes(msgspec.json.encode(forged))
        expect_error(run_process(home, "down"), "RuntimeNotUp", naming=(str(bystander.pid),))
        assert bystander.poll() is None  # still running: it was never signalled
    finally:
        bystander.kill()
        bystander.wait(timeout=STOP_TIMEOUT)


def test_a_withheld_record_is_refused_over_the_api_with_its_state_and_reason(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Runtime.open(home) as runtime:
        runtime.memory.enable()
        record_id = runtime.member("deven").remember("promote me").id
    withhold(home, record_id, "non-canonical memory cannot be promoted")
    with UpProcess(home), Runtime.connect(home) as rt:
        with pytest.raises(RecordWithheld) as caught:
            rt.member("deven").get(record_id)
        assert (caught.value.record_id, caught.value.state) == (record_id, "conflict")
        assert caught.value.reason == "non-canonical memory cannot be promoted"
        counts = rt.replication.status()
        assert isinstance(counts, ReplicationCounts)
        assert record_id in counts.withheld


@pytest.mark.slow
def test_detach_returns_once_it_answers_and_down_stops_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    announced = msgspec.json.decode(expect_json_line(run_process(home, "up", "--detach")), type=Discovery)
    try:
        assert discovery_of(home) == announced
        with httpx.Client(base_url=announced.address, trust_env=False) as http:
            assert http.get("/v1/health").status_code == 200
        failed = run_process(home, "up", "--detach")
        expect_error(failed, "HomeInUse", naming=(str(announced.pid),))
    finally:
        expect_json(run_process(home, "down", "--json"))
    assert lock_holder(home) is None
    assert stat.S_IMODE((home / "up.log").stat().st_mode) == 0o600


def expect_json_line(outcome: object) -> bytes:
    document = expect_json(outcome)  # type: ignore[arg-type]
    assert set(document) == {"address", "pid", "token", "api_version", "home", "started"}
    return json.dumps(document).encode()


def test_up_on_a_unix_socket_is_private_and_removed_on_stop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sock = tmp_path / "api.sock"
    enable_memory(home)
    with UpProcess(home, listen=f"unix:{sock}") as up:
        assert stat.S_ISSOCK(sock.stat().st_mode)
        assert stat.S_IMODE(sock.stat().st_mode) == 0o600
        with Runtime.connect(home) as rt:
            assert rt.address == f"unix:{sock}"
            receipt = rt.member("alice").remember("over a unix socket")
            assert rt.member("alice").get(receipt.id).body == "over a unix socket"
        assert up.terminate() == 0
    assert not sock.exists()


def test_up_refuses_a_unix_path_that_is_not_a_socket(tmp_path: Path) -> None:
    home = tmp_path / "home"
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    expect_error(run_process(home, "up", "--listen", f"unix:{precious}"), "InvalidInput", naming=("not a socket",))
    assert precious.read_text() == "keep me"


@pytest.mark.slow
def test_sigterm_during_1000_concurrent_remembers_loses_no_acknowledged_write(tmp_path: Path) -> None:
    home = tmp_path / "home"
    enable_memory(home)
    up = UpProcess(home)
    discovery = up.start()
    acknowledged: list[str] = []
    refused: list[str] = []

    async def remember(index: int, signalled: asyncio.Event) -> None:
        try:
            status, body = await post_once(discovery, "/v1/members/deven/remember", {"text": f"write {index}"})
        except (OSError, asyncio.IncompleteReadError) as error:
            refused.append(type(error).__name__)
            return
        if status != 200:
            refused.append(body["error"]["type"])
            return
        acknowledged.append(body["id"])
        if len(acknowledged) == 200 and not signalled.is_set():
            # Stop while the other 800 are in flight: sent on progress, not after a delay.
            signalled.set()
            os.kill(up.pid, signal.SIGTERM)

    async def main() -> None:
        signalled = asyncio.Event()
        await asyncio.gather(*(remember(i, signalled) for i in range(1000)))

    try:
        asyncio.run(main())
        assert up.proc is not None
        assert up.proc.wait(timeout=STOP_TIMEOUT) == 0, up.log_tail()
    finally:
        if up.proc is not None and up.proc.poll() is None:
            up.kill()
    assert len(acknowledged) >= 200
    assert len(acknowledged) + len(refused) == 1000
    with Runtime.open(home) as runtime, runtime._internal.store.reader() as reader:
        missing = [record_id for record_id in acknowledged if reader.get(RECORDS, record_id) is None]
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged writes are not in the store"
    assert not (home / DISCOVERY_FILE).exists()
