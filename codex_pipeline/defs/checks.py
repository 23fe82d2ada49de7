"""The chunks asset's checks: the blocking contract it reports itself, and two warning checks over what it published.

``chunk_contract`` is yielded by the chunks step (it decides publish or quarantine,
and gates embeddings). ``current_chunk_ids_unique`` and ``chunk_addresses`` run as
their own steps after it, on the published file: a warning, not a block. Documents the
contract rejects make it a warning too (the day is published without them); when it fails
as an error (no document passed, or no row to blame) the chunks step fails with it, so these
two do not run that day.
Like the contract check they are not partitioned themselves (partitioned checks are a
preview feature of Dagster): they run in the day's run and read its partition key.
"""

import datetime as dt

import dagster as dg

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.defs.metadata import ADDRESS_CHECK, CONTRACT_CHECK, UNIQUE_CHECK, address_result, unique_result
from codex_pipeline.defs.resources import CodexWarehouse
from codex_pipeline.pipeline import chunk_addresses, current_ids_unique


def chunks_key(spec: DatasetSpec) -> dg.AssetKey:
    """``[dataset, chunks]``: the key of the chunks asset and of its checks."""
    return dg.AssetKey([spec.name, "chunks"])


def contract_check_spec(spec: DatasetSpec) -> dg.AssetCheckSpec:
    """The blocking ``chunk_contract`` check, declared on the chunks asset, which reports its result itself."""
    return dg.AssetCheckSpec(
        CONTRACT_CHECK,
        asset=chunks_key(spec),
        blocking=True,
        description="pandera chunk contract: ids, exact cl100k counts, dense seq_index, parents, anchors, 1,500-token cap.",
    )


def _unique_description(spec: DatasetSpec) -> str:
    return (
        f"Every chunk_id appears once in codex.{spec.name}_chunks (the current corpus: each document's "
        "latest landing, deleted documents left out), as users query it. A warning, not a block: a "
        "duplicate is already visible in the current view, and holding back this day's embeddings "
        "would not remove it."
    )


ADDRESS_DESCRIPTION = (
    "Seed-003 validator on a 20-chunk sample (as `codex validate`): unique ids, locator order equal to "
    "reading order within each section / page, offsets that reproduce the text, ids unchanged when "
    "the sampled raw records are re-chunked. A warning, not a block."
)


def build_unique_check(spec: DatasetSpec) -> dg.AssetChecksDefinition:
    """``current_chunk_ids_unique``: a warning check on the current chunks view, a step of its own after the chunks."""
    @dg.asset_check(asset=chunks_key(spec), name=UNIQUE_CHECK, blocking=False,
                    description=_unique_description(spec))
    def unique_ids(context: dg.AssetCheckExecutionContext, warehouse: CodexWarehouse) -> dg.AssetCheckResult:
        return unique_result(current_ids_unique(spec, warehouse.get(), context.log))

    return unique_ids


def build_address_check(spec: DatasetSpec) -> dg.AssetChecksDefinition:
    """``chunk_addresses``: the seed-003 validator on the run's day, a warning check in a step of its own."""
    @dg.asset_check(asset=chunks_key(spec), name=ADDRESS_CHECK, blocking=False,
                    description=ADDRESS_DESCRIPTION)
    def addresses(context: dg.AssetCheckExecutionContext, warehouse: CodexWarehouse) -> dg.AssetCheckResult:
        day = dt.date.fromisoformat(context.partition_key)
        return address_result(chunk_addresses(spec, warehouse.get(), day, context.log))

    return addresses


def build_chunk_checks(spec: DatasetSpec) -> list[dg.AssetChecksDefinition]:
    """The warning checks of a chunked dataset's chunks asset."""
    return [build_unique_check(spec), build_address_check(spec)]
