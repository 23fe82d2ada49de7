"""Scale-out on Dagster's own engine: the same backfill on 1 and 2 Celery workers.

The stack is the production one of ``deploy/`` on this machine: PostgreSQL instance
storage, ``dagster-daemon`` with the run queue, a code server started on its own and
``dagster-celery`` workers (solo pool) on Redis, ``CODEX_EXECUTOR=celery``, the local
all-MiniLM-L6-v2 model. Servers and processes are those of the deployment tests
(``codex_pipeline_tests/deploy/services.py``), each started fresh per configuration.

(a) An asset backfill of DAYS landing days (raw → chunks → embeddings) of three text
    datasets cut from the shared corpora — ``narrative`` (council transcripts),
    ``docs`` (httpx Markdown), ``email_threads`` (python-committers mbox) — with
      1 worker, one compute thread (torch / BLAS threads = 1),
      2 workers, one compute thread each,
      1 worker, default threads;
    wall time from launch to completion, the speed-up of 2 workers over 1 (target
    >= 1.7x), each worker's busy time, the CPU time of each kind of process (workers, run
    workers, daemon, code server, PostgreSQL, Redis), and the tables of every configuration against
    the first one (identical rows; vectors max |diff|).
(b) Per-step overhead of the Celery executor against the in-process executor: the
    same small day (docs, three steps in a chain) materialized with
    ``dagster asset materialize`` under ``CODEX_EXECUTOR=celery`` and ``in_process``;
    overhead per step = (run duration - sum of step durations) / steps, warm runs.
(c) Embedding parallelism inside one partition: the largest day's chunk texts
    embedded by one process with 1 thread, one process with 2 threads, and two
    processes with 1 thread each on half the texts (what splitting a partition's
    embeddings into two sub-steps on two workers would give).

    python bench/bench_scale_out.py [--corpus DIR] [--days 8] [--scale 1.0]
        [--configs 1x1,2x1,1xdefault] [--max-runs N] [--skip-overhead] [--skip-split] [--out FILE.json]

``--scale 0.05`` keeps 5 % of each day's text: a smoke run in a few minutes. Needs
PostgreSQL and Redis (``bash scripts/install_services.sh``) and the dagster-postgres /
dagster-celery packages. CORPUS defaults to ``../shared/corpora`` beside the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import mailbox
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codex_pipeline.datasets.sample_data import install_sample_landing  # noqa: E402
from codex_pipeline.warehouse.storage import Warehouse  # noqa: E402
from codex_pipeline_tests.deploy import services as svc  # noqa: E402

DEFAULT_CORPUS = REPO / ".." / "shared" / "corpora"
FIRST_DAY = "2026-11-02"
DATASETS = ("narrative", "docs", "email_threads")
TABLES = ("raw", "chunks", "embeddings")
CONFIGS = {  # name: (workers, one thread each?)
    "1x1": (1, True),
    "2x1": (2, True),
    "1xdefault": (1, False),
}
OVERHEAD_DAY = "2026-11-24"  # a small sample landing day
OVERHEAD_DATASET = "docs"
SPEEDUP_TARGET = 1.7


# --------------------------------------------------------------------------- landing days


def _split_even(items: list, sizes: list[int], parts: int) -> list[list]:
    """Contiguous groups of ``items`` with about the same total size."""
    total = sum(sizes) or 1
    groups: list[list] = [[] for _ in range(parts)]
    acc = 0
    for item, size in zip(items, sizes):
        groups[min(parts - 1, int(acc * parts / total))].append(item)
        acc += size
    return groups


def _keep(items: list, sizes: list[int], scale: float) -> list:
    """The first items holding about ``scale`` of the group's size (at least one)."""
    if scale >= 1:
        return items
    budget, acc = scale * sum(sizes), 0
    out: list = []
    for item, size in zip(items, sizes):
        if out and acc + size > budget:
            break
        out.append(item)
        acc += size
    return out


