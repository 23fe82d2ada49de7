"""Through real Dagster: a damaged mapped CSV loses no row, and a day of rejects fails its raw step.

The mapping is a file in a configured folder, the warehouse real Parquet and DuckDB; the
raw step's metadata shows rows read = landed + rejected, and the rejects are queryable
in ``codex.<dataset>_rejects`` whether the day passed or failed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg

from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import materialize_mapped, query_catalog

DAY = dt.date(2026, 11, 24)
MAPPING = """codex_mapping: 1
dataset: street_permits
kind: record
title: street use permit
id: Permit
fields:
  status: Status
  note: Note
"""
ROWS = [f"SP-{i},open,note {i}" for i in range(1, 11)]


def _materialize(tmp_path: Path, csv_text: str, mapping: str = MAPPING) -> tuple[dg.ExecuteInProcessResult, Warehouse]:
    return materialize_mapped(tmp_path, "street_permits", mapping, {"permits.csv": csv_text}, DAY)


def test_a_stray_quote_rejects_its_row_and_every_other_row_lands(tmp_path: Path) -> None:
    rows = list(ROWS)
    rows[3] = 'SP-4,open,"note 4 with a stray quote'  # row 4 of 10, physical line 5
    result, wh = _materialize(tmp_path, "Permit,Status,Note\n" + "\n".join(rows) + "\n")
    assert result.success
    raw = next(e for e in result.get_asset_materialization_events()
               if e.asset_key == dg.AssetKey(["street_permits", "raw"]))
    meta = {k: v.value for k, v in raw.materialization.metadata.items()}
    assert (meta["rows_read"], meta["rows_landed"], meta["rows_rejected"]) == (10, 9, 1)
    assert "| permits.csv | 10 | 9 | 1 |" in meta["rows_by_file"]
    landed = [r[0] for r in query_catalog(wh, "SELECT record_id FROM codex.street_permits_raw ORDER BY record_id")]
    assert sorted(landed) == sorted(f"SP-{i}" for i in range(1, 11) if i != 4)
    chunks = query_catalog(wh, "SELECT count(DISTINCT doc_id) FROM codex.street_permits_chunks")[0][0]
    assert chunks == 9
    ((file, ref, reason),) = query_catalog(wh, "SELECT source_file, record_ref, reason FROM codex.street_permits_rejects")
    assert (file, ref) == ("permits.csv", "row 5") and reason.startswith("a quoted field opened on this line")


def test_a_day_where_every_row_is_rejected_fails_with_one_line(tmp_path: Path) -> None:
    # a semicolon export read with the default comma: one column, so the whole file is rejected
    text = "Permit;Status;Note\n" + "\n".join(r.replace(",", ";") for r in ROWS) + "\n"
    result, wh = _materialize(tmp_path, text)
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data
    line = failure.user_failure_data.description if failure.user_failure_data else failure.error.message
    assert line.startswith("street_permits 2026-11-24: 10 of 10 row(s) rejected (100%), none landed; "
                           "see why in codex.street_permits_rejects")
    assert "\n" not in line
    ((ref, reason),) = query_catalog(wh, "SELECT record_ref, reason FROM codex.street_permits_rejects")
    assert ref is None and "set delimiter: \";\"" in reason and "all 10 rows of the file rejected" in reason
    assert not wh.partition_path("street_permits", "raw", DAY).exists()


def test_max_reject_ratio_from_the_mapping(tmp_path: Path) -> None:
    rows = [r if i % 3 else r.rsplit(",", 1)[0] for i, r in enumerate(ROWS)]  # rows 1, 4, 7, 10 short: 4 of 10
    result, _ = _materialize(tmp_path, "Permit,Status,Note\n" + "\n".join(rows) + "\n",
                             MAPPING + "max_reject_ratio: 0.25\n")
    assert not result.success
    line = result.get_step_failure_events()[0].step_failure_data.user_failure_data.description
    assert line.startswith("street_permits 2026-11-24: 4 of 10 row(s) rejected (40%), over max_reject_ratio in "
                           "street_permits.yaml (0.25)")
