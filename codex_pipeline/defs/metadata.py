"""Library results as Dagster metadata and check results: the only thing the assets add to a step.

Metadata keys are what the UI, the tests and users' own sensors read: keep them stable.
"""

from typing import Any

import dagster as dg

from codex_pipeline.core.contract_check import ContractReport
from codex_pipeline.pipeline import (
    AddressResult,
    ChunksDayResult,
    EmbeddingsResult,
    PropositionEmbeddingsResult,
    PropositionsResult,
    RawDayResult,
    SearchIndexResult,
    UniqueIdsResult,
)

CONTRACT_CHECK = "chunk_contract"
UNIQUE_CHECK = "current_chunk_ids_unique"
ADDRESS_CHECK = "chunk_addresses"
PROPOSITIONS_CONTRACT_CHECK = "propositions_contract"
PROPOSITION_VECTOR_COUNTS = ("inputs", "reused", "embedded", "requests")


def raw_metadata(done: RawDayResult) -> dict[str, Any]:
    """The raw asset's materialization metadata, the current-corpus change counts spread into it."""
    return {
        "landing_dir": dg.MetadataValue.path(str(done.landing)),
        "documents": done.documents,
        "rejects": done.rejects,
        "rejects_preview": dg.MetadataValue.md(done.rejects_preview),
        **done.rows,  # rows_read = rows_landed + rows_rejected + rows_merged + rows_filtered, checked file by file
        **done.files,  # files_found = landed + rejected + skipped, checked file by file (codex.<dataset>_files)
        **({"rows_by_file": dg.MetadataValue.md(done.rows_by_file)} if done.rows_by_file else {}),
        "tombstones": done.tombstones,
        "tombstone_rejects": done.tombstone_rejects,
        **done.current,
        "path": dg.MetadataValue.path(str(done.path)),
        "views_created": list(done.views_created),
        "damaged_files_set_aside": list(done.damaged),
    }


def chunks_metadata(done: ChunksDayResult) -> dict[str, Any]:
    """The chunks asset's materialization metadata; ``done.summary.tokens`` must hold p50, p95 and max."""
    s = done.summary
    return {
        "documents": s.documents,
        "chunks": s.chunks,
        "chunks_by_type": dg.MetadataValue.json(s.chunks_by_type),
        "tokens_p50": s.tokens["p50"],
        "tokens_p95": s.tokens["p95"],
        "tokens_max": s.tokens["max"],
        "tokens_by_type": dg.MetadataValue.json(s.tokens_by_type),
        "rejects": done.rejects,
        "redirects": sum(done.redirects.values()),
        "redirects_by_match": dg.MetadataValue.json(done.redirects),
        "preview": dg.MetadataValue.md(done.preview),
        "token_histogram": dg.MetadataValue.md(done.token_histogram),
        "path": dg.MetadataValue.path(str(done.path)),
        "chunking_version": done.chunking_version,
        **done.current,
        "views_created": list(done.views_created),
        "damaged_files_set_aside": list(done.damaged),
    }


def embeddings_metadata(done: EmbeddingsResult) -> dict[str, Any]:
    """The embeddings asset's materialization metadata: the run's totals over its days, and each day's counts."""
    t = done.totals
    return {
        "inputs": t.inputs,
        "reused": t.reused,
        "embedded": t.embedded,
        "requests": t.requests,
        "recovered_from_checkpoint": t.recovered_from_checkpoint,
        "long_inputs": t.long_inputs,
        "evidence_units": t.evidence_units,
        "evidence_units_reused": t.evidence_units_reused,
        "evidence_units_embedded": t.evidence_units_embedded,
        "embedding_model": done.model,
        "embedding_version": done.version,
        "dimensions": done.dimensions,
        "by_partition": dg.MetadataValue.json(done.by_partition),
        "views_created": list(done.views_created),
        "damaged_files_set_aside": list(done.damaged),
    }