def build_landing(corpus: Path, root: Path, days: list[str], scale: float) -> dict[str, dict[str, int]]:
    """Cut the corpora into ``days`` landing days per dataset; returns bytes per dataset and day."""
    n = len(days)
    sizes: dict[str, dict[str, int]] = {d: {} for d in DATASETS}

    def land(dataset: str, day: str) -> Path:
        p = root / "landing" / dataset / day
        p.mkdir(parents=True, exist_ok=True)
        return p

    # narrative: council speaker turns, contiguous, one .txt per day
    turns: list[str] = []
    for p in sorted((corpus / "council").glob("*.txt")):
        turns += [t.strip() for t in p.read_text(encoding="utf-8").split("-" * 50) if t.strip()]
    for day, group in zip(days, _split_even(turns, [len(t) for t in turns], n)):
        kept = _keep(group, [len(t) for t in group], scale)
        text = "\n\n".join(kept) + "\n"
        (land("narrative", day) / f"council-{day}.txt").write_text(text, encoding="utf-8")
        sizes["narrative"][day] = len(text.encode())

    # docs: whole Markdown files, balanced by size over the days
    files = sorted((corpus / "markdown" / "httpx").rglob("*.md"), key=lambda p: (-p.stat().st_size, str(p)))
    load = {d: 0 for d in days}
    for p in files:
        day = min(days, key=lambda d: (load[d], d))
        load[day] += p.stat().st_size
        text = p.read_text(encoding="utf-8")
        if scale < 1:
            lines = text.splitlines(keepends=True)
            text = "".join(_keep(lines, [len(x) for x in lines], scale))
        rel = p.relative_to(corpus / "markdown" / "httpx")
        dest = land("docs", day) / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        sizes["docs"][day] = sizes["docs"].get(day, 0) + len(text.encode())

    # email_threads: the list archives' messages in order, contiguous, one mbox per day
    messages = []
    for p in sorted((corpus / "email").glob("*.mbox")):
        messages += list(mailbox.mbox(str(p), create=False))
    msizes = [len(m.as_bytes()) for m in messages]
    groups = _split_even(list(range(len(messages))), msizes, n)
    for day, group in zip(days, groups):
        kept = _keep(group, [msizes[i] for i in group], scale)
        box = mailbox.mbox(str(land("email_threads", day) / f"list-{day}.mbox"))
        box.lock()
        try:
            for i in kept:
                box.add(messages[i])
            box.flush()
        finally:
            box.unlock()
            box.close()
        sizes["email_threads"][day] = sum(msizes[i] for i in kept)
    return sizes


# --------------------------------------------------------------------------- measurements

PROCESS_KINDS = (  # a process's kind: the first of these its command line holds
    ("execute_run", "run worker"), ("spawn_main", "run worker"),  # the code server starts runs as spawned children
    ("celery", "celery worker"), ("dagster-daemon", "daemon"),
    ("code-server", "code server"), ("grpc", "code server"), ("postgres", "postgres"), ("redis-server", "redis"),
)


_SPIN = "import time\nt = time.perf_counter()\nx = 0\nfor i in range(12_000_000):\n    x += i * i\nprint(time.perf_counter() - t)"


def parallel_ceiling(rounds: int = 5) -> dict[str, float]:
    """The machine's own speed-up for two single-threaded processes: the same CPU loop run alone,
    then as two copies at once. On a shared VM the second core is not always a whole core; a
    backfill on two workers cannot beat this ratio. The machine's speed also drifts from one
    second to the next, so each round pairs an alone run with a paired one, and the median of
    the rounds' ratios is the ceiling."""
    def once(copies: int) -> float:
        procs = [subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True) for _ in range(copies)]
        return max(float(p.communicate()[0]) for p in procs)
    pairs = [(once(1), once(2)) for _ in range(rounds)]
    return {"one_process_s": round(statistics.median(a for a, _ in pairs), 2),
            "two_processes_s": round(statistics.median(b for _, b in pairs), 2),
            "ceiling": round(statistics.median(2 * a / b for a, b in pairs), 2)}


class ProcessSample(NamedTuple):
    kind: str
    cpu_s: float  # user + system
    wait_s: float  # run-queue wait: runnable but not running, summed over threads


