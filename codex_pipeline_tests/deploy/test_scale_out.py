"""Codex on Dagster's distributed engine: PostgreSQL instance, Celery workers, Redis.

Real servers and processes, no stand-ins: PostgreSQL and Redis on loopback, a code
server started on its own (deploy/workspace.yaml), `dagster-daemon run` with
deploy/dagster.yaml, and two `dagster-celery` worker processes, with
``CODEX_EXECUTOR=celery``. A backfill of two datasets over two days goes through
the daemon and the workers and must produce the tables a default in-process run
produces; a worker killed with SIGKILL in the middle of a step must not lose the
run, and a rerun must duplicate nothing.
"""

import datetime as dt
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow as pa
import pytest

from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.datasets.sample_data import install_sample_landing
from codex_pipeline.defs.assets import ADDRESS_CHECK, UNIQUE_CHECK, build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.deploy.services import ONE_THREAD, Postgres, Redis, ScaleOutStack, scale_out_stack

pytestmark = pytest.mark.deploy

DATASETS = ("narrative", "docs")
TABLES = ("raw", "chunks", "embeddings")
BACKFILL_DAYS = ["2026-11-24", "2026-11-25"]
KILL_DAY = "2026-11-26"
WORKERS = {"w1": ONE_THREAD, "w2": ONE_THREAD}
BACKFILL_TIMEOUT_S = 900  # three runs, each launched as a process; the first embedding step loads the model
RUN_TIMEOUT_S = 600
# The kill test's stack hands an unacknowledged step to another worker after this long
# (production: 4 h, longer than any step). Every other step of that test is shorter.
KILL_VISIBILITY_S = 30
KILL_CELERY = {"broker_transport_options": {"visibility_timeout": KILL_VISIBILITY_S, "unacked_restore_interval": 2, "unacked_restore_throttle": 1}}
# how often the surviving worker sweeps for abandoned messages, in the default config too
FAST_RESTORE = {"broker_transport_options": {"unacked_restore_interval": 2, "unacked_restore_throttle": 1}}


def _keys(datasets=DATASETS) -> list[list[str]]:
    return [[d, t] for d in datasets for t in TABLES]


def _comparable(table: pa.Table) -> pa.Table:
    """Rows in chunk order without the wall-clock columns (`chunked_at`, `embedded_at`)."""
    table = table.sort_by("chunk_id")
    return table.select([c for c in table.column_names if not c.endswith("_at")])


def _assert_same_table(got: pa.Table, want: pa.Table, what: str) -> None:
    got, want = _comparable(got), _comparable(want)
    assert got.num_rows == want.num_rows > 0, f"{what}: {got.num_rows} rows, expected {want.num_rows}"
    assert got.column_names == want.column_names, what
    for name in got.column_names:
        if name == "vector":
            # The same chunk embedded in another batch differs in the fourth decimal (bf16 kernels, padding), and
            # which batch a chunk's vector comes from depends on which day ran first: a day reuses the vectors of
            # chunks another day already embedded, and two workers run two days at once. Same direction, then.
            a, b = np.array(got.column(name).to_pylist()), np.array(want.column(name).to_pylist())
            cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            assert cos.min() > 0.9999, f"{what}: vectors differ (lowest cosine {cos.min():.6f} at row {cos.argmin()})"
        else:
            assert got.column(name).equals(want.column(name)), f"{what}: column {name} differs"


def _celery_executions(inst: dg.DagsterInstance, run_id: str) -> list[tuple[str, str, float]]:
    """(step key, worker name, timestamp) of every "Executing steps … in celery worker" event."""
    out = []
    for record in inst.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        event = record.dagster_event
        if event is None or event.engine_event_data is None or not event.step_key:
            continue
        meta = event.engine_event_data.metadata
        if "Celery worker" in meta:
            out.append((event.step_key, str(meta["Celery worker"].value).split("@")[0], record.timestamp))
    return out


