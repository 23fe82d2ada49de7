"""The propositions step (seed 002): each day's contract-checked chunks get their atomic statements.

For each day: extract (cached, cost-capped: :func:`~codex_pipeline.propositions.step.extract_day`),
check the propositions contract, publish the partition or keep it aside in
``propositions_quarantine/`` (a broken partition is never embedded), write the rejects,
and say when the cost cap stopped extraction. One cost meter spans the run, one more
each day.
"""

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import PropositionsResult, StepLog
from codex_pipeline.propositions.base import Extractor
from codex_pipeline.propositions.contract import validate_propositions
from codex_pipeline.propositions.cost import Budget, CostMeter
from codex_pipeline.propositions.staleness import extractor_stamp
from codex_pipeline.propositions.step import REJECT_STAGE, PartitionPropositions, extract_day
from codex_pipeline.propositions.table import QUARANTINE_TABLE, TABLE
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse


@dataclass
class _Run:
    """What the days of a run gathered so far."""

    totals: dict[str, float] = field(default_factory=dict)
    by_partition: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: list[dict[str, object]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)


def run_propositions(
    spec: DatasetSpec,
    wh: Warehouse,
    days: Sequence[dt.date],
    extractor: Extractor,
    run_label: str,
    max_usd_per_run: float | None = None,
    max_usd_per_partition: float | None = None,
    log: StepLog | None = None,
) -> PropositionsResult:
    """Extract, check and publish (or quarantine) each day's propositions.

    ``run_label`` names the run's cost meter; the two caps (US dollars, None: no cap) stop
    extraction for the run and for each day, a rerun continuing from the cache.
    """
    rec = Recorder(log)
    run, run_meter = _Run(), CostMeter(f"run {run_label}", max_usd_per_run)
    for day in days:
        budget = Budget([run_meter, CostMeter(f"{spec.name} {day}", max_usd_per_partition)])
        counts = _one_day(wh, spec.name, day, extractor, budget, run, rec)
        run.by_partition[day.isoformat()] = counts
        for k, v in counts.items():
            run.totals[k] = run.totals.get(k, 0) + v
    created = ensure_views(wh, [(spec.name, TABLE), (spec.name, "rejects"), (spec.name, QUARANTINE_TABLE)])
    describe = getattr(extractor, "describe", None)
    return PropositionsResult(
        spec.name, tuple(days), extractor.name, extractor.version, extractor.prompt_version,
        describe() if describe else {"extractor": extractor.name}, run.totals, run.by_partition,
        failures=tuple(run.failures), stopped=tuple(run.stopped), run_cost_usd=run_meter.spent_usd,
        views_created=tuple(created), errors=tuple(run.errors), warnings=tuple(rec.warnings),
    )


def _one_day(wh: Warehouse, dataset: str, day: dt.date, extractor: Extractor, budget: Budget, run: _Run,
             rec: Recorder) -> dict[str, float]:
    done = extract_day(wh, dataset, day, extractor, budget)
    _publish(wh, dataset, day, extractor, done, run, rec)
    if done.rejects.num_rows or wh.partition_path(dataset, "rejects", day, REJECT_STAGE).exists():
        wh.write(done.rejects, dataset, "rejects", day, part=REJECT_STAGE)
    if done.rejects.num_rows:
        rec.warning(f"{done.rejects.num_rows} chunk(s) of {dataset} {day} rejected; see codex.{dataset}_rejects")
    if done.stopped:
        msg = (f"{dataset} {day}: {done.stopped}; {done.counts.deferred} chunk(s) not extracted. A rerun continues "
               "where this stopped (extracted chunks are cached); raise max_usd_per_run / max_usd_per_partition "
               "to go further")
        run.stopped.append(msg)
        rec.warning(msg)
    return done.counts.as_dict()


def _publish(wh: Warehouse, dataset: str, day: dt.date, extractor: Extractor, done: PartitionPropositions, run: _Run,
             rec: Recorder) -> None:
    """Publish the day's propositions when they meet the contract, else unpublish the day and keep them aside."""
    chunks, raw = wh.read(dataset, "chunks", day), wh.read(dataset, "raw", day)
    report = validate_propositions(
        done.table,
        dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("doc_id").to_pylist())),
        dict(zip(raw.column("doc_id").to_pylist(), raw.column("canonical_text").to_pylist())),
    )
    chunking = wh.stamp(wh.partition_path(dataset, "chunks", day)).get("chunking_version", "unknown")
    footer = {"chunking_version": chunking,
              "extractor": extractor_stamp(extractor.name, extractor.version, extractor.prompt_version)}
    if report.passed:
        wh.write(done.table, dataset, TABLE, day, stamp=footer)
        wh.remove(dataset, QUARANTINE_TABLE, day)
        return
    # never embed a broken partition: unpublish it and keep it aside for inspection
    wh.remove(dataset, TABLE, day)
    wh.write(done.table, dataset, QUARANTINE_TABLE, day, stamp=footer)
    run.failures += [{**f, "partition": day.isoformat()} for f in report.failures]
    error = f"propositions contract failed for {dataset} {day}: {report.failed_checks}"
    run.errors.append(error)
    rec.error(error)
