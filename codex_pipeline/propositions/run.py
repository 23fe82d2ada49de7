"""The propositions and proposition-embeddings steps of a run, end to end, as library calls.

For each day: extract (cached, cost-capped: :func:`~.step.extract_day`), check the
contract, publish the partition or keep it aside in ``propositions_quarantine/`` (a
broken partition is never embedded), write the rejects, and say when the cost cap
stopped extraction. The Dagster assets only turn the returned value into a
materialization, its check result and log lines.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from codex_pipeline.embeddings import Embedder
from codex_pipeline.propositions.base import Extractor
from codex_pipeline.propositions.contract import validate_propositions
from codex_pipeline.propositions.cost import Budget, CostMeter
from codex_pipeline.propositions.embed import embed_propositions_day
from codex_pipeline.propositions.staleness import extractor_stamp
from codex_pipeline.propositions.step import REJECT_STAGE, extract_day
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, QUARANTINE_TABLE, TABLE
from codex_pipeline.warehouse.catalog import ensure_views
from codex_pipeline.warehouse.storage import Warehouse


@dataclass
class PropositionsRun:
    """What a run of the propositions step did, over all its days."""

    totals: dict[str, float] = field(default_factory=dict)
    per_day: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: list[dict[str, object]] = field(default_factory=list)  # contract failures, with their partition
    errors: list[str] = field(default_factory=list)  # one line per partition whose contract failed
    warnings: list[str] = field(default_factory=list)  # rejects and cost-cap stops
    stopped: list[str] = field(default_factory=list)  # the cost cap's messages
    run_cost_usd: float = 0.0
    views_created: list[str] = field(default_factory=list)


def run_propositions(wh: Warehouse, dataset: str, days: Iterable[dt.date], extractor: Extractor, run_label: str,
                     max_usd_per_run: float | None, max_usd_per_partition: float | None) -> PropositionsRun:
    """Extract, check and publish (or quarantine) each day's propositions; one run-wide cost meter."""
    out = PropositionsRun()
    run_meter = CostMeter(f"run {run_label}", max_usd_per_run)
    for day in days:
        budget = Budget([run_meter, CostMeter(f"{dataset} {day}", max_usd_per_partition)])
        counts = _one_day(wh, dataset, day, extractor, budget, out)
        out.per_day[day.isoformat()] = counts
        for k, v in counts.items():
            out.totals[k] = out.totals.get(k, 0) + v
    out.run_cost_usd = run_meter.spent_usd
    out.views_created = ensure_views(wh, [(dataset, TABLE), (dataset, "rejects"), (dataset, QUARANTINE_TABLE)])
    return out


def _one_day(wh: Warehouse, dataset: str, day: dt.date, extractor: Extractor, budget: Budget,
             out: PropositionsRun) -> dict[str, float]:
    done = extract_day(wh, dataset, day, extractor, budget)
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
    else:  # never embed a broken partition: unpublish it and keep it aside for inspection
        wh.remove(dataset, TABLE, day)
        wh.write(done.table, dataset, QUARANTINE_TABLE, day, stamp=footer)
        out.failures += [{**f, "partition": day.isoformat()} for f in report.failures]
        out.errors.append(f"propositions contract failed for {dataset} {day}: {report.failed_checks}")
    if done.rejects.num_rows or wh.partition_path(dataset, "rejects", day, REJECT_STAGE).exists():
        wh.write(done.rejects, dataset, "rejects", day, part=REJECT_STAGE)
    if done.rejects.num_rows:
        out.warnings.append(f"{done.rejects.num_rows} chunk(s) of {dataset} {day} rejected; see codex.{dataset}_rejects")
    if done.stopped:
        msg = (f"{dataset} {day}: {done.stopped}; {done.counts.deferred} chunk(s) not extracted. A rerun continues "
               "where this stopped (extracted chunks are cached); raise max_usd_per_run / max_usd_per_partition "
               "to go further")
        out.stopped.append(msg)
        out.warnings.append(msg)
    return done.counts.as_dict()


@dataclass
class PropositionVectorsRun:
    totals: dict[str, int]
    views_created: list[str]


def run_proposition_embeddings(wh: Warehouse, dataset: str, days: Iterable[dt.date],
                               embedder: Embedder) -> PropositionVectorsRun:
    """Embed each day's contract-checked propositions (vectors reused by exact text, model and version)."""
    totals: dict[str, int] = {}
    for day in days:
        for k, v in embed_propositions_day(wh, dataset, day, embedder).counts.as_dict().items():
            totals[k] = totals.get(k, 0) + v
    return PropositionVectorsRun(totals, ensure_views(wh, [(dataset, EMBEDDINGS_TABLE)]))
