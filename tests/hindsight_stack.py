"""A real Hindsight server for the tests: `hindsight-api-slim` from PyPI in a cached environment outside the
repository (`.ci/run` installs it), on PostgreSQL from the `pgserver` wheel family with pgvector, its LLM provider
off, its embeddings from a loopback embedder in the test process (`tests.fake_llama`).

Where it is not installed, `missing()` says why and the tests skip.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = ["HINDSIGHT", "Hindsight", "free_port", "missing", "start_hindsight", "wait_healthy"]

HINDSIGHT = Path(os.environ.get("RESIDENT_TEST_HINDSIGHT") or "/var/tmp/resident-test-hindsight")
VENV = HINDSIGHT / "venv"
# Hindsight runs its migrations at start: a cold start takes tens of seconds on a loaded machine.
START_SECONDS = 180.0

# Runs in the cached environment: PostgreSQL in `data`, its extensions, its URI on stdout; stopped (pgserver's
# cleanup) when this process's standard input closes.
_POSTGRES = """
import sys, pgserver
server = pgserver.get_server(sys.argv[1], cleanup_mode="stop")
server.psql("CREATE EXTENSION IF NOT EXISTS vector; CREATE EXTENSION IF NOT EXISTS pg_trgm;")
print(server.get_uri(), flush=True)
sys.stdin.read()
"""


def missing() -> str | None:
    """Why a real Hindsight cannot run here, or None."""
    if not (VENV / "bin" / "hindsight-api").exists():
        return f"hindsight-api-slim is not installed in {VENV} (.ci/run installs it)"
    probe = subprocess.run([str(VENV / "bin" / "python"), "-c", "import pgserver"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"pgserver is not installed in {VENV} (.ci/run installs it)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Hindsight:
    """A running Hindsight and the PostgreSQL under it."""

    url: str
    token: str
    command: tuple[str, ...]
    environment: dict[str, str]
    process: subprocess.Popen[bytes] | None
    postgres: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if self.postgres.stdin is not None:
            self.postgres.stdin.close()
        self.postgres.wait(60)

    def retain(self, bank: str, *texts: str) -> None:
        """Write memories into `bank` through Hindsight's own API, as its owner would."""
        items = [{"content": text} for text in texts]
        response = httpx.post(
            f"{self.url}/v1/default/banks/{bank}/memories", json={"items": items, "async": False},
            headers={"Authorization": f"Bearer {self.token}"}, timeout=120,
        )
        response.raise_for_status()


def wait_healthy(url: str, token: str, seconds: float = START_SECONDS, process: subprocess.Popen[bytes] | None = None,
                 log: Path | None = None) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:] if log is not None else ""
            raise AssertionError(f"hindsight-api exited with {process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/health", headers={"Authorization": f"Bearer {token}"}, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"hindsight at {url} did not become healthy within {seconds} s")


def start_hindsight(folder: Path, embedder_url: str, dimensions: int, *, run: bool = True) -> Hindsight:
    """PostgreSQL in `folder`, and (with `run`) Hindsight on it; `run=False` leaves starting it to the runtime."""
    postgres = subprocess.Popen(
        [str(VENV / "bin" / "python"), "-c", _POSTGRES, str(folder / "pg")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert postgres.stdout is not None
    uri = postgres.stdout.readline().decode().strip()
    if not uri:
        postgres.wait(30)
        raise AssertionError("pgserver did not start PostgreSQL")
    port, token = free_port(), "test-token-of-the-hindsight-owner"
    environment = {
        "HINDSIGHT_API_DATABASE_URL": uri,
        "HINDSIGHT_API_LLM_PROVIDER": "none",
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": f"{embedder_url}/v1",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "unused",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_DIMENSIONS": str(dimensions),
        "HINDSIGHT_API_RERANKER_PROVIDER": "rrf",
        "HINDSIGHT_API_HOST": "127.0.0.1",
        "HINDSIGHT_API_PORT": str(port),
        "HINDSIGHT_API_TENANT_EXTENSION": "hindsight_api.extensions.builtin.tenant:ApiKeyTenantExtension",
        "HINDSIGHT_API_TENANT_API_KEY": token,
    }
    command = (str(VENV / "bin" / "hindsight-api"),)
    hindsight = Hindsight(f"http://127.0.0.1:{port}", token, command, environment, None, postgres)
    if not run:
        return hindsight
    log = folder / "hindsight.log"
    with log.open("wb") as out:
        hindsight.process = subprocess.Popen(
            command, env={**os.environ, **environment}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        wait_healthy(hindsight.url, token, process=hindsight.process, log=log)
    except BaseException:
        hindsight.stop()
        raise
    return hindsight


if __name__ == "__main__":  # pragma: no cover - a manual check: is the stack installed?
    print(missing() or "installed", file=sys.stderr)
