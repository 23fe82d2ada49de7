"""The code location loads, and its shape follows the dataset registry."""

import dagster as dg

from codex_pipeline.datasets.registry import default_registry
from codex_pipeline.defs import defs
from codex_pipeline.defs.assets import build_dataset_assets


def test_definitions_load() -> None:
    """The location validates, and `codex_all` (what the daily schedule runs) covers every asset and check."""
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    job_graph = defs.resolve_job_def("codex_all").asset_layer.asset_graph
    assert set(job_graph.get_all_asset_keys()) == set(graph.get_all_asset_keys())
    assert set(job_graph.asset_check_keys) == set(graph.asset_check_keys) != set()
    assert defs.resolve_schedule_def("codex_daily").job_name == "codex_all"


def test_every_registry_entry_has_its_assets() -> None:
    graph = defs.resolve_asset_graph()
    keys = set(graph.get_all_asset_keys())
    for spec in default_registry():
        assert dg.AssetKey([spec.name, "raw"]) in keys
        chunks = dg.AssetKey([spec.name, "chunks"])
        assert (chunks in keys) == spec.chunked
        if spec.chunked:
            node = graph.get(chunks)
            assert node.code_version == spec.chunking_version
            assert dg.AssetKey([spec.name, "raw"]) in node.parent_keys
            assert isinstance(node.partitions_def, dg.DailyPartitionsDefinition)
            (chunks_def,) = [a for a in build_dataset_assets(spec) if chunks in a.keys]
            assert [c.name for c in chunks_def.check_specs] == ["chunk_contract"]  # reported by the step itself
            checks = {k.name: graph.get_check_spec(k) for k in graph.get_check_keys_for_assets({chunks})}
            assert set(checks) == {"chunk_contract", "current_chunk_ids_unique", "chunk_addresses"}
            assert checks["chunk_contract"].blocking  # the contract blocks embeddings
            assert not checks["current_chunk_ids_unique"].blocking and not checks["chunk_addresses"].blocking
