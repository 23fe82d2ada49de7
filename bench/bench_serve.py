"""Benchmark: `codex serve` on loopback against the in-process Retriever, on the same queries.

    python bench/bench_serve.py --data-dir DIR [--partitions 365 --chunks 2000] [--queries 60] [--mode hybrid]

``DIR`` is a data dir ``bench/bench_search.py --keep`` left (its index is reused); when it holds
no index yet, the build phase of ``bench_search.py`` synthesizes ``--partitions`` × ``--chunks``
and builds it first (slow at full size). Then:

* **in process**: one ``Retriever`` (the real local query model unless ``--mode bm25``) answers
  each query once, sequentially: p50/p95;
* **over HTTP**: ``codex serve`` in its own process (the real CLI, loopback), then 1, 8 and 32
  concurrent clients (threads, one keep-alive connection each) send ``POST /search`` for the same
  queries (``--rounds`` passes each): p50/p95 latency, throughput, and the server's RSS (now and
  peak, summed over its processes) after each level. The overhead ratio is HTTP p50 at 1 client over
  in-process p50. ``--workers N`` runs ``codex serve --workers N``.

Target (issue 30): p95 under 250 ms at 8 clients on two cores. The last line reads
``serve p95 ms (8 clients, <mode>): X``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

DATASET = "permit_signals"
LEVELS = (1, 8, 32)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    now = peak = 0.0
    for line in open(f"/proc/{pid}/status"):
        key, _, value = line.partition(":")
        if key == "VmRSS":
            now = int(value.split()[0]) / 1024
        elif key == "VmHWM":
            peak = int(value.split()[0]) / 1024
    return now, peak


def _server_rss(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MB summed over the server and its worker processes (``--workers``; shared pages of the
    mapped index count once per process)."""
    pids = [pid] + [int(c) for c in open(f"/proc/{pid}/task/{pid}/children").read().split()
                    if b"spawn_main" in open(f"/proc/{c}/cmdline", "rb").read()]
    both = [_rss_mb(p) for p in pids]
    return sum(n for n, _ in both), sum(h for _, h in both)


def _ensure_index(args: argparse.Namespace) -> None:
    from codex_pipeline.retrieval import index_root
    from codex_pipeline.retrieval.index_format import CURRENT_FILE
    from codex_pipeline.warehouse.storage import Warehouse

    if (index_root(Warehouse(args.data_dir), DATASET) / CURRENT_FILE).exists():
        return
    print(f"building the bench_search data: {args.partitions} partitions x {args.chunks} chunks", flush=True)
    for phase in ("synth", "build"):
        subprocess.run([sys.executable, str(Path(__file__).parent / "bench_search.py"), "--phase", phase,
                        "--data-dir", str(args.data_dir), "--partitions", str(args.partitions),
                        "--chunks", str(args.chunks)], check=True, stdout=subprocess.DEVNULL)


def _queries(retriever, n: int) -> list[str]:  # type: ignore[no-untyped-def]
    """Queries as bench_search.py makes them: a permit number every third, else five words of a chunk."""
    index = retriever.index(DATASET)
    rng = np.random.default_rng(7)
    out = []
    for i, r in enumerate(rng.integers(0, len(index), n).tolist()):
        words = index.rows.column("chunk_text")[r].as_py().replace(".", "").split()
        if i % 3 == 0:
            out.append(index.rows.column("locator")[r].as_py().split("|")[0])
        else:
            start = int(rng.integers(0, max(1, len(words) - 6)))
            out.append(" ".join(words[start:start + 5]))
    return out


def in_process(args: argparse.Namespace) -> tuple[list[str], list[float]]:
    from codex_pipeline.retrieval import Retriever

    retriever = Retriever(args.data_dir, [DATASET], rebuild=False)
    queries = _queries(retriever, args.queries)
    retriever.search(queries[0], k=10, mode=args.mode)  # model loaded, pages warm
    times = []
    for q in queries:
        t0 = time.perf_counter()
        retriever.search(q, k=10, mode=args.mode)
        times.append((time.perf_counter() - t0) * 1000)
    return queries, times


def over_http(url: str, queries: list[str], clients: int, rounds: int, mode: str) -> tuple[list[float], float]:
    work = [q for _ in range(rounds) for q in queries]
    times: list[float] = []
    lock = threading.Lock()

    def client(part: list[str]) -> None:
        mine = []
        with httpx.Client(base_url=url, timeout=120) as c:
            for q in part:
                t0 = time.perf_counter()
                r = c.post("/search", json={"query": q, "k": 10, "mode": mode})
                mine.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=client, args=(work[i::clients],)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times, len(work) / (time.perf_counter() - t0)


def _p(times: list[float], q: float) -> float:
    return float(np.percentile(times, q))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--partitions", type=int, default=365)
    p.add_argument("--chunks", type=int, default=2000)
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--rounds", type=int, default=2, help="passes over the queries at each concurrency level")
    p.add_argument("--mode", choices=["hybrid", "vector", "bm25"], default="hybrid")
    p.add_argument("--workers", type=int, default=1, help="codex serve --workers (server processes)")
    args = p.parse_args()
    _ensure_index(args)
    queries, local = in_process(args)
    print(f"in process: p50 {statistics.median(local):.1f} ms  p95 {_p(local, 95):.1f} ms ({len(queries)} queries, {args.mode})")

    port = _free_port()
    env = {**os.environ, "CODEX_SERVE_API_KEY": ""}
    proc = subprocess.Popen([sys.executable, "-m", "codex_pipeline.cli", "--data-dir", str(args.data_dir), "serve",
                             "--port", str(port), "--refresh-seconds", "5", "--workers", str(args.workers)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        t0 = time.perf_counter()
        while True:
            assert proc.poll() is None, "codex serve exited"
            try:
                if httpx.get(f"{url}/ready", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        httpx.post(f"{url}/search", json={"query": queries[0], "k": 10, "mode": args.mode}, timeout=120)
        print(f"server ready + first query: {time.perf_counter() - t0:.2f} s; RSS {_server_rss(proc.pid)[0]:.0f} MB")
        if args.workers > 1:  # every worker loads its model on its first query: not part of the levels below
            over_http(url, queries[:4 * args.workers], 2 * args.workers, 1, args.mode)
        results = {}
        for clients in LEVELS:
            times, throughput = over_http(url, queries, clients, args.rounds, args.mode)
            now, peak = _server_rss(proc.pid)
            results[clients] = times
            print(f"{clients:>2} client(s): p50 {statistics.median(times):.1f} ms  p95 {_p(times, 95):.1f} ms  "
                  f"{throughput:.1f} req/s  server RSS {now:.0f} MB (peak {peak:.0f} MB)", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"HTTP overhead at 1 client: p50 x{statistics.median(results[1]) / statistics.median(local):.2f}, "
          f"p95 x{_p(results[1], 95) / _p(local, 95):.2f}")
    print(f"serve p95 ms (8 clients, {args.mode}): {_p(results[8], 95):.1f}")


if __name__ == "__main__":
    main()
