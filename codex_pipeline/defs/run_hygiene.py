"""Dead runs give back what they hold: their status and their concurrency-pool slots.

A run whose process is killed outright (``kill -9``, the OOM killer, a reboot)
cannot report its own end: it stays STARTED and its steps keep their slots in
the ``embeddings`` pool, so later runs wait for them forever. Dagster's own run
monitoring does not catch this for Codex's runs: health checks need a run
launcher that supports them (the default launcher and ``execute_in_process``,
which ``codex materialize`` uses, do not), and ``free_slots_after_run_end_seconds``
frees only the slots of runs that already *ended*. ``max_runtime_seconds``
eventually cancels such a run, hours later.

:func:`sweep_dead_runs` closes the gap. A STARTED run is dead when no process it
ran in is alive any more: the run-worker and step processes recorded (``pid``)
on its ``RUN_START`` / ``STEP_START`` events, plus the ``codex/pid`` tag that
:func:`local_run_tags` puts on CLI runs. A process counts only on the host that
ran it (the ``codex/host`` tag; a run without it only on a SQLite instance,
which one machine alone can use) and only if it started before the run's event
did (a recycled pid is not the run). A NOT_STARTED run is judged the same way when
a CLI process created it (its ``codex/pid`` tag): one whose storage failed before
the run could start (a full ``$DAGSTER_HOME``) and that could not close it then.
The sweep marks a dead run FAILURE with a message saying so and frees its slots; it also frees slots still held by runs
that ended a while ago or were deleted. :data:`run_hygiene_sensor` runs it every
minute under the daemon; the CLI calls it before starting runs.

A process that ran a run in itself stays killable: :func:`sigterm_kept`.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.warehouse.storage import sweep_temp_files

log = logging.getLogger(__name__)

HOST_TAG = "codex/host"
PID_TAG = "codex/pid"
#: Slots of a run that ended this long ago are freed (Dagster's daemon does the same
#: with ``run_monitoring.free_slots_after_run_end_seconds``; the CLI has no daemon).
FINISHED_GRACE_SECONDS = 60.0
#: How much later than its run's event a process may seem to have started and still
#: be the run's (``/proc`` start times are exact to 10 ms, boot time to ~1 s).
_START_SLACK_SECONDS = 2.0
_PROCESS_EVENTS = {dg.DagsterEventType.RUN_START, dg.DagsterEventType.STEP_START}


def local_run_tags() -> dict[str, str]:
    """Tags that let a sweep on another process tell whether this run's process is alive.

    For runs executed in this process (``execute_in_process``, ``dg.materialize``).
    """
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


@contextmanager
def sigterm_kept() -> Iterator[None]:
    """Give SIGTERM back its handler after runs executed in this process.

    When an in-process run ends, Dagster points SIGTERM at whatever handles SIGINT
    (``dagster._utils.interrupts``). A process started in the background from a shell
    (``codex materialize … &``, ``nohup``) has SIGINT ignored, so from then on ``kill``
    would be ignored too: by this process, and by every process it starts afterwards,
    since an ignored signal stays ignored across ``exec``.
    """
    if threading.current_thread() is not threading.main_thread():
        yield  # Dagster changes handlers only on the main thread (and only it may)
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None:  # None: set outside Python, nothing to put back
            signal.signal(signal.SIGTERM, before)


def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def process_started_at(pid: int) -> float | None:
    """The process's start (epoch seconds) while it runs; None when it is gone or a zombie.

    Linux reads ``/proc``; elsewhere the start is unknown, reported as ``-inf`` for a
    live process (alive, start not checked).
    """
    if pid <= 0:
        return None
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        if fields[0] in ("Z", "X", "x"):  # a zombie has finished; only its exit status is left
            return None
        boot = _boot_time()
        if boot is None:
            return float("-inf")
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # someone else's live process
        pass
    return float("-inf")


def _is_single_host(instance: dg.DagsterInstance) -> bool:
    """True when every run of ``instance`` ran on this machine (SQLite or in-memory storage)."""
    if instance.is_ephemeral:
        return True
    try:
        from dagster._core.storage.runs import SqliteRunStorage
    except ImportError:  # pragma: no cover - moved in another Dagster version: trust tags only
        return False
    return isinstance(instance.run_storage, SqliteRunStorage)


@dataclass
class RunProcesses:
    """The processes a run ran in: ``pid -> the earliest time it was seen working for the run``."""

    host: str | None
    pids: dict[int, float] = field(default_factory=dict)

    def alive(self) -> list[int]:
        """The pids that are still the run's processes (not gone, not recycled)."""
        out = []
        for pid, seen in self.pids.items():
            started = process_started_at(pid)
            if started is not None and started <= seen + _START_SLACK_SECONDS:
                out.append(pid)
        return out


def run_processes(instance: dg.DagsterInstance, record: dg.RunRecord, single_host: bool) -> RunProcesses:
    """The processes ``record``'s run ran in: the ``codex/pid`` tag's, then those of its RUN_START / STEP_START events.

    The host is the ``codex/host`` tag, else this machine when ``single_host``, else None (not judged).
    """
    run = record.dagster_run
    host = run.tags.get(HOST_TAG) or (socket.gethostname() if single_host else None)
    procs = RunProcesses(host)
    tagged = run.tags.get(PID_TAG, "")
    if tagged.isdigit():  # the process existed before its run was created
        procs.pids[int(tagged)] = record.create_timestamp.timestamp()
    for entry in instance.all_logs(run.run_id, of_type=_PROCESS_EVENTS):
        pid = entry.dagster_event.pid if entry.dagster_event else None
        if pid:
            procs.pids[pid] = min(procs.pids.get(pid, entry.timestamp), entry.timestamp)
    return procs


