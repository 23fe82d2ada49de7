"""`codex serve` from the command line, in its own process (and with `--workers 2`, in two): loopback by default,
the key read from the environment."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from codex_pipeline.warehouse.storage import Warehouse


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workers(pid: int) -> list[int]:
    """The worker processes uvicorn's supervisor ``pid`` spawned (not multiprocessing's resource tracker)."""
    kids = [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    return [c for c in kids if b"spawn_main" in open(f"/proc/{c}/cmdline", "rb").read()]


# three processes start for --workers 2 (a supervisor and two workers): the slow lane runs it
@pytest.fixture(params=[1, pytest.param(2, marks=pytest.mark.slow)], ids=["one-process", "two-workers"])
def served(data_dir: Warehouse, request: pytest.FixtureRequest) -> Iterator[str]:
    workers = request.param
    port = _free_port()
    env = {**os.environ, "MY_SERVE_KEY": "from-the-env", "OPENAI_API_KEY": "unused", "CODEX_DATA_DIR": str(data_dir.root)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "codex_pipeline.cli", "serve", "--port", str(port), "--api-key-env", "MY_SERVE_KEY",
         "--embedder", "openai", "--max-k", "3", "--workers", str(workers)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "codex serve did not answer /health"
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200 and (
                        workers == 1 or len(_workers(proc.pid)) == workers):
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        assert len(_workers(proc.pid)) == (workers if workers > 1 else 0)  # one process, or a supervisor and workers
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_codex_serve_binds_loopback_and_wants_the_key(served: str) -> None:
    with httpx.Client(base_url=served, timeout=30) as c:
        assert c.get("/ready").json()["ready"] is True
        assert c.post("/search", json={"query": "girders", "mode": "bm25"}).status_code == 401
        ok = c.post("/search", json={"query": "girders", "mode": "bm25", "k": 3}, headers={"X-API-Key": "from-the-env"})
        assert ok.status_code == 200 and ok.json()["hits"]
        r = c.post("/search", json={"query": "girders", "mode": "bm25", "k": 4}, headers={"X-API-Key": "from-the-env"})
        assert r.status_code == 422 and "at most 3" in r.json()["error"]
    host = socket.gethostbyname(socket.gethostname())
    if host != "127.0.0.1":  # not reachable on the machine's other addresses
        port = int(served.rsplit(":", 1)[1])
        with pytest.raises(OSError), socket.create_connection((host, port), timeout=2):
            pass