class CpuByProcess:
    """CPU time per kind of process of the stack, and time spent runnable but waiting for a
    CPU (the scheduler's run-queue delay, summed over threads), read from ``/proc`` twice a
    second (Linux).

    A backfill starts a run worker per run and the stack's servers all share the two cores
    with the workers: what they cost is the CPU the workers lose, and the workers' run-queue
    wait is how long they were kept from a core. A process that ends between two samples
    loses its last half second at most.
    """

    def __init__(self) -> None:
        self.before = self._sample()
        self.last: dict[int, ProcessSample] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @staticmethod
    def _sample() -> dict[int, ProcessSample]:
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            kind = next((k for needle, k in PROCESS_KINDS if needle in cmd), None)
            if kind:
                out[int(entry.name)] = ProcessSample(kind, (int(fields[11]) + int(fields[12])) / tick, _runqueue_wait_s(entry))
        return out

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self.last.update(self._sample())

    def __enter__(self) -> CpuByProcess:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.last.update(self._sample())

    def totals(self, field: str = "cpu_s") -> dict[str, float]:
        """Seconds of ``field`` (a :class:`ProcessSample` field) per kind since the monitor started."""
        out: dict[str, float] = {}
        for pid, now in self.last.items():
            before = self.before.get(pid)
            out[now.kind] = out.get(now.kind, 0.0) + getattr(now, field) - (getattr(before, field) if before else 0.0)
        return {k: round(v, 1) for k, v in sorted(out.items())}


def _runqueue_wait_s(proc: Path) -> float:
    """Seconds the process's threads were runnable but not running (``schedstat``'s second field)."""
    wait = 0
    try:
        for task in (proc / "task").iterdir():
            with contextlib.suppress(OSError, IndexError, ValueError):
                wait += int((task / "schedstat").read_text().split()[1])
    except OSError:
        pass
    return wait / 1e9


@dataclass
class BackfillResult:
    config: str
    workers: int
    threads: str
    wall_s: float
    runs: int
    first_run_start_s: float  # launch -> first run started (daemon + launcher latency)
    wall_from_first_run_s: float  # first run started -> last run ended: without the backfill daemon's
    # polling phase (it looks for new backfills every 30 s, so 0-30 s pass at random before the first run)
    steps: int
    step_s_total: float
    busy_s_by_worker: dict[str, float]
    step_s_by_asset: dict[str, float]  # step time summed per asset over the days: which steps slow down on 2 workers
    utilization: float  # sum of step time / (workers * wall)
    run_queue_to_start_s: float  # mean time from a run's creation to its RUN_START
    run_overhead_s: float  # mean (run duration - time its steps ran) per run
    cpu_s_by_process: dict[str, float]  # CPU-seconds of the stack's processes during the backfill, by kind
    runqueue_wait_s_by_process: dict[str, float]  # seconds they were runnable but waited for a core, by kind
    ceiling_before: dict[str, float]  # parallel_ceiling() measured just before the backfill
    status: str
    data_dir: str = field(repr=False, default="")


def _events(inst, run_id: str) -> list:
    return list(inst.all_logs(run_id))


def step_timings(inst, run_ids: list[str]) -> tuple[list[tuple[str, str, float, float]], list[float]]:
    """(run, step, start, end) of every successful step, and each run's start time."""
    import dagster as dg

    steps, starts = [], []
    for run_id in run_ids:
        begun: dict[str, float] = {}
        for r in _events(inst, run_id):
            ev = r.dagster_event
            if ev is None:
                continue
            if ev.event_type == dg.DagsterEventType.RUN_START:
                starts.append(r.timestamp)
            elif ev.event_type == dg.DagsterEventType.STEP_START:
                begun[r.step_key] = r.timestamp
            elif ev.event_type == dg.DagsterEventType.STEP_SUCCESS and r.step_key in begun:
                steps.append((run_id, r.step_key, begun[r.step_key], r.timestamp))
    return steps, starts


def worker_of_steps(inst, run_ids: list[str]) -> dict[tuple[str, str], str]:
    import dagster as dg

    out = {}
    for run_id in run_ids:
        for r in inst.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
            ev = r.dagster_event
            meta = ev.engine_event_data.metadata if ev and ev.engine_event_data else {}
            if "Celery worker" in meta:
                out[(run_id, ev.step_key)] = str(meta["Celery worker"].value).split("@")[0]
    return out