@dataclass
class SweepReport:
    """What :func:`sweep_dead_runs` did, as run ids; ``str()`` is the one-line summary the sensor logs."""

    failed: list[str] = field(default_factory=list)  # STARTED runs found dead, now FAILURE
    freed: list[str] = field(default_factory=list)  # runs whose pool slots were released
    skipped: list[str] = field(default_factory=list)  # STARTED runs on another host / without pids

    def __str__(self) -> str:
        return (
            f"{len(self.failed)} dead run(s) marked failed, slots of {len(self.freed)} run(s) freed"
            + (f", {len(self.skipped)} started run(s) on other hosts not checked" if self.skipped else "")
        )


def _dead_message(run_id: str, procs: RunProcesses) -> str:
    pids = ", ".join(str(p) for p in sorted(procs.pids))
    return (
        f"Run {run_id} was marked failed by the codex run-hygiene sweep: its process(es) {pids} on "
        f"{procs.host} are gone (killed or crashed) without reporting an end. Its concurrency-pool slots "
        "were freed; vectors already checkpointed are reused when the partition is rerun."
    )


def sweep_dead_runs(
    instance: dg.DagsterInstance,
    *,
    finished_grace_seconds: float = FINISHED_GRACE_SECONDS,
    run_ids: Iterable[str] | None = None,
) -> SweepReport:
    """Mark STARTED runs whose processes are gone FAILURE, and free pool slots of ended runs.

    ``run_ids`` limits the first part to those runs (all STARTED runs by default).
    Safe to run anywhere and any time: a run with a live process, or one on
    another host, is left alone.
    """
    report = SweepReport()
    _fail_dead_runs(instance, report, run_ids)
    if instance.event_log_storage.supports_global_concurrency_limits:
        _free_slots(instance, report, finished_grace_seconds)
    return report


def _fail_dead_runs(instance: dg.DagsterInstance, report: SweepReport, run_ids: Iterable[str] | None) -> None:
    """STARTED runs, and NOT_STARTED runs a CLI process created (its ``codex/pid`` tag), whose processes are gone.

    A NOT_STARTED run without the tag is waiting for a launcher (a queue, the daemon): not ours to judge.
    """
    here = socket.gethostname()
    single_host = _is_single_host(instance)
    ids = list(run_ids) if run_ids else None
    records = [*instance.get_run_records(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED], run_ids=ids)),
               *instance.get_run_records(filters=dg.RunsFilter(
                   statuses=[dg.DagsterRunStatus.NOT_STARTED], run_ids=ids, tags={HOST_TAG: here}))]
    for record in records:
        run = record.dagster_run
        if run.status == dg.DagsterRunStatus.NOT_STARTED and PID_TAG not in run.tags:
            continue
        procs = run_processes(instance, record, single_host)
        if procs.host != here or not procs.pids:
            report.skipped.append(run.run_id)
            continue
        if procs.alive():
            continue
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.status != run.status:
            continue  # it ended (or started) on its own meanwhile
        message = _dead_message(run.run_id, procs)
        log.warning(message)
        instance.report_run_failed(current, message)
        report.failed.append(run.run_id)


def fail_runs_of_this_process(instance: dg.DagsterInstance, why: str) -> list[str]:
    """Mark FAILURE the unfinished runs this process created (:func:`local_run_tags`), e.g. after a storage error.

    Raises what the instance raises when it still cannot write; the next sweep, from
    another process, closes them then.
    """
    tags = local_run_tags()
    unfinished = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    closed = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=unfinished, tags=tags)):
        instance.report_run_failed(run, f"Run {run.run_id} was marked failed by codex: {why}")
        closed.append(run.run_id)
    return closed


def _free_slots(instance: dg.DagsterInstance, report: SweepReport, finished_grace_seconds: float) -> None:
    """Free the pool slots of runs that were deleted, just failed by the sweep, or ended a while ago."""
    storage = instance.event_log_storage
    now = time.time()
    for run_id in sorted(storage.get_concurrency_run_ids()):
        holder = instance.get_run_record_by_id(run_id)
        if holder is None or run_id in report.failed or (
            holder.dagster_run.is_finished
            and (holder.end_time or holder.update_timestamp.timestamp()) + finished_grace_seconds <= now
        ):
            storage.free_concurrency_slots_for_run(run_id)
            report.freed.append(run_id)


@dg.sensor(
    name="codex_run_hygiene_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Marks STARTED runs whose processes are gone (kill -9, OOM, reboot) as failed and frees the "
        "concurrency-pool slots they hold, so later embedding runs are not blocked; removes temp files "
        "that killed writers left in the data directory (untouched for an hour)."
    ),
)
def run_hygiene_sensor(context: dg.SensorEvaluationContext, warehouse: CodexWarehouse) -> dg.SkipReason:  # noqa: D103
    swept = sweep_dead_runs(context.instance)
    if swept.failed or swept.freed:
        context.log.warning(f"run hygiene: {swept} (failed: {swept.failed}, freed: {swept.freed})")
    temps = sweep_temp_files(warehouse.get().root)
    if temps:
        context.log.warning(f"run hygiene: removed {len(temps)} temp file(s) left by killed writers: {temps[:5]}")
    return dg.SkipReason(f"{swept}; {len(temps)} stale temp file(s) removed")
