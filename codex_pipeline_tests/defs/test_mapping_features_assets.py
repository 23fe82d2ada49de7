"""Through real Dagster: a mapped day with updates (duplicates last-wins), a filter and an optional
field: rows read = landed + rejected + merged + filtered in the raw step's metadata, notes written
to ``codex.<dataset>_rejects`` with stage 'note' and counted neither as rejects nor in the ratio."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import dagster as dg

from codex_pipeline_tests.conftest import materialize_mapped, query_catalog

DAY = dt.date(2026, 11, 24)
MAPPING = """codex_mapping: 1
dataset: street_permits
kind: record
title: street use permit
id: Permit
fields:
  status: Status
  cost: {column: Cost, type: number, optional: true}
duplicates: {mode: last, order: {column: Updated, type: date, formats: ["%m/%d/%Y"]}}
filters: [{column: Status, not_in: [void]}]
max_reject_ratio: 0.1  # 1 reject of 12 judged rows passes; counting the note (2 of 12) would not
"""
EXPORT = "Permit,Status,Cost,Updated\n" + "\n".join(f"SP-{i},open,{i}00,01/01/2026" for i in range(1, 9)) + "\n"
UPDATES = ("Permit,Status,Cost,Updated\nSP-1,closed,150,02/01/2026\nSP-2,closed,lots,03/01/2026\n"
           "SP-3,void,,04/01/2026\nSP-4,review,,12/31/2025\nSP-9,open,900,bad date\n")


def test_updates_filters_and_notes_add_up_through_dagster(tmp_path: Path) -> None:
    result, wh = materialize_mapped(tmp_path, "street_permits", MAPPING, {"a_export.csv": EXPORT, "b_updates.csv": UPDATES}, DAY)
    assert result.success
    raw = next(e for e in result.get_asset_materialization_events()
               if e.asset_key == dg.AssetKey(["street_permits", "raw"]))
    meta = {k: v.value for k, v in raw.materialization.metadata.items()}
    # 13 rows: SP-1, SP-2 updated (2 merged, from the export), SP-4's update is older (1 merged, from the
    # updates), SP-3's update filtered, SP-9 rejected (bad order date); SP-2's bad cost is a note
    assert (meta["rows_read"], meta["rows_landed"], meta["rows_rejected"], meta["rows_merged"],
            meta["rows_filtered"]) == (13, 8, 1, 3, 1)
    assert meta["rows_read"] == meta["rows_landed"] + meta["rows_rejected"] + meta["rows_merged"] + meta["rows_filtered"]
    assert meta["rejects"] == 1 and meta["notes"] == 1
    assert "| a_export.csv | 8 | 6 | 0 | 2 | 0 |" in meta["rows_by_file"]
    assert "| b_updates.csv | 5 | 2 | 1 | 1 | 1 |" in meta["rows_by_file"]
    landed = dict(query_catalog(wh, "SELECT record_id, json_extract_string(payload, '$.status') "
                                    "FROM codex.street_permits_raw"))
    assert landed == {"SP-1": "closed", "SP-2": "closed", "SP-3": "open", "SP-4": "open", "SP-5": "open",
                      "SP-6": "open", "SP-7": "open", "SP-8": "open"}
    rows = query_catalog(wh, "SELECT stage, source_file, record_ref, reason FROM codex.street_permits_rejects ORDER BY stage")
    assert [(s, f, r.split(",")[0]) for s, f, r, _ in rows] == [("ingest", "b_updates.csv", "row 6"),
                                                                ("note", "b_updates.csv", "row 3")]
    assert "column 'Updated'" in rows[0][3] and rows[1][3].startswith("optional field 'cost' (column 'Cost') fails")
