"""`[dataset, propositions]` → `[dataset, proposition_embeddings]` for the datasets that opt in (seed 002).

Downstream of the contract-checked chunks on the same daily partitions. The
propositions contract is a blocking check: a partition that breaks it is kept aside
in `propositions_quarantine/` and never embedded. The extractor is the
`propositions` resource (offline by default; `kind="openai"` for gpt-4o-mini, with
cost caps per run and per partition).
"""

import datetime as dt

import dagster as dg

from codex_pipeline.datasets.registry import DATASETS, DatasetSpec
from codex_pipeline.defs.partitions import daily_partitions
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.propositions import configured_extractor_kind, make_extractor
from codex_pipeline.propositions.contract import validate_propositions
from codex_pipeline.propositions.cost import Budget, CostMeter, price_table
from codex_pipeline.propositions.embed import embed_propositions_day
from codex_pipeline.propositions.staleness import extractor_stamp
from codex_pipeline.propositions.step import REJECT_STAGE, extract_day
from codex_pipeline.propositions.table import EMBEDDINGS_TABLE, QUARANTINE_TABLE, TABLE
from codex_pipeline.warehouse.storage import ensure_views

CONTRACT_CHECK = "propositions_contract"
EMBEDDINGS_POOL = "embeddings"
BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=5)


class PropositionSettings(dg.ConfigurableResource):
    """How propositions are extracted.

    ``kind="offline"`` (default, ``$CODEX_PROPOSITION_EXTRACTOR``): deterministic, no
    model, exact spans. ``kind="openai"``: ``openai_model`` through the chat API; the
    key only from ``OPENAI_API_KEY``. ``prices`` lays ``{model: {"input_per_1m",
    "output_per_1m"}}`` (USD) over the built-in table; ``max_usd_per_run`` and
    ``max_usd_per_partition`` cap spending (``None``: no cap).
    """

    kind: str = "offline"
    openai_model: str = "gpt-4o-mini"
    openai_base_url: str | None = None
    openai_max_concurrency: int = 4
    openai_max_batch_chunks: int = 8
    openai_timeout_s: float = 120.0
    openai_max_retries: int = 6
    openai_backoff_base_s: float = 0.5
    openai_max_backoff_s: float = 30.0
    prices: dict[str, dict[str, float]] = {}
    max_usd_per_run: float | None = 5.0
    max_usd_per_partition: float | None = 1.0

    def build(self):
        if self.kind == "offline":
            return make_extractor("offline")
        return make_extractor(
            self.kind,
            model=self.openai_model,
            base_url=self.openai_base_url,
            max_concurrency=self.openai_max_concurrency,
            max_batch_chunks=self.openai_max_batch_chunks,
            timeout=self.openai_timeout_s,
            prices=price_table(self.prices),
            retry={
                "max_retries": self.openai_max_retries,
                "backoff_base": self.openai_backoff_base_s,
                "max_delay": self.openai_max_backoff_s,
            },
        )


def _chunking_version(wh, dataset: str, day: dt.date) -> str:
    return wh.stamp(wh.partition_path(dataset, "chunks", day)).get("chunking_version", "unknown")


