"""The code location loads, and its shape follows the dataset registry."""

import dagster as dg

from codex_pipeline.datasets.registry import DATASETS
from codex_pipeline.defs import defs
from codex_pipeline.defs.assets import assets_by_dataset


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)
    assert defs.resolve_job_def("codex_all") is not None


def test_every_registry_entry_has_its_assets() -> None:
    graph = defs.resolve_asset_graph()
    keys = set(graph.get_all_asset_keys())
    for spec in DATASETS:
        assert dg.AssetKey([spec.name, "raw"]) in keys
        chunks = dg.AssetKey([spec.name, "chunks"])
        assert (chunks in keys) == spec.chunked
        if spec.chunked:
            node = graph.get(chunks)
            assert node.code_version == spec.chunking_version
            assert dg.AssetKey([spec.name, "raw"]) in node.parent_keys
            assert isinstance(node.partitions_def, dg.DailyPartitionsDefinition)
            (chunks_def,) = [a for a in assets_by_dataset[spec.name] if chunks in a.keys]
            checks = list(chunks_def.check_specs)
            assert [c.name for c in checks] == ["chunk_contract", "current_chunk_ids_unique", "chunk_addresses"]
            assert checks[0].blocking and not checks[1].blocking  # the contract blocks; uniqueness warns
            assert not checks[2].blocking  # the seed-003 address validator warns
