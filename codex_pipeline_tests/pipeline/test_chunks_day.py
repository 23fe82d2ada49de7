"""The chunks step without Dagster: publish or quarantine, the current corpus, redirects, the summary."""

import datetime as dt

import pyarrow as pa
import pytest

from codex_pipeline.core.rows import ChunkDraft
from codex_pipeline.core.tokens import count_tokens
from codex_pipeline.datasets import steps
from codex_pipeline.datasets.registry import DatasetSpec, get_dataset
from codex_pipeline.pipeline import run_chunks_day, run_raw_day
from codex_pipeline.warehouse.storage import Warehouse
from codex_pipeline_tests.conftest import SAMPLE_LANDING
from codex_pipeline_tests.pipeline.helpers import ListLog, land_sample

DAY = dt.date(2026, 11, 24)
NARRATIVE = get_dataset("narrative")
# the first sample day of every chunked dataset: each chunker once, the quick lane stays quick
SAMPLE_DAYS = sorted(
    (d.name, min(day.name for day in d.iterdir() if day.is_dir()))
    for d in SAMPLE_LANDING.iterdir() if d.is_dir() and get_dataset(d.name).chunked
)


def _rows(wh: Warehouse, dataset: str, day: dt.date) -> pa.Table:
    """A published chunks file without its one run-dependent column, the time it was chunked."""
    table = wh.read(dataset, "chunks", day)
    return table.drop_columns(["chunked_at"])


@pytest.mark.parametrize(("dataset", "day"), SAMPLE_DAYS, ids=[f"{d}-{day}" for d, day in SAMPLE_DAYS])
def test_a_rerun_of_an_unchanged_day_publishes_the_same_chunks(warehouse: Warehouse, dataset: str, day: str) -> None:
    spec, date = get_dataset(dataset), dt.date.fromisoformat(day)
    land_sample(warehouse, dataset, day)
    run_raw_day(spec, warehouse, date)
    first = run_chunks_day(spec, warehouse, date)
    rows = _rows(warehouse, dataset, date)
    again = run_chunks_day(spec, warehouse, date)
    assert first.published and again.published and not first.warnings
    assert _rows(warehouse, dataset, date).equals(rows)
    assert again.redirects == {} and again.summary == first.summary  # no id moved, nothing to redirect
    assert first.summary.chunks == rows.num_rows and first.contract.rows == rows.num_rows


def test_published_chunks_are_what_the_library_cuts(warehouse: Warehouse) -> None:
    landing = land_sample(warehouse, "narrative", DAY.isoformat())
    run_raw_day(NARRATIVE, warehouse, DAY)
    done = run_chunks_day(NARRATIVE, warehouse, DAY)
    expected = steps.chunk(NARRATIVE, DAY, NARRATIVE.load_day(landing).documents).table
    assert _rows(warehouse, "narrative", DAY).equals(expected.drop_columns(["chunked_at"]))
    assert done.path == warehouse.partition_path("narrative", "chunks", DAY)
    assert done.summary.documents == 3 and done.summary.chunks_by_type == {"narrative_window": expected.num_rows}
    assert done.current["current_documents"] == 3 and "narrative_chunks" in done.views_created
    assert done.preview.startswith("| seq |") and done.token_histogram


def _lying_chunker(doc, limits=None):  # claims one token too many: the contract must catch it
    return [ChunkDraft("all", "narrative_window", doc.text, ((0, len(doc.text)),), count_tokens(doc.text) + 1)]


def test_a_contract_failure_quarantines_and_reports_the_failed_checks(warehouse: Warehouse) -> None:
    spec = DatasetSpec("badset", "a dataset whose chunker lies", NARRATIVE.load_day, _lying_chunker, "0.1")
    land_sample(warehouse, "narrative", DAY.isoformat(), into="badset")
    run_raw_day(spec, warehouse, DAY)
    log = ListLog()
    done = run_chunks_day(spec, warehouse, DAY, log)
    assert not done.published and "token_count_exact_cl100k" in done.contract.failed_checks
    assert done.path == warehouse.partition_path("badset", "quarantine", DAY)
    assert warehouse.read("badset", "quarantine", DAY).num_rows == 3
    assert not warehouse.partition_path("badset", "chunks", DAY).exists()
    assert done.current["current_documents"] == 0  # a quarantined day's documents never become current
    assert done.redirects == {}
    assert log.at("error") == list(done.warnings) and "chunk contract failed" in done.warnings[0]


def _paragraph_chunker(name: str):
    """One chunk per paragraph, its section named ``<name>.<k>``; the name "bad" lies about a count."""
    def chunker(doc, limits=None):
        paragraphs = [p for p in doc.text.split("\n\n") if p.strip()]
        starts = [doc.text.index(p) for p in paragraphs]
        return [ChunkDraft(f"{name}.{k}", "narrative_window", p, ((at, at + len(p)),), count_tokens(p) + (name == "bad"))
                for k, (p, at) in enumerate(zip(paragraphs, starts))]
    return chunker


def test_ids_that_vanish_are_redirected_across_a_quarantined_run(warehouse: Warehouse) -> None:
    def spec(name: str) -> DatasetSpec:
        return DatasetSpec("switchset", "chunk ids named by the run", NARRATIVE.load_day, _paragraph_chunker(name), "1.0")

    landing = warehouse.landing_dir("switchset", DAY)
    landing.mkdir(parents=True)
    (landing / "notes.txt").write_text("First paragraph here.\n\nSecond paragraph there.\n")
    run_raw_day(spec("a"), warehouse, DAY)
    results = {name: run_chunks_day(spec(name), warehouse, DAY) for name in ("a", "bad", "b")}
    assert [r.published for r in results.values()] == [True, False, True]
    assert results["bad"].redirects == {}  # a quarantined file publishes no ids, so it redirects none
    assert results["b"].redirects == {"content_hash": 2}  # against the last good file, kept as the baseline
    assert not warehouse.partition_path("switchset", "quarantine", DAY).exists()
