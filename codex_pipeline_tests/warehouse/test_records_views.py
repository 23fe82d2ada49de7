"""``codex.<dataset>_records``: a mapped dataset's fields as typed columns, through real Dagster and DuckDB.

A mapping file in a configured folder, a landing day materialized by Dagster, the view
queried from the catalog: its columns carry the mapping's types, one row per landed
record, and a value that does not fit its column is a null, never an error.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codex_pipeline.datasets.registry import DatasetRegistry
from codex_pipeline.settings import CodexSettings
from codex_pipeline.sources.mapping.columns import mapping_columns
from codex_pipeline.sources.mapping.kinds import load_mapped_dataset
from codex_pipeline.sources.permits import MAPPINGS_DIR
from codex_pipeline.warehouse.records_view import SQL_TYPES, column_sql
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_mapped, query_catalog

DAY = dt.date(2026, 11, 24)
MAPPING = """codex_mapping: 1
dataset: tree_records
kind: record
title: street tree
id: Tree
fields:
  species: Species
  note: {column: Note, type: text}
  height_m: {column: Height, type: number}
  stems: {column: Stems, type: integer}
  protected: {column: Protected, type: boolean}
  planted: {column: Planted, type: date}
  inspected_at: {column: Inspected, type: datetime}
  tags: {column: Tags, type: "list[string]", separator: "|"}
