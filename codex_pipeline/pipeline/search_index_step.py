"""The search-index step: a dataset's index brought up to date with its current corpus.

The build is :func:`~codex_pipeline.retrieval.update_dataset_index`: it rebuilds the
index from every live document's latest landing, reusing the previous version's
analyzed terms and vector graph for unchanged text, and writes nothing when the inputs
are unchanged since the live version. This step runs it with the embedder's model and
version, and says when current chunks are still without a vector of that model.
"""

from codex_pipeline.datasets.registry import DatasetSpec
from codex_pipeline.embeddings import Embedder
from codex_pipeline.pipeline.reporting import Recorder
from codex_pipeline.pipeline.results import SearchIndexResult, StepLog
from codex_pipeline.retrieval import index_root, update_dataset_index
from codex_pipeline.warehouse.storage import Warehouse


def run_search_index(spec: DatasetSpec, wh: Warehouse, embedder: Embedder, log: StepLog | None = None) -> SearchIndexResult:
    """Rebuild ``spec``'s search index unless its inputs are unchanged; the live version either way."""
    rec = Recorder(log)
    manifest, built = update_dataset_index(wh, spec.name, embedder.model, embedder.version)
    if not built:
        rec.info(f"{spec.name}: inputs unchanged since index version {manifest.version}")
    if manifest.missing_vectors:
        rec.warning(
            f"{manifest.missing_vectors} current {spec.name} chunk(s) have no {embedder.model} vector for their "
            "text yet: they are found by BM25 only until their embeddings partition is materialized"
        )
    path = index_root(wh, spec.name) / manifest.version
    return SearchIndexResult(spec.name, manifest, built, path, warnings=tuple(rec.warnings))
