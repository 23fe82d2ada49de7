"""`codex validate` on real Dagster materializations of the sample data, then on broken partitions."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from codex_pipeline.cli import app as cli
from codex_pipeline.datasets.registry import get_dataset
from codex_pipeline.datasets.sample_data import install_sample_landing
from codex_pipeline.defs.assets import ADDRESS_CHECK, build_dataset_assets
from codex_pipeline.defs.resources import CodexWarehouse, EmbeddingSettings
from codex_pipeline.warehouse.storage import Warehouse

DAYS = ("2026-11-24", "2026-11-25")
DATASETS = ("civic_intelligence", "docs", "permit_signals")


def _validate(wh: Warehouse, *args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(["--data-dir", str(wh.root), "validate", *args])
    return rc, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Warehouse:
    """The sample landing data of three datasets, raw and chunks materialized through Dagster."""
    wh = Warehouse(tmp_path_factory.mktemp("validate") / "data")
    install_sample_landing(wh)
    assets = [a for name in DATASETS for a in build_dataset_assets(get_dataset(name)) if not any(k.path[-1] == "embeddings" for k in a.keys)]
    for day in DAYS:
        result = dg.materialize(assets, partition_key=day, raise_on_error=False,
                                resources={"warehouse": CodexWarehouse(data_dir=str(wh.root)),
                                           "embedding": EmbeddingSettings()})
        assert result.success
        checks = [e for e in result.get_asset_check_evaluations() if e.check_name == ADDRESS_CHECK]
        assert len(checks) == len(DATASETS) and all(c.passed for c in checks)  # the asset check ran, and passed
    return wh


def test_validate_passes_on_the_demo_data(demo: Warehouse) -> None:
    rc, out = _validate(demo)
    assert rc == 0, out
    for name in DATASETS:
        assert f"{name}: PASS (" in out
    assert "codex validate: all checks passed" in out
    rc, out = _validate(demo, "--dataset", "civic_intelligence", "--sample", "500", "--json")
    report = json.loads(out)
    assert rc == 0 and report["passed"]
    (civic,) = report["datasets"]
    assert civic["sampled_chunks"] == sum(demo.read("civic_intelligence", "chunks", dt.date.fromisoformat(d)).num_rows
                                          for d in DAYS)
    assert all(v["checked"] > 0 and v["failed"] == 0 for v in civic["checks"].values())


@contextlib.contextmanager
def _broken(wh: Warehouse, dataset: str, edit) -> None:
    """Rewrite one published partition with ``edit`` applied, then put the original back."""
    day = dt.date.fromisoformat(DAYS[0])
    original = wh.read(dataset, "chunks", day)
    wh.write(edit(original), dataset, "chunks", day)
    try:
        yield
    finally:
        wh.write(original, dataset, "chunks", day)


def _set(table: pa.Table, column: str, values: list) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))


def test_a_duplicated_id_fails_and_is_named(demo: Warehouse) -> None:
    def dup(t: pa.Table) -> pa.Table:
        ids = t.column("chunk_id").to_pylist()
        ids[1] = ids[0]
        return _set(t, "chunk_id", ids)

    first = demo.read("permit_signals", "chunks", dt.date.fromisoformat(DAYS[0])).column("chunk_id")[0].as_py()
    with _broken(demo, "permit_signals", dup):
        rc, out = _validate(demo, "--dataset", "permit_signals")
    assert rc == 1
    assert "permit_signals: FAIL" in out and f"[unique_ids] permit_signals {DAYS[0]} chunk {first}: on 2 rows" in out


def test_a_wrong_offset_fails_and_is_named(demo: Warehouse) -> None:
    day = dt.date.fromisoformat(DAYS[0])
    table = demo.read("docs", "chunks", day)
    k = next(i for i, a in enumerate(table.column("evidence_anchor").to_pylist()) if '"spans"' not in a)
    anchor = json.loads(table.column("evidence_anchor")[k].as_py())
    s, e = anchor["char_span"]
    assert s > 0

    def shift(t: pa.Table) -> pa.Table:
        anchors = t.column("evidence_anchor").to_pylist()
        anchors[k] = json.dumps({**anchor, "char_span": [s - 1, e - 1]})
        return _set(t, "evidence_anchor", anchors)

    with _broken(demo, "docs", shift):
        rc, out = _validate(demo, "--dataset", "docs", "--sample", "1000")
    assert rc == 1
    cid = table.column("chunk_id")[k].as_py()
    assert f"[offsets] docs {DAYS[0]} chunk {cid}" in out and f"canonical_text[{s - 1}:{e - 1}]" in out


def test_a_shuffled_seq_index_fails_and_is_named(demo: Warehouse) -> None:
    day = dt.date.fromisoformat(DAYS[0])
    table = demo.read("civic_intelligence", "chunks", day)
    doc = table.column("doc_id")[0].as_py()
    rows = pc.indices_nonzero(pc.equal(table.column("doc_id"), doc)).to_pylist()

    def shuffle(t: pa.Table) -> pa.Table:
        seq = t.column("seq_index").to_pylist()
        for i, j in zip(rows, reversed(rows)):  # the document's reading order reversed
            seq[i] = t.column("seq_index")[j].as_py()
        return _set(t, "seq_index", seq)

    with _broken(demo, "civic_intelligence", shuffle):
        rc, out = _validate(demo, "--dataset", "civic_intelligence", "--sample", "1000")
    assert rc == 1
    assert f"[locator_order] civic_intelligence {DAYS[0]} doc {doc} section 1 page 000: sorting by locator gives" in out
    # the partition as published passes again
    assert _validate(demo, "--dataset", "civic_intelligence", "--sample", "1000")[0] == 0


def test_bad_arguments_exit_2(demo: Warehouse) -> None:
    rc, out = _validate(demo, "--dataset", "nope")
    assert rc == 2 and "unknown dataset 'nope'" in out
    rc, out = _validate(demo, "--dataset", "ais_positions")
    assert rc == 2 and "not chunked" in out
