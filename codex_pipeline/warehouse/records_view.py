"""``codex.<dataset>_records``: a record dataset's fields as typed SQL columns, one row per landed record.

A mapped dataset's validated record is stored whole in ``raw.payload`` (JSON). Which
fields it has, and their types, the raw step writes into the footer of each ``raw``
partition (:func:`record_columns_stamp`), so the catalog — rebuilt from the files
alone, without the mapping folder or the dataset registry — still knows them. The view
takes them from the newest day's partition: after a mapping edit the version sensor
re-ingests every day, and until then older days' values that no longer fit are nulls.

Every column is ``TRY_CAST`` over ``json_extract`` of the payload: one value that does
not convert (a number too big for BIGINT, a string in a field since typed ``integer``)
is a null in its cell, never an error that breaks the view.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from codex_pipeline.warehouse.catalog_views import SCHEMA, check_identifier, sql_literal

if TYPE_CHECKING:
    from codex_pipeline.warehouse.storage import Warehouse

STAMP_KEY = "record_columns"
"""Footer entry (``codex.record_columns``) of a ``raw`` partition: JSON ``[[field, value type], …]``."""
RECORDS_VIEW = "records"
SQL_TYPES = {
    "string": "VARCHAR",
    "text": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "datetime": "TIMESTAMP",  # the local time as written; the payload keeps the offset
    "list[string]": "VARCHAR[]",
    "object": "JSON",
    "list[object]": "JSON",
}
"""A record field's value type -> its column type in the view."""
LEADING = ("record_id", "partition_date", "source_file", "doc_id")


def record_columns_stamp(columns: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The footer entry naming a dataset's typed fields (empty when it has none: no records view)."""
    return {STAMP_KEY: json.dumps([list(c) for c in columns])} if columns else {}


def stamped_columns(warehouse: Warehouse, dataset: str) -> list[tuple[str, str]]:
    """The typed fields in the footer of the newest ``raw`` partition; ``[]`` when none says (or it cannot be read)."""
    parts = warehouse.partitions(dataset, "raw")
    if not parts:
        return []
    try:
        meta = pq.read_schema(parts[max(parts)]).metadata or {}
        loaded = json.loads(meta.get(f"codex.{STAMP_KEY}".encode(), b"[]"))
    except (OSError, ValueError, pa.ArrowException):  # a damaged file: set aside by its dataset's next run
        return []
    if not isinstance(loaded, list):
        return []
    return [(str(c[0]), str(c[1])) for c in loaded if isinstance(c, list) and len(c) == 2]


def column_sql(field: str, value_type: str) -> str:
    """One typed column: ``TRY_CAST`` of the payload's value, so a bad one is a null; ValueError for a bad name."""
    check_identifier(field, "field")
    sql_type = SQL_TYPES.get(value_type, "VARCHAR")
    path = sql_literal(f"$.{field}")
    extract = "json_extract" if sql_type in ("VARCHAR[]", "JSON") else "json_extract_string"
    return f'TRY_CAST({extract}(r.payload, {path}) AS {sql_type}) AS "{field}"'


def records_view_sql(dataset: str, columns: Sequence[tuple[str, str]]) -> str:
    """``codex.<dataset>_records`` over ``codex.<dataset>_raw`` (the current records once the dataset has an index).

    Fields named like a leading column (``record_id`` …) are left to it.
    """
    check_identifier(dataset)
    cols = [column_sql(f, t) for f, t in dict(columns).items() if f not in LEADING]
    lead = ", ".join(f"r.{c}" for c in LEADING)
    return (f"CREATE OR REPLACE VIEW {SCHEMA}.{dataset}_{RECORDS_VIEW} AS SELECT {lead}"
            + "".join(f", {c}" for c in cols) + f" FROM {SCHEMA}.{dataset}_raw r")


def records_views(warehouse: Warehouse, dataset: str) -> dict[str, str]:
    """``{<dataset>_records: SQL}`` when the newest raw partition names typed fields, else ``{}``."""
    columns = stamped_columns(warehouse, dataset)
    if not columns:
        return {}
    try:
        return {f"{dataset}_{RECORDS_VIEW}": records_view_sql(dataset, columns)}
    except ValueError:  # a field name that is not an identifier: no view rather than unsafe SQL
        return {}