def contract_result(report: ContractReport) -> dg.AssetCheckResult:
    """The blocking chunk contract: an ERROR (a failure no row can be blamed for) keeps the day's chunks from
    embeddings; documents it rejected are a WARN, the day being published without them."""
    rejected = sorted(report.rejected_documents.items())
    return dg.AssetCheckResult(
        check_name=CONTRACT_CHECK,
        passed=report.passed,
        severity=dg.AssetCheckSeverity.WARN if report.publishable else dg.AssetCheckSeverity.ERROR,
        metadata={
            "rows": report.rows,
            "failed_checks": report.failed_checks,
            "failures": dg.MetadataValue.json(report.failures),
            "rejected_documents": len(rejected),
            "rejected_examples": dg.MetadataValue.json([{"doc_id": d, "rules": r} for d, r in rejected[:20]]),
        },
    )


def unique_result(done: UniqueIdsResult) -> dg.AssetCheckResult:
    """The ``current_chunk_ids_unique`` result: a WARN when it fails, with examples of duplicated ids."""
    u = done.unique
    return dg.AssetCheckResult(
        check_name=UNIQUE_CHECK,
        passed=done.passed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "current_rows": u.rows,
            "duplicated_chunk_ids": u.duplicates,
            "examples": dg.MetadataValue.json([{"chunk_id": c, "rows": n, "doc_ids": list(d)} for c, n, d in u.examples]),
        },
    )


def address_result(done: AddressResult) -> dg.AssetCheckResult:
    """The ``chunk_addresses`` result: a WARN when it fails, naming the failed checks and the first problems."""
    r = done.report
    return dg.AssetCheckResult(
        check_name=ADDRESS_CHECK,
        passed=done.passed,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "sampled_chunks": r.sampled,
            "failed_checks": r.failed_checks,
            "problems": dg.MetadataValue.json([p.line() for p in r.problems]),
            **({"notes": dg.MetadataValue.json(r.notes)} if r.notes else {}),
        },
    )


def propositions_metadata(done: PropositionsResult) -> dict[str, Any]:
    """The propositions asset's metadata: counts summed over the run's days, the extractor, the cost cap's state."""
    return {
        **{k: (round(v, 6) if k == "cost_usd" else int(v)) for k, v in done.totals.items()},
        "extractor": done.extractor,
        "extractor_version": done.extractor_version,
        "prompt_version": done.prompt_version,
        "extractor_config": dg.MetadataValue.json(done.extractor_config),
        "cost_cap_reached": bool(done.stopped),
        "cost_cap_message": "; ".join(done.stopped) or "not reached",
        "run_cost_usd": round(done.run_cost_usd, 6),
        "by_partition": dg.MetadataValue.json(done.by_partition),
        "views_created": list(done.views_created),
    }


def propositions_contract_result(done: PropositionsResult) -> dg.AssetCheckResult:
    """The blocking propositions contract: a day that breaks it was kept aside, never to be embedded."""
    return dg.AssetCheckResult(
        check_name=PROPOSITIONS_CONTRACT_CHECK,
        passed=done.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"failed_checks": done.failed_checks, "failures": dg.MetadataValue.json(list(done.failures))},
    )


def proposition_embeddings_metadata(done: PropositionEmbeddingsResult) -> dict[str, Any]:
    """The proposition-embeddings metadata: the :data:`PROPOSITION_VECTOR_COUNTS` (0 when absent) and the model."""
    return {
        **{k: done.totals.get(k, 0) for k in PROPOSITION_VECTOR_COUNTS},
        "embedding_model": done.model,
        "embedding_version": done.version,
        "views_created": list(done.views_created),
    }


def search_index_metadata(done: SearchIndexResult) -> dict[str, Any]:
    """The search-index asset's metadata: the live version's manifest, and whether this run rebuilt it."""
    m = done.manifest
    return {
        "rebuilt": done.rebuilt,
        "version": m.version,
        "chunks": m.chunks,
        "documents": m.documents,
        "vectors": m.vectors,
        "missing_vectors": m.missing_vectors,
        "propositions": m.propositions,
        "proposition_vectors": m.proposition_vectors,
        "terms_reused": m.terms_reused,
        "vectors_reused": m.vectors_reused,
        "graph": m.graph,
        "build_seconds": m.build_seconds,
        "embedding_model": m.embedding_model or "",
        "path": dg.MetadataValue.path(str(done.path)),
    }