def _step_events(inst: dg.DagsterInstance, run_id: str, kind: dg.DagsterEventType, step: str) -> list:
    return [r for r in inst.all_logs(run_id, of_type=kind) if r.step_key == step]


@pytest.fixture
def sample_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    install_sample_landing(Warehouse(data))
    return data


@pytest.fixture
def stack(tmp_path: Path, postgres: Postgres, redis_broker: Redis, sample_data: Path) -> Iterator[ScaleOutStack]:
    """deploy/ as shipped (4 h visibility timeout), two single-threaded workers."""
    redis_broker_flush(redis_broker)
    with scale_out_stack(tmp_path / "stack", postgres, redis_broker, sample_data, WORKERS, FAST_RESTORE) as s:
        yield s


@pytest.fixture
def kill_stack(tmp_path: Path, postgres: Postgres, redis_broker: Redis, sample_data: Path) -> Iterator[ScaleOutStack]:
    """The same stack with a short visibility timeout, so a killed worker's step comes back soon."""
    redis_broker_flush(redis_broker)
    with scale_out_stack(tmp_path / "stack", postgres, redis_broker, sample_data, WORKERS, KILL_CELERY) as s:
        yield s


def redis_broker_flush(server: Redis) -> None:
    """Each test starts with an empty broker: no message of an earlier stack is delivered."""
    import redis

    redis.Redis.from_url(server.url()).flushall()


def test_backfill_on_celery_workers_matches_in_process(stack: ScaleOutStack, tmp_path: Path) -> None:
    backfill_id = stack.launch_backfill(_keys(), BACKFILL_DAYS, title="scale-out test")

    # the reference, in this process with the default (in-process) executor, while the daemon works
    reference = Warehouse(tmp_path / "reference")
    install_sample_landing(reference)
    assets = [a for d in DATASETS for a in build_dataset_assets(get_dataset(d))]
    resources = {"warehouse": CodexWarehouse(data_dir=str(reference.root)), "embedding": EmbeddingSettings()}
    for day in BACKFILL_DAYS:
        result = dg.materialize(
            assets, partition_key=day, resources=resources, instance=dg.DagsterInstance.ephemeral(), raise_on_error=False
        )
        assert result.success, f"in-process reference run of {day} failed"

    backfill = stack.wait_backfill(backfill_id, BACKFILL_TIMEOUT_S)
    runs = stack.backfill_runs(backfill_id)
    assert backfill.status.value == "COMPLETED_SUCCESS", (backfill.status, [(r.run_id, r.status) for r in runs])
    assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)

    # every step ran in a Celery worker, and both workers took part
    with stack.instance() as inst:
        executed = [e for r in runs for e in _celery_executions(inst, r.run_id)]
        expected_steps = {f"{d}__{t}" for d in DATASETS for t in TABLES}
        expected_steps |= {f"{d}__chunks_{c}" for d in DATASETS for c in (UNIQUE_CHECK, ADDRESS_CHECK)}  # steps of their own
        assert {step for step, _, _ in executed} == expected_steps
        assert {worker for _, worker, _ in executed} == set(WORKERS), executed
        for key in _keys():
            records = inst.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=dg.AssetKey(key), asset_partitions=BACKFILL_DAYS), limit=100
            ).records
            assert sorted(r.partition_key for r in records) == BACKFILL_DAYS, key

    # the history is in PostgreSQL itself, not in a local SQLite file
    pg, db = stack.pg, stack.db
    run_rows = dict(pg.query(db, "SELECT run_id, status FROM runs"))
    assert {r.run_id for r in runs} <= set(run_rows) and all(run_rows[r.run_id] == "SUCCESS" for r in runs)
    (materialized,) = pg.query(
        db,
        "SELECT count(*) FROM event_logs WHERE dagster_event_type = 'ASSET_MATERIALIZATION' AND run_id = ANY(%s)",
        ([r.run_id for r in runs],),
    )
    assert materialized[0] == len(_keys()) * len(BACKFILL_DAYS)
    assert pg.query(db, "SELECT count(*) FROM bulk_actions WHERE key = %s", (backfill_id,)) == [(1,)]
    assert not list(stack.home.glob("*.db")) and not (stack.home / "history").exists(), "SQLite storage was used"

    # and the tables are those of the default in-process run
    distributed = Warehouse(stack.data_dir)
    for dataset in DATASETS:
        for day in BACKFILL_DAYS:
            date = dt.date.fromisoformat(day)
            for table in ("chunks", "embeddings"):
                _assert_same_table(distributed.read(dataset, table, date), reference.read(dataset, table, date), f"{dataset}/{table} {day}")


