"""Propositions (seed 002) as rows of the search index, so one engine ranks chunks and propositions.

A proposition row carries the chunk columns of :data:`~codex_pipeline.retrieval.index_format.ROW_COLUMNS`:
its id as ``chunk_id``, its statement as ``chunk_text``, its spans as the evidence anchor
(``{"spans": [[start, end], …]}``; ``{}`` when an LLM statement could not be aligned), and
its parent's ``chunk_type``, ``locator`` and ``metadata``, so type and metadata filters
mean the same for a proposition as for the chunk it came from. ``content_hash`` is
SHA-256 of the statement: the ``input_hash`` its vector was made from.
"""

from __future__ import annotations

import json

import pyarrow as pa

from codex_pipeline.propositions.table import TABLE


def propositions_sql(schema: str, dataset: str) -> str:
    """The current propositions of ``dataset`` joined to their parents (same partition), spans still a list."""
    return (
        "SELECT p.proposition_id AS chunk_id, p.doc_id, 'proposition.' || p.ordinal AS section_id, "
        "coalesce(c.chunk_type, '') AS chunk_type, p.parent_chunk_id, p.ordinal AS seq_index, p.partition_date, "
        "coalesce(c.locator, '') AS locator, p.spans, c.metadata, sha256(p.text) AS content_hash, "
        "p.text AS chunk_text, p.alignment_score, p.extractor "
        f"FROM {schema}.{dataset}_{TABLE} p LEFT JOIN {schema}.{dataset}_chunks c "
        "ON c.chunk_id = p.parent_chunk_id AND c.partition_date = p.partition_date"
    )


def with_anchors(table: pa.Table) -> pa.Table:
    """Replace the ``spans`` list column by the JSON ``evidence_anchor`` the index reads."""
    spans = table.column("spans").to_pylist()
    anchors = [json.dumps({"spans": [[s["start"], s["end"]] for s in v]}) if v else "{}" for v in spans]
    at = table.column_names.index("spans")
    return table.set_column(at, "evidence_anchor", pa.array(anchors, pa.string()))
