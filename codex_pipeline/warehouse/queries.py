"""The SQL Codex runs on the catalog and shows users, written once.

``{dataset}`` is a registry name; ``{suffix}`` is empty for the current corpus (the
default everywhere) or :data:`~codex_pipeline.warehouse.catalog_views.HISTORY_SUFFIX` for
every landed version. The CLI, the benchmark and the tests run these very strings.
Fill them with :func:`search_sql` and :func:`example_sql`, which refuse a dataset name
that is not a plain identifier and quote the chunk id: values typed by a user never
become SQL text (the search's own values are parameters).
"""

from __future__ import annotations

from codex_pipeline.warehouse.catalog_views import HISTORY_SUFFIX, check_identifier

__all__ = ["EXAMPLE_SQL", "SEARCH_SQL", "example_sql", "history_suffix", "search_sql"]

EXAMPLE_SQL = """\
-- the seed's parent-child query: fetch a hit's parent chunk
WITH hit AS (
  SELECT chunk_id, doc_id, parent_chunk_id, chunk_text
  FROM codex.{dataset}_chunks{suffix}
  WHERE chunk_id = '{hit}'
)
SELECT parent.chunk_id, left(parent.chunk_text, 120) AS parent_text
FROM hit
JOIN codex.{dataset}_chunks{suffix} parent
  ON parent.chunk_id = hit.parent_chunk_id"""
"""``{suffix}``: empty for the current corpus (one row per hit), ``_history`` for every partition;
``{hit}`` goes inside a string literal, its quotes doubled (:func:`example_sql` does it)."""

SEARCH_SQL = """\
WITH hits AS (
  SELECT chunk_id, partition_date, list_cosine_similarity(vector, ?::FLOAT[]) AS score
  FROM codex.{dataset}_embeddings{suffix}
  WHERE embedding_model = ? AND embedding_version = ?
  ORDER BY score DESC
  LIMIT ?
)
SELECT round(h.score::DOUBLE, 4) AS score, c.doc_id, c.section_id, c.chunk_type, c.partition_date,
       left(regexp_replace(c.chunk_text, '\\s+', ' ', 'g'), 90) AS text
FROM hits h
JOIN codex.{dataset}_chunks{suffix} c USING (chunk_id, partition_date)
ORDER BY h.score DESC, c.chunk_id"""
"""Top-k by cosine over the current corpus (``{suffix}`` empty) or every version (``_history``)."""


def history_suffix(history: bool) -> str:
    """The view-name suffix of the history views (``codex.<dataset>_chunks_history``), or none."""
    return HISTORY_SUFFIX if history else ""


def search_sql(dataset: str, history: bool = False) -> str:
    """:data:`SEARCH_SQL` for one dataset; ValueError (one line) when the name is not a plain identifier."""
    return SEARCH_SQL.format(dataset=check_identifier(dataset), suffix=history_suffix(history))


def example_sql(dataset: str, hit: str, history: bool = False) -> str:
    """:data:`EXAMPLE_SQL` for one chunk id, quoted: the query shown to users, runnable as printed."""
    return EXAMPLE_SQL.format(dataset=check_identifier(dataset), hit=hit.replace("'", "''"), suffix=history_suffix(history))
