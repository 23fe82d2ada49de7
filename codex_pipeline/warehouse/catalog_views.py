"""The SQL of the catalog's views: ``codex.<dataset>_<table>`` over the Parquet files of one data directory.

Once a dataset has a document index (:mod:`codex_pipeline.warehouse.current`), its
``raw``, ``chunks`` and ``embeddings`` views show the *current corpus* (each
document's latest landing, deleted documents left out) and ``<table>_history`` views
show every partition. The current views semi-join the history with the index file at
a fixed path, which each materialization replaces atomically: the views themselves
never change when data does.

Dataset and table names become SQL identifiers here, so they are checked
(:func:`check_identifier`): a name that is not a plain lower-case identifier never
reaches the SQL text. Paths are written as SQL string literals, quotes doubled.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from codex_pipeline.core.contract import TYPED_VIEWS, TypedView

if TYPE_CHECKING:
    from codex_pipeline.warehouse.storage import Warehouse

SCHEMA = "codex"
CURRENT_TABLES = ("raw", "chunks", "embeddings", "evidence_units", "propositions", "proposition_embeddings")
"""Tables with a current view (and a ``_history`` view) once the dataset has a document index."""
CHUNK_KEYED_TABLES = ("embeddings", "evidence_units")
"""Tables keyed by ``chunk_id`` with no ``doc_id``: their current view semi-joins the current chunks."""
HISTORY_SUFFIX = "_history"

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,62}")
"""What a dataset or table name must be to become part of a view name."""


def check_identifier(name: str, what: str = "dataset") -> str:
    """``name`` if it can be written into SQL as part of an identifier; ValueError (one line) if not."""
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"{what} name {name!r} is not a plain identifier (lower-case letters, digits and _, starting with a letter)"
        )
    return name


def sql_literal(text: str) -> str:
    """``text`` as a SQL string literal (quotes doubled): for SQL shown to users and view bodies, never for input."""
    return "'" + text.replace("'", "''") + "'"


def view_sql(warehouse: Warehouse, dataset: str, table: str) -> str:
    """The view over every partition of a table (its ``_history`` view once current views exist).

    ``<dataset>_chunks`` reports, per chunk, the model and version of the vector
    actually stored for its exact text (null when there is none yet).
    """
    return _history_sql(warehouse, dataset, table, f"{SCHEMA}.{dataset}_{table}")


def _history_sql(warehouse: Warehouse, dataset: str, table: str, name: str) -> str:
    path = sql_literal(warehouse.glob(dataset, table))
    if table == "chunks" and warehouse.has_files(dataset, "embeddings"):
        emb = sql_literal(warehouse.glob(dataset, "embeddings"))
        return (
            f"CREATE OR REPLACE VIEW {name} AS "
            "SELECT c.* REPLACE (e.embedding_model AS embedding_model, e.embedding_version AS embedding_version) "
            f"FROM read_parquet({path}, union_by_name = true) c "
            "LEFT JOIN (SELECT chunk_id, partition_date, input_hash, embedding_model, embedding_version "
            f"FROM read_parquet({emb}, union_by_name = true)) e "
            "ON e.chunk_id = c.chunk_id AND e.partition_date = c.partition_date AND e.input_hash = c.content_hash"
        )
    return f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM read_parquet({path}, union_by_name = true)"


def _live_sql(dataset: str) -> str:
    """(doc_id, partition_date) of every live document's current version: at most one row per document."""
    return f"(SELECT doc_id, partition_date FROM {SCHEMA}.{dataset}_documents WHERE deleted_on IS NULL)"


def current_view_sql(warehouse: Warehouse, dataset: str, table: str) -> str:
    """``codex.<dataset>_<table>``: the rows of each live document's current version.

    A semi-join of the history with the document index on ``(doc_id, partition_date)``;
    embeddings and evidence units carry no ``doc_id``, so they semi-join the current chunk keys. Filters
    on the view (``WHERE chunk_id = ?``) still reach the Parquet scan.
    """
    name = f"{SCHEMA}.{dataset}_{table}"
    history = f"{SCHEMA}.{dataset}_{table}{HISTORY_SUFFIX}"
    if table in CHUNK_KEYED_TABLES:
        return (
            f"CREATE OR REPLACE VIEW {name} AS SELECT e.* FROM {history} e "
            f"SEMI JOIN ({current_chunk_keys_sql(warehouse, dataset)}) c "
            "ON e.chunk_id = c.chunk_id AND e.partition_date = c.partition_date"
        )
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT t.* FROM {history} t SEMI JOIN {_live_sql(dataset)} d "
        "ON t.doc_id = d.doc_id AND t.partition_date = d.partition_date"
    )