def _union_length(spans: list[tuple[float, float]]) -> float:
    """Total time covered by possibly overlapping (start, end) spans."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def run_limits(max_runs: int | None) -> dict:
    """Instance overrides for ``--max-runs``: the run queue and the backfill limit raised together."""
    if not max_runs:
        return {}
    return {"concurrency": {"runs": {"max_concurrent_runs": max_runs,
                                     "tag_concurrency_limits": [{"key": "dagster/backfill", "limit": max_runs}]}}}


def run_backfill(
    name: str, workers: int, one_thread: bool, landing: Path, work: Path, pg, redis, days: list[str], max_runs: int | None
) -> BackfillResult:
    import redis as redis_client

    data = work / f"data-{name}"
    shutil.copytree(landing / "landing", data / "landing")
    redis_client.Redis.from_url(redis.url()).flushall()
    env = svc.ONE_THREAD if one_thread else {}
    names = {f"w{i + 1}": env for i in range(workers)}
    keys = [[d, t] for d in DATASETS for t in TABLES]
    print(f"[{name}] starting the stack: {workers} worker(s), {'1 thread' if one_thread else 'default threads'} each", flush=True)
    with svc.scale_out_stack(work / f"stack-{name}", pg, redis, data, names, instance_overrides=run_limits(max_runs)) as stack:
        ceiling = parallel_ceiling()
        with CpuByProcess() as cpu:
            launched = time.time()
            backfill_id = stack.launch_backfill(keys, days, title=f"bench {name}")
            backfill = stack.wait_backfill(backfill_id, timeout_s=6 * 3600, poll_s=2.0)
        runs = stack.backfill_runs(backfill_id)
        with stack.instance() as inst:
            run_ids = [r.run_id for r in runs]
            steps, starts = step_timings(inst, run_ids)
            where = worker_of_steps(inst, run_ids)
            records = [inst.get_run_record_by_id(r) for r in run_ids]
    ends = [r.end_time or 0 for r in records if r is not None]
    wall = max(ends) - launched
    queued = [r.start_time - r.create_timestamp.timestamp() for r in records if r is not None and r.start_time]
    overheads = []
    for r in records:
        if r is not None and r.start_time and r.end_time:
            ran = _union_length([(s, e) for rid, _, s, e in steps if rid == r.dagster_run.run_id])
            overheads.append(r.end_time - r.start_time - ran)
    busy: dict[str, float] = {}
    by_asset: dict[str, float] = {}
    for run_id, step, start, end in steps:
        w = where.get((run_id, step), "?")
        busy[w] = busy.get(w, 0.0) + (end - start)
        by_asset[step] = by_asset.get(step, 0.0) + (end - start)
    step_total = sum(busy.values())
    result = BackfillResult(
        config=name, workers=workers, threads="1" if one_thread else "default", wall_s=round(wall, 1), runs=len(runs),
        first_run_start_s=round(min(starts) - launched, 1) if starts else float("nan"),
        wall_from_first_run_s=round(max(ends) - min(starts), 1) if starts else float("nan"), steps=len(steps),
        step_s_total=round(step_total, 1), busy_s_by_worker={k: round(v, 1) for k, v in sorted(busy.items())},
        step_s_by_asset={k: round(v, 1) for k, v in sorted(by_asset.items())},
        utilization=round(step_total / (workers * wall), 3),
        run_queue_to_start_s=round(statistics.mean(queued), 1) if queued else float("nan"),
        run_overhead_s=round(statistics.mean(overheads), 1) if overheads else float("nan"),
        cpu_s_by_process=cpu.totals(), runqueue_wait_s_by_process=cpu.totals("wait_s"), ceiling_before=ceiling, status=backfill.status.value, data_dir=str(data),
    )
    print(f"[{name}] {result}", flush=True)
    return result


def compare_tables(base: Path, other: Path, days: list[str]) -> dict[str, object]:
    """Rows equal (wall-clock columns aside) and the largest vector difference."""
    a_wh, b_wh = Warehouse(base), Warehouse(other)
    same, max_diff, rows = True, 0.0, 0
    for dataset in DATASETS:
        for day in days:
            date = dt.date.fromisoformat(day)
            for table in ("chunks", "embeddings"):
                try:
                    a, b = a_wh.read(dataset, table, date), b_wh.read(dataset, table, date)
                except FileNotFoundError:
                    same = False
                    continue
                a, b = a.sort_by("chunk_id"), b.sort_by("chunk_id")
                cols = [c for c in a.column_names if not c.endswith("_at") and c != "vector"]
                rows += a.num_rows
                if a.num_rows != b.num_rows or not a.select(cols).equals(b.select(cols)):
                    same = False
                if table == "embeddings" and a.num_rows == b.num_rows and a.num_rows:
                    va = np.asarray(a.column("vector").to_pylist(), np.float32)
                    vb = np.asarray(b.column("vector").to_pylist(), np.float32)
                    max_diff = max(max_diff, float(np.abs(va - vb).max()))
    return {"rows_compared": rows, "identical_rows": same, "max_vector_abs_diff": max_diff}


def measure_overhead(work: Path, pg, redis, repeats: int = 3) -> dict[str, object]:
    """Per-step overhead of Celery vs in-process on one small day (three chained steps)."""
    import dagster as dg
    import redis as redis_client

    data = work / "data-overhead"
    install_sample_landing(Warehouse(data))
    redis_client.Redis.from_url(redis.url()).flushall()
    select = ",".join(f"{OVERHEAD_DATASET}/{t}" for t in TABLES)
    out: dict[str, list[float]] = {"celery": [], "in_process": []}
    with svc.scale_out_stack(work / "stack-overhead", pg, redis, data, {"w1": svc.ONE_THREAD}) as stack:
        for executor in ["celery"] + ["celery", "in_process"] * repeats:  # the first (cold) celery run is discarded
            env = {**stack.env, "CODEX_EXECUTOR": executor, **svc.ONE_THREAD}
            cmd = [str(svc.BIN / "dagster"), "asset", "materialize", "-m", "codex_pipeline.defs", "--select", select,
                   "--partition", OVERHEAD_DAY]
            subprocess.run(cmd, env=env, cwd=REPO, check=True, capture_output=True, timeout=1800)
            with stack.instance() as inst:
                (run,) = inst.get_runs(limit=1)
                assert run.status == dg.DagsterRunStatus.SUCCESS, run
                steps, _ = step_timings(inst, [run.run_id])
                rec = inst.get_run_record_by_id(run.run_id)
                duration = rec.end_time - rec.start_time
            per_step = (duration - sum(e - s for _, _, s, e in steps)) / max(1, len(steps))
            out[executor].append(per_step)
            print(f"[overhead] {executor}: run {duration:.2f}s, {len(steps)} steps, overhead/step {per_step:.2f}s", flush=True)
    celery, inproc = out["celery"][1:], out["in_process"]
    return {
        "celery_overhead_per_step_s": round(statistics.median(celery), 2),
        "in_process_overhead_per_step_s": round(statistics.median(inproc), 2),
        "celery_minus_in_process_per_step_s": round(statistics.median(celery) - statistics.median(inproc), 2),
        "runs": {k: [round(x, 2) for x in v] for k, v in out.items()},
    }


SPLIT_SCRIPT = r"""
import json, sys, time
from codex_pipeline.embeddings import make_embedder
texts = json.load(open(sys.argv[1]))
emb = make_embedder("local")
emb.load()
t, c = time.perf_counter(), time.process_time()
emb.embed(texts)
print(json.dumps({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c,
                  "threads": emb.describe()["threads"], "inputs": len(texts)}))