def build_propositions_asset(spec: DatasetSpec) -> dg.AssetsDefinition:
    key = dg.AssetKey([spec.name, TABLE])

    @dg.asset(
        key=key,
        deps=[dg.AssetKey([spec.name, "chunks"])],
        group_name=spec.name,
        partitions_def=daily_partitions,
        backfill_policy=BACKFILL,
        kinds={"parquet", "duckdb"},
        description=(
            f"Atomic statements of every contract-checked {spec.name} chunk (seed 002), `codex.{spec.name}_propositions`: "
            "each with its parent chunk, exact cl100k tokens and the canonical-text spans it rests on. Cached by the "
            "parent's content hash, extractor, version and prompt version."
        ),
        metadata={"dataset": spec.name},
        check_specs=[
            dg.AssetCheckSpec(
                CONTRACT_CHECK,
                asset=key,
                blocking=True,
                description="pandera propositions contract: minted ids, exact cl100k counts, dense ordinals, parents in "
                "the partition, spans inside the document (offline statements exactly their slices).",
            )
        ],
    )
    def propositions(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, propositions: PropositionSettings
    ) -> dg.MaterializeResult:
        wh = warehouse.get()
        extractor = propositions.build()
        run_meter = CostMeter(f"run {context.run.run_id[:8]}", propositions.max_usd_per_run)
        stamp = extractor_stamp(extractor.name, extractor.version, extractor.prompt_version)
        totals: dict[str, float] = {}
        per_day: dict[str, dict[str, float]] = {}
        failures: list[dict[str, object]] = []
        stopped: list[str] = []
        for pk in context.partition_keys:
            day = dt.date.fromisoformat(pk)
            budget = Budget([run_meter, CostMeter(f"{spec.name} {pk}", propositions.max_usd_per_partition)])
            out = extract_day(wh, spec.name, day, extractor, budget)
            chunks = wh.read(spec.name, "chunks", day)
            raw = wh.read(spec.name, "raw", day)
            report = validate_propositions(
                out.table,
                dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("doc_id").to_pylist())),
                dict(zip(raw.column("doc_id").to_pylist(), raw.column("canonical_text").to_pylist())),
            )
            footer = {"chunking_version": _chunking_version(wh, spec.name, day), "extractor": stamp}
            if report.passed:
                wh.write(out.table, spec.name, TABLE, day, stamp=footer)
                wh.remove(spec.name, QUARANTINE_TABLE, day)
            else:  # never embed a broken partition: unpublish it and keep it aside for inspection
                wh.remove(spec.name, TABLE, day)
                wh.write(out.table, spec.name, QUARANTINE_TABLE, day, stamp=footer)
                failures += [{**f, "partition": pk} for f in report.failures]
                context.log.error(f"propositions contract failed for {spec.name} {pk}: {report.failed_checks}")
            if out.rejects.num_rows or wh.partition_path(spec.name, "rejects", day, REJECT_STAGE).exists():
                wh.write(out.rejects, spec.name, "rejects", day, part=REJECT_STAGE)
            if out.rejects.num_rows:
                context.log.warning(f"{out.rejects.num_rows} chunk(s) of {spec.name} {pk} rejected; see codex.{spec.name}_rejects")
            if out.stopped:
                msg = (f"{spec.name} {pk}: {out.stopped}; {out.counts.deferred} chunk(s) not extracted. A rerun continues "
                       "where this stopped (extracted chunks are cached); raise max_usd_per_run / max_usd_per_partition "
                       "to go further")
                stopped.append(msg)
                context.log.warning(msg)
            counts = out.counts.as_dict()
            per_day[pk] = counts
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
        created = ensure_views(wh, [(spec.name, TABLE), (spec.name, "rejects"), (spec.name, QUARANTINE_TABLE)])
        describe = getattr(extractor, "describe", None)
        return dg.MaterializeResult(
            metadata={
                **{k: (round(v, 6) if k == "cost_usd" else int(v)) for k, v in totals.items()},
                "extractor": extractor.name,
                "extractor_version": extractor.version,
                "prompt_version": extractor.prompt_version,
                "extractor_config": dg.MetadataValue.json(describe() if describe else {"extractor": extractor.name}),
                "cost_cap_reached": bool(stopped),
                "cost_cap_message": "; ".join(stopped) or "not reached",
                "run_cost_usd": round(run_meter.spent_usd, 6),
                "by_partition": dg.MetadataValue.json(per_day),
                "views_created": created,
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name=CONTRACT_CHECK,
                    passed=not failures,
                    severity=dg.AssetCheckSeverity.ERROR,
                    metadata={"failed_checks": sorted({str(f["check"]) for f in failures}), "failures": dg.MetadataValue.json(failures)},
                )
            ],
        )

    return propositions


def build_proposition_embeddings_asset(spec: DatasetSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=dg.AssetKey([spec.name, EMBEDDINGS_TABLE]),
        deps=[dg.AssetKey([spec.name, TABLE])],
        group_name=spec.name,
        partitions_def=daily_partitions,
        backfill_policy=BACKFILL,
        pool=EMBEDDINGS_POOL,
        kinds={"parquet", "duckdb"},
        description=(
            f"A vector for every contract-checked {spec.name} proposition, `codex.{spec.name}_proposition_embeddings`; "
            "reused whenever the exact text, model and version are unchanged."
        ),
        metadata={"dataset": spec.name},
    )
    def proposition_embeddings(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings
    ) -> dg.MaterializeResult:
        wh = warehouse.get()
        embedder = embedding.build()
        totals: dict[str, int] = {}
        for pk in context.partition_keys:
            done = embed_propositions_day(wh, spec.name, dt.date.fromisoformat(pk), embedder)
            for k, v in done.counts.as_dict().items():
                totals[k] = totals.get(k, 0) + v
        created = ensure_views(wh, [(spec.name, EMBEDDINGS_TABLE)])
        return dg.MaterializeResult(
            metadata={
                **{k: totals.get(k, 0) for k in ("inputs", "reused", "embedded", "requests")},
                "embedding_model": embedder.model,
                "embedding_version": embedder.version,
                "views_created": created,
            }
        )

    return proposition_embeddings


def build_proposition_assets(spec: DatasetSpec) -> list[dg.AssetsDefinition]:
    return [build_propositions_asset(spec), build_proposition_embeddings_asset(spec)] if spec.chunked and spec.propositions else []


proposition_assets = [a for spec in DATASETS for a in build_proposition_assets(spec)]
default_proposition_settings = PropositionSettings(kind=configured_extractor_kind())