def test_worker_killed_mid_step_the_step_is_redelivered_and_a_rerun_duplicates_nothing(kill_stack: ScaleOutStack) -> None:
    stack = kill_stack
    keys = _keys(["narrative"])
    step = "narrative__embeddings"
    run_id = stack.submit_run(keys, KILL_DAY, tags={"codex/test": "sigkill"})

    # wait for a worker to take the embeddings step, then SIGKILL that worker (its whole process group)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    victim = None
    with stack.instance() as inst:
        while victim is None:
            taken = [w for s, w, _ in _celery_executions(inst, run_id) if s == step]
            if taken:
                victim = taken[0]
                break
            run = inst.get_run_by_id(run_id)
            assert run is not None and not run.is_finished, f"run ended before {step} started: {run and run.status}"
            assert time.monotonic() < deadline, f"{step} never started"
            time.sleep(0.2)
        stack.workers[victim].kill_group(signal.SIGKILL)
        killed_at = time.time()
        assert not _step_events(inst, run_id, dg.DagsterEventType.STEP_SUCCESS, step), (
            f"{step} finished before the kill landed: the test killed nothing mid-step"
        )
    stack.workers[victim].popen.wait(timeout=30)
    survivor = next(w for w in stack.workers if w != victim)

    run = stack.wait_run(run_id, KILL_VISIBILITY_S + RUN_TIMEOUT_S)
    with stack.instance() as inst:
        executions = [(w, t) for s, w, t in _celery_executions(inst, run_id) if s == step]
        assert run.status == dg.DagsterRunStatus.SUCCESS, (
            f"run {run_id} ended {run.status} after worker {victim} was killed; executions of {step}: {executions}\n"
            f"{stack.workers[survivor].log_tail()}"
        )
        # the killed attempt left no result; the step ran again, on the other worker, after the kill
        assert [w for w, _ in executions] == [victim, survivor], executions
        assert executions[1][1] > killed_at
        assert len(_step_events(inst, run_id, dg.DagsterEventType.STEP_SUCCESS, step)) == 1
        materialized = _step_events(inst, run_id, dg.DagsterEventType.ASSET_MATERIALIZATION, step)
        assert len(materialized) == 1, "the killed attempt must not have materialized anything"

    wh = Warehouse(stack.data_dir)
    day = dt.date.fromisoformat(KILL_DAY)
    chunks, first = wh.read("narrative", "chunks", day), wh.read("narrative", "embeddings", day)

    # a rerun of the whole partition completes on the surviving worker and duplicates nothing
    rerun_id = stack.submit_run(keys, KILL_DAY, tags={"codex/test": "rerun"})
    rerun = stack.wait_run(rerun_id, RUN_TIMEOUT_S)
    assert rerun.status == dg.DagsterRunStatus.SUCCESS, f"rerun {rerun_id} ended {rerun.status}"
    again = wh.read("narrative", "embeddings", day)
    ids = again.column("chunk_id").to_pylist()
    assert len(ids) == len(set(ids)) == chunks.num_rows
    assert set(ids) == set(wh.read("narrative", "chunks", day).column("chunk_id").to_pylist())
    _assert_same_table(again, first, "narrative/embeddings after the rerun")
    assert wh.read("narrative", "chunks", day).num_rows == chunks.num_rows
