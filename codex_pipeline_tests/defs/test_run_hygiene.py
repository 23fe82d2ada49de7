"""A run killed with SIGKILL gives back its pool slot and is marked failed; the next run completes.

The kill is real: a child process runs the narrative dataset on a SQLite instance
(``$DAGSTER_HOME`` in a temp folder, pool limit 1) and is SIGKILLed while its
embeddings step holds the ``embeddings`` slot.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent

from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.defs.run_hygiene import HOST_TAG, PID_TAG, run_hygiene_sensor, sweep_dead_runs
from codex_pipeline.pipeline.embeddings_day import checkpoint_for
from codex_pipeline.settings import EnvName
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.embeddings.pausing import sample_texts

POOL = "embeddings"
DAY = "2026-11-24"
STEP = "narrative__embeddings"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A DAGSTER_HOME with SQLite storage and one slot in every pool."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nconcurrency:\n  pools:\n    default_limit: 1\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture
def instance(home: Path) -> Iterator[dg.DagsterInstance]:
    with dg.DagsterInstance.get() as inst:
        yield inst


def _claims(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    return [(s.run_id, s.step_key) for s in instance.event_log_storage.get_concurrency_info(POOL).claimed_slots]


def _process(alive: bool) -> subprocess.Popen[bytes]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if not alive:
        p.kill()
        p.wait()
    return p


def _started_run(instance: dg.DagsterInstance, tags: dict[str, str], slot: bool = True) -> str:
    run = instance.add_run(dg.DagsterRun(job_name="codex_all", run_id=str(uuid.uuid4()),
                                         status=dg.DagsterRunStatus.STARTED, tags=tags))
    if slot:
        instance.event_log_storage.claim_concurrency_slot(POOL, run.run_id, STEP)
    return run.run_id


def _status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus:
    run = instance.get_run_by_id(run_id)
    assert run is not None
    return run.status


def test_sweep_fails_only_runs_whose_processes_are_gone(instance: dg.DagsterInstance) -> None:
    instance.event_log_storage.set_concurrency_slots(POOL, 10)
    here = socket.gethostname()
    live, dead = _process(alive=True), _process(alive=False)
    try:
        alive_run = _started_run(instance, {HOST_TAG: here, PID_TAG: str(live.pid)})
        dead_run = _started_run(instance, {HOST_TAG: here, PID_TAG: str(dead.pid)})
        foreign = _started_run(instance, {HOST_TAG: here + "-elsewhere", PID_TAG: str(dead.pid)})
        # a run created before its "process" started: the pid was recycled, the run's process is gone
        recycled = _started_run(instance, {HOST_TAG: here})
        created = instance.get_run_record_by_id(recycled).create_timestamp.timestamp()
        while time.time() < created + 3:
            time.sleep(0.2)
        late = _process(alive=True)
        instance.add_run_tags(recycled, {PID_TAG: str(late.pid)})
        # untagged (a run the daemon launched): the pid on its RUN_START event counts on a SQLite instance
        untagged = instance.add_run(dg.DagsterRun(job_name="codex_all", run_id=str(uuid.uuid4()),
                                                  status=dg.DagsterRunStatus.NOT_STARTED)).run_id
        instance.report_dagster_event(DagsterEvent("PIPELINE_START", "codex_all", pid=dead.pid), untagged)
        assert _status(instance, untagged) == dg.DagsterRunStatus.STARTED
        instance.event_log_storage.claim_concurrency_slot(POOL, untagged, STEP)
        ended = _started_run(instance, {HOST_TAG: here, PID_TAG: str(live.pid)})
        instance.report_run_failed(instance.get_run_by_id(ended), "ended, but its slot was never given back")
        instance.event_log_storage.claim_concurrency_slot(POOL, "deleted-run", STEP)

        report = sweep_dead_runs(instance, finished_grace_seconds=3600)
        assert sorted(report.failed) == sorted([dead_run, recycled, untagged])
        assert report.skipped == [foreign]
        assert sorted(report.freed) == sorted([dead_run, recycled, untagged, "deleted-run"])
        for run_id in (dead_run, recycled, untagged):
            assert _status(instance, run_id) == dg.DagsterRunStatus.FAILURE
        assert _status(instance, alive_run) == _status(instance, foreign) == dg.DagsterRunStatus.STARTED
        assert sorted(r for r, _ in _claims(instance)) == sorted([alive_run, foreign, ended])
        (failure,) = instance.all_logs(dead_run, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert f"its process(es) {dead.pid} on {here} are gone" in (failure.dagster_event.message or "")

        again = sweep_dead_runs(instance, finished_grace_seconds=0)  # the ended run's slot, once past the grace
        assert again.failed == [] and again.freed == [ended]
        assert sorted(r for r, _ in _claims(instance)) == sorted([alive_run, foreign])
    finally:
        for p in (live, late) if "late" in locals() else (live,):
            p.kill()
            p.wait()


def _land_narrative(wh: Warehouse, docs: int) -> None:
    folder = wh.landing_dir("narrative", dt.date.fromisoformat(DAY))
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(sample_texts(docs, words=60, seed=11)):
        (folder / f"notice-{i:03d}.txt").write_text(f"Public notice {i}\n\n{text}\n")


def _child(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "codex_pipeline_tests.defs.run_child", DAY, *args],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow  # Dagster runs in child processes, killed and rerun (~10-20 s)
def test_sigkilled_run_frees_its_slot_and_the_next_run_resumes(
    home: Path, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    wh = Warehouse(tmp_path / "data")
    _land_narrative(wh, docs=40)  # 40 one-window chunks: 10 batches of 4
    marker = tmp_path / "paused"
    env = {**os.environ, "DAGSTER_HOME": str(home), "CODEX_DATA_DIR": str(wh.root),
           EnvName.CHECKPOINT_SECONDS: "0", EnvName.CHECKPOINT_INPUTS: "4096", "OMP_NUM_THREADS": "1"}

    victim = _child(["3", str(marker)], env)  # stops for good after 3 batches (12 vectors written)
    try:
        deadline = time.monotonic() + 900
        while not (marker.exists() and _claims(instance)):
            assert victim.poll() is None, f"the run ended early:\n{victim.communicate()[0]}"
            assert time.monotonic() < deadline, "the embeddings step never claimed its slot"
            time.sleep(0.2)
        victim.send_signal(signal.SIGKILL)
    finally:
        victim.kill()
        victim.communicate()
    assert victim.returncode == -signal.SIGKILL

    (run,) = instance.get_runs(dg.RunsFilter(tags={PID_TAG: str(victim.pid)}))
    # the fault: the dead run still holds the only slot and looks STARTED
    assert run.status == dg.DagsterRunStatus.STARTED and _claims(instance) == [(run.run_id, STEP)]
    day = dt.date.fromisoformat(DAY)
    assert checkpoint_for(wh, "narrative", day).rows() == 12

    skip = run_hygiene_sensor(dg.build_sensor_context(instance=instance, resources={"warehouse": CodexWarehouse(data_dir=str(wh.root))}))
    assert isinstance(skip, dg.SkipReason) and "1 dead run(s) marked failed" in (skip.skip_message or "")
    assert _status(instance, run.run_id) == dg.DagsterRunStatus.FAILURE
    assert _claims(instance) == []
    assert instance.event_log_storage.get_concurrency_info(POOL).pending_step_count == 0

    rerun = _child([], env)
    out, _ = rerun.communicate(timeout=900)  # a slot still held would block here, not pass
    assert rerun.returncode == 0, out
    assert "sweep: 0 dead run(s) marked failed" in out
    event = instance.get_latest_materialization_event(dg.AssetKey(["narrative", "embeddings"]))
    assert event is not None and event.asset_materialization is not None
    meta = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    chunks = wh.read("narrative", "chunks", day).num_rows
    assert chunks == 40
    assert (meta["recovered_from_checkpoint"], meta["embedded"], meta["inputs"]) == (12, chunks - 12, chunks)
    emb = wh.read("narrative", "embeddings", day)
    assert emb.num_rows == chunks and set(emb.column("chunk_id").to_pylist()) == set(
        wh.read("narrative", "chunks", day).column("chunk_id").to_pylist())
    assert not checkpoint_for(wh, "narrative", day).files()
    assert _claims(instance) == []


_RUN_THEN_WAIT = """
import sys, time
import dagster as dg
from codex_pipeline.defs.run_hygiene import sigterm_kept

@dg.asset
def tiny() -> int:
    return 1

if sys.argv[1] == "kept":
    with sigterm_kept():
        assert dg.materialize([tiny]).success
else:
    assert dg.materialize([tiny]).success
print("ran", flush=True)
time.sleep(120)
"""


def _background_run(mode: str) -> subprocess.Popen[str]:
    """A process started as a shell starts a background job (SIGINT ignored) that ran a run in itself."""
    p = subprocess.Popen([sys.executable, "-c", _RUN_THEN_WAIT, mode], stdout=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert p.stdout is not None and p.stdout.readline() == "ran\n"
    p.send_signal(signal.SIGTERM)
    return p


@pytest.mark.slow  # Dagster runs in child processes, killed and rerun (~10-20 s)
def test_a_backgrounded_process_that_ran_a_run_still_dies_on_sigterm() -> None:
    kept = _background_run("kept")
    assert kept.wait(timeout=60) == -signal.SIGTERM
    # without it, Dagster leaves SIGTERM ignored (pointed at SIGINT's handler) and `kill` does nothing
    bare = _background_run("bare")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            bare.wait(timeout=3)
    finally:
        bare.kill()
        bare.wait()
