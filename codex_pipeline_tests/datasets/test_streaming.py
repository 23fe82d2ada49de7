"""A day read and chunked in row groups gives exactly the rows of a day read whole."""

from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import pytest

from codex_pipeline.datasets import steps
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import FIXTURES, land, materialize_dataset

DAY = "2026-11-24"
STABLE = ["chunk_id", "doc_id", "section_id", "chunk_text", "seq_index", "parent_chunk_id", "evidence_anchor",
          "locator", "token_count"]


def _chunks(wh: Warehouse, dataset: str) -> list[dict]:
    return wh.read(dataset, "chunks", dt.date.fromisoformat(DAY)).select(STABLE).to_pylist()


@pytest.mark.parametrize("dataset,fixture", [("narrative", "narrative"), ("docs", "docs")])
def test_row_groups_change_nothing_but_memory(
    tmp_path, monkeypatch: pytest.MonkeyPatch, dataset: str, fixture: str
) -> None:
    whole, grouped = Warehouse(tmp_path / "whole"), Warehouse(tmp_path / "grouped")
    for wh in (whole, grouped):
        land(wh, dataset, DAY, FIXTURES / fixture)
    assert materialize_dataset(whole, dataset, DAY).success
    monkeypatch.setattr(steps, "RAW_BATCH_CHARS", 1)  # one document per row group
    assert materialize_dataset(grouped, dataset, DAY).success

    raw = pq.ParquetFile(grouped.partition_path(dataset, "raw", dt.date.fromisoformat(DAY)))
    assert raw.num_row_groups == raw.metadata.num_rows > 1
    assert pq.ParquetFile(whole.partition_path(dataset, "raw", dt.date.fromisoformat(DAY))).num_row_groups == 1
    assert _chunks(grouped, dataset) == _chunks(whole, dataset)