def chunk_rows_sql(warehouse: Warehouse, dataset: str) -> str:
    """The current chunk rows as stored: the chunks view without the history's join to the embeddings.

    That join (for the view's ``embedding_model`` columns) builds its hash table on the
    wide chunk rows, text included, which DuckDB cannot spill below a size that grows
    with the corpus: an index build, which needs none of those columns, reads this instead.
    Needs the ``codex.<dataset>_documents`` view when the dataset has a document index.
    """
    check_identifier(dataset)
    rows = f"read_parquet({sql_literal(warehouse.glob(dataset, 'chunks'))}, union_by_name = true)"
    if not warehouse.documents_path(dataset).exists():
        return f"SELECT * FROM {rows}"
    return (f"SELECT c.* FROM {rows} c SEMI JOIN {_live_sql(dataset)} d "
            "ON c.doc_id = d.doc_id AND c.partition_date = d.partition_date")


def current_chunk_keys_sql(warehouse: Warehouse, dataset: str) -> str:
    """``(chunk_id, doc_id, partition_date)`` of every row of ``codex.<dataset>_chunks``: its semi-join on the ids alone.

    Needs the ``codex.<dataset>_documents`` view.
    """
    check_identifier(dataset)
    chunks = sql_literal(warehouse.glob(dataset, "chunks"))
    return (
        f"SELECT k.chunk_id, k.doc_id, k.partition_date FROM read_parquet({chunks}, union_by_name = true) k "
        f"SEMI JOIN {_live_sql(dataset)} d ON k.doc_id = d.doc_id AND k.partition_date = d.partition_date"
    )


def documents_view_sql(warehouse: Warehouse, dataset: str) -> str:
    """``codex.<dataset>_documents``: the document index as it is; ValueError when ``dataset`` is not an identifier."""
    check_identifier(dataset)
    path = sql_literal(warehouse.documents_path(dataset).as_posix())
    return f"CREATE OR REPLACE VIEW {SCHEMA}.{dataset}_documents AS SELECT * FROM read_parquet({path})"


def views_for(warehouse: Warehouse, dataset: str, table: str) -> dict[str, str]:
    """``{view name: SQL}`` for one (dataset, table); empty while the table has no files.

    With a document index, ``raw`` / ``chunks`` / ``embeddings`` give two views: the
    current ``<dataset>_<table>`` and ``<dataset>_<table>_history``; ``documents`` is
    the index itself. Otherwise one view over every partition, as for any other table.
    ValueError when a name is not a plain identifier (:func:`check_identifier`).
    """
    check_identifier(dataset)
    check_identifier(table, "table")
    indexed = warehouse.documents_path(dataset).exists()
    if table == "documents":
        return {f"{dataset}_documents": documents_view_sql(warehouse, dataset)} if indexed else {}
    chunk_keyed_without_chunks = table in CHUNK_KEYED_TABLES and indexed and not warehouse.has_files(dataset, "chunks")
    if not warehouse.has_files(dataset, table) or chunk_keyed_without_chunks:
        return {}
    typed = {f"{dataset}_{v.name}": typed_view_sql(v) for v in TYPED_VIEWS if table == "chunks" and v.dataset == dataset}
    if not (indexed and table in CURRENT_TABLES):
        return {f"{dataset}_{table}": view_sql(warehouse, dataset, table)} | typed
    history = f"{dataset}_{table}{HISTORY_SUFFIX}"
    return {
        f"{dataset}_documents": documents_view_sql(warehouse, dataset),
        history: _history_sql(warehouse, dataset, table, f"{SCHEMA}.{history}"),
        f"{dataset}_{table}": current_view_sql(warehouse, dataset, table),
    } | typed


def typed_view_sql(view: TypedView) -> str:
    """``codex.<dataset>_<name>``: the chunks of one type with their metadata as typed columns, page and text."""
    check_identifier(view.name, "view")
    cols = []
    for column, key, sql_type in view.columns:
        check_identifier(column, "column")
        path = sql_literal(f"$.{key}")
        value = f"json_extract_string(c.metadata, {path})" if sql_type == "VARCHAR" else f"json_extract(c.metadata, {path})"
        cols.append(f"TRY_CAST({value} AS {sql_type}) AS {column}")
    return (
        f"CREATE OR REPLACE VIEW {SCHEMA}.{view.dataset}_{view.name} AS SELECT c.chunk_id, c.doc_id, c.section_id, "
        f"c.parent_chunk_id, c.partition_date, {', '.join(cols)}, "
        "TRY_CAST(json_extract(c.evidence_anchor, '$.page') AS INTEGER) AS page, c.chunk_text "
        f"FROM {SCHEMA}.{view.dataset}_chunks c WHERE c.chunk_type = {sql_literal(view.chunk_type)}"
    )
