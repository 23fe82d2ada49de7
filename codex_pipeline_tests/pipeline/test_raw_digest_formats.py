"""Raw files from before ``raw.revision_digest`` existed beside new ones: views and chunks still work."""

import datetime as dt

from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_raw_day
from codex_pipeline.warehouse.catalog import connect_catalog
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.pipeline.helpers import land_sample

OLD, NEW = dt.date(2026, 11, 24), dt.date(2026, 11, 25)


def test_an_old_raw_file_and_a_new_one_are_queried_and_chunked_together(warehouse: Warehouse) -> None:
    spec = get_dataset("docs")
    landings = {day: land_sample(warehouse, spec.name, day.isoformat()) for day in (OLD, NEW)}
    run_raw_day(spec, warehouse, OLD)
    # the old day's file as a run before the column existed wrote it (its footer stamp kept)
    old = warehouse.read(spec.name, "raw", OLD).drop_columns(["revision_digest"])
    warehouse.write(old, spec.name, "raw", OLD)
    assert "revision_digest" not in warehouse.read(spec.name, "raw", OLD).column_names
    assert warehouse.stamp(warehouse.partition_path(spec.name, "raw", OLD)) == {"source_version": spec.source_version}
    run_raw_day(spec, warehouse, NEW)
    assert warehouse.read(spec.name, "raw", NEW).column("revision_digest").null_count == 0

    for day in (OLD, NEW):
        done = run_chunks_day(spec, warehouse, day)
        assert done.published and not done.warnings
        # what the chunk step cuts from the reader's documents, which carry no digest: it computes them
        expected = steps.chunk(spec, day, spec.load_day(landings[day]).documents).table
        assert warehouse.read(spec.name, "chunks", day).drop_columns(["chunked_at"]).equals(
            expected.drop_columns(["chunked_at"]))

    new_rows = warehouse.read(spec.name, "raw", NEW).num_rows
    with connect_catalog(warehouse) as con:
        history = con.execute(f"SELECT partition_date, count(*), count(revision_digest) FROM codex.{spec.name}_raw_history "
                              "GROUP BY 1 ORDER BY 1").fetchall()
        current = con.execute(f"SELECT partition_date, count(*), count(revision_digest) FROM codex.{spec.name}_raw "
                              "GROUP BY 1 ORDER BY 1").fetchall()
    assert history == [(OLD, old.num_rows, 0), (NEW, new_rows, new_rows)]  # the old file's digests read as null
    assert [d for d, _, _ in current] == [OLD, NEW] and current[0][2] == 0 and current[1][1] == current[1][2]