coordinates: {x: Lon, y: Lat}
"""
HEADER = "Tree,Species,Note,Height,Stems,Protected,Planted,Inspected,Tags,Lon,Lat"
ROWS = [
    "T-1,Oak,old oak,12.5,3,true,2001-04-05,2026-11-24T09:15:00-08:00,big|shade,-123.1,49.2",
    "T-2,Elm,,7,1,false,2019-10-01,,young,-123.2,49.3",
    "T-3,Ash,too many stems,3,100000000000000000000,,,,,,",  # stems beyond BIGINT: null in the view
    "T-4,Fir,bad date,x,2,maybe,2026-13-45,,,,",  # rejected by the mapping's types: not in the view
]


def _materialize(tmp_path: Path, mapping: str, rows: list[str], day: dt.date = DAY) -> tuple[bool, Warehouse]:
    result, wh = materialize_mapped(tmp_path, "tree_records", mapping, {"trees.csv": HEADER + "\n" + "\n".join(rows) + "\n"}, day)
    return result.success, wh


def test_the_records_view_has_typed_columns_and_one_row_per_landed_record(tmp_path: Path) -> None:
    ok, wh = _materialize(tmp_path, MAPPING, ROWS)
    assert ok
    types = dict(query_catalog(wh, "SELECT column_name, column_type FROM (DESCRIBE codex.tree_records_records)"))
    assert list(types) == ["record_id", "partition_date", "source_file", "doc_id", "species", "note", "height_m",
                           "stems", "protected", "planted", "inspected_at", "tags", "latitude", "longitude"]
    assert [types[c] for c in list(types)[4:]] == ["VARCHAR", "VARCHAR", "DOUBLE", "BIGINT", "BOOLEAN", "DATE",
                                                   "TIMESTAMP", "VARCHAR[]", "DOUBLE", "DOUBLE"]
    rows = query_catalog(wh, "SELECT * FROM codex.tree_records_records ORDER BY record_id")
    landed = query_catalog(wh, "SELECT record_id FROM codex.tree_records_raw ORDER BY record_id")
    assert [r[0] for r in rows] == [r[0] for r in landed] == ["T-1", "T-2", "T-3"]
    t1, t2, t3 = rows
    assert t1[1:3] == (DAY, "trees.csv")
    assert t1[4:] == ("Oak", "old oak", 12.5, 3, True, dt.date(2001, 4, 5), dt.datetime(2026, 11, 24, 9, 15),
                      ["big", "shade"], 49.2, -123.1)
    assert t2[4:] == ("Elm", None, 7.0, 1, False, dt.date(2019, 10, 1), None, ["young"], 49.3, -123.2)
    assert t3[7] is None and t3[4] == "Ash"  # 1e20 does not fit BIGINT: a null, the row still there
    assert query_catalog(wh, "SELECT count(*) FROM codex.tree_records_rejects")[0][0] == 1


def test_a_mapping_edit_nulls_older_values_that_no_longer_fit(tmp_path: Path) -> None:
    ok, wh = _materialize(tmp_path, MAPPING, ROWS[:2])
    assert ok
    edited = MAPPING.replace("species: Species", "species: {column: Species, type: integer}")
    ok, wh = _materialize(tmp_path, edited, ["T-9,42,,1,1,true,2020-01-01,,,,"], DAY + dt.timedelta(days=1))
    assert ok
    got = query_catalog(wh, "SELECT record_id, species FROM codex.tree_records_records ORDER BY record_id")
    assert got == [("T-1", None), ("T-2", None), ("T-9", 42)]  # the newest day's types; 'Oak' is not an integer
    assert dict(query_catalog(wh, "SELECT column_name, column_type FROM (DESCRIBE codex.tree_records_records)"))[
        "species"] == "BIGINT"


def test_the_view_survives_a_catalog_rebuild_from_the_files_alone(tmp_path: Path) -> None:
    from codex_pipeline.warehouse.catalog import rebuild_catalog

    ok, wh = _materialize(tmp_path, MAPPING, ROWS[:2])
    assert ok
    wh.catalog_path.unlink()
    (wh.root / "codex_catalog.views.json").unlink()
    created, failed = rebuild_catalog(wh)
    assert "tree_records_records" in created and not failed
    assert query_catalog(wh, "SELECT stems FROM codex.tree_records_records ORDER BY record_id") == [(3,), (1,)]


def test_permit_mappings_type_their_fields_by_the_permit_schema() -> None:
    squamish = mapping_columns(load_mapped_dataset(MAPPINGS_DIR / "squamish_permits.yaml").mapping)
    types = dict(squamish)
    assert types["applied_date"] == "date" and types["status"] == "string"
    assert list(types)[-2:] == ["latitude", "longitude"] and types["latitude"] == "number"
    spec = DatasetRegistry.build(CodexSettings()).get("permit_signals")
    assert dict(spec.record_columns)["estimated_cost"] == "number" and "permit_number" not in dict(spec.record_columns)


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                       st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=3), st.integers())),
       value_type=st.sampled_from(sorted(SQL_TYPES)))
def test_any_payload_value_casts_or_is_null(value: object, value_type: str) -> None:
    import json

    con = duckdb.connect()
    try:
        sql = f"SELECT {column_sql('f', value_type)} FROM (SELECT ? AS payload) r"
        con.execute(sql, [json.dumps({"f": value})]).fetchall()  # never raises
    finally:
        con.close()


def test_a_field_name_that_is_not_an_identifier_never_reaches_sql() -> None:
    with pytest.raises(ValueError, match="not a plain identifier"):
        column_sql('x") AS y, (SELECT 1', "string")


def test_an_optional_bad_value_is_a_null_in_the_view(tmp_path: Path) -> None:
    mapping = MAPPING.replace("stems: {column: Stems, type: integer}", "stems: {column: Stems, type: integer, optional: true}")
    ok, wh = _materialize(tmp_path, mapping, ["T-5,Yew,,2,many,true,2020-01-01,,,,"])
    assert ok
    assert query_catalog(wh, "SELECT record_id, stems, height_m FROM codex.tree_records_records") == [("T-5", None, 2.0)]
    assert query_catalog(wh, "SELECT count(*) FROM codex.tree_records_rejects WHERE stage = 'note'")[0][0] == 1


def test_a_block_field_is_a_json_column() -> None:
    import json

    from codex_pipeline.sources.mapping.schema import parse_mapping

    m = parse_mapping(MAPPING.replace("fields:\n", """fields:
  crew:
    block: {pattern: "C_{n}_{part}", last: 2, parts: [NAME, ROLE]}
"""), "m.yaml")
    assert dict(mapping_columns(m))["crew"] == "list[object]"
    con = duckdb.connect()
    try:
        sql = f"SELECT {column_sql('crew', 'list[object]')} FROM (SELECT ? AS payload) r"
        (got,) = con.execute(sql, [json.dumps({"crew": [{"name": "A", "role": "B"}]})]).fetchone()
    finally:
        con.close()
    assert json.loads(got) == [{"name": "A", "role": "B"}]
