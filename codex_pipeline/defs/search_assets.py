"""`[dataset, search_index]`: the search index of each chunked dataset, kept current by materializations.

Downstream of `[dataset, embeddings]` on the same daily partitions, so a day's run
(the schedule, a backfill, the version sensor's re-chunk) ends by bringing the
index up to date. Each materialization rebuilds the dataset's index from its
*current corpus* (every live document's latest landing: a re-chunked day, a
retraction or a backfilled older day all change it), reusing the previous
version's analyzed terms and vector graph for every chunk whose text is unchanged;
a run whose inputs are unchanged since the live version writes nothing. In a backfill
the daemon requests it (``BackfillPolicy.single_run``) for the days whose embeddings are
done, so a backfill ends with one rebuild or a few, not one per day; the newest two
versions are kept, so an early build's ``path`` may be gone by the end. The version
sensor ends each re-ingest, re-chunk or re-embed run with this asset (``defs/sensors.py``);
its concurrent runs coalesce, as builds of a dataset are serialized and a build that
finds its inputs already indexed writes nothing. A dataset with propositions (seed 002)
indexes them in the same build, after `[dataset, proposition_embeddings]`.
"""

import dagster as dg

from codex_pipeline.datasets.registry import DatasetRegistry, DatasetSpec
from codex_pipeline.defs.metadata import search_index_metadata
from codex_pipeline.defs.partitions import DEFAULT_PARTITIONS
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.pipeline import run_search_index
from codex_pipeline.retrieval.index_format import FORMAT_VERSION, analyzer_id

SEARCH_POOL = "search_index"


def _deps(spec: DatasetSpec) -> list[dg.AssetKey]:
    """The chunk vectors, and the proposition vectors of a dataset that opts in to propositions."""
    tables = ["embeddings", "proposition_embeddings"] if spec.propositions else ["embeddings"]
    return [dg.AssetKey([spec.name, t]) for t in tables]


def build_search_index_asset(spec: DatasetSpec, partitions: dg.PartitionsDefinition = DEFAULT_PARTITIONS) -> dg.AssetsDefinition:
    """``[dataset, search_index]``: a backfill's days in one run; ``code_version`` follows index format and analyzer."""
    @dg.asset(
        key=dg.AssetKey([spec.name, "search_index"]),
        deps=_deps(spec),
        group_name=spec.name,
        partitions_def=partitions,
        backfill_policy=dg.BackfillPolicy.single_run(),
        pool=SEARCH_POOL,
        code_version=f"{FORMAT_VERSION}/{analyzer_id()}",
        kinds={"numpy", "arrow"},
        description=(
            f"BM25 and vector (HNSW) index over the current corpus of {spec.name} (chunks, and propositions when it "
            f"has them), under warehouse/{spec.name}/search_index/: what `codex search` and `Retriever` query."
        ),
        metadata={"dataset": spec.name},
    )
    def search_index(
        context: dg.AssetExecutionContext, warehouse: CodexWarehouse, embedding: EmbeddingSettings
    ) -> dg.MaterializeResult:
        done = run_search_index(spec, warehouse.get(), embedding.build(), context.log)
        return dg.MaterializeResult(metadata=search_index_metadata(done))

    return search_index


def search_definitions(registry: DatasetRegistry, partitions: dg.PartitionsDefinition) -> dg.Definitions:
    """A `[dataset, search_index]` asset per chunked dataset."""
    return dg.Definitions(assets=[build_search_index_asset(spec, partitions) for spec in registry if spec.chunked])