"""


def measure_split(data_dir: Path, days: list[str], work: Path) -> dict[str, object]:
    """One partition's embeddings: 1 thread, 2 threads, or two 1-thread processes on halves."""
    wh = Warehouse(data_dir)
    best: tuple[int, list[str], str] = (0, [], "")
    for dataset in DATASETS:
        for day in days:
            try:
                texts = wh.read(dataset, "chunks", dt.date.fromisoformat(day)).column("chunk_text").to_pylist()
            except FileNotFoundError:
                continue
            size = sum(len(t) for t in texts)
            if size > best[0]:
                best = (size, texts, f"{dataset} {day}")
    _, texts, which = best
    half = len(texts) // 2
    files = []
    for i, part in enumerate([texts, texts[:half], texts[half:]]):
        f = work / f"split-{i}.json"
        f.write_text(json.dumps(part))
        files.append(f)

    def start(path: Path, threads: int) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if k not in svc.ONE_THREAD}
        env.update({k: str(threads) if k.endswith("_THREADS") else v for k, v in svc.ONE_THREAD.items()})
        return subprocess.Popen([sys.executable, "-c", SPLIT_SCRIPT, str(path)], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True)

    def finish(procs: list[subprocess.Popen]) -> tuple[float, list[dict]]:
        t = time.perf_counter()
        got = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs]
        return time.perf_counter() - t, got

    one = finish([start(files[0], 1)])[1][0]
    two = finish([start(files[0], 2)])[1][0]
    halves = finish([start(files[1], 1), start(files[2], 1)])[1]
    split_s = max(h["seconds"] for h in halves)
    result = {
        "partition": which,
        "inputs": len(texts),
        "one_thread_s": round(one["seconds"], 2),
        "two_threads_one_process_s": round(two["seconds"], 2),
        "two_processes_one_thread_each_s": round(split_s, 2),
        "speedup_two_threads": round(one["seconds"] / two["seconds"], 2),
        "speedup_two_processes": round(one["seconds"] / split_s, 2),
        # CPU seconds spent for the same work: what parallelism costs, whatever else the machine runs
        "cpu_s_one_thread": round(one["cpu_seconds"], 2),
        "cpu_s_two_threads": round(two["cpu_seconds"], 2),
        "cpu_s_two_processes": round(sum(h["cpu_seconds"] for h in halves), 2),
        "threads_seen": [one["threads"], two["threads"], *[h["threads"] for h in halves]],
    }
    print(f"[split] {result}", flush=True)
    return result


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--days", type=int, default=8)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each day's text to keep")
    ap.add_argument("--configs", default=",".join(CONFIGS), help=f"comma-separated, from {', '.join(CONFIGS)}")
    ap.add_argument("--max-runs", type=int, help="raise the run queue and backfill limits (deploy/dagster.yaml: 3 and 2)")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--skip-split", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    args = ap.parse_args()
    # stop cleanly on SIGTERM / SIGINT (also when started in the background): the
    # servers and workers are stopped by the context managers below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)

    missing = svc.missing_prerequisites()
    if missing:
        print("bench_scale_out needs " + ", ".join(missing) + " (bash scripts/install_services.sh)", file=sys.stderr)
        return 2
    corpus = args.corpus.resolve()
    if not (corpus / "council").is_dir():
        print(f"no corpora at {corpus} (--corpus DIR)", file=sys.stderr)
        return 2
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        print(f"unknown config(s) {unknown}; choose from {', '.join(CONFIGS)}", file=sys.stderr)
        return 2

    # byte-compile the code as an installed package has it: where PYTHONDONTWRITEBYTECODE is set,
    # every run worker (a fresh process per run) would otherwise compile every module again
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "codex_pipeline")], check=True)
    work = Path(tempfile.mkdtemp(prefix="codex-bench-scale-out-"))
    days = svc.day_range(FIRST_DAY, args.days)
    results: dict[str, object] = {
        "days": days, "scale": args.scale, "datasets": list(DATASETS), "cpus": os.cpu_count(), "max_runs": args.max_runs,
    }
    try:
        landing = work / "landing-src"
        sizes = build_landing(corpus, landing, days, args.scale)
        results["landing_bytes"] = {d: sum(v.values()) for d, v in sizes.items()}
        print(f"landing: {args.days} days, bytes per dataset {results['landing_bytes']}", flush=True)
        with svc.postgres_server() as pg, svc.redis_server() as redis:
            backfills = [
                run_backfill(c, CONFIGS[c][0], CONFIGS[c][1], landing, work, pg, redis, days, args.max_runs) for c in configs
            ]
            results["backfills"] = [{k: v for k, v in asdict(b).items() if k != "data_dir"} for b in backfills]
            by_name = {b.config: b for b in backfills}
            if "1x1" in by_name and "2x1" in by_name:
                speedup = by_name["1x1"].wall_s / by_name["2x1"].wall_s
                results["speedup_2_workers"] = round(speedup, 2)
                results["speedup_target_met"] = speedup >= SPEEDUP_TARGET
                results["speedup_2_workers_from_first_run"] = round(
                    by_name["1x1"].wall_from_first_run_s / by_name["2x1"].wall_from_first_run_s, 2)
                results["machine_ceiling_at_2_workers"] = by_name["2x1"].ceiling_before["ceiling"]
            if backfills:
                base = Path(backfills[0].data_dir)
                results["tables_vs_" + backfills[0].config] = {
                    b.config: compare_tables(base, Path(b.data_dir), days) for b in backfills[1:]
                }
            if not args.skip_overhead:
                results["overhead"] = measure_overhead(work, pg, redis)
        if not args.skip_split and backfills:
            results["embedding_split"] = measure_split(Path(backfills[0].data_dir), days, work)
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print(json.dumps(results, indent=2))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
